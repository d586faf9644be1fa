#!/usr/bin/python3
"""SymPy 1.11 on a chetaev model file: the baseline of bench/run.sh.

usage: sympy_bench.py MODEL.nh --method kane|lagrange [--outdir DIR]
                      [--cc gcc,tcc] [--against DIR/PREFIX] [--no-ops]

Reads the model file (the statements the bench generators and
examples/knife_edge.nh use: coordinates, parameters, define, lagrangian,
constraint, force, dependent) and derives the equations of motion with
  - lagrange: LagrangesMethod(L, q, forcelist, frame, nonhol_coneqs=...)
    (state (q, q'); q'' and the multipliers from the (n+k)-square system
    [M_d, -Phi_v^T; M_cd, 0]), or
  - kane: KanesMethod with the dependent speeds of the `dependent` line
    and the constraints as velocity constraints (state (q, u), u = q';
    u' from the n-square system [K_d; K_dnh] u' = f).
Kane needs bodies: every term c*v^2 of L, v a coordinate velocity or the
velocity of a define, becomes a particle of mass 2c moving with velocity
v along one axis (the same kinetic energy); the velocity-free part of L
and the `force` lines become generalized forces on the coordinates.
A Lagrangian that is not of that diagonal form is reported unsupported.

Then sympy.cse over the entries of the mass matrix and the forcing
vector, ccode of the result into DIR/sy_METHOD.c (a numeric LU solve with
partial pivoting, the numeric-solve variant of the performance issue) and
the interface of SPEC section 4 that bench/rhs_bench.c times.

Prints key=value lines as soon as each is known (so a caller that kills
a slow run keeps the finished stages):
  derive_s      form the equations + mass matrix + forcing (import and
                interpreter start-up excluded), CPU seconds of this
                process (steadier than wall time on a shared machine)
  to_c_s        model file -> C file written: parse, derive, cse, ccode
                (CPU seconds)
  peak_rss_mb   peak RSS of this process after to_c
  ops           count_ops of the CSE output (temporaries and outputs; the
                linear solve is not counted)
  size          unknowns of the linear system
and with --cc, for each compiler CC (gcc -O2, tcc):
  CC_build_ms (CPU of CC -c), CC_exe (the harness built),
  CC_indep_ns, CC_chain_ns  (bench/rhs_bench.c)
  CC_against_indep_ns, CC_against_chain_ns, CC_maxdiff
                with --against: the chetaev-emitted full form DIR/PREFIX
                timed by the same harness and compared with the SymPy
                kernel at 10000 random states (same state and parameter
                order); maxdiff is relative to max(1, |value|).
"""
import os
import re
import resource
import subprocess
import sys
import time

import sympy as sp
from sympy.physics.mechanics import (KanesMethod, LagrangesMethod, Particle,
                                     Point, ReferenceFrame, dynamicsymbols)

FUNCS = {"sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin,
         "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh,
         "cosh": sp.cosh, "tanh": sp.tanh, "exp": sp.exp, "log": sp.log,
         "sqrt": sp.sqrt, "abs": sp.Abs, "pi": sp.pi}
T = dynamicsymbols._t
BENCH = os.path.dirname(os.path.abspath(__file__))


def say(key, value):
    print(f"{key}={value}", flush=True)


def statements(text):
    """Logical statements: comments stripped, continuation lines joined
    (open parenthesis or a trailing binary operator, SPEC section 1)."""
    out, cur = [], ""
    for line in text.splitlines():
        line = line.split("#", 1)[0].rstrip()
        if not line.strip() and not cur:
            continue
        cur = (cur + " " + line.strip()).strip()
        if cur.count("(") > cur.count(")") or cur[-1:] in "+-*/^,=":
            continue
        out.append(cur)
        cur = ""
    if cur:
        out.append(cur)
    return out


