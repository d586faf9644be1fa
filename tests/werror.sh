#!/bin/sh
# The emitted C is warning-free (SPEC section 4, issue 43): every example,
# every model under tests/models/ (rigid-body models in rigid/ too) and
# tests/branch/, in every form it has (--form all) and as each form's
# --driver program, compiles with gcc -std=c99 -pedantic -Wall -Wextra
# -Werror and, where tcc is installed, with tcc -Wall -Werror. A file whose
# text was compiled already (the drivers' runtime sources, a form's files
# again with the driver) is not compiled twice. A failure names the file
# and the compiler's first error. Usage: werror.sh CHETAEV SRCDIR
set -u
bin=$1
src=$2
. "$(dirname "$0")/lib.sh"

have_tcc=0
tcc -v >/dev/null 2>&1 && have_tcc=1
: >"$tmp/seen"

# first: the compiler's first error, without the file's directory
first() { sed -n '/error/{s|^[^:]*/||;p;q;}' "$tmp/cc"; }

# compile FILE MODEL: both compilers, once per distinct text
compile() {
    sum=$(cksum <"$1")
    grep -qxF "$sum" "$tmp/seen" && return
    echo "$sum" >>"$tmp/seen"
    if ! gcc -std=c99 -pedantic -Wall -Wextra -Werror -c "$1" -o "$tmp/o.o" 2>"$tmp/cc"; then
        bad "gcc, $2: $(first)"
        return
    fi
    if [ $have_tcc = 1 ] && ! tcc -Wall -Werror -c "$1" -o "$tmp/o.o" 2>"$tmp/cc"; then
        bad "tcc, $2: $(first)"
        return
    fi
    ok
}

n=0
for f in "$src"/examples/*.nh "$src"/tests/models/*.nh "$src"/tests/models/rigid/*.nh \
    "$src"/tests/branch/*.nh; do
    n=$((n + 1))
    d=$tmp/m$n
    if ! "$bin" emit "$f" --form all -o "$d/all" >/dev/null 2>"$tmp/err"; then
        bad "emit $f --form all: $(head -c 300 "$tmp/err")"
        continue
    fi
    for c in "$d"/all/*.c; do compile "$c" "${f#"$src"/}"; done
    for form in full reduced hamilton; do
        ls "$d"/all/*_$form.c >/dev/null 2>&1 || continue
        if ! "$bin" emit "$f" --form $form --driver -o "$d/$form" >/dev/null 2>"$tmp/err"; then
            bad "emit $f --form $form --driver: $(head -c 300 "$tmp/err")"
            continue
        fi
        for c in "$d/$form"/*.c; do compile "$c" "${f#"$src"/} --driver"; done
    done
    rm -rf "$d"
done
[ $have_tcc = 1 ] || echo "werror: tcc not installed, gcc only"
echo "werror: $n models; files: $pass passed, $fail failed"
[ "$fail" = 0 ]
