#!/bin/sh
# Declared integrals as CSV columns of `run` (SPEC §2): last in the header,
# in declared order, in every form; an integral equal to the energy gives
# the column E row for row; an integral that is not conserved changes.
# Usage: integrals.sh CHETAEV
set -u
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# The Chaplygin sleigh held by a spring: E is conserved (linear homogeneous
# constraint, no forces); `drift` is not a first integral.
cat >"$tmp/sleigh.nh" <<'EOF'
model sleigh
coordinates x y th
parameters m=1 J=0.5 a=0.3 k=2
lagrangian m/2*(x'^2 + y'^2) + J/2*th'^2 - k/2*(x^2 + y^2)
constraint -sin(th)*x' + cos(th)*y' - a*th' = 0
dependent th'
integral Eint = m/2*(x'^2 + y'^2) + J/2*th'^2 + k/2*(x^2 + y^2)
integral drift = t*x' + y + th'
initial x=0.1 x'=1 y'=0.3 th'=1
EOF
# k = 0: no optional columns but the integrals (full and reduced forms).
cat >"$tmp/free.nh" <<'EOF'
model free
coordinates u w
parameters c=3
lagrangian (u'^2 + w'^2)/2 - c/2*u^2 - w^4/4
integral Eint = (u'^2 + w'^2)/2 + c/2*u^2 + w^4/4
integral drift = u*w'
initial u=0.5 w=-0.2 w'=1
EOF

# check MODEL FORM WANTED_HEADER
check() {
    if ! "$bin" run "$tmp/$1.nh" --form "$2" --t1 1 --every 100 --method rk4 >"$tmp/out.csv" 2>"$tmp/err"; then
        bad "$1 $2: run failed: $(head -c 300 "$tmp/err")"; return
    fi
    head=$(head -n 1 "$tmp/out.csv")
    if [ "$head" = "$3" ]; then ok; else bad "$1 $2: header '$head', want '$3'"; fi
    # Eint equals E in every row; drift moves; E is conserved.
    res=$(awk -F, '
        NR == 1 { for (i = 1; i <= NF; i++) col[$i] = i; next }
        { e = $col["E"]; g = $col["Eint"]; d = $col["drift"]
          diff = e - g; if (diff < 0) diff = -diff
          if (diff > 1e-12 * (e < 0 ? -e : e)) bad = bad " row" NR
          if (NR == 2) { d0 = d; e0 = e }
          dd = d - d0; if (dd < 0) dd = -dd; if (dd > maxd) maxd = dd
          de = e - e0; if (de < 0) de = -de; if (de > maxe) maxe = de
          rows++ }
        END { printf "%s|%d|%.3g|%.3g", bad, rows, maxd, maxe }' "$tmp/out.csv")
    mismatch=${res%%|*}
    rest=${res#*|}
    rows=${rest%%|*}
    rest=${rest#*|}
    maxd=${rest%%|*}
    maxe=${rest#*|}
    if [ -z "$mismatch" ] && [ "$rows" = 11 ]; then ok; else
        bad "$1 $2: Eint differs from E at$mismatch ($rows rows)"; fi
    if awk -v d="$maxd" -v e="$maxe" 'BEGIN { exit !(d > 1e-2 && e < 1e-9) }'; then ok; else
        bad "$1 $2: drift moved by $maxd (want > 1e-2), E by $maxe (want < 1e-9)"; fi
}

check sleigh full "t,x,y,th,x',y',th',E,phi1,lambda1,R_x,R_y,R_th,Eint,drift"
check sleigh reduced "t,x,y,th,x',y',th',E,lambda1,R_x,R_y,R_th,Eint,drift"
check sleigh hamilton "t,x,y,th,x',y',th',E,y_x,y_y,lambda1,R_x,R_y,R_th,Eint,drift"
check free full "t,u,w,u',w',E,Eint,drift"
check free reduced "t,u,w,u',w',E,Eint,drift"
check free hamilton "t,u,w,u',w',E,y_u,y_w,Eint,drift"

echo "integrals: $pass passed, $fail failed"
[ "$fail" = 0 ]