class Model:
    """The parsed model: coordinates q(t) (dynamic symbols), parameters,
    defines, L, constraints, forces and dependent coordinates, each
    expression in two versions: `full` (defines and velocities as
    expressions in q(t)) and `opaque` (velocities as plain symbols, for
    the particle decomposition of L)."""

    def __init__(self, path):
        self.name = os.path.splitext(os.path.basename(path))[0]
        self.coords, self.params, self.defaults = [], [], []
        self.q, self.full, self.opaque, self.velsym = {}, {}, {}, {}
        self.lagrangian = self.lag_opaque = None
        self.constraints, self.forces, self.dependent = [], {}, []
        for st in statements(open(path, encoding="utf-8").read()):
            self.statement(st)
        if self.lagrangian is None or not self.coords:
            raise ValueError("model has no coordinates or no lagrangian")

    def statement(self, st):
        kw, _, rest = st.partition(" ")
        rest = rest.strip()
        if kw == "model":
            self.name = rest
        elif kw == "coordinates":
            for c in rest.split():
                self.coords.append(c)
                self.q[c] = dynamicsymbols(c)
                self.full[c] = self.opaque[c] = self.q[c]
                v = sp.Symbol("v__" + c)
                self.velsym[v] = self.q[c].diff(T)
                self.full[c + "__dot"] = self.q[c].diff(T)
                self.opaque[c + "__dot"] = v
        elif kw == "parameters":
            for item in rest.split():
                name, _, val = item.partition("=")
                s = sp.Symbol(name)
                self.params.append(s)
                self.defaults.append(float(sp.sympify(val, locals=FUNCS)))
                self.full[name] = self.opaque[name] = s
        elif kw == "define":
            name, _, expr = rest.partition("=")
            name = name.strip()
            e = self.parse(expr, self.full)
            self.full[name] = e
            self.opaque[name] = self.parse(expr, self.opaque)
            if not e.has(sp.Derivative):
                self.full[name + "__dot"] = e.diff(T)
                v = sp.Symbol("v__" + name)
                self.velsym[v] = e.diff(T)
                self.opaque[name + "__dot"] = v
        elif kw == "lagrangian":
            self.lagrangian = self.parse(rest, self.full)
            self.lag_opaque = self.parse(rest, self.opaque)
        elif kw == "constraint":
            lhs, _, rhs = rest.partition("=")
            e = self.parse(lhs, self.full) - (self.parse(rhs, self.full) if rhs else 0)
            if not e.has(sp.Derivative):
                e = e.diff(T)  # holonomic: used at velocity level
            self.constraints.append(e)
        elif kw == "force":
            c, _, expr = rest.partition("=")
            self.forces[c.strip()] = self.parse(expr, self.full)
        elif kw == "dependent":
            self.dependent = [v.rstrip("'") for v in rest.split()]
        elif kw in ("initial", "integral", "field"):
            pass  # not part of the equations of motion
        else:
            raise ValueError(f"unsupported statement: {kw}")

    @staticmethod
    def parse(text, names):
        src = re.sub(r"([A-Za-z][A-Za-z0-9_]*)'", r"\1__dot", text).replace("^", "**")
        for ident in set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", src)):
            if ident not in names and ident not in FUNCS and ident != "t":
                raise ValueError(f"unknown identifier {ident}")
        local = dict(FUNCS)
        local.update(names)
        local["t"] = T
        return sp.sympify(src, locals=local, rational=True)


def derive_lagrange(mod):
    N = ReferenceFrame("N")
    qs = [mod.q[c] for c in mod.coords]
    forcelist = []
    for c, f in mod.forces.items():
        P = Point("F_" + c)
        P.set_vel(N, mod.q[c].diff(T) * N.x)
        forcelist.append((P, f * N.x))
    lm = LagrangesMethod(mod.lagrangian, qs, forcelist=forcelist or None,
                         frame=N, nonhol_coneqs=mod.constraints or None)
    lm.form_lagranges_equations()
    n, k = len(qs), len(mod.constraints)
    M = lm.mass_matrix
    if k:
        M = M.col_join(lm._m_cd.row_join(sp.zeros(k, k)))
        f = lm.forcing.col_join(lm._f_cd)
    else:
        f = lm.forcing
    # state (q, q'): the outputs are q' and the first n unknowns
    qd = [q.diff(T) for q in qs]
    return M, f, qs, qd, n


def particles(mod, N):
    """Particles and generalized forces with the kinetic energy and the
    potential part of L (see the module comment); None if L is not a sum
    of c*v^2 terms (c constant) plus a velocity-free part."""
    vs = list(mod.velsym)
    L = sp.expand(mod.lag_opaque)
    poly = sp.Poly(L, *vs)
    bodies, L0 = [], sp.S.Zero
    for monom, coeff in poly.terms():
        deg = sum(monom)
        if deg == 0:
            L0 += coeff
        elif deg == 2 and max(monom) == 2 and not coeff.has(sp.Function):
            v = vs[monom.index(2)]
            P = Point("P_" + v.name)
            P.set_vel(N, mod.velsym[v] * N.x)
            bodies.append(Particle("pa_" + v.name, P, 2 * coeff))
        else:
            return None
    forces = []
    for c in mod.coords:
        Q = L0.diff(mod.q[c]) + mod.forces.get(c, 0)
        if Q != 0:
            P = Point("F_" + c)
            P.set_vel(N, mod.q[c].diff(T) * N.x)
            forces.append((P, Q * N.x))
    return bodies, forces


