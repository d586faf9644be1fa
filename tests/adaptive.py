#!/usr/bin/python3
"""The adaptive default of `run` and of the driver programs (issue 39):
independent answers on the examples, the output grid, the statistics.

- knife edge: the reduced and the full form (different equations, one
  motion) agree at t1 = 1 (default state: no chart singularity crossed)
  to 1e-8 at rtol 1e-10, atol 1e-12;
- double pendulum: the energy, a conserved quantity, stays within 1e-9
  (relative) of E(0) over t in [0, 5] in every form at rtol 1e-10,
  atol 1e-12;
- the last row is at t1 exactly: adaptive (per step, --every, --dt-out)
  and fixed with --every not dividing the number of steps;
- --dt-out: the rows at k*H by dense output agree with rk4 at dt = 1e-3,
  whose steps end on that grid;
- --stats: the counts on stderr satisfy rhs calls = 2 + 12 (accepted +
  rejected) for dop853 and 2 + 6 (...) for rk45 with rows per step;
- the emitted --driver program prints the bytes of `run` with the
  default method.

Usage: adaptive.py CHETAEV SRCDIR
"""
import math
import os
import re
import subprocess
import sys
import tempfile

BIN, SRC = sys.argv[1], sys.argv[2]
passed = failed = 0


def check(cond, what, detail=""):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL: %s %s" % (what, detail))
    return cond


def example(name):
    return os.path.join(SRC, "examples", name + ".nh")


def run(*args):
    r = subprocess.run([BIN, "run"] + list(args), capture_output=True, text=True)
    return r.returncode, r.stdout, r.stderr


def table(out):
    lines = out.strip().split("\n")
    head = lines[0].split(",")
    return head, [[float(v) for v in l.split(",")] for l in lines[1:]]


def last_state(out):
    """{column: value} of the last row, the columns before E."""
    head, rows = table(out)
    return dict(zip(head[:head.index("E")], rows[-1]))


# ---- knife edge: reduced against full ------------------------------------
tight = ["--rtol", "1e-10", "--atol", "1e-12"]
states = {}
for form in ("reduced", "full"):
    rc, out, err = run(example("knife_edge"), "--form", form, "--t1", "1", *tight)
    if check(rc == 0, "knife_edge %s" % form, err):
        states[form] = last_state(out)
if len(states) == 2:
    worst = max(abs(states["reduced"][k] - v) / max(1, abs(v))
                for k, v in states["full"].items())
    check(worst < 1e-8, "knife_edge reduced vs full at t1 = 1", "differ by %.3g" % worst)
    check(set(states["full"]) == set(states["reduced"]), "same columns")

# ---- double pendulum: energy ---------------------------------------------
for form in ("full", "reduced", "hamilton"):
    rc, out, err = run(example("double_pendulum"), "--form", form, "--t1", "5", *tight)
    if not check(rc == 0, "double_pendulum %s" % form, err):
        continue
    head, rows = table(out)
    e = [r[head.index("E")] for r in rows]
    drift = max(abs(v - e[0]) for v in e) / abs(e[0])
    check(drift < 1e-9, "double_pendulum %s energy" % form, "relative drift %.3g" % drift)
    check(len(rows) > 50, "double_pendulum %s: a row per accepted step" % form,
          "%d rows" % len(rows))

# ---- the last row at t1; the output grid ---------------------------------
knife = example("knife_edge")
for opts, what in ((["--t1", "0.7"], "per step"),
                   (["--t1", "2.3", "--every", "3"], "--every 3"),
                   (["--t1", "2.3", "--every", "3", "--method", "rk45"], "rk45 --every 3"),
                   (["--t1", "1", "--every", "300", "--method", "rk4"], "rk4 --every 300"),
                   (["--t1", "1", "--every", "7", "--method", "euler", "--dt", "0.01"],
                    "euler --every 7")):
    rc, out, err = run(knife, *opts)
    if check(rc == 0, what, err):
        head, rows = table(out)
        t1 = float(opts[1])
        check(rows[-1][0] == t1, "%s: last row at t1" % what, "t = %r" % rows[-1][0])
        ts = [r[0] for r in rows]
        check(all(a < b for a, b in zip(ts, ts[1:])), "%s: t increasing" % what)
        if "rk4" in opts:  # rows at 0, 0.3, 0.6, 0.9 and t1
            check(len(rows) == 5 and abs(rows[3][0] - 0.9) < 1e-15, "rk4 --every 300 rows",
                  str(ts))
