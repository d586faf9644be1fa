#!/bin/sh
# Numerical failure during `run` (issue 7, SPEC §2): a singular mass
# matrix or constraint block reached during the run, a state that
# overflows or becomes NaN, velocities that cannot be reconstructed at the
# initial state: exit code 3, a message with t and the step, and the CSV
# rows computed before the failure kept intact (to stdout and to -o FILE,
# from the JIT and from the emitted driver program). Malformed --set,
# --init and step options: exit code 2 with a clear message.
# Usage: numfail.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
dir=$src/tests/numfail
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# rows CSV N T: a header and N rows of as many numbers, t of the last = T,
# t strictly increasing, every state column finite.
rows() {
    $py - "$@" <<'PY'
import math, sys
path, n, t_last = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
lines = open(path).read().split("\n")
assert lines[-1] == "", "the CSV does not end with a newline"
header, body = lines[0].split(","), [l.split(",") for l in lines[1:-1]]
assert header[0] == "t" and "E" in header, header
assert len(body) == n, "%d rows, want %d" % (len(body), n)
nstate = header.index("E")
ts = []
for r in body:
    assert len(r) == len(header), "row of %d fields: %s" % (len(r), r)
    v = [float(x) for x in r]
    assert all(math.isfinite(x) for x in v[:nstate]), r
    ts.append(v[0])
assert all(a < b for a, b in zip(ts, ts[1:])), ts
assert not ts or ts[-1] == t_last, "last t %r, want %r" % (ts[-1], t_last)
PY
}

# fails MODEL FORM ROWS T_LAST MESSAGE-PATTERN [RUN OPTIONS...]
# The step numbers below are those of a fixed step (rk4 unless the options
# name another method); the adaptive default has its own section.
fails() {
    model=$1 form=$2 n=$3 tl=$4 pat=$5
    shift 5
    what="$model --form $form $*"
    set -- --method rk4 "$@"
    "$bin" run "$dir/$model" --form "$form" "$@" >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    [ $rc = 3 ] || { bad "$what: exit $rc, want 3: $(cat "$tmp/err")"; return; }
    grep -Eq "^chetaev run: numerical failure at $pat" "$tmp/err" \
        || { bad "$what: message '$(cat "$tmp/err")' lacks '$pat'"; return; }
    rows "$tmp/out.csv" "$n" "$tl" 2>"$tmp/rows.err" \
        || { bad "$what: CSV on stdout: $(tail -n 1 "$tmp/rows.err")"; return; }
    # -o FILE keeps the same rows.
    "$bin" run "$dir/$model" --form "$form" "$@" -o "$tmp/file.csv" 2>/dev/null
    rc=$?
    [ $rc = 3 ] && cmp -s "$tmp/out.csv" "$tmp/file.csv" \
        || { bad "$what -o: exit $rc or rows differ from stdout"; return; }
    ok
}

# ---- singular matrices reached during the run (dt = 1/8: y = 0 exactly) ----
for form in full reduced; do
    fails singular_mass.nh $form 4 0.375 "t = 0.375 \(step 4\): the right-hand side failed: singular system or Newton not converged" --dt 0.125
done
fails singular_mass.nh hamilton 4 0.375 "t = 0.375 \(step 4\): the new state is not finite" --dt 0.125
fails singular_constraint.nh full 4 0.375 "t = 0.375 \(step 4\): the right-hand side failed: singular system or Newton not converged" --dt 0.125
# The reduced and hamilton forms are charts: their rhs refuses the state
# y = 0 of rk4's last stage (the constraint's row of G vanishes, chart
# quality 0) instead of returning x' = 0/0 there.
for form in reduced hamilton; do
    fails singular_constraint.nh $form 4 0.375 "t = 0.375 \(step 4\): the right-hand side failed: the chart is numerically singular" --dt 0.125
