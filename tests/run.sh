#!/bin/sh
# `run` and `emit`: CSV columns and rows (SPEC §2), option errors, exit
# codes, a numerical failure keeping its rows, tcc and cc giving the same
# bytes, and the `emit --driver` program giving the bytes of `run`.
# Usage: run.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"
skip=0

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
expect 2 "unknown method 'rk5'" -- run "$knife" --method rk5
expect 2 "unknown option '--bogus'" -- run "$knife" --bogus
expect 2 "unknown option '--bogus'" -- emit "$knife" --bogus
expect 2 "needs a value" -- run "$knife" --dt
expect 2 "'abc' is not a finite number" -- run "$knife" --dt abc
expect 2 "'-1' is not positive" -- run "$knife" --dt -1
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
# values may be constant expressions of the model language
"$bin" run "$knife" --t1 0 --init "x=pi/2" --init "y=2*atan2(1,1)-sqrt(4)^2/4" --set "c=1/3" \
    >"$tmp/d.csv" 2>"$tmp/err" || bad "knife --init x=pi/2: $(cat "$tmp/err")"
if [ "$(sed -n 2p "$tmp/d.csv" | cut -d, -f1,2,3)" = "0,1.5707963267948966,0.57079632679489656" ]
then ok; else bad "--init x=pi/2: first row $(sed -n 2p "$tmp/d.csv")"; fi
expect 2 "'pi/2x' is not a finite number or constant expression" -- run "$knife" --init "x=pi/2x"
expect 2 "'atan2(1)' is not a finite number" -- run "$knife" --set "c=atan2(1)"
# nesting is bounded as in the language (no stack overflow on a long argument)
deep=$(awk 'BEGIN { for (i = 0; i < 20000; i++) printf "("; printf "1"; for (i = 0; i < 20000; i++) printf ")" }')
expect 2 "run: --set c=((((" -- run "$knife" --set "c=$deep"

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

# ---- the model's initial state (SPEC §1) -------------------------------------
# A pendulum 0.85 mm outside its circle x^2 + y^2 = 1 along the ray through
# (0.6, -0.8): the closest point is that one (radial projection), which
# every command reports with the same warnings, and y' = 0.5 is recomputed
# from the velocity-level constraint as -x x'/y = 0.6. Each line exactly.
cat >"$tmp/pend_off.nh" <<'EOF'
coordinates x y
parameters m=1 g=9.81 l=1
lagrangian m/2*(x'^2 + y'^2) - m*g*y
constraint x^2 + y^2 = l^2
initial x=0.60051 y=-0.80068 x'=0.8 y'=0.5
EOF
cat >"$tmp/pend_off.want" <<EOF
$tmp/pend_off.nh:5:1: warning: the initial state violates holonomic constraint 1 (residual 0.0017): coordinates are moved onto it
$tmp/pend_off.nh:5:1: warning: initial x=0.60051 is moved to 0.6 (by -0.00051) onto holonomic constraint 1
$tmp/pend_off.nh:5:1: warning: initial y=-0.80068 is moved to -0.7999999999999999 (by 0.00068) onto holonomic constraint 1
$tmp/pend_off.nh:5:1: warning: initial y'=0.5 is recomputed from the constraints as 0.6
EOF
for cmd in "run --form full --t1 0" "run --form reduced --t1 0" "run --form hamilton --t1 0" \
           "emit --form full -o $tmp/po" "derive --only energy"; do
    # shellcheck disable=SC2086
    "$bin" $cmd "$tmp/pend_off.nh" >"$tmp/out" 2>"$tmp/err" || { bad "$cmd pend_off: exit $?"; continue; }
    if cmp -s "$tmp/err" "$tmp/pend_off.want"; then ok; else
        bad "$cmd pend_off: stderr '$(cat "$tmp/err")'"; fi
done
# The first row is on the circle, at (0.6, -0.8) to rounding, with the
# recomputed velocity; the residual column g1 is at rounding level.
for form in full reduced hamilton; do
    "$bin" run "$tmp/pend_off.nh" --form "$form" --t1 0 >"$tmp/po.csv" 2>/dev/null
    awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        { dx = $c["x"] - 0.6; dy = $c["y"] + 0.8; dv = $c["y'\''"] - 0.6; g = $c["g1"]
          if (!("g1" in c) || dx * dx + dy * dy > 1e-24 || dv * dv > 1e-24 || g * g > 1e-24) exit 1 }' \
        "$tmp/po.csv" && ok || bad "pend_off $form first row: $(cat "$tmp/po.csv")"
