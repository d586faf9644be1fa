#!/bin/sh
# Resource limits (issue 7): every limit of the parser and of the
# derivation gives exit code 1 and a positioned message naming the limit,
# never a crash, a hang or a stack overflow. Usage: limits.sh CHETAEV
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN ARGS...: exit code and a pattern (grep -E) on stderr
# ("-": stderr empty), nothing on stdout when the code is not 0; 60 s at
# most.
expect() {
    code=$1 pat=$2
    shift 2
    timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$code" ]; then
        bad "chetaev $*: exit $rc, want $code: $(head -c 300 "$tmp/err")"; return
    fi
    if [ "$pat" = - ] && [ -s "$tmp/err" ]; then
        bad "chetaev $*: unexpected stderr: $(head -c 300 "$tmp/err")"; return
    fi
    if [ "$pat" != - ] && ! grep -Eq -- "$pat" "$tmp/err"; then
        bad "chetaev $*: stderr lacks '$pat': $(head -c 300 "$tmp/err")"; return
    fi
    if [ "$code" != 0 ] && [ -s "$tmp/out" ]; then
        bad "chetaev $*: output on stdout despite the error"; return
    fi
    ok
}

# ---- nesting depth: 100 000 levels, each kind of recursion -----------------
gen() { $py -c "$1" >"$tmp/$2.nh"; }
gen "print('coordinates x'); print('lagrangian ' + '('*100000 + 'x\'' + ')'*100000)" parens
expect 1 "parens.nh:2:212: error: expression nested too deeply \(max 200 levels\)" derive "$tmp/parens.nh"
gen "print('coordinates x'); print('lagrangian x\'^2 + ' + '('*100000)" parens_open
expect 1 "parens_open.nh:2:[0-9]+: error: expression nested too deeply" derive "$tmp/parens_open.nh"
gen "print('coordinates x'); print('lagrangian x\'^2 + ' + '-'*100000 + 'x')" unary
expect 1 "unary.nh:2:[0-9]+: error: expression nested too deeply" derive "$tmp/unary.nh"
gen "print('coordinates x'); print('lagrangian x\'^2' + '^x'*100000)" power
expect 1 "power.nh:2:[0-9]+: error: expression nested too deeply" derive "$tmp/power.nh"
gen "print('coordinates x'); print('lagrangian x\'^2 + ' + 'sin('*100000 + 'x' + ')'*100000)" calls
expect 1 "calls.nh:2:[0-9]+: error: expression nested too deeply" derive "$tmp/calls.nh"
# A chain of defines nests without parentheses: the DAG height is bounded.
gen "
print('coordinates x')
print('define d0 = sin(x)')
for i in range(1, 2000): print('define d%d = sin(d%d)' % (i, i - 1))
print('lagrangian x\'^2/2 - d1999')" defines
expect 1 "defines.nh:[0-9]+:[0-9]+: error: expression too deep \(depth [0-9]+, max 1000\)" derive "$tmp/defines.nh"

# ---- node budget during the derivation (--max-nodes) -------------------------
cat >"$tmp/grow.nh" <<'NH'
# Nested defines whose derivatives grow quickly.
coordinates x y
define a = sin(x*y)*cos(x+y)
define b = sin(a*x)*cos(a+y)
define c = sin(b*a)*cos(b+x)
define e = sin(c*b)*cos(c+a)
lagrangian x'^2/2 + y'^2/2 - e
constraint x' - c*y' = 0
NH
expect 0 - derive "$tmp/grow.nh"
expect 0 - derive "$tmp/grow.nh" --max-nodes 0
# The statement that caused it is named, with its position.
expect 1 "grow.nh:7:1: error: expression size limit of 100 nodes exceeded \(deriving from the 'lagrangian' statement; see --max-nodes\)" \
    derive "$tmp/grow.nh" --max-nodes 100
expect 1 "grow.nh:8:1: error: .*expression size limit of 300 nodes exceeded \(deriving from the 'constraint 1' statement" \
    check "$tmp/grow.nh" --max-nodes=300
# Hitting the budget deep inside a large DAG stops the derivation at once:
# the 100-trailer with a quarter of the nodes it needs once ran for hours
# (failed subexpressions are not memoized, so every parent visited its
# shared children again).
"$py" "$(dirname "$0")/../bench/gen_trailer.py" 100 >"$tmp/trailer100.nh"
expect 1 "trailer100.nh:[0-9]+:1: error: .*expression size limit of 300000 nodes exceeded" \
    derive "$tmp/trailer100.nh" --max-nodes 300000
# Already while parsing: at the token.
expect 1 "grow.nh:[3-6]:[0-9]+: error: expression size limit of 20 nodes exceeded at '" \
    derive "$tmp/grow.nh" --max-nodes 20
# Any budget: success, or a limit error naming the file (and the place
# when the derivation hit it; code generation names the file only).
for cmd in emit run; do
    okn=0 limn=0
    for n in 100 200 300 400 500 600 700 800 900 1000 1200 1400 1600 1800 2000 2500 3000 4000; do
        if [ $cmd = emit ]; then
            timeout 60 "$bin" emit "$tmp/grow.nh" --max-nodes $n --form all -o "$tmp/em" >/dev/null 2>"$tmp/err"
        else
            timeout 60 "$bin" run "$tmp/grow.nh" --max-nodes $n --form full --t1 0.002 >/dev/null 2>"$tmp/err"
        fi
        rc=$?
        if [ $rc = 0 ]; then
            okn=$((okn + 1))
        elif [ $rc = 1 ] && grep -Eq "^$tmp/grow.nh(:[0-9]+:[0-9]+)?: error: .*expression (size )?limit" "$tmp/err"; then
            limn=$((limn + 1))
        else
            bad "$cmd --max-nodes $n: exit $rc: $(head -c 300 "$tmp/err")"
        fi
    done
    [ $okn -gt 0 ] && [ $limn -gt 0 ] && ok || bad "$cmd: $okn budgets succeed, $limn fail: want some of each"
