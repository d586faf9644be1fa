#!/usr/bin/python3
"""Events (`event NAME = EXPR [stop]`) and the stiff method cvode (issue 39).

Independent answers:
- a body thrown up at v0: the apex at v0/g (y' = 0 there), the landing at
  2 v0/g, exact; rk4's state inside a step is one rk4 step, exact for this
  quadratic motion too; cvode to its tolerance;
- the rolling disk (examples/rolling_disk.nh) that falls: the stop event
  at the same time in the three forms (different equations, one motion),
  the lean there on cos(th) = 1/4, the energy at the event that of t = 0
  (rolling does no work);
- the emitted --driver program writes run's bytes, events included;
- the stiff skate (tests/models/stiff_skate.nh): cvode ends where dop853 ends,
  with less than a hundredth of its right-hand side calls (counts, not
  time: deterministic).

Usage: events.py CHETAEV SRCDIR
"""

import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from physics import Suite, parse_csv, col  # noqa: E402


def call(args):
    p = subprocess.run(args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


THROW = """coordinates y
parameters g=9.81 m=1 v0=10
lagrangian m/2*y'^2 - m*g*y
event apex = y'
event ground = y stop
initial y=0 y'=10
"""


def notes(err):
    return [ln for ln in err.splitlines() if ": note: event " in ln]


def check_throw(s, exe, tmp):
    model = os.path.join(tmp, "throw.nh")
    with open(model, "w") as f:
        f.write(THROW)
    g, v0 = 9.81, 10.0
    for method, extra, tol in (("dop853", [], 1e-12), ("rk45", [], 1e-9),
                               ("rk4", ["--dt", "0.01"], 1e-12),
                               ("cvode", [], 1e-6)):
        rc, out, err = call([exe, "run", model, "--form", "full", "--method", method,
                             "--t1", "5"] + extra)
        h, rows = parse_csv(out)
        t = col(h, rows, "t")
        s.check(rc == 0, "throw %s: exit 0 at the stop event" % method, "rc %d %s" % (rc, err))
        ev = notes(err)
        s.check(len(ev) == 2 and "event apex at t = " in ev[0]
                and "event ground at t = " in ev[1] and ev[1].endswith("(stop)"),
                "throw %s: two notes" % method, repr(ev))
        apex = [r for r in rows if abs(r[0] - v0 / g) < 1e-4]
        s.check(len(apex) == 1 and abs(apex[0][0] - v0 / g) <= tol
                and abs(col(h, [apex[0]], "y'")[0]) <= 10 * tol,
                "throw %s: apex row at v0/g with y' = 0" % method,
                "%r" % (apex,))
        s.check(abs(t[-1] - 2 * v0 / g) <= tol and abs(rows[-1][1]) <= 10 * tol,
                "throw %s: the last row is the landing at 2 v0/g" % method,
                "t %.17g y %.3g" % (t[-1], rows[-1][1]))
        s.check(all(b > a for a, b in zip(t, t[1:])), "throw %s: times increase" % method,
                "")
    # The output grid and the events interleaved in time order.
    rc, out, err = call([exe, "run", model, "--t1", "5", "--dt-out", "0.25"])
    h, rows = parse_csv(out)
    t = col(h, rows, "t")
    want = [0.25 * k for k in range(9)] + [v0 / g, 2 * v0 / g]
    s.check(rc == 0 and len(t) == len(want)
            and all(abs(a - b) < 1e-12 for a, b in zip(t, sorted(want))),
            "throw: --dt-out rows and event rows in time order", "%r" % t)
    # A stop event exactly at a step's end (t = 50 * 0.01) and at a grid
    # time: its row once, last, at 0.5.
    half = os.path.join(tmp, "half.nh")
    with open(half, "w") as f:
        f.write("coordinates y\nlagrangian y'^2/2\nevent half = t - 0.5 stop\ninitial y'=1\n")
    for args in (["--method", "rk4", "--dt", "0.01", "--every", "10"],
                 ["--method", "rk4", "--dt", "0.01", "--every", "7"], ["--dt-out", "0.25"]):
        rc, out, err = call([exe, "run", half, "--t1", "1"] + args)
        h, rows = parse_csv(out)
        t = col(h, rows, "t")
        s.check(rc == 0 and t[-1] == 0.5 and t.count(0.5) == 1 and len(notes(err)) == 1
                and all(b > a for a, b in zip(t, t[1:])),
                "stop event at a step's end %s" % " ".join(args), "rc %d t %r" % (rc, t))
    return model


def check_disk(s, exe, src, tmp):
    model = os.path.join(src, "examples", "rolling_disk.nh")
    stops = {}
    for form in ("full", "reduced", "hamilton"):
        rc, out, err = call([exe, "run", model, "--form", form, "--t1", "20"])
        h, rows = parse_csv(out)
        ev = notes(err)
        s.check(rc == 0 and len(ev) == 1 and "event fallen at t = " in ev[0],
                "rolling disk %s: stops at the fall" % form, "rc %d %r" % (rc, ev))
        th = col(h, rows, "th")[-1]
        E = col(h, rows, "E")
        s.check(abs(__import__("math").cos(th) - 0.25) < 1e-9,
                "rolling disk %s: cos(th) = 1/4 at the stop" % form, "th %.17g" % th)
        s.check(abs(E[-1] - E[0]) <= 1e-9 * abs(E[0]),
                "rolling disk %s: energy at the event" % form,
                "E0 %.17g E %.17g" % (E[0], E[-1]))
        stops[form] = rows[-1][0]
    s.check(max(stops.values()) - min(stops.values()) < 1e-8,
            "rolling disk: the forms stop at one time", "%r" % stops)
    # The driver program: run's bytes and the note.
    d = os.path.join(tmp, "disk")
    rc, _, err = call([exe, "emit", model, "--driver", "-o", d])
    cc = shutil.which("cc") or "gcc"
    files = [os.path.join(d, f) for f in os.listdir(d) if f.endswith(".c")] if rc == 0 else []
    prog = os.path.join(d, "prog")
    rc2, _, err2 = call([cc, "-O2", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror",
                         "-o", prog] + files + ["-lm"])
    s.check(rc == 0 and rc2 == 0, "rolling disk: the driver builds warning-free", err + err2)
    if rc2 == 0:
        a = call([prog, "--t1", "20"])
        b = call([exe, "run", model, "--t1", "20"])
        s.check(a[0] == 0 and a[1] == b[1], "rolling disk: the driver writes run's bytes", "")
        s.check(len(notes(a[2])) == 1, "rolling disk: the driver's event note", a[2])
        rc3, _, err3 = call([prog, "--method", "cvode"])
        s.check(rc3 == 2 and "--method cvode needs SUNDIALS" in err3,
                "driver: --method cvode refused (no SUNDIALS)", err3)


def check_stiff(s, exe, src):
    model = os.path.join(src, "tests", "models", "stiff_skate.nh")
    res = {}
    for m in ("cvode", "dop853"):
        rc, out, err = call([exe, "run", model, "--method", m, "--t1", "10", "--stats"])
        h, rows = parse_csv(out)
        stat = [ln for ln in err.splitlines() if ": stats: " in ln]
        calls = int(stat[0].split(" rhs calls")[0].split(", ")[-1]) if stat else -1
        res[m] = (rc, rows[-1] if rows else None, calls)
    (rc1, a, n1), (rc2, b, n2) = res["cvode"], res["dop853"]
    s.check(rc1 == 0 and rc2 == 0, "stiff skate: both methods run", "%d %d" % (rc1, rc2))
    if a and b:
        d = max(abs(u - v) / (1 + abs(v)) for u, v in zip(a[1:11], b[1:11]))
        s.check(d < 1e-7, "stiff skate: cvode ends where dop853 ends", "scaled diff %.3g" % d)
    s.check(0 < n1 and 100 * n1 < n2, "stiff skate: cvode needs < 1/100 of the rhs calls",
            "cvode %d, dop853 %d" % (n1, n2))


def main():
    exe, src = sys.argv[1], sys.argv[2]
    s = Suite()
    tmp = tempfile.mkdtemp()
    try:
        check_throw(s, exe, tmp)
        check_disk(s, exe, src, tmp)
        check_stiff(s, exe, src)
    finally:
        shutil.rmtree(tmp)
    print("events: %d passed, %d failed" % (s.passed, s.failed))
    return 1 if s.failed else 0


if __name__ == "__main__":
    sys.exit(main())
