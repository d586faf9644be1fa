#!/bin/sh
# Installs what is missing, builds chetaev and derives the knife edge.
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh
[ -f build/build.ninja ] || meson setup build >/dev/null
ninja -C build >/dev/null
./build/chetaev derive examples/knife_edge.nh
