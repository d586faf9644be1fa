#!/usr/bin/python3
"""The adaptive integrators of the runtime against SciPy's (bench/README.md).

For each example, the emitted right-hand side (`chetaev emit --form F`)
is built as a shared object and loaded with ctypes, so that SciPy's
solve_ivp integrates the SAME function. chetaev integrates it through
`chetaev run --stats` (the one loop of runtime/simulate.c) with dop853
and rk45 at rtol 1e-10, atol 1e-12; SciPy with DOP853 and RK45 at the
same tolerances. Reported: right-hand side calls of both and their
ratio, and the largest difference of the final coordinates and
velocities, scaled by max(1, |value|).

Then the stiff skate (tests/models/stiff_skate.nh) with cvode, dop853
and rk45: right-hand side calls (cvode's include its finite-difference
Jacobians) and x(10) of each.

Then `chetaev run` of the knife edge to t1 = 10, model file to CSV, whole
process: the default method against `--method rk4 --dt 1e-3` (median wall
time of repeated runs), each against a reference (rk4 at dt = 2.5e-4,
checked against dop853 at rtol 1e-13).

Usage: /usr/bin/python3 bench/adaptive.py BUILDDIR [--repeat N]
SciPy is used here only, never by chetaev.
"""
import ctypes
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.integrate import solve_ivp

SRC = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
EXAMPLES = [("knife_edge", "reduced", 10), ("knife_edge", "full", 10),
            ("chaplygin_sleigh", "reduced", 10), ("double_pendulum", "reduced", 10),
            ("vertical_disk", "reduced", 10), ("vertical_disk", "full", 10)]
RTOL, ATOL = 1e-10, 1e-12
PAIRS = [("dop853", "DOP853"), ("rk45", "RK45")]


def load(chetaev, model, form, tmp):
    """The emitted code of one form as a shared object: (rhs, velocities,
    x0, p, nx, nq) with numpy wrappers."""
    d = os.path.join(tmp, model + "_" + form)
    pre = model + "_" + form
    subprocess.run([chetaev, "emit", os.path.join(SRC, "examples", model + ".nh"),
                    "--form", form, "-o", d], check=True, capture_output=True)
    so = os.path.join(d, pre + ".so")
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", so,
                    os.path.join(d, pre + ".c"), "-lm"], check=True)
    header = open(os.path.join(d, pre + ".h")).read()
    dims = {k: int(v) for k, v in re.findall(r"#define %s_(N[XPQ]) (\d+)" % pre, header)}
    nx, npar, nq = dims["NX"], dims["NP"], dims["NQ"]
    lib = ctypes.CDLL(so)
    dbl = ctypes.POINTER(ctypes.c_double)
    rhs = getattr(lib, pre + "_rhs")
    rhs.argtypes = [ctypes.c_double, dbl, dbl, dbl]
    rhs.restype = ctypes.c_int
    vel = getattr(lib, pre + "_velocities")
    vel.argtypes = [ctypes.c_double, dbl, dbl, dbl]
    vel.restype = ctypes.c_int
    init = getattr(lib, pre + "_initial")
    init.argtypes = [dbl]
    x0 = np.zeros(nx)
    init(x0.ctypes.data_as(dbl))
    p = np.array((ctypes.c_double * npar).in_dll(lib, pre + "_param_defaults")[:]) \
        if npar else np.zeros(1)
    pp = p.ctypes.data_as(dbl)

    def f(t, x):
        x = np.ascontiguousarray(x, dtype=float)
        dx = np.empty(nx)
        if rhs(t, x.ctypes.data_as(dbl), pp, dx.ctypes.data_as(dbl)):
            raise RuntimeError("rhs failed at t = %r" % t)
        return dx

    def velocities(t, x):
        x = np.ascontiguousarray(x, dtype=float)
        qt = np.empty(nq)
        vel(t, x.ctypes.data_as(dbl), pp, qt.ctypes.data_as(dbl))
        return qt

    return f, velocities, x0, nq


def chetaev_run(chetaev, model, form, t1, *opts):
    """(rhs calls, accepted, rejected, final row t,q,q') of `chetaev run --stats`."""
    r = subprocess.run([chetaev, "run", os.path.join(SRC, "examples", model + ".nh"),
                        "--form", form, "--t1", repr(t1), "--stats"] + list(opts),
                       capture_output=True, text=True, check=True)
    m = re.search(r"(\d+) steps accepted, (\d+) rejected, (\d+) rhs calls", r.stderr)
    lines = r.stdout.strip().split("\n")
    head = lines[0].split(",")
    last = [float(v) for v in lines[-1].split(",")]
    return int(m.group(3)), int(m.group(1)), int(m.group(2)), last[:head.index("E")]


