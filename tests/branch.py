#!/usr/bin/env python3
"""How the dependent velocities alpha are chosen and solved (issue 39):
pivots and charts regular at the initial state, closed forms for one
constraint quadratic in its dependent velocity on the initial state's
branch, Newton started from the velocities of the last accepted state
(the first time from the initial ones).

Usage: branch.py CHETAEV SRCDIR

The models are in SRCDIR/tests/branch. Independent answers: the full form
(the constraints at acceleration level, no alpha at all) against the
reduced one; the integral y' exp(-k x^2/(2 m v0^2)) of the constant-speed
particle and its speed (derived by hand in speed.nh); the time ln 3 at
which the falling constant-speed particle leaves its branch (fall.nh);
alpha printed by `derive --format json` against the roots of the quadratic
computed here. One line per check; the last line counts them; exit 1 on
failure. Standard library only.
"""

import json
import math
import os
import re
import subprocess
import sys


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from physics import Suite  # noqa: E402  (one line per check, counts)


def call(exe, args):
    p = subprocess.run([exe] + args, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


def table(text):
    lines = text.strip().splitlines()
    head = lines[0].split(",")
    return head, [[float(v) for v in ln.split(",")] for ln in lines[1:]]


def run(exe, model, form, t1, dt, every, *extra):
    """(rc, header, rows, stderr) of `run` with rk4; dt None: the adaptive
    default at rtol 1e-10, atol 1e-12 (issue 39's tolerances), a row every
    `every` accepted steps and at t1."""
    method = (["--rtol", "1e-10", "--atol", "1e-12"] if dt is None
              else ["--method", "rk4", "--dt", repr(dt)])
    rc, out, err = call(exe, ["run", model, "--form", form] + method
                        + ["--t1", repr(t1), "--every", str(every)] + list(extra))
    head, rows = table(out) if out.strip() else ([], [])
    return rc, head, rows, err


def agree(suite, exe, model, name, forms, t1, dt, tol):
    """The forms' last rows (t, q, q') agree to tol, scaled by 1 + |v|."""
    finals = {}
    steps = int(round(t1 / dt)) if dt else 1000000
    for form in forms:
        rc, head, rows, err = run(exe, model, form, t1, dt, steps)
        if not suite.check(rc == 0 and rows and rows[-1][0] == t1,
                           "%s run %s" % (name, form), "exit %d %s" % (rc, err.strip()[:200])):
            return None
        e = head.index("E")
        finals[form] = (head[:e], rows[-1][:e], head, rows)
    ref = finals[forms[0]]
    worst, where = 0.0, ""
    for form in forms[1:]:
        h, v = finals[form][0], finals[form][1]
        suite.check(h == ref[0], "%s columns %s" % (name, form), "%s" % h)
        for i in range(1, len(v)):
            d = abs(v[i] - ref[1][i]) / (1 + abs(ref[1][i]))
            if d > worst or math.isnan(d):
                worst, where = d, "%s %s" % (form, h[i])
    suite.check(worst <= tol, "%s forms agree at t=%g" % (name, t1),
                "%s, max scaled difference %.3g (%s), tolerance %g"
                % ("/".join(forms), worst, where, tol))
    return finals


def check_speed(suite, exe, d):
    """x'^2 + y'^2 = v0^2: closed-form alpha, reduced = full over t = 4."""
    model = os.path.join(d, "speed.nh")
    finals = agree(suite, exe, model, "speed", ["reduced", "full"], 4.0, 1e-4, 1e-8)
    fin = agree(suite, exe, model, "speed (dop853)", ["reduced", "full"], 4.0, None, 1e-8)
    for form in ("reduced", "full") if fin else ():
        h, r = fin[form][2], fin[form][3][-1]
        di = abs(r[h.index("y'")] * math.exp(-r[h.index("x")] ** 2 / 2) - 0.8)
        suite.check(di <= 1e-9, "speed integral %s (dop853)" % form, "|I(4) - I(0)| = %.3g" % di)
    # speed and the integral along the reduced run (every 100th step)
    rc, head, rows, err = run(exe, model, "reduced", 4.0, 1e-4, 100)
    if suite.check(rc == 0 and rows, "speed run rows", "exit %d %s" % (rc, err.strip()[:200])):
        xt, yt, ii = head.index("x'"), head.index("y'"), head.index("I")
        sp = max(abs(r[xt] ** 2 + r[yt] ** 2 - 1.0) for r in rows)
        suite.check(sp <= 1e-12, "speed constraint", "max |x'^2 + y'^2 - v0^2| = %.3g" % sp)
        x = head.index("x")
        i0 = 0.8
        di = max(abs(r[yt] * math.exp(-r[x] ** 2 / 2) - i0) for r in rows)
        dc = max(abs(r[ii] - i0) for r in rows)
        suite.check(di <= 1e-9 and dc <= 1e-9, "speed integral",
                    "max |y' exp(-k x^2/(2 m v0^2)) - 0.8| = %.3g (column I: %.3g)" % (di, dc))
        suite.check(min(r[yt] for r in rows) > 0, "speed branch",
                    "y' stays on the positive branch (min %.3g)" % min(r[yt] for r in rows))
    if finals:
        h, rows = finals["full"][2], finals["full"][3]
        x, yt = h.index("x"), h.index("y'")
        di = abs(rows[-1][yt] * math.exp(-rows[-1][x] ** 2 / 2) - 0.8)
        suite.check(di <= 1e-9, "speed integral full form", "|I(4) - I(0)| = %.3g" % di)
    # the hamilton form does not exist: L* = m v0^2/2 - k x^2/2
    rc, _, err = call(exe, ["run", model, "--form", "hamilton", "--t1", "0.1"])
    suite.check(rc == 1 and "Legendre map of L* is degenerate" in err,
                "speed hamilton refused", "exit %d, %s" % (rc, err.strip()[:200]))
    # derive: alpha, L*, E*, M* in closed form (json), checked at points
    rc, out, err = call(exe, ["derive", model, "--format", "json", "--only",
                              "alpha,L_star,energy_star,reduced_mass_matrix"])
    if not suite.check(rc == 0, "speed derive", err.strip()[:200]):
        return
    j = json.loads(out)
    env = {"sqrt": math.sqrt, "exp": math.exp}
    bad = []
    for xt in (-0.9, -0.3, 0.0, 0.5, 0.99):
        for (m, k, v0, x) in ((1.0, 1.0, 1.0, 0.3), (2.0, 0.5, 1.5, -1.2)):
            vals = dict(env, m=m, k=k, v0=v0, x=x, x_t=xt)
            if abs(xt) >= v0:
                continue
            want = {"alpha": math.sqrt(v0 ** 2 - xt ** 2),
                    "L_star": m * v0 ** 2 / 2 - k * x ** 2 / 2,
                    "energy_star": -(m * v0 ** 2 / 2 - k * x ** 2 / 2),
                    "M": m * v0 ** 2 / (v0 ** 2 - xt ** 2)}
            got = {"alpha": eval(j["alpha"]["y_t"], vals),
                   "L_star": eval(j["L_star"], vals),
                   "energy_star": eval(j["energy_star"], vals),
                   "M": eval(j["reduced_mass_matrix"][0][0], vals)}
            for key in want:
                if abs(got[key] - want[key]) > 1e-12 * (1 + abs(want[key])):
                    bad.append("%s at x'=%g: %r vs %r" % (key, xt, got[key], want[key]))
    suite.check(not bad, "speed derive closed forms",
                "alpha = sqrt(v0^2 - x'^2), L* = m v0^2/2 - k x^2/2, E* = -L*, "
                "M* = m v0^2/(v0^2 - x'^2)%s" % ("; " + "; ".join(bad[:3]) if bad else ""))


def check_negative_branch(suite, exe, d, tmp):
    """initial y' = -0.8: the root -sqrt(v0^2 - x'^2), followed by the run."""
    with open(os.path.join(d, "speed.nh")) as f:
        text = f.read().replace("y'=0.8", "y'=-0.8")
    model = os.path.join(tmp, "speed_neg.nh")
    with open(model, "w") as f:
        f.write(text)
    rc, out, err = call(exe, ["derive", model, "--format", "json", "--only", "alpha"])
    a = json.loads(out)["alpha"]["y_t"] if rc == 0 else ""
    suite.check(rc == 0 and abs(eval(a, {"sqrt": math.sqrt, "v0": 1.0, "x_t": 0.6}) + 0.8) < 1e-15,
                "negative branch alpha", "alpha = %s" % a)
    agree(suite, exe, model, "negative branch", ["reduced", "full"], 4.0, 1e-4, 1e-8)
    rc, head, rows, err = run(exe, model, "reduced", 4.0, 1e-3, 10)
    if rc == 0 and rows:
        yt = head.index("y'")
        suite.check(max(r[yt] for r in rows) < 0, "negative branch kept",
                    "max y' = %.3g" % max(r[yt] for r in rows))


def check_fall(suite, exe, d):
    """The branch y' = +sqrt(v0^2 - x'^2) ends at t* = ln 3, where the
    chart of `dependent y'` (quality |y'|/v0) is singular: without
    re-charting the reduced form stops there (exit 3, within 0.01/g of t*
    where the quality falls below 0.01); with it (the default, README
    "Charts") it switches to `dependent x'` there and ends where the full
    form does."""
    model = os.path.join(d, "fall.nh")
    rc, head, rows, err = run(exe, model, "reduced", 2.0, 1e-4, 100, "--no-rechart")
    tstar = math.log(3.0)
    t = None
    if "numerical failure at t = " in err:
        t = float(err.split("numerical failure at t = ")[1].split(":")[0].split()[0])
    suite.check(rc == 3 and t is not None and tstar - 0.0101 <= t <= tstar
                and "the chart is singular" in err,
                "fall branch lost", "exit %d at t = %s, ln 3 = %.6f (%s)"
                % (rc, t, tstar, err.strip()[:160]))
    suite.check(bool(rows) and rows[-1][0] <= tstar and rows[-1][0] > tstar - 0.02,
                "fall rows kept", "last row at t = %s" % (rows[-1][0] if rows else None))
    rc, head, rows, err = run(exe, model, "reduced", 2.0, 1e-4, 1000)
    ts = [float(v) for v in re.findall(r"note: t = ([0-9.e+-]+): dependent velocities "
                                       r"x' \(were y'\)", err)]
    suite.check(rc == 0 and len(ts) == 1 and tstar - 0.0101 <= ts[0] <= tstar,
                "fall re-charted at t*", "exit %d, switches at %s (%s)"
                % (rc, ts, err.strip()[:160]))
    reduced = rows[-1] if rc == 0 and rows else None
    # the full form goes through (it has no chart to lose)
    rc, head, rows, err = run(exe, model, "full", 2.0, 1e-4, 1000)
    yt = head.index("y'") if head else 0
    suite.check(rc == 0 and rows and rows[-1][yt] < 0, "fall full form crosses",
                "exit %d, y'(2) = %s" % (rc, rows[-1][yt] if rows else None))
    # t, x, y, x', y' of the re-charted reduced form and the full form
    worst = max(abs(a - b) for a, b in zip(reduced[:5], rows[-1][:5])) \
        if reduced and rc == 0 and rows else None
    suite.check(worst is not None and worst <= 1e-8, "fall re-charted agrees with full",
                "max difference at t = 2: %s" % worst)


def check_car(suite, exe, d):
    """Two dependent velocities, one constraint quadratic after the linear
    one is solved; the exact heading and velocities."""
    model = os.path.join(d, "car.nh")
    rc, out, err = call(exe, ["derive", model, "--format", "json", "--only", "alpha"])
    alpha = json.loads(out)["alpha"] if rc == 0 else None
    suite.check(isinstance(alpha, dict) and sorted(alpha) == ["x_t", "y_t"],
                "car alpha closed form", "%s %s" % (alpha, err.strip()[:160]))
    agree(suite, exe, model, "car", ["reduced", "full", "hamilton"], 2.0, 1e-4, 1e-8)
    rc, head, rows, err = run(exe, model, "reduced", 2.0, 1e-4, 500)
    if suite.check(rc == 0 and rows, "car run", "exit %d %s" % (rc, err.strip()[:160])):
        w = math.sqrt(2.0)
        ph, xt, yt = head.index("phi"), head.index("x'"), head.index("y'")
        worst = 0.0
        for r in rows:
            p = 0.3 * math.cos(w * r[0]) + 0.5 / w * math.sin(w * r[0])
            worst = max(worst, abs(r[ph] - p), abs(r[xt] - math.cos(p)), abs(r[yt] - math.sin(p)))
        suite.check(worst <= 1e-10, "car exact solution",
                    "max |phi - phi(t)|, |(x', y') - v0 (cos phi, sin phi)| = %.3g" % worst)


def check_pivot(suite, exe, d):
    """A pivot that is 0 at the initial state in the natural order."""
    model = os.path.join(d, "pivot.nh")
    finals = agree(suite, exe, model, "pivot", ["reduced", "full", "hamilton"], 1.0, 1e-4, 1e-8)
    agree(suite, exe, model, "pivot (dop853)", ["reduced", "full", "hamilton"], 1.0, None, 1e-8)
    if finals:
        h, rows = finals["full"][2], finals["full"][3]
        e = h.index("E")
        de = max(abs(r[e] - rows[0][e]) for r in rows)
        suite.check(de <= 1e-9, "pivot energy", "full form |E(1) - E(0)| = %.3g" % de)
    # the emitted code is finite at th = 0 (the CSV's first row)
    rc, head, rows, err = run(exe, model, "reduced", 0.0, 1e-3, 1)
    suite.check(rc == 0 and rows and all(math.isfinite(v) for v in rows[0]),
                "pivot initial row", "exit %d %s" % (rc, err.strip()[:160]))


def check_quartic(suite, exe, d):
    """Implicit alpha: Newton starts at the initial dependent velocity."""
    model = os.path.join(d, "quartic.nh")
    agree(suite, exe, model, "quartic", ["reduced", "full"], 1.0, 1e-4, 1e-8)
    rc, head, rows, err = run(exe, model, "reduced", 1.0, 1e-3, 100)
    if rc == 0 and rows:
        xt, yt = head.index("x'"), head.index("y'")
        res = max(abs(r[yt] ** 4 + r[yt] ** 2 + r[xt] ** 2 - 1) for r in rows)
        y0 = math.sqrt((-1 + math.sqrt(1 + 4 * 0.64)) / 2)
        suite.check(res <= 1e-12 and abs(rows[0][yt] - y0) < 1e-12, "quartic constraint",
                    "y'(0) = %.17g (exact %.17g), max residual %.3g" % (rows[0][yt], y0, res))
    # a state on the other branch (y' < 0, where the block's determinant
    # 4 y'^3 + 2 y' has the other sign): the reduced form, whose Newton
    # starts at the initial y' > 0, refuses it instead of jumping back to
    # y' > 0; the full form follows it
    rc, head, rows, err = run(exe, model, "reduced", 0.01, 1e-3, 1, "--init", "y'=-0.5")
    suite.check(rc == 3 and "t = 0 " in err and len(rows) == 0, "quartic other branch refused",
                "exit %d, %d rows, %s" % (rc, len(rows), err.strip()[:200]))
    rc, head, rows, err = run(exe, model, "full", 0.01, 1e-3, 1, "--init", "y'=-0.5")
    suite.check(rc == 0 and rows and max(r[head.index("y'")] for r in rows) < -0.66,
                "quartic other branch full form", "exit %d %s" % (rc, err.strip()[:120]))


def check_track(suite, exe, d, tmp):
    """Implicit alpha's Newton starts from the velocities of the last
    accepted state (cubic.nh: the root moves far from the initial one):
    every method and form, the driver program and the emitted API."""
    model = os.path.join(d, "cubic.nh")
    t1 = 4.0
    exact = [t1, t1 + t1 ** 2 / 2, t1 + t1 ** 2 / 2 + t1 ** 3 / 6, 1 + t1, t1 + t1 ** 2 / 2 + 1]
    for method in (None, "rk4", "cvode"):
        for form in ("full", "reduced", "hamilton"):
            extra = [] if method is None else ["--method", method]
            dt = 1e-3 if method == "rk4" else None
            args = extra if method != "rk4" else []
            rc, head, rows, err = run(exe, model, form, t1, dt, 1000000, *args)
            name = "cubic %s %s" % (form, method or "dop853")
            if not suite.check(rc == 0 and rows and rows[-1][0] == t1, name + " runs",
                               "exit %d %s" % (rc, err.strip()[:200])):
                continue
            worst = max(abs(a - b) / (1 + abs(b)) for a, b in zip(rows[-1][:5], exact))
            tol = 1e-10 if method == "rk4" else 1e-8
            suite.check(worst <= tol, name + " exact motion",
                        "last row %s, exact %s, max scaled difference %.3g"
                        % (rows[-1][:5], exact, worst))
    # the dependency-free driver program carries the start too
    out = os.path.join(tmp, "cubic_driver")
    rc, _, err = call(exe, ["emit", model, "--form", "reduced", "--driver", "-o", out])
    prog = os.path.join(out, "prog")
    p = subprocess.run(["cc", "-O2", "-o", prog] + [os.path.join(out, f) for f in os.listdir(out)
                                                      if f.endswith(".c")] + ["-lm"],
                       capture_output=True, text=True)
    rc, stdout, err = call(prog, ["--t1", "4"]) if p.returncode == 0 else (1, "", p.stderr)
    last = [float(v) for v in stdout.strip().splitlines()[-1].split(",")][:5] if rc == 0 else []
    suite.check(rc == 0 and max(abs(a - b) / (1 + abs(b)) for a, b in zip(last, exact)) <= 1e-8,
                "cubic driver program", "exit %d, last %s %s" % (rc, last, err.strip()[:200]))
    # the emitted API: at the exact state of t = 4, PREFIX_velocities
    # (Newton from the initial y' = 1) lands on the root u = -1 (y' = 11),
    # PREFIX_velocities_from from nearby velocities stays on u = 1 (y' = 13)
    harness = os.path.join(tmp, "cubic_api.c")
    with open(harness, "w") as f:
        f.write('#include <stdio.h>\n#include "cubic_reduced.h"\n'
                "int main(void)\n{\n"
                "    double x[3] = {12, 0, 5}, vs[2] = {4.9, 12.8}, v[2], w[2];\n"
                "    if (cubic_reduced_velocities(4, x, cubic_reduced_param_defaults, v) ||\n"
                "        cubic_reduced_velocities_from(4, x, cubic_reduced_param_defaults, vs, w))\n"
                "        return 1;\n"
                '    printf("%d %.17g %.17g\\n", cubic_reduced_NEWTON, v[1], w[1]);\n'
                "    return 0;\n}\n")
    api = os.path.join(tmp, "cubic_api")
    p = subprocess.run(["cc", "-std=c99", "-pedantic", "-Wall", "-Wextra", "-Werror", "-I", out,
                        "-o", api, harness, os.path.join(out, "cubic_reduced.c"), "-lm"],
                       capture_output=True, text=True)
    rc, stdout, err = call(api, []) if p.returncode == 0 else (1, "", p.stderr)
    got = stdout.split()
    suite.check(rc == 0 and got[0] == "1" and abs(float(got[1]) - 11) < 1e-12
                and abs(float(got[2]) - 13) < 1e-12, "cubic velocities_from",
                "exit %d: %s %s" % (rc, stdout.strip(), err.strip()[:200]))


def check_choice(suite, exe, d, tmp):
    """The tool's choice is regular at the initial state; a user's singular
    one is an error that names the block and suggests a regular one."""
    model = os.path.join(d, "knife_north.nh")
    rc, out, err = call(exe, ["derive", model, "--format", "json", "--only", "dependent"])
    dep = json.loads(out)["dependent"] if rc == 0 else None
    suite.check(dep == ["x_t"], "choice at the initial state", "dependent %s" % dep)
    agree(suite, exe, model, "knife north", ["reduced", "full", "hamilton"], 1.0, 1e-4, 1e-8)
    bad = os.path.join(tmp, "knife_bad.nh")
    with open(model) as f:
        text = f.read()
    with open(bad, "w") as f:
        f.write(text + "dependent y'\n")
    line = text.count("\n") + 1
    want = ("%s:%d:1: error: bad `dependent` choice: the constraint Jacobian block "
            "of y' is singular at the initial state (dphi_1/dy' vanishes there); "
            "a regular choice there is `dependent x'`" % (bad, line))
    for cmd in (["derive", bad], ["run", bad], ["emit", bad, "-o", tmp]):
        rc, out, err = call(exe, cmd)
        suite.check(rc == 1 and err.strip() == want and not out,
                    "singular dependent %s" % cmd[0], "exit %d, %s" % (rc, err.strip()))


def check_strict_c(suite, exe, d, tmp):
    """The emitted code of these models (guards, kn_branch) compiles with
    gcc -std=c99 -pedantic -Wall -Wextra -Werror."""
    bad = []
    for f in sorted(os.listdir(d)):
        for form in ("full", "reduced", "hamilton"):
            out = os.path.join(tmp, "c_" + f[:-3] + "_" + form)
            rc, _, err = call(exe, ["emit", os.path.join(d, f), "--form", form, "-o", out])
            if rc:
                continue  # no hamilton form for a degenerate Legendre map
            for c in sorted(os.listdir(out)):
                if c.endswith(".c"):
                    p = subprocess.run(["gcc", "-std=c99", "-pedantic", "-Wall", "-Wextra",
                                        "-Werror", "-c", os.path.join(out, c), "-o",
                                        os.path.join(out, c[:-2] + ".o")],
                                       capture_output=True, text=True)
                    if p.returncode:
                        bad.append("%s: %s" % (c, p.stderr.strip()[:200]))
    suite.check(not bad, "strict C", "; ".join(bad) or "gcc -std=c99 -pedantic -Werror")


def main():
    if len(sys.argv) != 3:
        print("usage: branch.py CHETAEV SRCDIR", file=sys.stderr)
        return 2
    import tempfile
    exe, src = os.path.abspath(sys.argv[1]), sys.argv[2]
    d = os.path.join(src, "tests", "branch")
    suite = Suite()
    with tempfile.TemporaryDirectory() as tmp:
        check_speed(suite, exe, d)
        check_negative_branch(suite, exe, d, tmp)
        check_fall(suite, exe, d)
        check_car(suite, exe, d)
        check_pivot(suite, exe, d)
        check_quartic(suite, exe, d)
        check_track(suite, exe, d, tmp)
        check_choice(suite, exe, d, tmp)
        check_strict_c(suite, exe, d, tmp)
    print("branch: %d passed, %d failed" % (suite.passed, suite.failed))
    return 1 if suite.failed else 0


if __name__ == "__main__":
    sys.exit(main())