def derive_kane(mod):
    N = ReferenceFrame("N")
    got = particles(mod, N)
    if got is None:
        raise ValueError("Lagrangian not a sum of c*v^2 terms: no bodies for Kane")
    bodies, forces = got
    qs = [mod.q[c] for c in mod.coords]
    us = {c: dynamicsymbols("u_" + c) for c in mod.coords}
    kd = [mod.q[c].diff(T) - us[c] for c in mod.coords]
    to_u = {mod.q[c].diff(T): us[c] for c in mod.coords}
    vc = [e.xreplace(to_u) for e in mod.constraints]
    dep = [us[c] for c in mod.dependent] if vc else []
    ind = [us[c] for c in mod.coords if us[c] not in dep]
    if len(dep) != len(vc):
        raise ValueError("dependent speeds do not match the constraints")
    km = KanesMethod(N, q_ind=qs, u_ind=ind, kd_eqs=kd,
                     u_dependent=dep or None, velocity_constraints=vc or None)
    km.kanes_equations(bodies, forces or None)
    M, f = km.mass_matrix, km.forcing
    # the unknowns are u' in the order of km.u (independent, then dependent)
    order = list(km.u)
    n = len(qs)
    return M, f, qs, [us[c] for c in mod.coords], n, order


def c_names(qs, vel):
    """Map q(t) and its velocity (q' or u) to the C state x[i]."""
    n = len(qs)
    m = {}
    for i, v in enumerate(vel):
        m[v] = sp.Symbol(f"x[{n + i}]")
    for i, q in enumerate(qs):
        m[q] = sp.Symbol(f"x[{i}]")
    return m


def to_c(mod, M, f, qs, vel, n, order, path, prefix):
    """CSE + ccode of M and f into a C file; returns the op count."""
    size = M.shape[0]
    sub = c_names(qs, vel)
    params = {p: sp.Symbol(f"p[{i}]") for i, p in enumerate(mod.params)}
    entries = [M[i, j] for i in range(size) for j in range(size)] + list(f)
    # derivatives first (xreplace matches whole subtrees), then q(t)
    exprs = [e.xreplace({k: v for k, v in sub.items() if isinstance(k, sp.Derivative)})
             .xreplace({k: v for k, v in sub.items() if not isinstance(k, sp.Derivative)})
             .xreplace(params) for e in entries]
    from sympy.core.function import AppliedUndef
    left = set().union(*[e.atoms(AppliedUndef, sp.Derivative) for e in exprs])
    if left:
        raise ValueError(f"left after substitution: {sorted(map(str, left))[:5]}")
    reps, red = sp.cse(exprs, symbols=sp.numbered_symbols("s"))
    # velocity of q_i in the state is x[n+i]; with Kane the unknown order
    # of km.u may differ from the declared order
    pos = {u: i for i, u in enumerate(vel)}
    acc_of = [pos[u] for u in order] if order else list(range(n))
    lines = [f"/* SymPy {sp.__version__} ({prefix}): sympy.cse + ccode of the "
             f"{size}x{size} system of {mod.name} */",
             "#include <math.h>",
             f'#include "{prefix}.h"',
             f"const double {prefix}_param_defaults[{max(1, len(mod.params))}] = {{"
             + ", ".join(repr(d) for d in mod.defaults or [0.0]) + "};",
             f"enum {{ NS = {size} }};",
             "static int solve(double A[NS][NS], double b[NS])",
             "{",
             "    int i, j, k, piv;",
             "    for (k = 0; k < NS; k++) {",
             "        piv = k;",
             "        for (i = k + 1; i < NS; i++) if (fabs(A[i][k]) > fabs(A[piv][k])) piv = i;",
             "        if (A[piv][k] == 0.0) return 1;",
             "        if (piv != k) {",
             "            double t;",
             "            for (j = 0; j < NS; j++) { t = A[k][j]; A[k][j] = A[piv][j]; A[piv][j] = t; }",
             "            t = b[k]; b[k] = b[piv]; b[piv] = t;",
             "        }",
             "        for (i = k + 1; i < NS; i++) {",
             "            double l = A[i][k] / A[k][k];",
             "            for (j = k + 1; j < NS; j++) A[i][j] -= l * A[k][j];",
             "            b[i] -= l * b[k];",
             "        }",
             "    }",
             "    for (k = NS - 1; k >= 0; k--) {",
             "        double s = b[k];",
             "        for (j = k + 1; j < NS; j++) s -= A[k][j] * b[j];",
             "        b[k] = s / A[k][k];",
             "    }",
             "    return 0;",
             "}",
             f"int {prefix}_rhs(double t, const double *x, const double *p, double *dxdt)",
             "{",
             "    double A[NS][NS], b[NS];",
             "    int i;",
             "    (void)t; (void)p;"]
    for s, e in reps:
        lines.append(f"    const double {s} = {sp.ccode(e)};")
    for idx, e in enumerate(red):
        if idx < size * size:
            lines.append(f"    A[{idx // size}][{idx % size}] = {sp.ccode(e)};")
        else:
            lines.append(f"    b[{idx - size * size}] = {sp.ccode(e)};")
    lines += ["    if (solve(A, b)) return 1;",
              f"    for (i = 0; i < {n}; i++) dxdt[i] = x[{n} + i];"]
    for r, i in enumerate(acc_of):
        lines.append(f"    dxdt[{n + i}] = b[{r}];")
    lines += ["    return 0;", "}", ""]
    with open(path + ".c", "w") as fh:
        fh.write("\n".join(lines))
    with open(path + ".h", "w") as fh:
        fh.write(f"#define {prefix}_NX {2 * n}\n#define {prefix}_NP {len(mod.params)}\n"
                 f"extern const double {prefix}_param_defaults[];\n"
                 f"int {prefix}_rhs(double t, const double *x, const double *p, double *dxdt);\n")
    return reps, red, size


