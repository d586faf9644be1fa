#!/bin/sh
# Right-hand-side benchmarks (not part of the test suite).
#   bench/rhs.sh [BUILDDIR]
# Emits the reduced form of the knife edge and of the 1- and 10-trailer
# models (bench/gen_trailer.py), then prints two Markdown tables:
#  - per model: state size, operations of the emitted straight-line code
#    after CSE (from the header comment), in-process compile time of the
#    emitted .c with libtcc (gen/jit/jit.c, median of 5), the time of one
#    `gcc -O2 -c` of it (what `run --compiler cc` pays, roughly), and
#    the largest relative difference between emitted and hand-written rhs;
#  - per model and compiler (gcc -O2, tcc): ns per rhs call of the emitted
#    and the hand-written kernel (bench/hand/MODEL_reduced.c, where there
#    is one), independent calls and a dependent chain (bench/rhs_bench.c),
#    and the ratios emitted / hand (medians of the ratios of repeats run
#    back to back, see rhs_bench.c).
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
bin=$dir/chetaev
[ -x "$bin" ] || { echo "build first: ninja -C $dir" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cp examples/knife_edge.nh "$tmp/knife_edge.nh"
/usr/bin/python3 bench/gen_trailer.py 1 > "$tmp/trailer1.nh"
/usr/bin/python3 bench/gen_trailer.py 10 > "$tmp/trailer10.nh"
models="knife_edge trailer1 trailer10"
for m in $models; do
    "$bin" emit "$tmp/$m.nh" --form reduced -o "$tmp/gen" >/dev/null
done
gcc -O2 -std=c11 -Igen bench/jit_time.c gen/jit/jit.c gen/core/error.c -ltcc -ldl -lm \
    -o "$tmp/jit_time"

# key FILE NAME: value of NAME=... in FILE
key() { sed -n "s/^$2=//p" "$1"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else printf "-" }'; }
# show X: X to two decimals, or - when empty
show() { awk -v a="$1" 'BEGIN { if (a != "") printf "%.2f", a; else printf "-" }'; }
ms_since() { echo $(( ($(date +%s%N) - $1) / 1000000 )); }

# Build everything first, then time: the emitted code is compiled once
# per compiler as its own object (timed: the cost of a cc -O2 build).
for m in $models; do
    p=${m}_reduced
    for c in gcc tcc; do
        s=$(date +%s%N)
        $c -O2 -c "$tmp/gen/$p.c" -o "$tmp/$p.$c.o"
        ms_since "$s" > "$tmp/$m.$c.build"
        hand=
        [ -f "bench/hand/$p.c" ] && hand="-DHAND bench/hand/$p.c"
        # the angles th0..thN of the n-trailer are q[2..N+2]
        [ $m = trailer10 ] && hand="-DFLOOR -DFLOOR_FROM=2 -DFLOOR_TO=13 bench/hand/trig_floor.c"
        # shellcheck disable=SC2086
        $c -O2 -DBENCH_HEADER="\"$p.h\"" -DPREFIX=$p -I"$tmp/gen" \
            bench/rhs_bench.c "$tmp/$p.$c.o" $hand -lm -o "$tmp/bench_$m.$c"
    done
done
for m in $models; do
    for c in gcc tcc; do "$tmp/bench_$m.$c" > "$tmp/$m.$c"; done
done

echo "| model | nx | emitted ops after CSE (add/mul/div/calls) | JIT tcc [ms] | gcc -O2 -c [ms] | max rel. diff. to hand |"
echo "|---|---|---|---|---|---|"
for m in $models; do
    p=${m}_reduced
    ops=$(sed -n 's/.*operations after CSE (straight-line code): \([0-9]*\) add, \([0-9]*\) mul, \([0-9]*\) div, \([0-9]*\) calls.*/\1\/\2\/\3\/\4/p' "$tmp/gen/$p.h")
    jt=$("$tmp/jit_time" "$tmp/gen/$p.c" tcc 5)
    jc=$(cat "$tmp/$m.gcc.build")
    md=$(key "$tmp/$m.gcc" maxdiff)
    echo "| $m | $(key "$tmp/$m.gcc" nx) | $ops | $jt | $jc | ${md:--} |"
done
echo
echo "| model | compiler | emitted indep. [ns] | hand indep. [ns] | ratio | emitted chain [ns] | hand chain [ns] | ratio |"
echo "|---|---|---|---|---|---|---|---|"
for m in $models; do
    for c in gcc tcc; do
        f=$tmp/$m.$c
        ei=$(key "$f" emitted_indep_ns) ec=$(key "$f" emitted_chain_ns)
        hi=$(key "$f" hand_indep_ns) hc=$(key "$f" hand_chain_ns)
        qi=$(key "$f" hand_ratio_indep) qc=$(key "$f" hand_ratio_chain)
        label=$c
        [ $c = gcc ] && label="gcc -O2"
        echo "| $m | $label | $ei | ${hi:--} | $(show "$qi") | $ec | ${hc:--} | $(show "$qc") |"
    done
done
echo
for c in gcc tcc; do
    fl=$(key "$tmp/trailer10.$c" floor_indep_ns)
    echo "trailer10, $c: sin and cos of the 11 angles alone (bench/hand/trig_floor.c) take $fl ns per call, $(ratio "$fl" "$(key "$tmp/trailer10.$c" emitted_indep_ns)") of the emitted rhs."
done
