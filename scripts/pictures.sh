#!/bin/sh
# Regenerates the README's pictures in docs/img/ with `chetaev run --plot`
# and `chetaev check --loop --plot`. Usage: sh scripts/pictures.sh [CHETAEV]
# (default: build/chetaev, built like scripts/showcase.sh does). The SVGs
# are deterministic: running this twice gives the same bytes.
set -eu
cd "$(dirname "$0")/.."
if [ $# -ge 1 ]; then
    bin=$1
else
    [ -f build/build.ninja ] || meson setup build >/dev/null
    ninja -C build >/dev/null
    bin=./build/chetaev
fi
out=docs/img
mkdir -p "$out"
ex=examples

# The knife edge slides down the inclined plane (x is down the slope)
# while its damped turning dies out: the path in the plane.
"$bin" run "$ex/knife_edge.nh" --t1 12 --every 10 -o /dev/null \
    --plot "$out/knife_edge_path.svg" --xy x,y
# The Chaplygin sleigh: its centre of mass turns and then settles on a
# straight line as the angular velocity decays to 0.
"$bin" run "$ex/chaplygin_sleigh.nh" --t1 25 --every 10 -o /dev/null \
    --plot "$out/chaplygin_sleigh_path.svg" --xy x,y
"$bin" run "$ex/chaplygin_sleigh.nh" --t1 25 --every 10 -o /dev/null \
    --plot "$out/chaplygin_sleigh_velocities.svg" --plot-vars "x',y',th'"
# The vertical disk: the contact point runs on a circle.
"$bin" run "$ex/vertical_disk.nh" --t1 12.566370614359172 --every 10 --form full \
    -o /dev/null --plot "$out/vertical_disk_path.svg" --xy x,y
# The double pendulum released horizontally: chaotic angles, constant energy.
"$bin" run "$ex/double_pendulum.nh" --t1 10 --every 5 -o /dev/null \
    --plot "$out/double_pendulum.svg" --plot-vars a1,a2
# The Poincare-Cartan loop of the double pendulum before and after one
# second of flow: sheared, but enclosing the same area.
"$bin" check "$ex/double_pendulum.nh" --loop 128 --plot "$out/double_pendulum_loop.svg" >/dev/null
ls "$out"/*.svg