def count(reps, red):
    return sum(sp.count_ops(e) for _, e in reps) + sum(sp.count_ops(e) for e in red)


def keyvals(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def harness(cc, outdir, prefix, against):
    """Build bench/rhs_bench.c against the SymPy kernel (and, with
    against, the chetaev kernel as its comparison kernel) and run it."""
    exe = os.path.join(outdir, f"bench_{prefix}.{cc}")
    extra = []
    if against:
        adir, apre = os.path.split(against)
        wrap = os.path.join(outdir, f"against_{prefix}.c")
        with open(wrap, "w") as fh:
            fh.write(f'#include "{apre}.h"\nint hand_rhs(double t, const double *x, '
                     f'const double *p, double *dxdt)\n{{ return {apre}_rhs(t, x, p, dxdt); }}\n')
        extra = ["-DHAND", "-I" + adir, wrap, os.path.join(adir, apre + ".c")]
    obj = os.path.join(outdir, f"{prefix}.{cc}.o")
    ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([cc, "-O2", "-c", os.path.join(outdir, prefix + ".c"), "-o", obj,
                    "-I" + outdir], check=True)
    ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
    say(f"{cc}_build_ms", round(cpu * 1e3))
    subprocess.run([cc, "-O2", f'-DBENCH_HEADER="{prefix}.h"', f"-DPREFIX={prefix}",
                    "-I" + outdir, os.path.join(BENCH, "rhs_bench.c"), obj, *extra,
                    "-lm", "-o", exe], check=True)
    kv = keyvals(subprocess.run([exe], check=True, capture_output=True, text=True).stdout)
    say(f"{cc}_exe", exe)
    say(f"{cc}_indep_ns", kv["emitted_indep_ns"])
    say(f"{cc}_chain_ns", kv["emitted_chain_ns"])
    if against:
        say(f"{cc}_against_indep_ns", kv["hand_indep_ns"])
        say(f"{cc}_against_chain_ns", kv["hand_chain_ns"])
        say(f"{cc}_maxdiff", kv["maxdiff"])


def main(argv):
    args = {"--outdir": ".", "--cc": "", "--against": "", "--method": None}
    pos, noops, i = [], False, 0
    while i < len(argv):
        a = argv[i]
        if a == "--no-ops":
            noops = True
        elif a in args and i + 1 < len(argv):
            args[a] = argv[i + 1]
            i += 1
        elif a.startswith("-"):
            sys.exit(__doc__)
        else:
            pos.append(a)
        i += 1
    if len(pos) != 1 or args["--method"] not in ("kane", "lagrange"):
        sys.exit(__doc__)
    method, outdir = args["--method"], args["--outdir"]
    os.makedirs(outdir, exist_ok=True)
    prefix = "sy_" + method
    t0 = time.process_time()
    mod = Model(pos[0])
    t1 = time.process_time()
    if method == "kane":
        M, f, qs, vel, n, order = derive_kane(mod)
    else:
        M, f, qs, vel, n = derive_lagrange(mod)
        order = None
    t2 = time.process_time()
    say("derive_s", f"{t2 - t1:.4f}")
    reps, red, size = to_c(mod, M, f, qs, vel, n, order, os.path.join(outdir, prefix), prefix)
    say("to_c_s", f"{time.process_time() - t0:.4f}")
    say("peak_rss_mb", round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))
    say("size", size)
    if not noops:
        say("ops", count(reps, red))
    for cc in filter(None, args["--cc"].split(",")):
        harness(cc, outdir, prefix, args["--against"])


if __name__ == "__main__":
    main(sys.argv[1:])
