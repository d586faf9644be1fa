#!/bin/sh
# Memory hygiene (issue 7): valgrind --leak-check=full finds no error and
# no leak in derive, emit and run (tcc JIT, every form the model has) on
# every example. Registered only in builds without sanitizers (valgrind
# and ASan exclude each other); runs are short (--t1 0.01) to keep the
# suite fast; helgrind on tests/test_threads. Usage: valgrind.sh CHETAEV
# SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
command -v valgrind >/dev/null || { echo "valgrind: not installed (scripts/deps.sh)"; exit 1; }

VERR=99
# vg ALLOWED-EXIT-CODES ARGS...: valgrind's verdict (exit VERR) is a
# failure; so is an exit code not in the list.
vg() {
    codes=$1
    shift
    valgrind -q --leak-check=full --show-leak-kinds=definite,indirect,possible \
        --errors-for-leak-kinds=definite,indirect,possible \
        --error-exitcode=$VERR "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    case " $codes " in
    *" $rc "*) ok ;;
    *) bad "valgrind chetaev $*: exit $rc: $(grep -m 20 '==' "$tmp/err"; tail -n 3 "$tmp/err")" ;;
    esac
}

# run derives and emits in memory before it compiles; derive adds the
# printers, emit the files (once per example would double the time for
# little: two models with every form).
for ex in "$src"/examples/*.nh; do
    vg 0 derive "$ex" --format json
    for form in full reduced hamilton; do
        # A form the model does not have is a model error (1), not a leak.
        vg "0 1" run "$ex" --form $form --t1 0.01 --dt 0.002
    done
done
for ex in knife_edge nonlinear_slope; do
    vg 0 emit "$src/examples/$ex.nh" --form all -o "$tmp/emit"
    vg 0 emit "$src/examples/$ex.nh" --driver -o "$tmp/emit"
done
# Error paths free what they allocated too.
printf 'coordinates x\nlagrangian x'"'"'^2 + zz\n' >"$tmp/bad.nh"
vg 1 derive "$tmp/bad.nh"
vg 1 derive "$src/tests/numfail/../errors/define_cycle.nh"
vg 3 run "$src/tests/numfail/singular_mass.nh" --form full --method rk4 --dt 0.125
vg 3 run "$src/tests/numfail/blow_up.nh" --t1 4
vg 0 run "$src/examples/knife_edge.nh" --t1 2 --dt-out 0.1 --stats --plot "$tmp/p.svg"
vg 2 run "$src/examples/knife_edge.nh" --set nope=1
vg 0 check "$src/examples/knife_edge.nh"

# Threads (issue 45): helgrind finds no data race when four threads parse,
# compile (libtcc: gen/jit/jit.c's lock), integrate and free at once.
threads=$(dirname "$bin")/tests/test_threads
if [ -x "$threads" ]; then
    valgrind -q --tool=helgrind --error-exitcode=$VERR "$threads" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 0 ] && ok || bad "helgrind test_threads: exit $rc: $(grep -m 20 '==' "$tmp/err")"
else
    bad "no $threads"
fi

echo "valgrind: $pass passed, $fail failed"
[ "$fail" = 0 ]
