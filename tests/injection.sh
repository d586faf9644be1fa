#!/bin/sh
# Injection safety (issue 7): nothing in a model file reaches emitted C or
# the JIT except through the whitelist. Names colliding with C keywords are
# refused; names colliding with libc, math.h macros or the emitted helpers
# (main, memcpy, NAN, x0, p, rhs, NX, w0, main_reduced_rhs ...) appear only
# inside string literals: renaming them leaves the code tokens unchanged,
# and the code compiles with gcc -Werror and tcc and runs. Comments of the
# model never reach the C; non-ASCII and control bytes are errors.
# Usage: injection.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=/usr/bin/python3
tok="$py $src/tests/injection/ctokens.py"
hostile=$src/tests/injection/hostile_names.nh
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN ARGS...: exit code and a pattern (grep -E) on stderr.
expect() {
    code=$1 pat=$2
    shift 2
    timeout 60 "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$code" ]; then
        bad "chetaev $*: exit $rc, want $code: $(head -c 300 "$tmp/err")"; return
    fi
    if ! grep -Eq -- "$pat" "$tmp/err"; then
        bad "chetaev $*: stderr lacks '$pat': $(head -c 300 "$tmp/err")"; return
    fi
    ok
}

# ---- hostile names only inside string literals ---------------------------------
# The same model with every declared name replaced by a neutral one.
names="main x0 p NX rhs memcpy printf NAN w0 errno HUGE_VAL EOF NULL system la_solve dxdt M_PI x q qt stdin INFINITY main_reduced_rhs main_full_NX exit fabs pow"
cp "$hostile" "$tmp/a.nh"
i=0
sedprog=""
for n in $names; do
    i=$((i + 1))
    sedprog="$sedprog;s/\\b$n\\b/zz$i/g"
done
# Comments keep their words: only the statements are renamed.
sed -E "/^#/!{${sedprog#;}}" "$hostile" >"$tmp/b.nh"
grep -q "zz1" "$tmp/b.nh" && ! grep -v '^#' "$tmp/b.nh" | grep -Eqw 'memcpy|rhs' \
    && ok || bad "renaming the hostile model failed"
for m in a b; do
    "$bin" emit "$tmp/$m.nh" --form all --prefix P -o "$tmp/$m" 2>"$tmp/err" \
        && ok || bad "emit $m: $(cat "$tmp/err")"
done
for f in P_full P_reduced P_hamilton; do
    for ext in c h; do
        $tok "$tmp/a/$f.$ext" >"$tmp/ta" && $tok "$tmp/b/$f.$ext" >"$tmp/tb" \
            || { bad "$f.$ext: not tokenizable"; continue; }
        if cmp -s "$tmp/ta" "$tmp/tb" && [ -s "$tmp/ta" ]; then ok
        else bad "$f.$ext: model names change the code outside strings: $(diff "$tmp/ta" "$tmp/tb" | head -5)"
        fi
    done
    # The names are there, as strings.
    grep -q '"memcpy"' "$tmp/a/$f.c" && grep -q '"main_reduced_rhs"' "$tmp/a/$f.c" \
        && ok || bad "$f.c: parameter names missing from the string tables"
done
# No comment text of the model in the C: its comment holds */, a quote,
# a backslash, a trigraph and a #define.
if grep -rEq 'quote|\?\?/|define x 1' "$tmp/a"; then
    bad "model comment text in the emitted C"
else ok; fi

# ---- the hostile model compiles (gcc -Werror, tcc) and runs ---------------------
"$bin" emit "$hostile" --form all -o "$tmp/h" 2>"$tmp/err" || bad "emit hostile: $(cat "$tmp/err")"
for f in main_full main_reduced main_hamilton; do
    gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$tmp/h/$f.c" -o "$tmp/h/$f.o" 2>"$tmp/err" \
        && ok || bad "gcc $f.c: $(head -5 "$tmp/err")"
    tcc -c "$tmp/h/$f.c" -o "$tmp/h/$f.tcc.o" 2>"$tmp/err" \
        && ok || bad "tcc $f.c: $(head -5 "$tmp/err")"
done
for form in full reduced hamilton; do
    "$bin" run "$hostile" --form $form --t1 0.05 --method rk4 --dt 0.01 >"$tmp/run.csv" 2>"$tmp/err" \
        && head -n 1 "$tmp/run.csv" | grep -q "^t,x0,p,NX,x0',p',NX',E," \
        && [ "$(wc -l <"$tmp/run.csv")" = 7 ] \
        && ok || bad "run --form $form on the hostile model: $(head -c 300 "$tmp/err")"
