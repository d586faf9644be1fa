#!/bin/sh
# The command line: help, version, exit codes, formats, --only, errors
# with positions, determinism. Usage: cli.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"

expect 0 "usage: chetaev" -- --help
expect 0 "chetaev 0" -- --version
expect 2 "usage: chetaev" --
expect 0 "--only" -- derive --help
expect 2 "unknown command 'frobnicate'" -- frobnicate
expect 2 "unknown option '--bogus'" -- derive "$src/examples/knife_edge.nh" --bogus
# an unknown option is named as such (its value is no second model file),
# with the closest option when one is within two edits
expect 2 "unknown option '--tend'" -- run "$src/examples/knife_edge.nh" --tend 5
expect 2 "unknown option '--metod' (did you mean --method?)" -- run "$src/examples/knife_edge.nh" --metod rk4
expect 2 "unknown option '--formt' (did you mean --format?)" -- derive "$src/examples/knife_edge.nh" --formt json
expect 2 "unknown format 'html'" -- derive "$src/examples/knife_edge.nh" --format html
expect 2 "missing MODEL" -- derive
expect 2 "needs a value" -- derive "$src/examples/knife_edge.nh" --format
expect 2 "unknown section 'massmatrix'" -- derive "$src/examples/knife_edge.nh" --only massmatrix
expect 1 "nonexistent.nh" -- derive "$tmp/nonexistent.nh"
expect 2 "missing MODEL" -- repl

# A model error is FILE:LINE:COL: error: ... with exit code 1.
printf 'coordinates x\nlagrangian x'"'"'^2/2 + zz\n' > "$tmp/bad.nh"
expect 1 "bad.nh:2:21: error: .*zz" -- derive "$tmp/bad.nh"

# Degenerate Lagrangian and inadmissible constraints (mechanics checks).
printf 'coordinates x y\nlagrangian (x'"'"' + y'"'"')^2/2\n' > "$tmp/degenerate.nh"
expect 1 "degenerate.nh:2:1: error: degenerate Lagrangian" -- derive "$tmp/degenerate.nh"
printf 'coordinates x y z\nlagrangian (x'"'"'^2 + y'"'"'^2 + z'"'"'^2)/2\nconstraint x'"'"' + y'"'"' = 0\nconstraint 2*x'"'"' + 2*y'"'"' = 0\n' > "$tmp/inadm.nh"
expect 1 "inadm.nh:4:1: error: inadmissible constraints" -- derive "$tmp/inadm.nh"

