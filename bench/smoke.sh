#!/bin/sh
# Smoke test of bench/run.sh --quick (registered in tests/meson.build as
# bench_quick): the script runs, prints its five tables with a row for every
# quantity, every chetaev stage finished, SymPy ran, and the SymPy kernels
# agree with chetaev's emitted full form (and the hand-written kernels
# with the reduced form) to 1e-9. No timing is asserted: the machine is
# shared and the figures are noisy.
#   bench/smoke.sh BUILDDIR SRCDIR
set -eu
build=$1 src=$2
out=$(mktemp)
trap 'rm -f "$out"' EXIT
fail() { echo "bench_quick: $*" >&2; cat "$out" >&2; exit 1; }
sh "$src/bench/run.sh" "$build" --quick > "$out" || fail "bench/run.sh --quick failed"
grep -q '^| model | quantity | chetaev | SymPy Kane | SymPy Lagrange | SymPy best / chetaev |$' "$out" \
    || fail "no comparison table"
grep -q '^| N | chetaev derive' "$out" || fail "no growth table"
grep -q '^| slope (log-log' "$out" || fail "no fitted exponents"
for m in knife_edge trailer1; do
    for q in 'derive \[s\]' 'model → C file \[s\]' 'model → first rhs call \[s\]' \
             'ops after CSE, reduced' 'ns/eval gcc -O2, reduced' 'ns/eval tcc, reduced' \
             'peak RSS \[MB\]'; do
        # chetaev's cell and both SymPy cells are numbers
        grep "^| $m | $q" "$out" | awk -F'|' '
            { for (i = 4; i <= 6; i++) if ($i !~ /^ [0-9][0-9.e+-]*( \(hand [0-9.]+, [0-9.]+x\))? $/) bad = 1; n++ }
            END { exit !(n == 1 && !bad) }' || fail "$m: '$q' row missing or not numeric"
    done
    grep "^| $m | max. rel. diff." "$out" | awk -F'|' '
        { for (i = 4; i <= 6; i++) if ($i + 0 > 1e-9 || $i !~ /[0-9]/) bad = 1; n++ }
        END { exit !(n == 1 && !bad) }' || fail "$m: kernels disagree or no comparison"
done
for n in 1 2; do
    grep "^| $n | " "$out" | awk -F'|' '{ for (i = 3; i <= 8; i++) if ($i !~ /^ [0-9]/) bad = 1; n++ }
        END { exit !(n == 1 && !bad) }' || fail "growth row N=$n incomplete"
done
for m in knife_edge trailer1; do
    # the alternating pairs of our reduced rhs and SymPy Kane's: a ratio and its median
    grep "^| $m | [0-9][0-9.]* | [0-9][0-9.]* |$" "$out" >/dev/null \
        || fail "$m: alternating kernel ratio row missing or not numeric"
done
for st in 'derive --format json' 'emit --form all' 'derive in process' \
          'reference: [0-9]* -> [0-9]* K nodes (quadref)'; do
    # the alternating last doubling: one pair of numbers, numeric ratios
    grep "^| $st | " "$out" | awk -F'|' '
        { if ($3 !~ /^ [0-9][0-9.]* $/ || $4 !~ /^ [0-9][0-9.]* $/ || $6 !~ /^ [0-9][0-9.]* $/ \
              || $7 !~ /^ [0-9][0-9.]* $/) bad = 1; n++ }
        END { exit !(n == 1 && !bad) }' || fail "doubling row '$st' missing or not numeric"
done
grep '^| ns per dependent random load | ' "$out" | awk -F'|' '
    { for (i = 3; i <= 4; i++) if ($i !~ /^ [0-9][0-9.]* $/) bad = 1; n++ }
    END { exit !(n == 1 && !bad) }' || fail "memory latency row missing or not numeric"
echo "bench_quick: ok"
