# Shared by the script tests (sourced after setting bin=CHETAEV): a
# private temporary directory, the pass/fail counters and expect.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# expect CODE PATTERN -- ARGS...: exit code and a pattern in stdout+stderr
expect() {
    code=$1 pat=$2
    shift 3
    "$bin" "$@" >"$tmp/out" 2>"$tmp/err"
    rc=$?
    if [ "$rc" != "$code" ]; then
        bad "chetaev $*: exit $rc, want $code: $(head -c 300 "$tmp/err")"; return
    fi
    if ! cat "$tmp/out" "$tmp/err" | grep -q -- "$pat"; then
        bad "chetaev $*: output lacks '$pat'"; return
    fi
    ok
}
