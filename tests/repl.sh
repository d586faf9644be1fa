#!/bin/sh
# `chetaev repl` driven through a pipe: every command, runs that agree with
# `chetaev run` under the same settings, a parameter change that takes
# effect without recompiling (the compilation count stays 1), form
# switches compiled once each, `emit` and `check` equal to the commands,
# and a `reload` after the model file changed on disk.
# Usage: repl.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
py=/usr/bin/python3
[ -x "$py" ] || py=python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
# has FILE PATTERN WHAT: a fixed string in a file
has() { if grep -qF -- "$2" "$1"; then ok; else bad "$3: '$2' missing in $1"; fi; }
hasnt() { if grep -qF -- "$2" "$1"; then bad "$3: unexpected '$2' in $1"; else ok; fi; }

knife=$src/examples/knife_edge.nh

# The Nth "final:" line of a session output against the last CSV row of
# `chetaev run ARGS` (same columns, 12 significant digits printed).
same_final() {
    n=$1 what=$2
    shift 2
    if ! "$bin" run "$@" >"$tmp/ref.csv" 2>"$tmp/ref.err"; then
        bad "$what: chetaev run $*: $(cat "$tmp/ref.err")"; return
    fi
    if "$py" - "$tmp/s.out" "$tmp/ref.csv" "$n" <<'EOF'; then ok; else bad "$what"; fi
import sys
finals = [l.split()[1:] for l in open(sys.argv[1]) if l.startswith("final:")]
n = int(sys.argv[3])
if len(finals) < n:
    sys.exit("only %d runs in the session" % len(finals))
got = dict(kv.split("=", 1) for kv in finals[n - 1])
rows = [l.strip().split(",") for l in open(sys.argv[2]) if l.strip()]
ref = dict(zip(rows[0], rows[-1]))
assert ref["t"] and got, (ref, got)
for name, v in got.items():
    r = float(ref[name])
    if abs(float(v) - r) > 1e-10 * max(1.0, abs(r)):
        sys.exit("%s: repl %s, run %r" % (name, v, r))
EOF
}

# ---- a session covering the commands ---------------------------------------
cat >"$tmp/cmds" <<EOF
# comments and blank lines are ignored

help
info
run 1
set g=0
run 1
set x'=2 x=0.5
run 1
info
set
method euler
dt 0.01
run 1
method
dt
method rk4
dt 0.001
unset x
unset x'
run 1
plot $tmp/t.svg
plot $tmp/xy.svg xy x,y
plot $tmp/e.svg E,phi'
plot $tmp/bad.svg nosuch
form full
run 2
form hamilton
run 2
form reduced
form
info
method rk45
tol 1e-9 1e-11
tol
run 1
method dop853
tol 1e-10 1e-12
show mass_matrix
show energy constraints
show
show bogus
check
emit $tmp/emitted
frobnicate
run abc
run -1
set zz=1
set g=abc
set g
form bogus
method leapfrog
dt 0
tol 0
tol 1e-20
unset nosuch
quit
info
EOF
"$bin" repl "$knife" <"$tmp/cmds" >"$tmp/s.out" 2>"$tmp/s.err"
rc=$?
# a script with failing commands goes on and reports them in its status
if [ "$rc" = 1 ]; then ok; else bad "session exit $rc, want 1: $(head -c 400 "$tmp/s.err")"; fi

# Compiled once at the start; parameters and initial values never
# recompile, each new form compiles once, switching back does not.
has "$tmp/s.out" "compiled the reduced form of knife_edge (compilation 1," "start"
count=$(grep -c '^compilations: ' "$tmp/s.out")
[ "$count" = 3 ] && ok || bad "info printed $count times, want 3 (quit must end the session)"
first=$(grep '^compilations: ' "$tmp/s.out" | sed -n 1p)
second=$(grep '^compilations: ' "$tmp/s.out" | sed -n 2p)
third=$(grep '^compilations: ' "$tmp/s.out" | sed -n 3p)
[ "$first" = "compilations: 1" ] && ok || bad "before any setting: $first"
[ "$second" = "compilations: 1" ] && ok || bad "after set g=0 and two runs: $second (recompiled?)"
[ "$third" = "compilations: 3" ] && ok || bad "after form full, hamilton, reduced: $third"
has "$tmp/s.out" "compiled the full form of knife_edge (compilation 2," "form full"
has "$tmp/s.out" "compiled the hamilton form of knife_edge (compilation 3," "form hamilton"
n=$(grep -c '^compiled the' "$tmp/s.out")
[ "$n" = 3 ] && ok || bad "$n compilations announced, want 3"
has "$tmp/s.out" "runs: 3" "run count before the form switches"
has "$tmp/s.out" "runs: 7" "run count after the form switches"