done
# Every K-th row: the rows before the failure, no more.
fails singular_mass.nh full 2 0.375 "t = 0.375 \(step 4\): the right-hand side failed: singular system or Newton not converged" --dt 0.125 --every 3
fails singular_mass.nh full 1 0 "t = 0.375 \(step 4\): the right-hand side failed: singular system or Newton not converged" --dt 0.125 --every 5
# Every method: rk4 meets y = 0 in the last stage of step 4, euler and
# midpoint only at the start of step 5.
fails singular_mass.nh full 4 0.375 "t = 0.375 \(step 4\)" --dt 0.125 --method rk4
for m in euler midpoint; do
    fails singular_mass.nh full 5 0.5 "t = 0.5 \(step 5\): the right-hand side failed: singular system or Newton not converged" --dt 0.125 --method $m
done

# ---- non-finite states ------------------------------------------------------
for form in full reduced hamilton; do
    fails blow_up.nh $form 19 2.25 "t = 2.25 \(step 19\): the new state is not finite" --dt 0.125 --t1 4
    fails nan_state.nh $form 7 0.75 "t = 0.75 \(step 7\): the new state is not finite" --dt 0.125 --t1 4
done
# A coordinate that overflows the energy (E = x'^2/2 - exp(x)) at once:
# no row at all.
fails blow_up.nh reduced 0 0 "t = 0 \(step 0\): the column E is infinite at the initial state" --init x=800 --dt 0.125

# ---- the adaptive default ---------------------------------------------------------
# x'' = exp(x) from rest at x = 0 is x = -2 ln cos(t/sqrt 2): infinite at
# t = pi/sqrt(2). The step size shrinks to underflow there: exit 3 with
# "step size too small", every row before kept, the time of the failure
# within 1e-6 of the exact blow-up time (an independent answer).
for form in full reduced hamilton; do
    "$bin" run "$dir/blow_up.nh" --form $form --t1 4 >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    t=$(sed -n 's/.*numerical failure at t = \([0-9.e+-]*\) (step [0-9]*): step size too small at t = .*/\1/p' "$tmp/err")
    last=$(tail -n 1 "$tmp/out.csv" | cut -d, -f1)
    [ $rc = 3 ] && [ -n "$t" ] \
        && $py -c "import math,sys; sys.exit(abs($t - math.pi/math.sqrt(2)) > 1e-6 or $last != $t)" \
        && rows "$tmp/out.csv" "$(($(wc -l <"$tmp/out.csv") - 1))" "$last" \
        && ok || bad "blow_up $form adaptive: exit $rc, t '$t', last row $last: $(cat "$tmp/err")"
done
# A non-finite right-hand side (sqrt of x < 0) rejects the steps that reach
# it until the step underflows; the message says why.
"$bin" run "$dir/nan_state.nh" --t1 4 >"$tmp/out.csv" 2>"$tmp/err"
rc=$?
[ $rc = 3 ] && grep -q "step size too small at t = 0.79.*: the new state is not finite" "$tmp/err" \
    && ok || bad "nan_state adaptive: exit $rc: $(cat "$tmp/err")"
# The step limit: a clear failure, the rows kept.
"$bin" run "$src/examples/knife_edge.nh" --t1 10 --max-steps 3 >"$tmp/out.csv" 2>"$tmp/err"
rc=$?
[ $rc = 3 ] && grep -q "numerical failure at t = .* (step 4): more than 3 steps (--max-steps) before t1 = 10" "$tmp/err" \
    && [ "$(wc -l <"$tmp/out.csv")" = 5 ] \
    && ok || bad "max-steps: exit $rc, $(wc -l <"$tmp/out.csv") lines: $(cat "$tmp/err")"

# ---- failures at the initial state: the header, no row ------------------------
for form in full reduced; do
    fails singular_mass.nh $form 1 0 "t = 0 \(step 1\): the right-hand side failed: singular system or Newton not converged" --init y=0 --dt 0.125
done
fails singular_mass.nh hamilton 0 0 "t = 0 \(step 0\): the velocities are not finite at the initial state" --init y=0 --dt 0.125