done
# A consistent initial state gives no warning at all.
"$bin" run "$src/examples/pendulum_xy.nh" --t1 0 >/dev/null 2>"$tmp/err"
if [ ! -s "$tmp/err" ]; then ok; else bad "pendulum_xy warns: $(cat "$tmp/err")"; fi
# --set l=2 and --init x=0.7 give states off the circle: state_from moves
# them onto it (least kinetic-energy norm, here Euclidean: radially), with
# the runtime's warning; l = 2 scales (0.6, -0.8) to (1.2, -1.6), and
# (0.7, -0.8) goes to (0.7, -0.8)/|(0.7, -0.8)|. The driver does the same.
pxy=$src/examples/pendulum_xy.nh
for form in full reduced hamilton; do
    "$bin" run "$pxy" --form "$form" --t1 0 --set l=2 >"$tmp/l2.csv" 2>"$tmp/err"
    if [ "$(cat "$tmp/err")" = "chetaev run: warning: x=0.59999999999999998 is moved to 1.1999999999999997 onto the holonomic constraints; y=-0.80000000000000004 is moved to -1.6000000000000001 onto the holonomic constraints" ]
    then ok; else bad "--set l=2 $form: $(cat "$tmp/err")"; fi
    "$bin" run "$pxy" --form "$form" --t1 0 --init x=0.7 >"$tmp/x7.csv" 2>"$tmp/err"
    grep -q "warning: --init x=0.69999999999999996 is moved to 0.658504607868518.* onto the holonomic constraints; y=-0.80000000000000004 is moved to" "$tmp/err" \
        && ok || bad "--init x=0.7 $form: $(cat "$tmp/err")"
    awk -F, 'NR == 2 { r = sqrt(0.7 * 0.7 + 0.8 * 0.8); dx = $2 - 0.7 / r; dy = $3 + 0.8 / r
                       if (dx * dx + dy * dy > 1e-26) exit 1 }' "$tmp/x7.csv" \
        && ok || bad "--init x=0.7 $form: not the radial projection: $(sed -n 2p "$tmp/x7.csv")"
    awk -F, 'NR == 2 { dx = $2 - 1.2; dy = $3 + 1.6; if (dx * dx + dy * dy > 1e-26) exit 1 }' "$tmp/l2.csv" \
        && ok || bad "--set l=2 $form: $(sed -n 2p "$tmp/l2.csv")"
done
"$bin" emit "$pxy" --form reduced -o "$tmp/pxyd" --driver >/dev/null 2>&1 &&
    cc -O2 "$tmp"/pxyd/*.c -lm -o "$tmp/pxyd/prog" 2>"$tmp/err" &&
    "$tmp/pxyd/prog" --t1 0 --set l=2 >"$tmp/l2d.csv" 2>"$tmp/err" &&
    grep -q "warning: x=0.59999999999999998 is moved to 1.1999999999999997" "$tmp/err" &&
    "$bin" run "$pxy" --t1 0 --set l=2 2>/dev/null | cmp -s - "$tmp/l2d.csv" \
    && ok || bad "driver --set l=2: $(cat "$tmp/err")"
# A dependent velocity alone (knife edge, y' = tan(phi) x' = 0): recomputed
# with the warning of SPEC §1, in the repl too.
sed "s/^initial.*/initial x=0 y=0 phi=0 x'=1 y'=0.25 phi'=0.3/" "$knife" >"$tmp/knife_y.nh"
expect 0 "knife_y.nh:[0-9]*:1: warning: initial y'=0.25 is recomputed from the constraints as 0\$" -- \
    run "$tmp/knife_y.nh" --t1 0
# Implicit alpha (exp(z' - c |v|) = 1, solved by Newton): z' = c |v| =
# 0.5 * 5 for x' = 3, y' = 4; the example's own z' = 3 sqrt(2) is right.
sed "s/^initial.*/initial x=0 y=0 z=0 x'=3 y'=4 z'=1/" "$src/examples/exp_constraint.nh" >"$tmp/expc.nh"
expect 0 "expc.nh:[0-9]*:1: warning: initial z'=1 is recomputed from the constraints as 2.5\$" -- \
    run "$tmp/expc.nh" --t1 0 --form full
