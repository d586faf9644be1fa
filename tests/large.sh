#!/bin/sh
# Large models (issue 45): no work array of the emitted code lives on the
# stack when its size grows with the model (static storage beyond
# CH_STACK_ELEMS, PREFIX_REENTRANT 0), so that `run` and the --driver
# programs of a 400-coordinate chain (399 constraints q_i' = q_{i+1}';
# the full form's KKT work space alone is 10 MB) and of a 1000-coordinate
# chain run instead of overflowing the stack. Independent answer: the
# chain moves as one oscillator of mass n, q1 = cos(t/sqrt(n)),
# q_i = q1 - 1 for i > 1. Usage: large.sh CHETAEV
set -u
bin=$1
py=/usr/bin/python3
. "$(dirname "$0")/lib.sh"

chain() { # chain N: $tmp/chainN.nh
    $py - "$1" >"$tmp/chain$1.nh" <<'PY'
import sys
n = int(sys.argv[1])
print("coordinates " + " ".join("q%d" % i for i in range(1, n + 1)))
print("lagrangian (" + " + ".join("q%d'^2" % i for i in range(1, n + 1)) + ")/2 - q1^2/2")
for i in range(1, n):
    print("constraint q%d' = q%d'" % (i, i + 1))
print("initial q1=1")
PY
}

# exact N CSV: the last row (t = 0.01) against the exact motion
exact() {
    $py - "$1" "$2" <<'PY'
import math, sys
n, path = int(sys.argv[1]), sys.argv[2]
rows = open(path).read().split("\n")
last = [float(v) for v in rows[-2].split(",")]
t = last[0]
q1 = math.cos(t / math.sqrt(n))
want = [t, q1] + [q1 - 1] * (n - 1)
err = max(abs(a - b) for a, b in zip(last[:n + 1], want))
assert t == 0.01 and err < 1e-12, (t, err)
PY
}

chain 400
for f in full reduced hamilton; do
    if timeout 300 "$bin" run "$tmp/chain400.nh" --form $f --t1 0.01 --method rk4 \
        >"$tmp/c.csv" 2>"$tmp/err" && exact 400 "$tmp/c.csv"; then
        ok
    else
        bad "chain400 $f: $(head -c 300 "$tmp/err")"
    fi
done

# the driver program (tcc: gcc needs minutes for the 10 MB of code)
if "$bin" emit "$tmp/chain400.nh" --form full --driver -o "$tmp/d" >/dev/null 2>"$tmp/err" &&
    grep -q "define chain400_full_REENTRANT 0" "$tmp/d/chain400_full.h" &&
    tcc -o "$tmp/d/prog" "$tmp"/d/*.c -lm 2>"$tmp/err" &&
    timeout 300 "$tmp/d/prog" --t1 0.01 --method rk4 >"$tmp/c.csv" 2>"$tmp/err" &&
    exact 400 "$tmp/c.csv"; then
    ok
else
    bad "chain400 driver program: $(head -c 300 "$tmp/err")"
fi

chain 1000
if timeout 600 "$bin" run "$tmp/chain1000.nh" --t1 0.01 --method rk4 >"$tmp/c.csv" \
    2>"$tmp/err" && exact 1000 "$tmp/c.csv"; then
    ok
else
    bad "chain1000 reduced: $(head -c 300 "$tmp/err")"
fi

# 100 000 distinct terms in the potential (2 MB of model): emit stays
# far below 2 GB of memory (the velocity-free rest of the Lagrangian was
# summed term by term, every partial sum interned: 3 GB for 20 000 terms).
$py - >"$tmp/terms.nh" <<'PY'
import random
random.seed(1)
n, seen, terms = 60, set(), []
while len(terms) < 100000:
    a, b, c = random.randrange(n), random.randrange(n), random.randrange(n)
    if (a, b, c) not in seen:
        seen.add((a, b, c))
        terms.append("%d*q%d*q%d*sin(q%d)" % (len(terms) % 7 + 1, a, b, c))
print("coordinates " + " ".join("q%d" % i for i in range(n)))
print("lagrangian (" + " + ".join("q%d'^2" % i for i in range(n)) + ")/2 - ("
      + " + ".join(terms) + ")/1000")
PY
if /usr/bin/time -f "%M" -o "$tmp/rss" timeout 600 "$bin" emit "$tmp/terms.nh" -o "$tmp/te" \
    >/dev/null 2>"$tmp/err" && [ "$(tail -n 1 "$tmp/rss")" -lt 2000000 ]; then
    ok
else
    bad "100 000 terms: $(tail -n 1 "$tmp/rss") KB: $(head -c 300 "$tmp/err")"
fi
# under a node budget it stops cleanly, naming the limit
"$bin" emit "$tmp/terms.nh" -o "$tmp/te2" --max-nodes 100000 >/dev/null 2>"$tmp/err"
rc=$?
[ $rc = 1 ] && grep -q "limit of 100000 nodes exceeded" "$tmp/err" && [ ! -e "$tmp/te2" ] \
    && ok || bad "100 000 terms, --max-nodes 100000: exit $rc: $(head -c 300 "$tmp/err")"

echo "large: $pass passed, $fail failed"
[ "$fail" = 0 ]