# Every run equals `chetaev run` with the same settings: the parameter
# change reached the compiled code through its parameter array.
same_final 1 "run 1 with defaults" "$knife" --t1 1
same_final 2 "run after set g=0" "$knife" --t1 1 --set g=0
same_final 3 "run after set x'=2 x=0.5" "$knife" --t1 1 --set g=0 --init "x'=2" --init x=0.5
same_final 4 "euler, dt 0.01" "$knife" --t1 1 --set g=0 --init "x'=2" --init x=0.5 --method euler --dt 0.01
same_final 5 "after unset x, x'" "$knife" --t1 1 --set g=0 --method rk4
same_final 6 "full form" "$knife" --t1 2 --set g=0 --form full --method rk4
same_final 7 "hamilton form" "$knife" --t1 2 --set g=0 --form hamilton --method rk4
same_final 8 "rk45 at tol 1e-9 1e-11" "$knife" --t1 1 --set g=0 --method rk45 --rtol 1e-9 --atol 1e-11
f1=$(grep '^final:' "$tmp/s.out" | sed -n 1p)
f2=$(grep '^final:' "$tmp/s.out" | sed -n 2p)
[ "$f1" != "$f2" ] && ok || bad "set g=0 changed nothing"

# The summary: energy and constraint residuals; the listing of settings.
has "$tmp/s.out" "(dop853, rtol 1e-10, atol 1e-12, reduced form)" "summary of the default"
has "$tmp/s.out" "rhs calls, 0 recharts" "step statistics of an adaptive run"
has "$tmp/s.out" "t = 1 after 1000 steps (rk4, dt 0.001, reduced form)" "summary"
has "$tmp/s.out" "t = 1 after 100 steps (euler, dt 0.01, reduced form)" "method/dt"
has "$tmp/s.out" "t = 2 after 2000 steps (rk4, dt 0.001, full form)" "full run"
has "$tmp/s.out" "energy: E(0)=" "energy line"
has "$tmp/s.out" "constraints: max|phi|=" "residual line"
"$py" - "$tmp/s.out" <<'EOF' && ok || bad "residuals not at round-off"
import sys
res = [float(l.split("max|phi|=")[1].split()[0]) for l in open(sys.argv[1])
       if l.startswith("constraints: max|phi|=")]
assert len(res) == 8 and max(res) < 1e-12, res
EOF
has "$tmp/s.out" "g=0 (set)" "set listing"
has "$tmp/s.out" "initial x'=2" "set listing of an initial velocity"
has "$tmp/s.out" "euler" "method query"
has "$tmp/s.out" "rtol 1e-09 atol 1e-11" "tol query"
has "$tmp/s.err" "--rtol must be a positive finite number (got 0)" "tol 0"
has "$tmp/s.err" "--rtol 1e-20 is below 100 ulp" "tol 1e-20"
has "$tmp/s.out" "reduced" "form query"

# show: as derive prints it; keys; an unknown key.
"$bin" derive "$knife" --only mass_matrix >"$tmp/mm.txt"
if grep -qF "$(sed -n '/== Mass matrix/,$p' "$tmp/mm.txt" | head -3)" "$tmp/s.out"; then ok
else bad "show mass_matrix differs from derive --only mass_matrix"; fi
has "$tmp/s.out" "M[phi,phi] = J" "show mass_matrix"
has "$tmp/s.out" "keys: model coordinates" "show without key"
has "$tmp/s.err" "unknown section 'bogus'" "show bogus"

# check: the audit text of `chetaev check`.
"$bin" check "$knife" >"$tmp/check.txt"
if "$py" - "$tmp/s.out" "$tmp/check.txt" <<'EOF'; then ok; else bad "check differs from chetaev check"; fi
import sys
assert open(sys.argv[2]).read() in open(sys.argv[1]).read()
EOF

