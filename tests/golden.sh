#!/bin/sh
# The text and LaTeX audit documents of two examples, compared byte for
# byte with the files in tests/golden/. After an intended change of the
# output, regenerate them with:  tests/golden.sh CHETAEV SRCDIR --update
set -u
bin=$1
src=$2
update=${3:-}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for ex in knife_edge pars_affine; do
    for fmt in text latex; do
        ext=txt
        [ $fmt = latex ] && ext=tex
        gold="$src/tests/golden/$ex.$ext"
        if ! "$bin" derive "$src/examples/$ex.nh" --format $fmt > "$tmp/out"; then
            fail=$((fail + 1)); echo "FAIL: $ex $fmt: derive failed"; continue
        fi
        if [ "$update" = "--update" ]; then cp "$tmp/out" "$gold"; fi
        if cmp -s "$tmp/out" "$gold"; then
            pass=$((pass + 1))
        else
            fail=$((fail + 1))
            echo "FAIL: $ex $fmt differs from $gold:"
            diff "$gold" "$tmp/out" | head -20
        fi
    done
done
echo "golden: $pass passed, $fail failed"
[ "$fail" = 0 ]
