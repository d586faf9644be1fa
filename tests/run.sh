#!/bin/sh
# `run` and `emit`: CSV columns and rows (SPEC §2), option errors, exit
# codes, a numerical failure keeping its rows, tcc and cc giving the same
# bytes, and the `emit --driver` program giving the bytes of `run`.
# Usage: run.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
skip=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- ARGS...: exit code and a pattern in stdout+stderr
expect() {
    code=$1 pat=$2
    shift 3
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$code" ]; then
        bad "chetaev $*: exit $rc, want $code: $(head -c 300 "$tmp/err")"; return
    fi
    if ! cat "$tmp/out" "$tmp/err" | grep -q -- "$pat"; then
        bad "chetaev $*: output lacks '$pat'"; return
    fi
    ok
}

# The mandatory CSV header of a model: t, q..., q'..., E (SPEC §2).
header_of() {
    coords=$("$bin" derive "$1" --format json --only coordinates |
             sed -n 's/.*"coordinates": *\[\(.*\)\].*/\1/p' | tr -d '" ')
    primed=$(printf '%s' "$coords" | sed "s/,/',/g; s/\$/'/")
    printf 't,%s,%s,E' "$coords" "$primed"
}

knife=$src/examples/knife_edge.nh

# ---- help and usage errors -------------------------------------------------
expect 0 "usage: chetaev run" -- run --help
expect 0 "usage: chetaev emit" -- emit --help
expect 0 "run MODEL" -- --help
expect 2 "missing MODEL" -- run
expect 2 "missing MODEL" -- emit
expect 2 "unknown form 'lagrange'" -- run "$knife" --form lagrange
expect 2 "unknown form 'lagrange'" -- emit "$knife" --form lagrange
expect 2 "unknown compiler 'clang'" -- run "$knife" --compiler clang
expect 2 "unknown method 'rk45'" -- run "$knife" --method rk45
expect 2 "unknown option '--bogus'" -- run "$knife" --bogus
expect 2 "unknown option '--bogus'" -- emit "$knife" --bogus
expect 2 "needs a value" -- run "$knife" --dt
expect 2 "'abc' is not a finite number" -- run "$knife" --dt abc
expect 2 "positive finite" -- run "$knife" --dt -1
expect 2 "positive integer" -- run "$knife" --every 0
expect 2 "not a C identifier" -- emit "$knife" --prefix 9lives -o "$tmp/e"
expect 2 "--driver needs one form" -- emit "$knife" --form all --driver -o "$tmp/e"
expect 1 "nonexistent.nh" -- run "$tmp/nonexistent.nh"
expect 1 "nonexistent.nh" -- emit "$tmp/nonexistent.nh" -o "$tmp/e"

# ---- --set / --init resolved against the model ------------------------------
expect 2 "unknown parameter 'mass' (parameters: m, J, g, alpha, c)" -- \
    run "$knife" --set mass=2
expect 2 "expects NAME=VALUE" -- run "$knife" --set m
expect 2 "'1.5.2' is not a finite number" -- run "$knife" --set m=1.5.2
expect 2 "'zeta' is not a state variable" -- run "$knife" --init zeta=1
expect 2 "'' is not a finite number" -- run "$knife" --init x=

# --set changes the run, --init the first row.
"$bin" run "$knife" --t1 0.01 >"$tmp/a.csv" 2>"$tmp/err" || bad "knife default run: $(cat "$tmp/err")"
"$bin" run "$knife" --t1 0.01 --set g=1 >"$tmp/b.csv" 2>"$tmp/err" || bad "knife --set g=1"
if cmp -s "$tmp/a.csv" "$tmp/b.csv"; then bad "--set g=1 did not change the run"; else ok; fi
"$bin" run "$knife" --t1 0 --init x=0.25 >"$tmp/c.csv" 2>"$tmp/err" || bad "knife --init"
if [ "$(sed -n 2p "$tmp/c.csv" | cut -d, -f1,2)" = "0,0.25" ]; then ok; else
    bad "--init x=0.25: first row $(sed -n 2p "$tmp/c.csv")"; fi
if [ "$(wc -l <"$tmp/c.csv")" = 2 ]; then ok; else bad "--t1 0: want header + 1 row"; fi