for ex in "$src"/examples/*.nh; do
    name=$(basename "$ex")
    for fmt in text latex sympy json; do
        "$bin" derive "$ex" --format $fmt >"$tmp/a" 2>"$tmp/e" || { bad "$name $fmt: exit $?: $(cat "$tmp/e")"; continue; }
        "$bin" derive "$ex" --format $fmt >"$tmp/b" 2>/dev/null
        if cmp -s "$tmp/a" "$tmp/b" && [ -s "$tmp/a" ]; then ok; else bad "$name $fmt: output not deterministic or empty"; fi
    done
    "$bin" derive "$ex" --format json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert "mass_matrix" in d and "poincare_hamilton" in d' \
        && ok || bad "$name: JSON does not parse or lacks keys"
    "$bin" derive "$ex" --format sympy > "$tmp/s.py" && /usr/bin/python3 "$tmp/s.py" >/dev/null \
        && ok || bad "$name: SymPy script does not run"
done

# --only keeps exactly the named sections, in SPEC order.
"$bin" derive "$src/examples/knife_edge.nh" --format json --only energy,mass_matrix \
    | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); assert list(d) == ["mass_matrix", "energy"], list(d)' \
    && ok || bad "--only selection"

# An expression whose tree exceeds 200 000 nodes (the 4-trailer's momentum
# equation y_x') is a note in text and LaTeX and null in JSON.
/usr/bin/python3 "$src/bench/gen_trailer.py" 4 >"$tmp/trailer4.nh"
expect 0 "y_x' = (too large to print: over 200000 terms written out; see emit)" -- \
    derive "$tmp/trailer4.nh" --only poincare_hamilton
expect 0 "text{(too large to print: over 200000 terms written out; see emit)}" -- \
    derive "$tmp/trailer4.nh" --only poincare_hamilton --format latex
"$bin" derive "$tmp/trailer4.nh" --only poincare_hamilton --format json \
    | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin)["poincare_hamilton"]; assert d["y_t"][0] is None and d["q_t"][0] is not None, d["y_t"][:1]' \
    && ok || bad "too large expression in JSON"

# The cap is 16 n^2 nodes for a model of n coordinates when that is more
# than 200 000: a Lagrangian of 393 000 tree nodes (a chain of 16 nested
# sin(u)*cos(u), shared as a DAG) is null with 100 coordinates and
# written out with 160 (cap 409 600).
for n in 100 160; do
    /usr/bin/python3 -c "
n = $n
print('coordinates ' + ' '.join('q%d' % i for i in range(n)))
print('define u0 = q0 + q1')
for k in range(1, 17): print('define u%d = sin(u%d)*cos(u%d)' % (k, k - 1, k - 1))
print('lagrangian ' + ' + '.join(\"q%d'^2/2\" % i for i in range(n)) + ' - u16')
" >"$tmp/nested$n.nh"
    "$bin" derive "$tmp/nested$n.nh" --only lagrangian --format json \
        | /usr/bin/python3 -c "import json,sys; L=json.load(sys.stdin)['lagrangian']; assert (L is None) == ($n == 100), $n" \
        && ok || bad "print cap scaled with n^2 ($n coordinates)"
done

# Names SymPy reserves (I, E, N, S, Integer; issue 45): the JSON and
# SymPy outputs rename them in expressions (NAME_, longer while taken) and
# say so; read back with SymPy they give the model's expression, never the
# imaginary unit or Euler's number.
printf 'coordinates I E N Integer\nparameters S=1 I_=2\nlagrangian (I'"'"'^2 + E'"'"'^2 + N'"'"'^2 + Integer'"'"'^2)/2 - S*I*E - I_*N^2 + 2*Integer\n' >"$tmp/names.nh"
"$bin" derive "$tmp/names.nh" --format json >"$tmp/names.json" 2>"$tmp/err" &&
"$bin" derive "$tmp/names.nh" --format sympy >"$tmp/names.py" 2>>"$tmp/err" &&
/usr/bin/python3 - "$tmp" <<'PY' && ok || bad "SymPy names: $(cat "$tmp/err")"
import json, runpy, sys
import sympy
tmp = sys.argv[1]
d = json.load(open(tmp + "/names.json"))
assert d["renamed"] == {"I": "I__", "E": "E_", "N": "N_", "Integer": "Integer_", "S": "S_"}, d["renamed"]
S = {n: sympy.Symbol(n) for n in ["I", "E", "N", "Integer", "S", "I_", "I_t", "E_t", "N_t", "Integer_t"]}
want = ((S["I_t"]**2 + S["E_t"]**2 + S["N_t"]**2 + S["Integer_t"]**2) / 2
        - S["S"] * S["I"] * S["E"] - S["I_"] * S["N"]**2 + 2 * S["Integer"])
# the reserved names themselves are not locals (Integer is SymPy's)
loc = {n: s for n, s in S.items() if n not in d["renamed"]}
for name, new in d["renamed"].items():
    loc[new] = S[name]
got = sympy.sympify(d["lagrangian"], locals=loc)
assert sympy.expand(got - want) == 0, got
plain = sympy.sympify(d["lagrangian"])  # no locals: plain symbols only
assert not plain.atoms(sympy.core.numbers.ImaginaryUnit) and sympy.E not in plain.atoms(), plain
script = runpy.run_path(tmp + "/names.py")
assert sympy.expand(script["lagrangian"] - want) == 0, script["lagrangian"]
PY
# a model without such names has no "renamed" key
"$bin" derive "$src/examples/knife_edge.nh" --format json | grep -q '"renamed"' \
    && bad "knife_edge JSON has a renamed key" || ok

# emit writes safely (issue 45): a file it did not write, or a symbolic
# link, is not replaced without --force (a link is then replaced, its
# target untouched); --prefix cannot be a driver file; an invalid model
# creates no folder; a repeated emit replaces its own files.
k=$src/examples/knife_edge.nh
mkdir -p "$tmp/es"
echo "int main(void) { return 0; }" >"$tmp/es/main.c"
"$bin" emit "$k" --driver -o "$tmp/es" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "main.c was not written by chetaev: not replaced (--force replaces it)" "$tmp/err" \
    && [ "$(cat "$tmp/es/main.c")" = "int main(void) { return 0; }" ] && [ ! -e "$tmp/es/integrate.c" ] \
    && ok || bad "emit over a user's main.c: exit $rc: $(cat "$tmp/err")"
"$bin" emit "$k" --driver -o "$tmp/es" --force 2>"$tmp/err" && grep -q "generated by chetaev" "$tmp/es/main.c" \
    && "$bin" emit "$k" --driver -o "$tmp/es" 2>"$tmp/err" && ok || bad "emit --force / again: $(cat "$tmp/err")"
echo keep >"$tmp/target"
rm -f "$tmp/es/integrate.c" && ln -s "$tmp/target" "$tmp/es/integrate.c"
"$bin" emit "$k" --driver -o "$tmp/es" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "integrate.c is a symbolic link: not replaced" "$tmp/err" \
    && ok || bad "emit over a symlink: exit $rc: $(cat "$tmp/err")"
"$bin" emit "$k" --driver -o "$tmp/es" --force 2>"$tmp/err" && [ "$(cat "$tmp/target")" = keep ] \
    && [ ! -L "$tmp/es/integrate.c" ] && ok || bad "emit --force over a symlink followed it"
ls -a "$tmp/es" | grep -q '^\.[a-z].*\.......$' && bad "temporary files left" || ok
for p in main integrate simulate; do
    "$bin" emit "$k" --driver --prefix $p -o "$tmp/ep" 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] && grep -q "is the name of a file of the driver program" "$tmp/err" && [ ! -e "$tmp/ep" ] \
        && ok || bad "--prefix $p --driver: exit $rc"
done
printf 'coordinates x\nlagrangian zz\n' >"$tmp/badm.nh"
"$bin" emit "$tmp/badm.nh" -o "$tmp/eb" 2>/dev/null
rc=$?
[ $rc = 1 ] && [ ! -e "$tmp/eb" ] && ok || bad "invalid model: exit $rc, folder created"

# run -o killed at any moment ends on a whole row (rows go out in whole
# chunks of one write each). Killed once rows have been written (after
# 0.5 s of CPU or 64 KB, which a loaded machine may take more than a
# second of wall time to reach), while it is still writing.
"$bin" run "$k" --method rk4 --dt 1e-4 --t1 1000 -o "$tmp/kill.csv" &
pid=$!
for i in $(seq 100); do [ -s "$tmp/kill.csv" ] && break; sleep 0.1; done
sleep 0.3
kill -9 $pid
wait $pid 2>/dev/null
[ "$(tail -c 1 "$tmp/kill.csv" | od -An -c | tr -d ' ')" = '\n' ] \
    && [ "$(awk -F, '{print NF}' "$tmp/kill.csv" | sort -u)" = 12 ] \
    && ok || bad "run -o killed: the file does not end on a whole row"

# A TMPDIR too long for the cc backend's folder: its reason, not "Success"
long=/tmp/$(/usr/bin/python3 -c "print('a' * 5000)")
echo quit | TMPDIR=$long "$bin" repl "$src/examples/knife_edge.nh" --compiler cc >/dev/null 2>"$tmp/err"
grep -q "cc: cannot create a temporary directory: File name too long" "$tmp/err" \
    && ok || bad "long TMPDIR: $(cat "$tmp/err")"

# An output that cannot be written is exit 2 with a message, never exit 0
# (issue 45): stdout on /dev/full and closed, -o into no folder; also the
# driver program.
k=$src/examples/knife_edge.nh
for args in "--help" "--version" "derive --help" "derive $k" "check $k" "run $k --t1 0.01" \
    "emit --help" "repl $k"; do
    # shellcheck disable=SC2086
    echo quit | "$bin" $args >/dev/full 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] && grep -q "cannot write" "$tmp/err" \
        && ok || bad "$args >/dev/full: exit $rc: $(head -c 200 "$tmp/err")"
    # shellcheck disable=SC2086
    echo quit | "$bin" $args >&- 2>"$tmp/err"
    rc=$?
    [ $rc = 2 ] && ok || bad "$args with stdout closed: exit $rc: $(head -c 200 "$tmp/err")"
done
# a command that writes nothing to a closed stdout (cron) succeeds
"$bin" emit "$k" -o "$tmp/closed" >&- 2>"$tmp/err" && [ -s "$tmp/closed/knife_edge_reduced.c" ] \
    && ok || bad "emit with stdout closed: $(cat "$tmp/err")"
# new files follow the umask; a replaced file keeps its mode
(umask 077 && "$bin" emit "$k" -o "$tmp/um" >/dev/null 2>&1)
[ "$(stat -c %a "$tmp/um/knife_edge_reduced.c")" = 600 ] && chmod 640 "$tmp/um/knife_edge_reduced.c" \
    && "$bin" emit "$k" -o "$tmp/um" >/dev/null 2>&1 \
    && [ "$(stat -c %a "$tmp/um/knife_edge_reduced.c")" = 640 ] \
    && ok || bad "emit modes: $(stat -c %a "$tmp/um/knife_edge_reduced.c")"
"$bin" run "$k" --t1 0.01 -o "$tmp/none/x.csv" 2>"$tmp/err"
rc=$?
[ $rc = 2 ] && grep -q "cannot open '$tmp/none/x.csv'" "$tmp/err" && ok || bad "run -o: exit $rc"
mkdir -p "$tmp/drvfull"
if "$bin" emit "$k" --driver -o "$tmp/drvfull" >/dev/null 2>&1 \
    && cc -O1 -o "$tmp/drvfull/prog" "$tmp"/drvfull/*.c -lm 2>/dev/null; then
    for args in "--help" "--t1 0.01"; do
        # shellcheck disable=SC2086
        "$tmp/drvfull/prog" $args >/dev/full 2>"$tmp/err"
        rc=$?
        [ $rc = 2 ] && grep -q "cannot write" "$tmp/err" \
            && ok || bad "driver $args >/dev/full: exit $rc: $(head -c 200 "$tmp/err")"
    done
else
    bad "driver not built"
fi

# CSV column names are unique in every form: coordinates named E and
# phi1 push the energy and constraint columns to E_ and phi1_ (README
# "Integration").
printf "model dup\ncoordinates E phi1\nlagrangian (E'^2 + phi1'^2)/2\nconstraint E' - phi1' = 0\ninitial E'=1\n" >"$tmp/dup.nh"
for f in full reduced hamilton; do
    head=$("$bin" run "$tmp/dup.nh" --form $f --t1 0.01 2>/dev/null | head -1)
    n=$(printf '%s\n' "$head" | tr ',' '\n' | sort | uniq -d | wc -l)
    case "$head" in
        *",E_,"*) [ "$n" = 0 ] && ok || bad "$f: duplicate columns in $head" ;;
        *) bad "$f: no E_ column in '$head'" ;;
    esac
done

echo "cli: $pass passed, $fail failed"
[ "$fail" = 0 ]
