#!/bin/sh
# `meson install` of the current build into a temporary directory
# (--destdir, no rebuild), then: every file is where a C tool puts it; the
# installed runtime sources and templates equal the tree's; the installed
# chetaev runs; examples/outoftree is built with make against the installed
# library through pkg-config (PKG_CONFIG_PATH and PKG_CONFIG_SYSROOT_DIR
# pointing into the temporary directory), once with libchetaev.so (which
# must be the installed one) and once statically (pkg-config --static),
# and each build's result on knife_edge with a changed parameter equals the
# mandatory columns of the last row of the installed `chetaev run`.
# In a sanitizer build (SANITIZE, meson's b_sanitize, not "none") the
# example is compiled and linked with the same -fsanitize flags.
# Usage: install.sh BUILDDIR SRCDIR [SANITIZE]
set -u
build=$1
src=$2
sanitize=${3:-none}
cflags="-O2 -std=c11 -Wall -Wextra -Werror"
[ "$sanitize" = none ] || cflags="$cflags -fsanitize=$sanitize"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
checks=0
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
check() { checks=$((checks + 1)); }

root=$tmp/root
meson install -C "$build" --no-rebuild --quiet --destdir "$root" > "$tmp/install.log" 2>&1 ||
    { cat "$tmp/install.log"; echo "FAIL: meson install"; exit 1; }

pc=$(find "$root" -name chetaev.pc)
check
[ -n "$pc" ] || { echo "FAIL: no chetaev.pc installed"; exit 1; }
prefix=$(sed -n 's/^prefix=//p' "$pc")
libdir=$(dirname "$(dirname "$pc")")
p=$root$prefix
for f in bin/chetaev include/chetaev.h share/man/man1/chetaev.1 \
         share/bash-completion/completions/chetaev; do
    check
    [ -f "$p/$f" ] || bad "$prefix/$f not installed"
done
for f in libchetaev.a libchetaev.so; do
    check
    [ -e "$libdir/$f" ] || bad "$f not installed in ${libdir#"$root"}"
done
check
[ -x "$p/bin/chetaev" ] || bad "bin/chetaev is not executable"
# The runtime sources and templates, as in the tree (emit --driver embeds
# the same files).
for f in "$src"/runtime/*.c "$src"/runtime/*.h "$src"/templates/*; do
    rel=${f#"$src"/}
    check
    cmp -s "$f" "$p/share/chetaev/$rel" || bad "share/chetaev/$rel missing or different from the tree"
done
# The public header needs no other header of the project.
check
inc=$(grep '^#include' "$p/include/chetaev.h" | grep -v '<std[a-z]*\.h>')
[ -z "$inc" ] || bad "chetaev.h includes more than standard headers: $inc"

# libchetaev.so exports exactly the functions declared in chetaev.h.
check
if command -v nm > /dev/null 2>&1; then
    nm -D --defined-only "$libdir/libchetaev.so" | awk 'NF == 3 { print $3 }' | sort > "$tmp/exported"
    grep -o 'ch_[a-z_0-9]*(' "$p/include/chetaev.h" | tr -d '(' | sort -u > "$tmp/declared"
    extra=$(comm -13 "$tmp/declared" "$tmp/exported" | paste -sd' ' -)
    missing=$(comm -23 "$tmp/declared" "$tmp/exported" | paste -sd' ' -)
    [ -z "$extra$missing" ] ||
        bad "libchetaev.so exports [$extra] beyond chetaev.h and lacks [$missing]"
fi

check
"$p/bin/chetaev" --version > "$tmp/version" 2>&1 || bad "installed chetaev --version fails"
"$build/chetaev" --version | cmp -s - "$tmp/version" || bad "installed chetaev --version: $(cat "$tmp/version")"

# meson test points LD_LIBRARY_PATH at the build tree, which would win
# over the example's run path to the installed library.
unset LD_LIBRARY_PATH
export PKG_CONFIG_PATH="$(dirname "$pc")"
export PKG_CONFIG_SYSROOT_DIR="$root"
check
flags=$(pkg-config --cflags --libs chetaev) || bad "pkg-config --cflags --libs chetaev fails"
case $flags in
    *"-I$p/include"*"-L$libdir "*-lchetaev*) ;;
    *) bad "pkg-config flags do not point into the installation: $flags";;
esac
check
static=$(pkg-config --static --libs chetaev)
case $static in
    *-lchetaev*-ltcc*-lflint*) ;;
    *) bad "pkg-config --static lacks the dependencies: $static";;
esac

model=$src/examples/knife_edge.nh
"$p/bin/chetaev" run "$model" --t1 2 --set c=0.3 > "$tmp/run.csv" 2> "$tmp/run.err" ||
    bad "installed chetaev run fails: $(cat "$tmp/run.err")"
# the mandatory columns: t, n coordinates, n velocities, E
ncol=$(head -n 1 "$tmp/run.csv" | awk -F, '{ for (i = 2; i <= NF; i++) if ($i == "E") print i }')
{ head -n 1 "$tmp/run.csv"; tail -n 1 "$tmp/run.csv"; } | cut -d, -f"1-$ncol" > "$tmp/want"

# build VARIANT [MAKE ARGS]: builds examples/outoftree in a copy outside
# the tree and compares its output with the installed chetaev run.
build_example() {
    variant=$1
    shift
    rm -rf "$tmp/src"
    cp -r "$src/examples/outoftree" "$tmp/src"
    rm -f "$tmp/src/simulate"
    check
    if ! make -C "$tmp/src" "$@" CFLAGS="$cflags" \
            > "$tmp/make.log" 2>&1; then
        bad "$variant: make failed: $(cat "$tmp/make.log")"
        return
    fi
    check
    ldd "$tmp/src/simulate" > "$tmp/ldd" 2>&1
    if [ "$variant" = shared ]; then
        grep -q "libchetaev.so.* => $libdir/" "$tmp/ldd" ||
            bad "shared: simulate does not load the installed libchetaev.so: $(grep chetaev "$tmp/ldd")"
    else
        ! grep -q libchetaev "$tmp/ldd" || bad "static: simulate loads libchetaev.so"
    fi
    check
    (cd "$tmp" && ./src/simulate "$model" 2 c=0.3) > "$tmp/got" 2> "$tmp/err" ||
        { bad "$variant: simulate failed: $(cat "$tmp/err")"; return; }
    cmp -s "$tmp/got" "$tmp/want" ||
        bad "$variant: simulate printed $(cat "$tmp/got"), chetaev run gives $(cat "$tmp/want")"
}
build_example shared
build_example static STATIC=1
cat "$tmp/got"

echo "install: $checks checks, $fail failed"
exit $((fail > 0))