# emit: the files of `chetaev emit` (current form: reduced).
"$bin" emit "$knife" -o "$tmp/ref_emit" 2>/dev/null
for f in knife_edge_reduced.h knife_edge_reduced.c; do
    if cmp -s "$tmp/emitted/$f" "$tmp/ref_emit/$f"; then ok; else bad "emit: $f differs"; fi
done

# plot: files written with the variables in the legend.
for f in t xy e; do
    if [ -s "$tmp/$f.svg" ] && grep -q '<svg' "$tmp/$f.svg"; then ok; else bad "plot $f.svg"; fi
done
has "$tmp/t.svg" ">phi</text>" "default plot legend"
has "$tmp/xy.svg" ">(x, y)</text>" "xy plot legend"
has "$tmp/e.svg" ">phi&apos;</text>" "escaped legend"
[ -e "$tmp/bad.svg" ] && bad "plot of an unknown variable wrote a file" || ok
has "$tmp/s.err" "no variable 'nosuch' to plot" "plot nosuch"

# Errors go to stderr and the session continues.
for pat in "unknown command 'frobnicate'" "usage: run T" "'zz' is neither a parameter" \
           "'abc' is not a finite number" "usage: set NAME=VALUE" \
           "usage: form full|reduced|hamilton" "usage: method" "usage: dt H" \
           "'nosuch' is not set"; do
    has "$tmp/s.err" "$pat" "error message"
done
n=$(grep -c '^error: ' "$tmp/s.err")
[ "$n" = 14 ] && ok || bad "$n error messages, want 14: $(cat "$tmp/s.err")"
hasnt "$tmp/s.out" "chetaev> " "no prompt when stdin is not a terminal"

# help lists every command.
for c in set unset form method tol dt run show check plot emit reload info help quit; do
    if grep -q "^  $c" "$tmp/s.out"; then ok; else bad "help lacks $c"; fi
done

# ---- a run that fails: message with t and step, the rows so far kept ------------
printf 'method euler\ndt 0.5\nrun 5000\nplot %s/nf.svg\ninfo\n' "$tmp" |
    "$bin" repl "$src/examples/double_pendulum.nh" >"$tmp/nf.out" 2>"$tmp/nf.err"
[ $? = 1 ] && ok || bad "session with a numerical failure"
has "$tmp/nf.err" "numerical failure at t = " "numerical failure"
# (the energy overflows one step before the state does)
has "$tmp/nf.err" "the column E is infinite" "numerical failure reason"
has "$tmp/nf.out" "wrote $tmp/nf.svg" "plot of the rows before the failure"
has "$tmp/nf.out" "compilations: 1" "the session goes on after a failure"

# ---- lines with a NUL byte or an escape sequence: refused whole (issue 45) -----
printf 'info\000emit %s/hidden\nset c=\033[31m1\ninfo\n' "$tmp" |
    "$bin" repl "$knife" >"$tmp/n.out" 2>"$tmp/n.err"
rc=$?
[ $rc = 1 ] && [ ! -e "$tmp/hidden" ] && ! grep -q "$(printf '\033')" "$tmp/n.err" \
    && [ "$(grep -c "^error: line with the control byte 0x" "$tmp/n.err")" = 2 ] \
    && ok || bad "control bytes: exit $rc: $(cat -v "$tmp/n.err")"
has "$tmp/n.out" "compilations: 1" "the session goes on after a refused line"
# values as `run --set` takes them: constant expressions too
printf 'set c=1/3 x=pi/4\nset\n' | "$bin" repl "$knife" >"$tmp/v.out" 2>&1
has "$tmp/v.out" "c=0.33333333333333331 (set)" "set c=1/3"
has "$tmp/v.out" "initial x=0.78539816339744828" "set x=pi/4"
printf 'info\n' | "$bin" repl "$knife" >/dev/null 2>&1
[ $? = 0 ] && ok || bad "a script without failures: exit 0"

# ---- plot before any run; end of input quits --------------------------------
printf 'plot %s/x.svg\ninfo' "$tmp" | "$bin" repl "$knife" >"$tmp/p.out" 2>"$tmp/p.err"
[ $? = 1 ] && ok || bad "session ending without newline or quit (a failed plot: exit 1)"
has "$tmp/p.err" "nothing to plot yet" "plot before run"
has "$tmp/p.out" "compilations: 1" "last line without newline runs"