"$bin" run "$src/examples/exp_constraint.nh" --t1 0 >/dev/null 2>"$tmp/err"
if [ ! -s "$tmp/err" ]; then ok; else bad "exp_constraint warns: $(cat "$tmp/err")"; fi
printf 'quit\n' | "$bin" repl "$tmp/knife_y.nh" >/dev/null 2>"$tmp/err"
if grep -q "warning: initial y'=0.25 is recomputed from the constraints as 0\$" "$tmp/err"; then ok; else
    bad "repl does not warn: $(cat "$tmp/err")"; fi
# Refused (exit 1, at `initial`): no gradient at the origin, and a circle
# of negative squared radius that no Newton step reaches.
sed 's/^initial.*/initial x=0 y=0/' "$tmp/pend_off.nh" >"$tmp/pend_0.nh"
expect 1 "pend_0.nh:5:1: error: the initial state violates holonomic constraint 1 (largest residual -1) and cannot be moved onto it: the constraints' gradient is singular there" -- \
    run "$tmp/pend_0.nh"
sed 's/^initial.*/initial x=0.1 y=0.2/; s/= l^2/= -l^2/' "$tmp/pend_off.nh" >"$tmp/pend_neg.nh"
expect 1 "pend_neg.nh:5:1: error: the initial state violates holonomic constraint 1 (largest residual 1.05) and cannot be moved onto it: Newton's method does not converge" -- \
    emit "$tmp/pend_neg.nh" -o "$tmp/pn"