rc, out, err = run(knife, "--t1", "1.05", "--dt-out", "0.1", *tight)
if check(rc == 0, "--dt-out", err):
    head, rows = table(out)
    want = [0.1 * k for k in range(11)] + [1.05]
    check(len(rows) == 12 and all(abs(r[0] - w) < 1e-15 for r, w in zip(rows, want)),
          "--dt-out 0.1 grid to 1.05", str([r[0] for r in rows]))
    # The dense rows against rk4 with dt = 1e-3, whose steps end on the
    # grid (every 100th step; accurate to ~1e-14 on this smooth motion).
    rc2, out2, _ = run(knife, "--t1", "1.05", "--method", "rk4", "--every", "100")
    if check(rc2 == 0, "rk4 reference run"):
        h2, ref = table(out2)
        check(len(ref) == len(rows), "reference rows", "%d, %d" % (len(ref), len(rows)))
        worst = 0.0
        for r, g in zip(rows, ref):
            check(abs(r[0] - g[0]) < 1e-12, "grid times", "%r %r" % (r[0], g[0]))
            worst = max(worst, max(abs(a - b) / max(1, abs(b)) for a, b in zip(r, g)))
        check(worst < 1e-9, "dense rows vs rk4 on the grid", "differ by %.3g" % worst)

# ---- --stats ------------------------------------------------------------
for method, stages in (("dop853", 12), ("rk45", 6)):
    rc, out, err = run(knife, "--t1", "3", "--method", method, "--stats")
    m = re.search(r"^chetaev run: stats: %s, (\d+) steps accepted, (\d+) rejected, "
                  r"(\d+) rhs calls, 0 recharts$" % method, err, re.M)
    if check(rc == 0 and m, "--stats %s" % method, err):
        acc, rej, calls = (int(g) for g in m.groups())
        check(calls == 2 + stages * (acc + rej), "%s rhs calls" % method,
              "%d calls, %d accepted, %d rejected" % (calls, acc, rej))
        check(len(out.strip().split("\n")) == acc + 2, "%s rows per step" % method)
rc, out, err = run(knife, "--t1", "3", "--method", "midpoint", "--dt", "0.01", "--stats")
check(rc == 0 and "stats: midpoint, 300 steps accepted, 0 rejected, 600 rhs calls" in err,
      "--stats midpoint", err)

# ---- the driver program: the bytes of run -----------------------------------
with tempfile.TemporaryDirectory() as tmp:
    r = subprocess.run([BIN, "emit", knife, "--driver", "-o", tmp], capture_output=True)
    b = subprocess.run(["cc", "-std=c99", "-O2", "-o", os.path.join(tmp, "prog")]
                       + [os.path.join(tmp, f) for f in os.listdir(tmp) if f.endswith(".c")]
                       + ["-lm"], capture_output=True, text=True)
    if check(r.returncode == 0 and b.returncode == 0, "driver build", b.stderr):
        opts = ["--t1", "2", "--every", "2", "--stats"]
        d = subprocess.run([os.path.join(tmp, "prog")] + opts, capture_output=True, text=True)
        rc, out, err = run(knife, *opts)
        check(d.returncode == 0 and d.stdout == out, "driver CSV = run CSV (default method)")
        check(d.stderr.split("stats:")[1] == err.split("stats:")[1], "driver stats = run stats",
              d.stderr + err)
        h = subprocess.run([os.path.join(tmp, "prog"), "--help"], capture_output=True,
                           text=True)
        check("--rtol" in h.stdout and "dop853 (default" in h.stdout, "driver --help")

print("adaptive: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
