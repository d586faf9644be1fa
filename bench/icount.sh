#!/bin/sh
# Instructions executed by `derive --format json` and `emit --form all` on
# the n-trailer (valgrind --tool=cachegrind --cache-sim=no): the work of
# each stage without the host's timing noise and without the memory
# hierarchy, whose misses make CPU time grow faster than the work once the
# tables outgrow the cache (bench/README.md). Prints a Markdown table with
# the ratio to the previous N and the log-log slope between neighbours
# (2.00 is O(N^2)). Not part of bench/run.sh: N = 200 takes minutes.
# With --stages, instead the instructions of each stage of `derive
# --format json` (valgrind --tool=callgrind, inclusive counts of the
# stage's entry point): one row per stage, its count at every N with the
# ratio to the previous N, and the slope of the last step.
#   bench/icount.sh BUILDDIR [--stages] [N...]   (default N: 25 50 100 200)
set -eu
cd "$(dirname "$0")/.."
usage="usage: bench/icount.sh BUILDDIR [--stages] [N...]"
[ $# -ge 1 ] || { echo "$usage" >&2; exit 2; }
bin=$1/chetaev
shift
stages=0
if [ "${1:-}" = --stages ]; then
    stages=1
    shift
fi
for n in "$@"; do
    case $n in
    '' | *[!0-9]*) echo "$usage" >&2; exit 2 ;;
    esac
done
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

# The stages of `derive --format json` by their entry points (ch_derive
# runs the five in the middle; they are nearly all of it), and the whole.
STAGES="ch_model_load:parse ch_lagrange_derive:Lagrange ch_manifold_init:dependent-velocities
ch_chetaev_derive:Chetaev ch_reduce_derive:reduced ch_hamilton_derive:hamilton
ch_derivation_prepare:display-tidy ch_derivation_fwrite:JSON PROGRAM:whole-process"

if [ $stages = 1 ]; then
    command -v callgrind_annotate >/dev/null || { echo "bench/icount.sh: callgrind_annotate not found" >&2; exit 2; }
    for n in "$@"; do
        /usr/bin/python3 bench/gen_trailer.py "$n" >"$tmp/t.nh"
        valgrind --tool=callgrind --callgrind-out-file="$tmp/cg" "$bin" derive "$tmp/t.nh" \
            --format json --max-nodes 0 >/dev/null 2>"$tmp/vg" ||
            { echo "bench/icount.sh: failed: derive of the $n-trailer" >&2; cat "$tmp/vg" >&2; exit 1; }
        # inclusive counts: "1,234 (5.6%)  file:function [object]"
        callgrind_annotate --inclusive=yes --threshold=100 "$tmp/cg" 2>/dev/null |
            awk -v n="$n" -v stages="$STAGES" 'BEGIN { ns = split(stages, s, /[ \n]+/)
                    for (i = 1; i <= ns; i++) { split(s[i], f, ":"); want[f[1]] = f[2] } }
                /PROGRAM TOTALS/ { c = $1; gsub(/,/, "", c); print want["PROGRAM"], n, c }
                $NF ~ /^\[/ && $1 ~ /^[0-9,]+$/ { fn = $(NF - 1); sub(/^.*:/, "", fn)
                    if ((fn in want) && !(fn in seen)) { seen[fn] = 1; c = $1; gsub(/,/, "", c)
                        print want[fn], n, c } }' >>"$tmp/stages"
    done
    awk -v stages="$STAGES" '
        { v[$1, $2] = $3; if (!($2 in isn)) { isn[$2] = 1; nl[++nn] = $2 } }
        END {
            k = split(stages, s, /[ \n]+/)
            printf "| stage |"; for (j = 1; j <= nn; j++) printf " N = %d |", nl[j]
            print " slope of the last step |"
            printf "|---|"; for (j = 1; j <= nn; j++) printf "---|"; print "---|"
            for (i = 1; i <= k; i++) {
                split(s[i], f, ":"); st = f[2]; printf "| %s |", st
                for (j = 1; j <= nn; j++) {
                    x = v[st, nl[j]]
                    if (x == "") printf " - |"
                    else if (j > 1 && v[st, nl[j - 1]] > 0) printf " %.3e (x%.2f) |", x, x / v[st, nl[j - 1]]
                    else printf " %.3e |", x
                }
                a = v[st, nl[nn - 1]]; b = v[st, nl[nn]]
                if (nn > 1 && a > 0 && b > 0) printf " %.2f |\n", log(b / a) / log(nl[nn] / nl[nn - 1])
                else print " |"
            }
        }' "$tmp/stages"
    exit 0
fi

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