# Every form starts from the same coordinates and velocities: --init sets a
# coordinate or a velocity (momenta follow, with the --set values), and a
# dependent velocity is recomputed from the constraints with a warning.
first=
for form in full reduced hamilton; do
    "$bin" run "$knife" --form "$form" --t1 0 --set m=2 --init phi=0.5 --init "x'=2" \
        >"$tmp/i.csv" 2>"$tmp/err" || { bad "--init in $form: $(cat "$tmp/err")"; continue; }
    row=$(sed -n 2p "$tmp/i.csv" | cut -d, -f1-8)
    case "$row" in
        0,0,0,0.5,2,*) ok ;;
        *) bad "--init phi=0.5 --init x'=2 in $form: first row $row" ;;
    esac
    if [ -z "$first" ]; then first=$row
    elif [ "$row" = "$first" ]; then ok
    else bad "$form starts at $row, full at $first"; fi
    expect 0 "--init y'=1 is recomputed from the constraints as 0" -- \
        run "$knife" --form "$form" --t1 0 --init "y'=1"
done

# ---- every example, every form the emitter supports --------------------------
for model in "$src"/examples/*.nh; do
    want=$(header_of "$model")
    name=$(basename "$model" .nh)
    for form in full reduced hamilton; do
        if ! "$bin" emit "$model" --form "$form" -o "$tmp/emit" >/dev/null 2>&1; then
            skip=$((skip + 1))
            continue
        fi
        # 10 steps, a row every 5: t = 0, 0.005, 0.01.
        if ! "$bin" run "$model" --form "$form" --t1 0.01 --every 5 \
             -o "$tmp/$name.$form.csv" 2>"$tmp/err"; then
            bad "run $name --form $form: $(head -c 300 "$tmp/err")"
            continue
        fi
        got=$(head -n 1 "$tmp/$name.$form.csv")
        case "$got" in
            "$want" | "$want",*) ok ;;
            *) bad "$name $form: header '$got', want '$want[,...]'" ;;
        esac
        rows=$(wc -l <"$tmp/$name.$form.csv")
        if [ "$rows" = 4 ]; then ok; else bad "$name $form: $rows lines, want 4"; fi
        last=$(tail -n 1 "$tmp/$name.$form.csv" | cut -d, -f1)
        if [ "$last" = 0.01 ]; then ok; else bad "$name $form: last t = $last"; fi
        # Every field a finite number, as many fields as header columns.
        if awk -F, 'NR == 1 { n = NF; next }
                    NF != n { exit 1 }
                    { for (i = 1; i <= NF; i++)
                        if ($i !~ /^-?[0-9.]+(e[-+][0-9]+)?$/) exit 1 }' \
               "$tmp/$name.$form.csv"; then ok; else
            bad "$name $form: malformed or non-finite rows"; fi
        # The system compiler gives the same bytes as libtcc.
        "$bin" run "$model" --form "$form" --t1 0.01 --every 5 --compiler cc \
            -o "$tmp/$name.$form.cc.csv" 2>"$tmp/err" || bad "run --compiler cc $name $form"
        if cmp -s "$tmp/$name.$form.csv" "$tmp/$name.$form.cc.csv"; then ok; else
            bad "$name $form: tcc and cc CSV differ"; fi
    done
done
[ "$pass" -gt 40 ] || bad "too few forms ran ($pass checks so far, $skip skipped)"

# --project keeps the full form on the constraints: the residual phi1 (the
# column after E) drifts under Euler without it and stays at rounding level
# with it.
phi1_last() {
    "$bin" run "$knife" --form full --method euler --dt 0.01 --t1 5 "$@" |
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "phi1") c = i }
                 END { v = $c + 0; print (v < 0 ? -v : v) }'
}
drift=$(phi1_last)
kept=$(phi1_last --project)
if awk -v d="$drift" -v k="$kept" 'BEGIN { exit !(d > 1e-4 && k < 1e-12) }'; then ok; else
    bad "--project: |phi1| = $kept with, $drift without"; fi

# ---- emit: files, determinism, --form all -----------------------------------
"$bin" emit "$knife" --form reduced -o "$tmp/e1" 2>"$tmp/err" || bad "emit: $(cat "$tmp/err")"
"$bin" emit "$knife" --form reduced -o "$tmp/e2" 2>/dev/null
if [ -f "$tmp/e1/knife_edge_reduced.h" ] && [ -f "$tmp/e1/knife_edge_reduced.c" ]; then ok; else
    bad "emit did not write knife_edge_reduced.{h,c}"; fi
if diff -r "$tmp/e1" "$tmp/e2" >/dev/null; then ok; else bad "emit is not deterministic"; fi
"$bin" emit "$knife" --prefix skate -o "$tmp/e3" 2>/dev/null
if [ -f "$tmp/e3/skate.h" ] && grep -q "skate_rhs" "$tmp/e3/skate.c"; then ok; else
    bad "--prefix skate"; fi
"$bin" emit "$knife" --form all -o "$tmp/e4" 2>/dev/null || bad "emit --form all"
if [ -f "$tmp/e4/knife_edge_full.c" ] && [ -f "$tmp/e4/knife_edge_reduced.c" ]; then ok; else
    bad "--form all lacks full or reduced"; fi

# ---- emit --driver: cc -O2 DIR/*.c -lm prints the CSV of run ------------------
for model in knife_edge double_pendulum chaplygin_sleigh; do
    for form in full reduced hamilton; do
        d=$tmp/drv.$model.$form
        "$bin" emit "$src/examples/$model.nh" --form "$form" --driver -o "$d" \
            >/dev/null 2>&1 || continue
        if ! cc -O2 -o "$d/prog" "$d"/*.c -lm 2>"$tmp/err"; then
            bad "driver $model $form does not build: $(head -c 300 "$tmp/err")"
            continue
        fi
        "$d/prog" --t1 0.05 --every 7 --method midpoint >"$tmp/drv.csv" 2>"$tmp/err" ||
            bad "driver $model $form failed: $(cat "$tmp/err")"
        "$bin" run "$src/examples/$model.nh" --form "$form" --t1 0.05 --every 7 \
            --method midpoint >"$tmp/run.csv" 2>/dev/null
        if cmp -s "$tmp/drv.csv" "$tmp/run.csv" && [ -s "$tmp/run.csv" ]; then ok; else
            bad "driver $model $form: CSV differs from run"; fi
        # Same option errors and exit codes as run.
        "$d/prog" --set nosuch=1 >/dev/null 2>"$tmp/err"
        if [ $? = 2 ] && grep -q "unknown parameter 'nosuch'" "$tmp/err"; then ok; else
            bad "driver $model $form: --set nosuch=1"; fi
    done
done

# ---- numerical failure: exit 3, t and step named, rows kept ------------------
# The mass c - t = 1 - t vanishes at t = 1, where the last RK4 stage of the step
# from t = 0.75 evaluates the right-hand side.
cat >"$tmp/fading.nh" <<'EOF'
model fading
coordinates x
parameters c=1
lagrangian (c - t)*x'^2/2
initial x=0 x'=1
EOF
for form in full reduced hamilton; do
    "$bin" emit "$tmp/fading.nh" --form "$form" -o "$tmp/ef" >/dev/null 2>&1 || continue
    "$bin" run "$tmp/fading.nh" --form "$form" --dt 0.25 --t1 2 -o "$tmp/f.csv" 2>"$tmp/err"
    rc=$?
    if [ $rc = 3 ]; then ok; else bad "fading $form: exit $rc, want 3: $(cat "$tmp/err")"; fi
    if grep -q "numerical failure at t = 0.75 (step 4)" "$tmp/err"; then ok; else
        bad "fading $form: message '$(cat "$tmp/err")'"; fi
    lines=$(cat "$tmp/f.csv" 2>/dev/null | wc -l)
    if [ "$lines" = 5 ]; then ok; else  # header + t = 0 .. 0.75
        bad "fading $form: $lines lines kept, want 5"; fi
    rm -f "$tmp/f.csv"
done

# ---- a model without parameters (NP = 0) -------------------------------------
cat >"$tmp/free.nh" <<'EOF'
model free
coordinates x
lagrangian x'^2/2 - x^2/2
initial x=1
EOF
for form in full reduced hamilton; do
    "$bin" emit "$tmp/free.nh" --form "$form" -o "$tmp/ef" >/dev/null 2>&1 || continue
    expect 0 "^t,x,x',E" -- run "$tmp/free.nh" --form "$form" --t1 0.01
    expect 2 "unknown parameter 'k' (parameters: none)" -- \
        run "$tmp/free.nh" --form "$form" --set k=1
done

echo "run.sh: $pass passed, $fail failed, $skip forms not emitted"
[ "$fail" = 0 ]