done
# The system compiler (posix_spawn with fixed arguments, no shell): the
# same CSV as the tcc JIT.
"$bin" run "$hostile" --t1 0.05 --dt 0.01 >"$tmp/tcc.csv" 2>/dev/null
"$bin" run "$hostile" --t1 0.05 --dt 0.01 --compiler cc >"$tmp/cc.csv" 2>"$tmp/err" \
    && cmp -s "$tmp/tcc.csv" "$tmp/cc.csv" \
    && ok || bad "run --compiler cc on the hostile model: $(head -c 300 "$tmp/err")"
# The driver program: the same CSV as run.
mkdir -p "$tmp/drv"
"$bin" emit "$hostile" --form reduced --driver -o "$tmp/drv" 2>"$tmp/err" \
    && cc -std=c99 -O1 -o "$tmp/drv/prog" "$tmp/drv"/*.c -lm 2>"$tmp/err" \
    && "$tmp/drv/prog" --t1 0.05 --dt 0.01 >"$tmp/drv.csv" \
    && "$bin" run "$hostile" --t1 0.05 --dt 0.01 >"$tmp/run.csv" \
    && cmp -s "$tmp/drv.csv" "$tmp/run.csv" \
    && ok || bad "driver of the hostile model: $(head -c 300 "$tmp/err")"

# ---- C keywords are refused, wherever a name is declared -----------------------
for kw in auto break case char const continue default do double else enum \
          extern float for goto if inline int long register restrict return \
          short signed sizeof static struct switch typedef union unsigned \
          void volatile while; do
    printf 'coordinates x %s\nlagrangian x'"'"'^2\n' "$kw" >"$tmp/kw.nh"
    expect 1 "kw.nh:1:15: error: reserved name '$kw' \(a C keyword\)" derive "$tmp/kw.nh"
done
printf 'coordinates x\nparameters int=1\nlagrangian x'"'"'^2\n' >"$tmp/kw.nh"
expect 1 "kw.nh:2:12: error: reserved name 'int'" derive "$tmp/kw.nh"
printf 'coordinates x\ndefine return = x\nlagrangian x'"'"'^2\n' >"$tmp/kw.nh"
expect 1 "kw.nh:2:8: error: reserved name 'return'" derive "$tmp/kw.nh"
printf 'coordinates x\nlagrangian x'"'"'^2\nintegral while = x\n' >"$tmp/kw.nh"
expect 1 "kw.nh:3:10: error: reserved name 'while'" derive "$tmp/kw.nh"
printf 'coordinates x\nlagrangian x'"'"'^2\nfield goto: x = 1\n' >"$tmp/kw.nh"
expect 1 "kw.nh:3:7: error: reserved name 'goto'" derive "$tmp/kw.nh"
printf 'model static\ncoordinates x\nlagrangian x'"'"'^2\n' >"$tmp/kw.nh"
expect 1 "kw.nh:1:7: error: .*static" derive "$tmp/kw.nh"
# Functions of the language and math.h are names of the language too.
printf 'coordinates x sin\nlagrangian x'"'"'^2\n' >"$tmp/kw.nh"
expect 1 "kw.nh:1:15: error: reserved name 'sin' \(a function name\)" derive "$tmp/kw.nh"

# ---- prefixes and file names --------------------------------------------------
for pre in 'a;b' 'x y' '1a' '' 'a*/' 'a"b' "$(printf 'a\nb')"; do
    expect 2 "prefix" emit "$hostile" --prefix "$pre" -o "$tmp/pre"
done
# A file name is not a C identifier: its stem is made one.
cp "$hostile" "$tmp/x.nh"
sed '/^model /d' "$hostile" >"$tmp/in jection;rm -rf *\"'.nh"
"$bin" emit "$tmp/in jection;rm -rf *\"'.nh" -o "$tmp/stem" 2>"$tmp/err" \
    && [ -f "$tmp/stem/in_jection_rm__rf_____reduced.c" ] \
    && gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$tmp/stem/in_jection_rm__rf_____reduced.c" -o "$tmp/stem/o.o" \
    && ok || bad "model named by a hostile file name: $(cat "$tmp/err"; ls "$tmp/stem" 2>/dev/null)"

