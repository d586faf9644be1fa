#!/bin/sh
# The emitted C of every input of a fuzzer corpus that chetaev emits at
# all compiles with gcc -std=c99 -pedantic -Wall -Wextra -Werror (issue
# 45): outside CI, after a long fuzz run kept with KEEP=1.
#   tests/fuzz/emit_corpus.sh CHETAEV CORPUS_DIR...
# Prints the inputs whose emitted code does not compile; the last line
# counts inputs, emitted and failed; exit 1 when one failed.
set -u
bin=$1
shift
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
one() { # INPUT: "emitted", "skipped" or "FAIL INPUT: reason"
    d=$tmp/$(basename "$1")
    if ! timeout 20 "$bin" emit "$1" --form all -o "$d" --max-nodes 200000 >/dev/null 2>&1; then
        echo skipped
        return
    fi
    for c in "$d"/*.c; do
        if ! timeout 60 gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$c" -o "$c.o" \
            2>"$d/err"; then
            echo "FAIL $1: $(head -c 300 "$d/err" | tr '\n' ' ')"
            return
        fi
    done
    echo emitted
    rm -rf "$d"
}
for dir in "$@"; do
    for f in "$dir"/*; do [ -f "$f" ] && one "$f"; done
done >"$tmp/log"
n=$(wc -l <"$tmp/log")
e=$(grep -c '^emitted' "$tmp/log")
grep '^FAIL' "$tmp/log"
f=$(grep -c '^FAIL' "$tmp/log")
echo "emit_corpus: $n inputs, $e emitted and compiled, $f failed"
[ "$f" = 0 ]
