#!/bin/sh
# examples/embed: emits the knife edge's reduced form into a temporary
# directory, builds examples/embed/main.c against it with strict warnings
# (-std=c99 -pedantic -Werror), runs it and compares its final state with
# the last row of `chetaev run` (same RK4 grid: agreement to rounding).
# Usage: embed.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }
fail=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

"$bin" emit "$src/examples/knife_edge.nh" --form reduced -o "$tmp/gen" \
    || { echo "FAIL: emit"; exit 1; }
gcc -std=c99 -pedantic -Wall -Wextra -Werror -O2 -I"$tmp/gen" \
    "$src/examples/embed/main.c" "$tmp/gen"/*.c -lm -o "$tmp/prog" \
    || { echo "FAIL: the embedding does not build warning-free"; exit 1; }
"$tmp/prog" 2 1e-3 > "$tmp/embed.txt" || bad "the program failed"
"$bin" run "$src/examples/knife_edge.nh" --t1 2 --method rk4 --dt 1e-3 | tail -n 1 > "$tmp/run.csv" \
    || bad "chetaev run failed"
# embed: t x y phi x' phi' E;  run: t,x,y,phi,x',y',phi',E,...
awk 'NR == FNR { for (i = 1; i <= NF; i++) e[i] = $i; next }
     { split($0, r, ",");
       want[1] = r[1]; want[2] = r[2]; want[3] = r[3]; want[4] = r[4];
       want[5] = r[5]; want[6] = r[7]; want[7] = r[8];
       worst = 0;
       for (i = 1; i <= 7; i++) {
           d = e[i] - want[i]; if (d < 0) d = -d;
           s = want[i] < 0 ? -want[i] : want[i]; if (s < 1) s = 1;
           if (d / s > worst) worst = d / s;
       }
       printf "embed vs run: max relative difference %.3g\n", worst;
       exit !(worst <= 1e-12 && e[1] == 2) }' "$tmp/embed.txt" "$tmp/run.csv" \
    || bad "embedded program and chetaev run disagree: $(cat "$tmp/embed.txt") / $(cat "$tmp/run.csv")"
# The program's own error path: a nonsensical step is refused.
"$tmp/prog" 1 -1 >/dev/null 2>&1 && bad "negative dt accepted"
[ $fail -eq 0 ] && echo "embed: ok"
exit $fail