# Coordinates that `initial` does not give move first: on the paraboloid
# z = x^2 + y^2 with x and y given, z alone moves, from 0 to 0.25.
cat >"$tmp/bowl.nh" <<'EOF'
coordinates x y z
parameters m=1 g=9.81
lagrangian m/2*(x'^2 + y'^2 + z'^2) - m*g*z
constraint z = x^2 + y^2
initial x=0.3 y=0.4 x'=1
EOF
expect 0 "bowl.nh:5:1: warning: initial z=0 is moved to 0.25 (by 0.25) onto holonomic constraint 1" -- \
    run "$tmp/bowl.nh" --t1 0
if grep -q "initial [xy]=" "$tmp/err"; then bad "given coordinates moved: $(cat "$tmp/err")"; else ok; fi

# ---- every example, every form the emitter supports --------------------------
for model in "$src"/examples/*.nh; do
    want=$(header_of "$model")
    name=$(basename "$model" .nh)
    for form in full reduced hamilton; do
        # Every example has all three forms (the hamilton form inverts the
        # Legendre map numerically where H* has no closed form).
        if ! "$bin" emit "$model" --form "$form" -o "$tmp/emit" >/dev/null 2>"$tmp/err"; then
            bad "emit $name --form $form: $(head -c 300 "$tmp/err")"
            skip=$((skip + 1))
            continue
        fi
        # 10 rk4 steps, a row every 5: t = 0, 0.005, 0.01.
        if ! "$bin" run "$model" --form "$form" --t1 0.01 --every 5 --method rk4 \
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
        "$bin" run "$model" --form "$form" --t1 0.01 --every 5 --method rk4 --compiler cc \
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
# from t = 0.75 evaluates the right-hand side (fixed steps; the adaptive
# methods are tested in numfail.sh and adaptive.py).
cat >"$tmp/fading.nh" <<'EOF'
model fading
coordinates x
parameters c=1
lagrangian (c - t)*x'^2/2
initial x=0 x'=1
EOF
for form in full reduced hamilton; do
    "$bin" emit "$tmp/fading.nh" --form "$form" -o "$tmp/ef" >/dev/null 2>&1 || continue
    "$bin" run "$tmp/fading.nh" --form "$form" --method rk4 --dt 0.25 --t1 2 -o "$tmp/f.csv" 2>"$tmp/err"
    rc=$?
    if [ $rc = 3 ]; then ok; else bad "fading $form: exit $rc, want 3: $(cat "$tmp/err")"; fi
    if grep -q "numerical failure at t = 0.75 (step 4)" "$tmp/err"; then ok; else
        bad "fading $form: message '$(cat "$tmp/err")'"; fi
    lines=$(cat "$tmp/f.csv" 2>/dev/null | wc -l)
    if [ "$lines" = 5 ]; then ok; else  # header + t = 0 .. 0.75
        bad "fading $form: $lines lines kept, want 5"; fi
    rm -f "$tmp/f.csv"
done

# The Legendre map of L = sqrt(1 + x'^2) covers only |y| < 1: the force
# drives y = 3t out of it, and at the second stage of the step from
# t = 0.25 (y = 1.125) the numeric inversion in the hamilton form fails.
cat >"$tmp/bounded.nh" <<'EOF'
model bounded
coordinates x
lagrangian sqrt(1 + x'^2)
force x = 3
initial x=0 x'=0
EOF
"$bin" run "$tmp/bounded.nh" --form hamilton --method rk4 --dt 0.25 --t1 2 -o "$tmp/f.csv" 2>"$tmp/err"
rc=$?
if [ $rc = 3 ]; then ok; else bad "bounded hamilton: exit $rc, want 3: $(cat "$tmp/err")"; fi
if grep -q "numerical failure at t = 0.25 (step 2)" "$tmp/err"; then ok; else
    bad "bounded hamilton: message '$(cat "$tmp/err")'"; fi
lines=$(cat "$tmp/f.csv" 2>/dev/null | wc -l)
if [ "$lines" = 3 ]; then ok; else bad "bounded hamilton: $lines lines kept, want 3"; fi
if [ "$(sed -n 3p "$tmp/f.csv" | cut -d, -f1)" = 0.25 ]; then ok; else
    bad "bounded hamilton: last row $(sed -n 3p "$tmp/f.csv")"; fi
rm -f "$tmp/f.csv"

# ---- numeric Legendre inversion and numeric reduced solves: forms agree ------
# Hamilton without a closed-form H*: a 6-link chain (m = 6 is beyond the
# symbolic H*: one linear solve), a Lagrangian quartic in the velocities
# with a gyroscopic term, and an implicit alpha with L* not quadratic (both
# damped Newton). The reduced form by numeric solves: the 3-trailer (G_d
# triangular; with and without a moving belt) and three coupled
# constraints (G_d solved by LU). State at
# t = 1, rk4, dt = 1e-4: scaled differences below 1e-8.
/usr/bin/python3 "$src/bench/gen_chain.py" 6 >"$tmp/chain6.nh"
/usr/bin/python3 "$src/bench/gen_trailer.py" 3 >"$tmp/trailer3.nh"
# the same with a moving belt under the second trailer (affine and time-
# dependent): its alpha is not -(G_d^-1 G_i) u (emit_c.c alpha_linear)
sed -e 's/model trailer3/model belt3/' \
    -e "s/\(constraint -sin(th2)\*x2' + cos(th2)\*y2'\) = 0/\1 = 0.3*cos(t)/" \
    "$tmp/trailer3.nh" >"$tmp/belt3.nh"
cat >"$tmp/coupled.nh" <<'EOF'
model coupled
coordinates x y z u w
parameters k=1
lagrangian (x'^2 + 2*y'^2 + z'^2 + u'^2 + w'^2)/2 - k*(x^2 + y^2)/2
constraint cos(x)*u' + sin(y)*w' + 2*z' = x'
constraint sin(x)*u' - cos(y)*w' + z' = y'
constraint 3*u' + w' + cos(z)*z' = 0
dependent u' w' z'
initial x=0.1 y=0.2 x'=1 y'=0.5
EOF
cat >"$tmp/quartic.nh" <<'EOF'
model quartic
coordinates x y
parameters b=0.7 k=2
lagrangian (x'^2 + y'^2)/2 + b/4*(x'^2 + y'^2)^2 - k/2*(x^2 + y^2) + x*y'
initial x=0.3 x'=1.6 y'=-0.5
EOF
cat >"$tmp/impl.nh" <<'EOF'
model impl
coordinates x y z
parameters g=9.81 c=0.3
lagrangian (x'^2 + y'^2 + z'^2)/2 + x'^4/12 - g*z
constraint z' + z'^3/3 = c*x' + y*x'^2
dependent z'
initial x=0.1 y=0.2 x'=1 y'=0.5
EOF
for model in chain6 quartic impl; do
    "$bin" emit "$tmp/$model.nh" --form hamilton -o "$tmp/eh" >/dev/null 2>&1
    if grep -q "Legendre map inverted numerically" "$tmp/eh/${model}_hamilton.c"; then ok; else
        bad "$model: hamilton form not on the numeric path"; fi
done
# kn_acc's paths: the n-trailer's solve done on the expressions
# (substituted), numeric solves with a triangular G_d and with LU
cp "$src/examples/chaplygin_sleigh.nh" "$tmp/chaplygin_sleigh.nh"
for model in trailer3:substituted:triangular belt3:substituted:triangular \
    chaplygin_sleigh:numeric:triangular coupled:numeric:LU; do
    how=${model##*:} model=${model%:*} kind=${model#*:} model=${model%:*}
    "$bin" emit "$tmp/$model.nh" --form reduced -o "$tmp/eh" >/dev/null 2>&1
    if grep -q "independent accelerations: $kind.*$how" "$tmp/eh/${model}_reduced.c"; then ok; else
        bad "$model: reduced form not by the $kind path ($how)"; fi
done
# the 3-trailer's Lagrangian is a sum of squared velocities: A and f from
# its Kane form (kane.h; the forms agree below)
if grep -q "substituted M\* (Kane form)" "$tmp/eh/trailer3_reduced.c"; then ok; else
    bad "trailer3: reduced form not from the Kane form"; fi
# candidates that cannot win are not refined: on the 30-trailer the
# numeric solve alone costs more than the substituted way, and the plain
# symbolic program has 9.5 times its operations (SYM_FACTOR_GAIN)
/usr/bin/python3 "$src/bench/gen_trailer.py" 30 >"$tmp/trailer30.nh"
"$bin" emit "$tmp/trailer30.nh" --form reduced -o "$tmp/eh" >/dev/null 2>&1
if grep -q "independent accelerations: substituted.*values unfactored.*symbolic.*: [0-9]*, not factored" \
    "$tmp/eh/trailer30_reduced.c"; then ok; else
    bad "trailer30: a candidate that cannot win was refined"; fi
# a form's file does not depend on the forms emitted with it (the forms
# share one context, whose node ids order the sums)
for model in trailer3 chain6 coupled; do
    "$bin" emit "$tmp/$model.nh" --form all -o "$tmp/fa.$model" >/dev/null 2>&1
    for form in full reduced hamilton; do
        "$bin" emit "$tmp/$model.nh" --form "$form" -o "$tmp/fo.$model" >/dev/null 2>&1
        if [ -s "$tmp/fo.$model/${model}_$form.c" ] &&
            cmp -s "$tmp/fa.$model/${model}_$form.c" "$tmp/fo.$model/${model}_$form.c"; then ok; else
            bad "$model: --form all and --form $form write different ${model}_$form.c"; fi
    done
done
for model in chain6 quartic impl trailer3 belt3 coupled; do
    for form in full reduced hamilton; do
        "$bin" run "$tmp/$model.nh" --form "$form" --method rk4 --dt 1e-4 --t1 1 \
            --every 10000 >"$tmp/$model.$form.csv" 2>"$tmp/err" ||
            bad "$model $form: $(head -c 300 "$tmp/err")"
    done
    # t, coordinates and velocities of the last row (the columns before E)
    for form in full reduced hamilton; do
        awk -F, 'NR == 1 { for (i = 1; i <= NF; i++) if ($i == "E") e = i; next }
                 { r = $1; for (i = 2; i < e; i++) r = r "," $i; last = r }
                 END { print last }' "$tmp/$model.$form.csv" >"$tmp/$model.$form.state"
    done
    worst=$(cat "$tmp/$model.full.state" "$tmp/$model.reduced.state" \
                "$tmp/$model.hamilton.state" | awk -F, '
        NR == 1 { n = NF } NF != n || $1 != 1 { bad = 1 }
        { for (i = 2; i <= NF; i++) v[NR, i] = $i }
        END { if (bad || NR != 3) { print "mismatch"; exit }
              for (r = 1; r <= 3; r += 2) for (i = 2; i <= n; i++) {
                  a = v[r, i]; b = v[2, i]; d = a - b; d = d < 0 ? -d : d
                  s = a < 0 ? -a : a; t = b < 0 ? -b : b; if (t > s) s = t
                  d /= 1 + s; if (d > w) w = d }
              print w + 0 }')
    if awk -v w="$worst" 'BEGIN { exit !(w != "" && w < 1e-8) }'; then ok; else
        bad "$model: forms differ by $worst at t = 1"; fi
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