# ---- very long names: 64 bytes everywhere, compiled -----------------------------
L=$($py -c "print('a' * 63)")
printf 'model m%s\ncoordinates x%s y\nparameters k%s=1\nlagrangian (x%s'"'"'^2 + y'"'"'^2)/2 - k%s*x%s^2\nconstraint x%s'"'"' - y = 0\nintegral E%s = y\n' \
    "$L" "$L" "$L" "$L" "$L" "$L" "$L" "$L" >"$tmp/long.nh"
# MODEL_FORM would exceed 64 bytes: a usage error asks for --prefix.
expect 2 "cannot form a C prefix from 'ma{63}': use --prefix" emit "$tmp/long.nh" -o "$tmp/long"
# A 64-byte prefix: emitted identifiers of 68 bytes and more.
for form in full reduced hamilton; do
    "$bin" emit "$tmp/long.nh" --form $form --prefix "m$L" -o "$tmp/long/$form" 2>"$tmp/err" \
        && ok || bad "emit long names: $(cat "$tmp/err")"
done
for c in "$tmp"/long/*/*.c; do
    gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$c" -o "$c.o" 2>"$tmp/err" \
        && ok || bad "gcc $(basename "$c"): $(head -3 "$tmp/err")"
done
"$bin" run "$tmp/long.nh" --t1 0.01 >/dev/null 2>"$tmp/err" && ok || bad "run long names: $(cat "$tmp/err")"

# ---- bytes: non-ASCII and control bytes are errors with their place ------------
# bytes BEFORE HEX AFTER PATTERN: a model of BEFORE, the bytes HEX, AFTER.
bytes() {
    $py -c "import sys; sys.stdout.buffer.write(sys.argv[1].encode() + bytes.fromhex(sys.argv[2]) + sys.argv[3].encode())" \
        "$1" "$2" "$3" >"$tmp/b.nh"
    expect 1 "$4" derive "$tmp/b.nh"
}
nl='
'
for b in 01 02 08 0B 0C 1B 1F 7F; do
    bytes "coordinates x${nl}lagrangian x'^2 " $b "+ 1$nl" "b.nh:2:17: error: invalid control byte 0x$b"
done
bytes "coordinates x${nl}lagrangian x'^2 " 00 "+ 1$nl" "b.nh:2:17: error: NUL byte in input"
for b in 80 C3 FF; do
    bytes "coordinates x${nl}lagrangian x'^2 " $b "+ 1$nl" "b.nh:2:17: error: non-ASCII byte 0x$b outside a comment"
done
bytes "coordinates x " C3A9 "${nl}lagrangian x'^2$nl" "b.nh:1:15: error: non-ASCII byte 0xC3"
bytes "coordinates x${nl}lagrangian x'^2 # " FF "$nl" "b.nh:2:19: error: invalid UTF-8 byte 0xFF in a comment"
bytes "coordinates x${nl}lagrangian x'^2 # " 1B "[2J$nl" "b.nh:2:19: error: invalid control byte 0x1B"
bytes "coordinates x${nl}lagrangian x'^2 # " C0AF "$nl" "b.nh:2:19: error: invalid UTF-8 byte 0xC0 in a comment"
# Allowed: a byte order mark, CR LF, UTF-8 and */ in comments.
printf '\357\273\277# \303\251t\303\251 zqxw */ "\r\ncoordinates x\r\nlagrangian x'"'"'^2\r\n' >"$tmp/ok.nh"
"$bin" emit "$tmp/ok.nh" -o "$tmp/okc" 2>"$tmp/err" && ! grep -rq 'zqxw' "$tmp/okc" \
    && ok || bad "BOM, CR LF and UTF-8 comments: $(cat "$tmp/err")"

# ---- numbers reach the C only as correctly rounded constants ---------------------
$py -c "print('coordinates x'); print('parameters k=1.' + '3' * 3990); print('lagrangian x\'^2/2 - k*x^2 + 1/3*x')" >"$tmp/num.nh"
"$bin" emit "$tmp/num.nh" -o "$tmp/num" 2>"$tmp/err" \
    && gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$tmp/num/num_reduced.c" -o "$tmp/num/o.o" \
    && ! grep -q '33333333333333333333' "$tmp/num/num_reduced.c" \
    && ok || bad "long number: $(head -c 300 "$tmp/err")"
printf 'coordinates x\nparameters k=1e400\nlagrangian x'"'"'^2\n' >"$tmp/num.nh"
expect 1 "num.nh:2:12: error: value of 'k' is not a finite real number" derive "$tmp/num.nh"

echo "injection: $pass passed, $fail failed"
[ "$fail" = 0 ]