def compare(chetaev, tmp):
    print("| example | form | pair | chetaev rhs calls (acc/rej) | SciPy rhs calls (steps) "
          "| ratio | max scaled difference of q, q' at t1 |")
    print("|---|---|---|---|---|---|---|")
    worst_ratio = 0
    for model, form, t1 in EXAMPLES:
        f, velocities, x0, nq = load(chetaev, model, form, tmp)
        for ours, theirs in PAIRS:
            calls, acc, rej, row = chetaev_run(chetaev, model, form, t1, "--method", ours,
                                               "--rtol", repr(RTOL), "--atol", repr(ATOL))
            sol = solve_ivp(f, (0, t1), x0, method=theirs, rtol=RTOL, atol=ATOL)
            assert sol.success, sol.message
            y = sol.y[:, -1]
            ref = np.concatenate([[sol.t[-1]], y[:nq], velocities(sol.t[-1], y)])
            diff = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(row, ref))
            ratio = calls / sol.nfev
            worst_ratio = max(worst_ratio, ratio)
            print("| %s | %s | %s | %d (%d/%d) | %d (%d) | %.3f | %.2g |"
                  % (model, form, ours, calls, acc, rej, sol.nfev, len(sol.t) - 1,
                     ratio, diff))
    print("\nlargest ratio of rhs calls: %.3f" % worst_ratio)


def timed(cmd, repeat):
    ts = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts)


def final_row(path):
    lines = open(path).read().strip().split("\n")
    head = lines[0].split(",")
    return len(lines) - 1, [float(v) for v in lines[-1].split(",")][:head.index("E")]


def scaled(a, b):
    return max(abs(x - y) / max(1.0, abs(y)) for x, y in zip(a, b))


def timing(chetaev, tmp, repeat):
    """`run` of the knife edge to t1 = 10, model file to CSV (whole
    process, median of repeated runs), and the error at t1 against a
    reference: rk4 at dt = 2.5e-4 (checked against dop853 at rtol 1e-13)."""
    knife = os.path.join(SRC, "examples", "knife_edge.nh")
    out = os.path.join(tmp, "k.csv")
    issue = ["--set", "c=0", "--init", "phi'=1"]
    # (label, options, the form of the reference: the same motion)
    cases = (("default state, reduced form", ["--form", "reduced"], "reduced"),
             ("c=0, phi'=1 (README's repl example), full form", ["--form", "full"] + issue,
              "full"),
             ("c=0, phi'=1, reduced form (crosses cos(phi) = 0, its chart's singularity)",
              ["--form", "reduced"] + issue, "full"))
    print("\n| knife edge to t1 = 10, model file to CSV | method | median wall s "
          "| rows | rhs calls | max scaled error at t1 |")
    print("|---|---|---|---|---|---|")
    for label, case, ref_form in cases:
        base = [chetaev, "run", knife, "--t1", "10", "-o", out] + case
        refrun = base + ["--form", ref_form]
        subprocess.run(refrun + ["--method", "rk4", "--dt", "2.5e-4"], check=True)
        ref = final_row(out)[1]
        subprocess.run(refrun + ["--rtol", "1e-13", "--atol", "1e-16"], check=True)
        check = scaled(final_row(out)[1], ref)
        for how, opts in (("default (dop853, rtol 1e-10, atol 1e-12)", []),
                          ("dop853, rtol 1e-12, atol 1e-14", ["--rtol", "1e-12", "--atol", "1e-14"]),
                          ("rk4, dt 1e-3 (the old default)", ["--method", "rk4", "--dt", "1e-3"])):
            t = timed(base + opts, repeat)
            r = subprocess.run(base + opts + ["--stats"], capture_output=True, text=True,
                               check=True)
            calls = re.search(r"(\d+) rhs calls", r.stderr).group(1)
            rows, last = final_row(out)
            print("| %s | %s | %.4f | %d | %s | %.2g |"
                  % (label, how, t, rows, calls, scaled(last, ref)))
        print("| %s | (reference, %s form: dop853 rtol 1e-13 against rk4 dt 2.5e-4) "
              "| | | | %.2g |" % (label, ref_form, check))


def stiff(chetaev):
    """The stiff skate (tests/models/stiff_skate.nh, fast mode -2e4/s) to
    t1 = 10 at the default tolerances: rhs calls of cvode against the
    explicit pairs, and the end states against each other."""
    model = os.path.join(SRC, "tests", "models", "stiff_skate.nh")
    print("\n| stiff skate, t1 = 10 | rhs calls | steps (acc/rej) | x(10) |")
    print("|---|---|---|---|")
    res = {}
    for m in ("cvode", "dop853", "rk45"):
        r = subprocess.run([chetaev, "run", model, "--method", m, "--t1", "10", "--stats"],
                           capture_output=True, text=True, check=True)
        g = re.search(r"(\d+) steps accepted, (\d+) rejected, (\d+) rhs calls", r.stderr)
        x = float(r.stdout.strip().split("\n")[-1].split(",")[1])
        res[m] = int(g.group(3))
        print("| %s | %s | %s/%s | %.14g |" % (m, g.group(3), g.group(1), g.group(2), x))
    print("\nexplicit / cvode rhs calls: dop853 %.0fx, rk45 %.0fx"
          % (res["dop853"] / res["cvode"], res["rk45"] / res["cvode"]))


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    chetaev = os.path.join(os.path.abspath(sys.argv[1]), "chetaev")
    repeat = int(sys.argv[sys.argv.index("--repeat") + 1]) if "--repeat" in sys.argv else 21
    with tempfile.TemporaryDirectory() as tmp:
        compare(chetaev, tmp)
        stiff(chetaev)
        timing(chetaev, tmp, repeat)


if __name__ == "__main__":
    main()
