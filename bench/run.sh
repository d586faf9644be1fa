#!/bin/sh
# Benchmarks of the generator (not part of the test suite).
#   bench/run.sh [BUILDDIR]
# Prints, for chain models of growing size, the median wall time of
# `chetaev derive --format json` over 5 runs and the output size.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
bin=$dir/chetaev
[ -x "$bin" ] || { echo "build first: ninja -C $dir" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
printf '%-22s %12s %12s\n' model "derive [ms]" "json [kB]"
for n in 5 10 20 40; do
    /usr/bin/python3 bench/gen_chain.py $n > "$tmp/chain$n.nh"
    for r in 1 2 3 4 5; do
        s=$(date +%s%N)
        "$bin" derive "$tmp/chain$n.nh" --format json > "$tmp/out.json"
        e=$(date +%s%N)
        echo $(( (e - s) / 1000 ))
    done | median > "$tmp/us"
    printf '%-22s %12s %12d\n' "chain$n (n=$n)" \
        "$(awk -v us="$(cat "$tmp/us")" 'BEGIN { printf "%.1f", us / 1000 }')" \
        $(( $(wc -c < "$tmp/out.json") / 1024 ))
done