done
expect 0 - emit "$tmp/grow.nh" --max-nodes 100000 -o "$tmp/em"
for v in abc -1 "" 1e3 12x; do
    expect 2 "--max-nodes needs a number of nodes" derive "$tmp/grow.nh" --max-nodes "$v"
done
expect 2 "--max-nodes needs a number" derive "$tmp/grow.nh" --max-nodes

# ---- file size: 4 MiB --------------------------------------------------------
gen "
import sys
sys.stdout.write('coordinates x\nlagrangian x\'^2\n' + ('#' + 'a' * 99 + '\n') * 42000)" big
expect 1 "big.nh: error: file too large \(more than 4194304 bytes\)" derive "$tmp/big.nh"
# Just below the limit is fine.
gen "
import sys
head = 'coordinates x\nlagrangian x\'^2\n'
sys.stdout.write(head + '#' * (4194304 - len(head) - 1) + '\n')" edge
expect 0 - derive "$tmp/edge.nh" --only energy

# ---- identifier length: 64 bytes ---------------------------------------------
gen "print('coordinates x ' + 'a' * 64); print('lagrangian x\'^2 + ' + 'a' * 64 + '\'^2')" id64
expect 0 - derive "$tmp/id64.nh" --only energy
gen "print('coordinates x ' + 'a' * 65); print('lagrangian x\'^2')" id65
expect 1 "id65.nh:1:15: error: identifier 'a{16}\.\.\.' is too long \(65 bytes, max 64\)" derive "$tmp/id65.nh"
gen "print('coordinates x'); print('lagrangian x\'^2 + ' + 'b' * 100000)" id100k
expect 1 "id100k.nh:2:[0-9]+: error: identifier 'b{16}\.\.\.' is too long \(100000 bytes, max 64\)" derive "$tmp/id100k.nh"
gen "print('model ' + 'm' * 65); print('coordinates x'); print('lagrangian x\'^2')" model65
expect 1 "model65.nh:1:7: error: identifier .* is too long" derive "$tmp/model65.nh"

# ---- numbers: 4000 digits, exponents within 10^+-4000 --------------------------
gen "print('coordinates x'); print('parameters k=1.' + '3' * 3998); print('lagrangian x\'^2 - k*x^2')" digits4000
expect 0 - derive "$tmp/digits4000.nh" --only energy
gen "print('coordinates x'); print('parameters k=1.' + '3' * 4000); print('lagrangian x\'^2 - k*x^2')" digits4001
expect 1 "digits4001.nh:2:14: error: number '1\.3{38}' is out of range" derive "$tmp/digits4001.nh"
gen "print('coordinates x'); print('lagrangian x\'^2 - 1e4001*x^2')" exp4001
expect 1 "exp4001.nh:2:19: error: number '1e4001' is out of range" derive "$tmp/exp4001.nh"

# ---- constants of the equations beyond double (issue 45): never HUGE_VAL or 0
for c in "10^400" "10^-400" "(10^200)^2"; do
    printf 'coordinates x\nlagrangian x'"'"'^2/2 + %s*x\n' "$c" >"$tmp/const.nh"
    for cmd in emit run; do
        expect 1 "const.nh: error: a constant of the equations, about 1e[+-]400, is beyond the range of double" \
            $cmd "$tmp/const.nh" $([ $cmd = emit ] && echo "-o $tmp/ce")
    done
done
# inside sums: a constant term, a coefficient
for f in "sin(x) + 10^400" "10^-400*sin(x) + y"; do
    printf 'coordinates x y\nlagrangian (x'"'"'^2 + y'"'"'^2)/2\nforce x = %s\n' "$f" >"$tmp/const.nh"
    expect 1 "const.nh: error: a constant of the equations, about 1e[+-]400, is beyond the range of double" \
        emit "$tmp/const.nh" --form full -o "$tmp/ce"
done
printf 'coordinates x\nlagrangian x'"'"'^2/2 + 10^300*x^2 - 10^300*x^2 + 10^-300*x\n' >"$tmp/const.nh"
expect 0 - emit "$tmp/const.nh" -o "$tmp/ce"

# ---- a model path that is not a regular file: refused at once (issue 45)
mkfifo "$tmp/fifo.nh"
for cmd in derive run check repl; do
    expect 1 "fifo.nh: error: cannot read: not a regular file" $cmd "$tmp/fifo.nh"
done
expect 1 "error: cannot read: a directory, not a model file" derive "$tmp"

# ---- number of coordinates: 1000 ---------------------------------------------
gen "print('coordinates ' + ' '.join('q%d' % i for i in range(1001))); print('lagrangian q0\'^2')" coords
expect 1 "coords.nh:1:4903: error: too many coordinates \(max 1000\)" derive "$tmp/coords.nh"
gen "print('coordinates ' + ' '.join('q%d' % i for i in range(100))); print('lagrangian ' + ' + '.join('q%d\'^2' % i for i in range(100)))" coords100
expect 0 - derive "$tmp/coords100.nh" --only energy

echo "limits: $pass passed, $fail failed"
[ "$fail" = 0 ]
