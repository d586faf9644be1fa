#!/bin/sh
# Builds chetaev and runs the whole test suite.
#   scripts/test.sh [--asan] [BUILDDIR]
# --asan builds with AddressSanitizer + UndefinedBehaviorSanitizer (default
# directory build-asan). The last line is "N passed, N failed" (tests).
set -eu
cd "$(dirname "$0")/.."
asan=0
if [ "${1:-}" = "--asan" ]; then asan=1; shift; fi
if [ $asan = 1 ]; then dir=${1:-build-asan}; else dir=${1:-build}; fi
sh scripts/deps.sh
if [ ! -f "$dir/build.ninja" ]; then
    if [ $asan = 1 ]; then
        meson setup "$dir" -Db_sanitize=address,undefined -Db_lundef=false \
            -Dbuildtype=debug >/dev/null
    else
        meson setup "$dir" >/dev/null
    fi
fi
ninja -C "$dir" >/dev/null
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ASAN_OPTIONS=detect_leaks=1
log=$(mktemp)
status=0
meson test -C "$dir" --print-errorlogs --num-processes 2 >"$log" 2>&1 || status=$?
cat "$log"
ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$log")
fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$log")
timeout=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$log")
rm -f "$log"
ok=${ok:-0}
fail=$(( ${fail:-0} + ${timeout:-0} ))
if [ "$status" != 0 ] && [ "$fail" = 0 ]; then fail=1; fi
echo "$ok passed, $fail failed"
[ "$fail" = 0 ]