# ---- the driver program of emit --driver fails the same way -----------------
mkdir -p "$tmp/drv"
if "$bin" emit "$dir/singular_mass.nh" --form full --driver -o "$tmp/drv" 2>"$tmp/err" \
    && cc -std=c99 -O1 -o "$tmp/drv/prog" "$tmp/drv"/*.c -lm 2>"$tmp/err"; then
    "$tmp/drv/prog" --method rk4 --dt 0.125 >"$tmp/drv.csv" 2>"$tmp/drv.err"
    rc=$?
    "$bin" run "$dir/singular_mass.nh" --form full --method rk4 --dt 0.125 >"$tmp/run.csv" 2>/dev/null
    [ $rc = 3 ] && cmp -s "$tmp/drv.csv" "$tmp/run.csv" \
        && grep -q "numerical failure at t = 0.375 (step 4): the right-hand side failed: singular system or Newton not converged" "$tmp/drv.err" \
        && ok || bad "driver: exit $rc, $(cat "$tmp/drv.err")"
else
    bad "driver not built: $(head -c 300 "$tmp/err")"
fi

# ---- a Newton failure in the hamilton form (numeric Legendre inverse) ---------
# y = x' - x'^3 has no inverse beyond 2/(3 sqrt 3): the force pushes y
# there. Only where this build has the numeric hamilton path.
printf 'coordinates x\nlagrangian x'"'"'^2/2 - x'"'"'^4/4\nforce x = 1\ninitial x'"'"'=0.2\n' >"$tmp/newton.nh"
if "$bin" emit "$tmp/newton.nh" --form hamilton -o "$tmp/nt" >/dev/null 2>&1; then
    "$bin" run "$tmp/newton.nh" --form hamilton --method rk4 --dt 0.01 >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    [ $rc = 3 ] && grep -Eq "numerical failure at t = [0-9.]+ \(step [0-9]+\)" "$tmp/err" \
        && rows "$tmp/out.csv" "$(($(wc -l <"$tmp/out.csv") - 1))" "$(tail -n 1 "$tmp/out.csv" | cut -d, -f1)" \
        && ok || bad "hamilton Newton failure: exit $rc: $(cat "$tmp/err")"
else
    echo "numfail: SKIP hamilton Newton failure (no numeric hamilton form in this build)"
fi

# ---- a non-finite energy or output column (issue 45): never written ----------------
# E = x'^2/2 - sqrt(x) is NaN at x = -1 (the initial state: the header
# only); the integral sqrt(1 - x) with x = t becomes NaN after t = 1 (the
# rows before kept), in every form and in the driver program.
printf 'coordinates x\nlagrangian x'"'"'^2/2 - sqrt(x)\ninitial x=-1\n' >"$tmp/nan_e.nh"
printf 'coordinates x\nlagrangian x'"'"'^2/2\nintegral r = sqrt(1 - x)\ninitial x'"'"'=1\n' >"$tmp/nan_col.nh"
for form in full reduced hamilton; do
    "$bin" run "$tmp/nan_e.nh" --form $form --method rk4 --dt 0.125 >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    [ $rc = 3 ] && [ "$(wc -l <"$tmp/out.csv")" = 1 ] \
        && grep -q "numerical failure at t = 0 (step 0): the column E is NaN at the initial state" "$tmp/err" \
        && ok || bad "nan_e $form: exit $rc: $(cat "$tmp/err")"
    "$bin" run "$tmp/nan_col.nh" --form $form --method rk4 --dt 0.125 --t1 2 >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    [ $rc = 3 ] && rows "$tmp/out.csv" 9 1 \
        && grep -q "numerical failure at t = 1.125 (step 9): the column r is NaN" "$tmp/err" \
        && ok || bad "nan_col $form: exit $rc: $(cat "$tmp/err")"
done
mkdir -p "$tmp/nd"
if "$bin" emit "$tmp/nan_col.nh" --form full --driver -o "$tmp/nd" >/dev/null 2>"$tmp/err" \
    && cc -std=c99 -O1 -o "$tmp/nd/prog" "$tmp/nd"/*.c -lm 2>"$tmp/err"; then
    "$tmp/nd/prog" --method rk4 --dt 0.125 --t1 2 >"$tmp/out.csv" 2>"$tmp/err"
    rc=$?
    [ $rc = 3 ] && rows "$tmp/out.csv" 9 1 && grep -q "the column r is NaN" "$tmp/err" \
        && ok || bad "nan_col driver: exit $rc: $(cat "$tmp/err")"
else
    bad "nan_col driver not built: $(head -c 300 "$tmp/err")"
fi

# ---- option errors: exit 2, nothing run ------------------------------------------
usage() { # PATTERN ARGS... (with GREP=-F: a fixed string)
    pat=$1
    shift
    "$bin" run "$src/examples/knife_edge.nh" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] && grep -q ${GREP:--E} -- "$pat" "$tmp/err" && [ ! -s "$tmp/out" ] \
        && ok || bad "run $*: exit $rc, stderr '$(head -c 200 "$tmp/err")' lacks '$pat'"
}
usage "--set: unknown parameter 'nope' \(parameters: m, J, g, alpha, c\)" --set nope=1
usage "--set: unknown parameter 'x'" --set x=1
for v in abc "" 1e999 nan inf -inf 0x10 1,5 " 1" "1 " 1e 1e+ . +- 1..2 1e3.5; do
    GREP=-F
    usage "--set m=$v: '$v' is not a finite number" --set "m=$v"
    usage "--init x=$v: '$v' is not a finite number" --init "x=$v"
    GREP=
done
# a subnormal is a number; a literal that underflows to 0 is refused
GREP=-F
usage "--set c=1e-400: '1e-400' underflows to 0 (below 4.9e-324)" --set c=1e-400
usage "--t1: '-1e-999' underflows to 0" --t1 -1e-999
GREP=
"$bin" run "$src/examples/knife_edge.nh" --set c=1e-320 --t1 0.002 >/dev/null 2>"$tmp/err" \
    && ok || bad "--set c=1e-320 refused: $(cat "$tmp/err")"
usage "--set expects NAME=VALUE, got 'm'" --set m
usage "--set expects NAME=VALUE, got '=1'" --set =1
usage "--init expects NAME=VALUE, got 'x'" --init x
usage "--init: 'nope' is not a state variable of knife_edge_reduced \(known: x, y, phi, x', phi', y'\)" --init nope=1
usage "--init: 'm' is not a state variable" --init m=1
usage "--init: 't' is not a state variable" --init t=1
usage "--init: 'x''' is not a state variable" --init "x''=1"
usage "--init: 'y_x' is not a state variable" --init y_x=1
usage "--dt: '0x1p-7' is not a finite number" --dt 0x1p-7
usage "--dt: '0' is not positive" --dt 0
usage "--t1: 'nan' is not a finite number" --t1 nan
usage "--every: '1.5' is not a positive integer" --every 1.5
usage "--t1/--dt asks for 1e\+300 steps; at most 1e\+07 are allowed \(--max-steps\)" --method rk4 --dt 1e-300
usage "--t1/--dt asks for 2e\+07 steps" --method euler --dt 1e-7 --t1 2
usage "--rtol: '0' is not positive" --rtol 0
usage "--rtol: '-1e-6' is not positive" --rtol -1e-6
usage "--rtol: 'tight' is not a finite number" --rtol tight
usage "--rtol 1e-16 is below 100 ulp" --rtol 1e-16
usage "--atol: '0' is not positive" --atol 0
usage "--atol: 'nan' is not a finite number" --atol nan
usage "--dt-max: '0' is not positive" --dt-max 0
usage "--dt-out: '-1' is not positive" --dt-out -1
usage "--dt-out needs an adaptive method" --dt-out 0.1 --method rk4
usage "--dt-max needs an adaptive method" --dt-max 0.1 --method euler
usage "--dt-out and --every exclude each other" --dt-out 0.1 --every 2
usage "--max-steps: '0' is not a positive integer" --max-steps 0
usage "--max-steps: '1.5' is not a positive integer" --max-steps 1.5
usage "unknown method 'rk5' \(dop853, rk45, cvode, euler, midpoint, rk4\)" --method rk5
# Accepted spellings of numbers.
for v in 1 -2.5 .5 5. 1e-3 2E+1 +3; do
    "$bin" run "$src/examples/knife_edge.nh" --set "m=$v" --t1 0.002 >/dev/null 2>"$tmp/err" \
        && ok || bad "--set m=$v refused: $(cat "$tmp/err")"
done

echo "numfail: $pass passed, $fail failed"
[ "$fail" = 0 ]
