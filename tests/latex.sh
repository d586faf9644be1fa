#!/bin/sh
# The LaTeX output of every example compiles with pdflatex.
# Usage: latex.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
for ex in "$src"/examples/*.nh; do
    name=$(basename "$ex" .nh)
    "$bin" derive "$ex" --format latex > "$tmp/$name.tex" || { fail=$((fail + 1)); echo "FAIL: $name: derive"; continue; }
    if (cd "$tmp" && pdflatex -interaction=nonstopmode -halt-on-error "$name.tex" >"$name.out" 2>&1) \
        && [ -s "$tmp/$name.pdf" ]; then
        pass=$((pass + 1))
    else
        fail=$((fail + 1))
        echo "FAIL: $name.tex does not compile:"
        grep -A3 '^!' "$tmp/$name.log" | head -20
    fi
done
echo "latex: $pass passed, $fail failed"
[ "$fail" = 0 ]
