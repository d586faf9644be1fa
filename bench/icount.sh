#!/bin/sh
# Instructions executed by `derive --format json` and `emit --form all` on
# the n-trailer (valgrind --tool=cachegrind --cache-sim=no): the work of
# each stage without the host's timing noise and without the memory
# hierarchy, whose misses make CPU time grow faster than the work once the
# tables outgrow the cache (bench/README.md). Prints a Markdown table with
# the ratio to the previous N and the log-log slope between neighbours
# (2.00 is O(N^2)). Not part of bench/run.sh: N = 200 takes minutes.
#   bench/icount.sh BUILDDIR [N...]        (default N: 25 50 100 200)
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/icount.sh BUILDDIR [N...]" >&2; exit 2; }
bin=$1/chetaev
shift
[ -x "$bin" ] || { echo "bench/icount.sh: build first: $bin not found" >&2; exit 2; }
command -v valgrind >/dev/null || { echo "bench/icount.sh: valgrind not found (apt-get install valgrind)" >&2; exit 2; }
[ $# -gt 0 ] || set -- 25 50 100 200
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# instructions of one command (cachegrind's "I refs" line)
icount() {
    valgrind --tool=cachegrind --cache-sim=no --cachegrind-out-file=/dev/null "$@" \
        2>"$tmp/vg" >/dev/null || { echo "bench/icount.sh: failed: $*" >&2; cat "$tmp/vg" >&2; exit 1; }
    sed -n 's/.*I *refs: *//p' "$tmp/vg" | tr -d ,
}

echo "| N | derive json [instructions] | x prev | slope | emit all [instructions] | x prev | slope |"
echo "|---|---|---|---|---|---|---|"
prev_n= prev_d= prev_e=
for n in "$@"; do
    /usr/bin/python3 bench/gen_trailer.py "$n" >"$tmp/t.nh"
    # (no node limit: the 400-trailer needs more than the default 8 M)
    d=$(icount "$bin" derive "$tmp/t.nh" --format json --max-nodes 0)
    e=$(icount "$bin" emit "$tmp/t.nh" --form all -o "$tmp/out" --max-nodes 0)
    awk -v n="$n" -v d="$d" -v e="$e" -v pn="$prev_n" -v pd="$prev_d" -v pe="$prev_e" 'BEGIN {
        if (pn == "") { printf "| %d | %.3e | | | %.3e | | |\n", n, d, e; exit }
        l = log(n / pn)
        printf "| %d | %.3e | %.2f | %.2f | %.3e | %.2f | %.2f |\n",
               n, d, d / pd, log(d / pd) / l, e, e / pe, log(e / pe) / l }'
    prev_n=$n prev_d=$d prev_e=$e
done
