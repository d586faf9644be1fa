#!/bin/sh
# Builds the libFuzzer harnesses (clang, ASan + UBSan) and runs each one.
#   tests/fuzz/run.sh SECONDS [WORKDIR]
# First every harness replays its regression corpus (tests/fuzz/regress/
# NAME: inputs that once crashed or hung); then it fuzzes for SECONDS,
# starting from the examples and the error files, with the language
# dictionary. WORKDIR (default: a fresh temporary directory, removed at
# the end unless kept with KEEP=1) holds the build and the grown corpus; a
# crash leaves its input there and makes the script fail.
# Environment: FUZZ_ONLY (one harness: parse or pipeline).
set -eu
secs=${1:?usage: run.sh SECONDS [WORKDIR]}
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../.." && pwd)
if [ -n "${2:-}" ]; then
    work=$2
    mkdir -p "$work"
else
    work=$(mktemp -d "${TMPDIR:-/tmp}/chetaev-fuzz.XXXXXX")
    [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$work"' EXIT
fi
work=$(cd "$work" && pwd)
CC=${CC:-clang}

# ---- build ---------------------------------------------------------------
# The library sources as meson.build lists them, with the templates and
# runtime embedded by tools/embed.c, linked against FLINT, arb and libtcc.
libs="-lflint -lgmp -lmpfr -lm -ltcc -ldl -lsundials_cvode -lsundials_nvecserial -lsundials_sunmatrixdense -lsundials_sunlinsoldense"
if [ -f /usr/include/arb.h ] && [ ! -f /usr/include/flint/arb.h ]; then
    libs="-lflint-arb $libs"
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined"
cflags="-std=c11 -g -O1 -fno-omit-frame-pointer -I$src/gen -I$src -I$work/obj"
mkdir -p "$work/obj"
cc -O1 -o "$work/obj/embed" "$src/tools/embed.c"
(cd "$src" && LC_ALL=C "$work/obj/embed" "$work/obj/embedded.c" \
    "$work/obj/embedded.h" templates/* runtime/*.c runtime/*.h)
# The sources meson.build compiles into the library (files being written
# but not yet in the build are left out, as meson leaves them out).
srcs=$(sed -n "/^gen_src = files(/,/^)/s/.*'\(gen\/[^']*\.c\)'.*/\1/p" \
    "$src/meson.build")
srcs="$srcs $(sed -n "/chetaev_rt/,/)/s/.*files(\(.*\)).*/\1/p" \
    "$src/meson.build" | tr -d "',")"
objs=""
for f in $srcs obj/embedded.c; do
    objs="$objs $work/obj/$(echo "$f" | tr / _).o"
done
# Rebuild everything when a source, a header or the flags changed (by
# content, not by date: a checkout or a copy keeps no useful dates).
stamp=$( (echo "$CC $cflags $san"; cd "$src" && cat $srcs gen/*/*.h \
    runtime/*.h; cat "$work/obj/embedded.c") | cksum)
if [ "$(cat "$work/obj/stamp" 2>/dev/null)" != "$stamp" ]; then
    for f in $srcs obj/embedded.c; do
        case $f in obj/*) echo "$work/$f" ;; *) echo "$src/$f" ;; esac
        echo "$work/obj/$(echo "$f" | tr / _).o"
    done | xargs -r -P 2 -n 2 sh -c \
        "$CC $cflags $san -fsanitize=fuzzer-no-link -c \"\$0\" -o \"\$1\""
    echo "$stamp" >"$work/obj/stamp"
fi
for h in parse pipeline; do
    # shellcheck disable=SC2086
    $CC $cflags $san -fsanitize=fuzzer -o "$work/fuzz_$h" \
        "$here/fuzz_$h.c" $objs $libs
done

# ---- run -----------------------------------------------------------------
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
status=0
for h in parse pipeline; do
    [ -z "${FUZZ_ONLY:-}" ] || [ "$FUZZ_ONLY" = "$h" ] || continue
    exe=$work/fuzz_$h
    opts="-rss_limit_mb=2048 -max_len=4096 -dict=$here/nh.dict"
    if [ -d "$here/regress/$h" ] && [ -n "$(ls "$here/regress/$h")" ]; then
        # shellcheck disable=SC2086
        if ! "$exe" $opts -timeout=120 -runs=0 "$here/regress/$h" >"$work/$h.replay.log" 2>&1; then
            echo "fuzz $h: regression corpus fails:"
            tail -n 30 "$work/$h.replay.log"
            status=1
            continue
        fi
        echo "fuzz $h: regression corpus replayed ($(ls "$here/regress/$h" | wc -l) inputs)"
    fi
    mkdir -p "$work/corpus_$h" "$work/crash_$h"
    seeds="$src/examples $src/tests/errors"
    [ -d "$here/regress/$h" ] && seeds="$seeds $here/regress/$h"
    # shellcheck disable=SC2086
    if ! (cd "$work" && "$exe" $opts -timeout=60 -max_total_time="$secs" \
            -artifact_prefix="$work/crash_$h/" -print_final_stats=1 \
            "$work/corpus_$h" $seeds >"$work/$h.log" 2>&1); then
        echo "fuzz $h: FAILED, input in $work/crash_$h:"
        ls "$work/crash_$h"
        tail -n 40 "$work/$h.log"
        status=1
        continue
    fi
    stats=$(grep -E '^stat::number_of_executed_units|^#[0-9]+.*DONE' \
        "$work/$h.log" | tr '\n' ' ')
    echo "fuzz $h: ok after $secs s: $stats"
done
exit $status