# ---- reload after the model file changed -------------------------------------
cp "$knife" "$tmp/k.nh"
mkfifo "$tmp/fifo"
"$bin" repl "$tmp/k.nh" <"$tmp/fifo" >"$tmp/r.out" 2>"$tmp/r.err" &
pid=$!
exec 3>"$tmp/fifo"
printf 'set g=2 c=0.5\nshow mass_matrix\nrun 0.5\n' >&3
# Edit the file only once the first model has been derived and shown.
i=0
while ! grep -q '^final:' "$tmp/r.out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
# J/2*phi'^2 -> 3*J/2*phi'^2 (mass matrix entry J -> 3*J); c renamed mu.
sed -i "s|J/2\*phi'^2|3*J/2*phi'^2|; s/ c=0.1/ mu=0.1/; s/-c\*phi'/-mu*phi'/" "$tmp/k.nh"
printf 'reload\nshow mass_matrix\nset\nrun 0.5\ninfo\n' >&3
exec 3>&-
wait $pid
rc=$?
[ "$rc" = 0 ] && ok || bad "reload session exit $rc: $(cat "$tmp/r.err")"
has "$tmp/r.out" "M[phi,phi] = J" "before reload"
has "$tmp/r.out" "M[phi,phi] = 3*J" "after reload the derived mass matrix changed"
has "$tmp/r.out" "dropped setting c (not in the model any more)" "reload drops c"
has "$tmp/r.out" "g=2 (set)" "reload keeps g"
has "$tmp/r.out" "mu=0.1" "the new parameter"
has "$tmp/r.out" "compilations: 2" "reload recompiles once"
# The run after the reload is the new model's under the kept setting.
cp "$tmp/r.out" "$tmp/s.out"
same_final 1 "run before reload" "$knife" --t1 0.5 --set g=2 --set c=0.5
same_final 2 "run after reload" "$tmp/k.nh" --t1 0.5 --set g=2

# A reload that fails keeps the previous model.
cp "$knife" "$tmp/k2.nh"
mkfifo "$tmp/fifo2"
"$bin" repl "$tmp/k2.nh" <"$tmp/fifo2" >"$tmp/r2.out" 2>"$tmp/r2.err" &
pid=$!
exec 3>"$tmp/fifo2"
printf 'info\n' >&3
i=0
while ! grep -q '^compilations' "$tmp/r2.out" 2>/dev/null && [ $i -lt 600 ]; do
    sleep 0.1; i=$((i + 1))
done
echo "lagrangian x'^2 +" >>"$tmp/k2.nh"
printf 'reload\nrun 0.1\n' >&3
exec 3>&-
wait $pid
has "$tmp/r2.err" "k2.nh:" "reload error names the file"
has "$tmp/r2.out" "reload failed: keeping the previous model" "failed reload"
has "$tmp/r2.out" "t = 0.1 after " "runs after a failed reload"

# ---- the command line ----------------------------------------------------------
"$bin" repl --help >"$tmp/h.out" 2>&1 && ok || bad "repl --help"
has "$tmp/h.out" "usage: chetaev repl MODEL" "repl --help"
has "$tmp/h.out" "plot FILE.svg" "repl --help lists the commands"
"$bin" repl </dev/null >/dev/null 2>&1; [ $? = 2 ] && ok || bad "repl without MODEL: exit 2"
"$bin" repl "$tmp/none.nh" </dev/null >/dev/null 2>"$tmp/n.err"; [ $? = 1 ] && ok || bad "missing file: exit 1"
"$bin" repl "$knife" --form nope </dev/null >/dev/null 2>&1; [ $? = 2 ] && ok || bad "repl --form nope: exit 2"
echo 'info' | "$bin" repl "$knife" --form hamilton >"$tmp/f.out" 2>&1
has "$tmp/f.out" "form hamilton" "repl --form hamilton"
"$bin" --help >"$tmp/top.out"
hasnt "$tmp/top.out" "not available" "top-level help"
has "$tmp/top.out" "repl MODEL" "top-level help"

echo "repl: $pass passed, $fail failed"
[ "$fail" = 0 ]
