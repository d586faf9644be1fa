#!/usr/bin/python3
"""Independent SymPy cross-check of `chetaev derive --format json`.

Usage: sympy_check.py CHETAEV SRCDIR

For every model in SRCDIR/examples/*.nh, plus a few inline models written to
a temporary directory, this script parses the model file itself (its own
small parser for the language of SPEC §1, so that chetaev's parser is under
test too), derives every key of SPEC §3 with SymPy following THEORY §0-§5,
and compares it with chetaev's JSON at random numeric points. Strings are
never compared: chetaev may legitimately print a different but equal form.

- Lagrangian keys, reactions and the energy balance: at random points of the
  whole jet space (the balance may also agree only on the constraint
  manifold, where it is defined).
- homogeneity: degrees from the Euler identity, compared exactly.
- energy_conserved: our own verdict, the balance with the true multipliers
  (KKT system of THEORY §2) at points of true motions.
- dependent/independent: the `dependent` statement, else chetaev's choice
  when its Jacobian block is regular.
- alpha (also the root of a constraint quadratic in one dependent
  velocity once the linear ones are solved, on the branch of the initial
  state), L*, E* (and the identity
  E* = E|alpha + (alpha_bar - alpha) p*),
  alpha_bar, M* = D^T M D, the reduced equations (THEORY §4 in the L* form,
  and as the projection E_r + dalpha/dq_t_r E_dep - Q*), y*: at random
  points of the constraint manifold with random q_tt_r. For an implicit
  alpha (constraints nonlinear in the dependent velocities) chetaev prints
  alpha null and the dependent velocity symbols stand for alpha; the points
  then solve phi = 0 for them by Newton's method.
- H* and the Poincare-Hamilton equations: at y = y*(q_t) on true motions,
  H* = E*, q_t = dH*/dy = q_t_r and y_t = d/dt y* along the motion; a null
  H* must have a reason (L* not quadratic, singular Hessian, m > 4, or an
  implicit alpha, reported as a note).
- SymPy self-checks (failures there are bugs of this script): the reduced
  equations vanish on the true motion, both forms of them agree, the E*
  identity holds, and dE/dt equals the balance on motions.

Prints one line per model (and notes) and a final line
`sympy_check: N passed, M failed`; exits 1 on any failure.
"""

import itertools
import json
import os
import random
import re
import subprocess
import sys
import tempfile

import mpmath
import sympy as sp
from sympy.parsing.sympy_parser import auto_number, parse_expr

# Every key of SPEC §3, in the order of its table.
SPEC3_KEYS = [
    "model", "coordinates", "velocities", "parameters", "lagrangian",
    "momenta", "mass_matrix", "euler_lagrange", "forces", "constraints",
    "constraint_jacobian", "constraint_bias", "reactions", "energy",
    "energy_balance", "homogeneity", "energy_conserved", "dependent",
    "independent", "alpha", "L_star", "energy_star", "alpha_bar",
    "reduced_mass_matrix", "reduced_equations", "momenta_star", "H_star",
    "poincare_hamilton",
]

MODEL_FUNCS = {
    "sin": sp.sin, "cos": sp.cos, "tan": sp.tan, "asin": sp.asin,
    "acos": sp.acos, "atan": sp.atan, "atan2": sp.atan2, "sinh": sp.sinh,
    "cosh": sp.cosh, "tanh": sp.tanh, "exp": sp.exp, "log": sp.log,
    "sqrt": sp.sqrt, "abs": sp.Abs,
}

# What chetaev's SymPy-syntax strings may call. Model names shadow these
# (they go into local_dict), so a parameter called E or I stays a symbol.
JSON_GLOBALS = dict(MODEL_FUNCS)
JSON_GLOBALS.update({
    "Abs": sp.Abs, "sign": sp.sign, "pi": sp.pi, "Integer": sp.Integer,
    "Float": sp.Float, "Rational": sp.Rational, "__builtins__": {},
})

NPOINTS = 5          # random points per model
MIN_VALID = 3        # finite evaluations required per expression
RTOL = 1e-9
ATOL = 1e-9
DIGITS = 30
TIMEOUT = 30         # seconds per chetaev run

# Small inline models that widen coverage beyond examples/: defines and
# NAME', time-dependent L, parameters with SymPy-constant names, forces, a
# time-dependent holonomic constraint next to a nonholonomic one, a
# nonlinear constraint, continuation lines, every function of the language;
# reduced forms with forces on dependent coordinates, k = 2 chosen by the
# tool, and an explicit alpha nonlinear in the velocities.
INLINE_MODELS = {
    "inline_define.nh": """\
# Polar particle written through Cartesian defines; L depends on t.
model inline_define
coordinates r th
parameters E=2 beta=0.5 k=3/2 w=pi/4 gamma=-0.25
define X = r*cos(th)
define Y = r*sin(th)
define U = k/2*(X^2 + Y^2)*cos(w*t) + gamma*X*t
lagrangian E/2*(X'^2 + Y'^2) - U + beta*exp(-t)*r*th' +
    U'*gamma
force r = -beta*r'^3 + sin(t)
force th = -E*th'/(1 + r^2)
initial r=1 th=0 r'=0 th'=1
""",
    "inline_holo.nh": """\
model inline_holo
coordinates x y z
parameters S=1 N=2 Q=0.3 gamma=1e-3
parameters I=-1.5
lagrangian S/2*(x'^2 + y'^2 + z'^2) - Q*x*y^3 + I*sqrt(1 + z^2)
constraint x - cos(t) = 0          # holonomic, time dependent
constraint z' = gamma*y*t + atan2(y, x)
force y = N*tanh(y')*abs(x)
field shift: y = 1
integral F = x'^2 +
   y'^2
""",
    "inline_nonlin.nh": """\
# A nonlinear (speed) constraint; unary minus and ^ precedence.
model inline_nonlin
coordinates x y z
parameters m=1 c=0.5 v0=2 h=-(1/2)^2
lagrangian m/2*(x'^2 + y'^2 + z'^2) - m*log(1 + x^2) + tan(y/4) -
    -x^2 + h*-y^2 + 2^3^(1/2)*cosh(z)
constraint x'^2 + y'^2 +
    z'^2 = v0^2 * cosh(c*(z -
    1))
force z = asin(x/4) + acos(y/4)*sinh(z') - atan(x*y)
dependent z'
""",
    "inline_quadratic.nh": """\
# A constraint quadratic in its dependent velocity, a, b and c all
# varying: alpha is the root on the branch of the initial state, here the
# negative one, y' = -(1 + sqrt(41))/5 (the other root is (sqrt(41) - 1)/5).
model inline_quadratic
coordinates x y
parameters m=1 k=2 v0=3/2
lagrangian m/2*(x'^2 + y'^2) - k/2*x^2 + x*y'
constraint (1 + x^2)*y'^2 + x'*y' + x'^2 = v0^2
dependent y'
initial x=1/2 x'=1/2 y'=-(1 + sqrt(41))/5
""",
    "inline_quadratic_car.nh": """\
# A car at constant speed: the knife edge (linear) and x'^2 + y'^2 = v0^2
# (nonlinear); the linear one gives y' = tan(phi) x', and the speed
# constraint is then quadratic in x', on the initial state's branch x' < 0.
model inline_quadratic_car
coordinates x y phi
parameters m=1 J=1/2 v0=1 k=1
lagrangian m/2*(x'^2 + y'^2) + J/2*phi'^2 - k/2*phi^2 + x*y'
constraint sin(phi)*x' - cos(phi)*y' = 0
constraint x'^2 + y'^2 = v0^2
dependent x' y'
initial phi=3/10 phi'=1/2 x'=-cos(3/10) y'=-sin(3/10)
""",
    "inline_reduced_lin.nh": """\
# Reduced and Hamiltonian forms with k = 2 chosen by the tool: affine,
# time-dependent constraints, a gyroscopic term, L depending on t, and
# forces on both dependent coordinates (the dalpha/dq_t Q_dep terms).
model inline_reduced_lin
coordinates x y z w
parameters m=2 e=0.3 k=1.5 c=0.25
lagrangian m/2*(x'^2 + y'^2) + (1 + x^2)/2*z'^2 + w'^2/2 + e*x*y' -
    k*cos(t)*z*w
constraint z' + y*x' - t*w' = 0
constraint w' = sin(t)*x' + c*y*y' + cos(t)
force z = -c*z'
force w = e*x*w'
""",
    "inline_reduced_nonlin.nh": """\
# An explicit alpha nonlinear in the velocities and time dependent (B
# contains q_tt), forces on an independent and the dependent coordinate.
model inline_reduced_nonlin
coordinates x y z
parameters m=1 k=2 c=0.3 e=0.2
lagrangian m/2*(x'^2 + 2*y'^2 + z'^2) + e*x*y' + k*cos(t)*x*z - y^2/2
constraint z' = c*x'*y' + sin(t)*y
force z = -c*z'
force x = e*y'
dependent z'
""",
}


class ModelError(Exception):
    """The model file is not valid for this checker's parser."""


# ---------------------------------------------------------------------------
# Model language (SPEC §1)

TOKEN_RE = re.compile(r"""
    (?P<ws>\s+)
  | (?P<num>(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)
  | (?P<id>[A-Za-z][A-Za-z0-9_]*)
  | (?P<op>[-+*/^(),=':])
""", re.VERBOSE)

CONTINUATION_ENDS = ("+", "-", "*", "/", "^", ",", "=")


def tokenize(text, lineno):
    toks = []
    pos = 0
    while pos < len(text):
        m = TOKEN_RE.match(text, pos)
        if not m:
            raise ModelError("line %d: bad character %r" % (lineno, text[pos]))
        pos = m.end()
        if m.lastgroup != "ws":
            toks.append((m.lastgroup, m.group()))
    return toks


def logical_lines(text):
    """(first line number, joined text) per statement."""
    out = []
    cur = None
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].rstrip()
        if cur is None:
            if not line.strip():
                continue
            cur = [lineno, line]
        else:
            cur[1] += " " + line
        body = cur[1]
        if body.count("(") > body.count(")") or body.endswith(CONTINUATION_ENDS):
            continue
        out.append((cur[0], cur[1].strip()))
        cur = None
    if cur is not None:
        raise ModelError("line %d: unterminated statement" % cur[0])
    return out


def split_top(toks, sep):
    """Split a token list at depth-0 occurrences of operator sep."""
    parts, cur, depth = [], [], 0
    for tok in toks:
        if tok == ("op", "("):
            depth += 1
        elif tok == ("op", ")"):
            depth -= 1
        if depth == 0 and tok == ("op", sep):
            parts.append(cur)
            cur = []
        else:
            cur.append(tok)
    parts.append(cur)
    return parts


class Model:
    def __init__(self, name):
        self.name = name
        self.coords = []          # names, declared order
        self.params = []          # (name, SymPy constant value)
        self.defines = {}         # name -> SymPy expression
        self.lagrangian = None
        self.constraints = []     # velocity-level phi
        self.forces = {}          # coordinate name -> SymPy expression
        self.holonomic = []       # position-level g(t, q) of holonomic ones
        self.dependent = None     # `dependent` statement: names q_t, or None
        self.initial = {}         # `initial`: name or name_t -> value
        self.sym = {"t": sp.Symbol("t", real=True)}

    def symbol(self, name):
        """One real Symbol per name, shared by both sides of the comparison."""
        if name not in self.sym:
            self.sym[name] = sp.Symbol(name, real=True)
        return self.sym[name]

    @property
    def t(self):
        return self.sym["t"]

    def q(self):
        return [self.symbol(c) for c in self.coords]

    def qt(self):
        return [self.symbol(c + "_t") for c in self.coords]

    def qtt(self):
        return [self.symbol(c + "_tt") for c in self.coords]

    def has_velocity(self, e):
        return any(e.has(v) for v in self.qt())

    def total_dt(self, e, with_acc):
        """d/dt = d/dt_partial + q_t d/dq (+ q_tt d/dq_t), THEORY §0."""
        r = sp.diff(e, self.t)
        for q, qt in zip(self.q(), self.qt()):
            r += sp.diff(e, q) * qt
        if with_acc:
            for qt, qtt in zip(self.qt(), self.qtt()):
                r += sp.diff(e, qt) * qtt
        return r

    # -- expressions -------------------------------------------------------

    def expr(self, toks, lineno, constant=False):
        """Model-language tokens -> SymPy, through parse_expr with every
        name mangled into an explicit local_dict (so that no model name can
        collide with a Python keyword or a SymPy constant)."""
        if not toks:
            raise ModelError("line %d: empty expression" % lineno)
        local = {"_R": sp.Rational, "_pi": sp.pi}
        code = []
        i = 0
        while i < len(toks):
            kind, text = toks[i]
            nxt = toks[i + 1] if i + 1 < len(toks) else None
            if kind == "num":
                code.append("_R('%s')" % text)
            elif kind == "id":
                if nxt == ("op", "'"):
                    code.append(self._prime(text, lineno, local, constant))
                    i += 1
                elif text in MODEL_FUNCS and nxt == ("op", "("):
                    local["_f_" + text] = MODEL_FUNCS[text]
                    code.append("_f_" + text)
                elif text == "pi":
                    code.append("_pi")
                else:
                    code.append(self._name(text, lineno, local, constant))
            elif text == "^":
                code.append("**")
            elif text in ("'", "=", ":"):
                raise ModelError("line %d: unexpected %r" % (lineno, text))
            else:
                code.append(text)
            i += 1
        try:
            return parse_expr(" ".join(code), local_dict=local,
                              transformations=(),
                              global_dict={"__builtins__": {}})
        except Exception as exc:  # noqa: BLE001 - any parse failure
            raise ModelError("line %d: cannot parse expression: %s"
                             % (lineno, exc)) from exc

    def _name(self, text, lineno, local, constant):
        key = "_v_" + text
        params = dict(self.params)
        if constant:
            if text not in params:
                raise ModelError("line %d: %r in a constant" % (lineno, text))
            local[key] = params[text]
        elif text == "t" or text in self.coords or text in params:
            local[key] = self.symbol(text)
        elif text in self.defines:
            local[key] = self.defines[text]
        else:
            raise ModelError("line %d: unknown identifier %r" % (lineno, text))
        return key

    def _prime(self, text, lineno, local, constant):
        if constant:
            raise ModelError("line %d: %s' in a constant" % (lineno, text))
        if text in self.coords:
            key = "_v_" + text + "_t"
            local[key] = self.symbol(text + "_t")
        elif text in self.defines:
            body = self.defines[text]
            if self.has_velocity(body):
                raise ModelError("line %d: %s' of a define with velocities"
                                 % (lineno, text))
            key = "_d_" + text
            local[key] = self.total_dt(body, with_acc=False)
        else:
            raise ModelError("line %d: velocity of non-coordinate %r"
                             % (lineno, text))
        return key

    # -- statements --------------------------------------------------------

    def statement(self, lineno, text):
        toks = tokenize(text, lineno)
        kw, rest = toks[0][1], toks[1:]
        if kw == "model":
            if len(rest) != 1 or rest[0][0] != "id":
                raise ModelError("line %d: bad model name" % lineno)
            self.name = rest[0][1]
        elif kw == "coordinates":
            self.coords = [tok[1] for tok in rest]
            if not self.coords or any(k != "id" for k, _ in rest):
                raise ModelError("line %d: bad coordinates" % lineno)
        elif kw == "parameters":
            self._parameters(rest, lineno)
        elif kw == "define":
            lhs, rhs = self._assignment(rest, lineno)
            self.defines[lhs] = self.expr(rhs, lineno)
        elif kw == "lagrangian":
            self.lagrangian = self.expr(rest, lineno)
        elif kw == "constraint":
            sides = split_top(rest, "=")
            if len(sides) > 2:
                raise ModelError("line %d: two '=' in a constraint" % lineno)
            phi = self.expr(sides[0], lineno)
            if len(sides) == 2:
                phi -= self.expr(sides[1], lineno)
            if not self.has_velocity(phi):
                self.holonomic.append(phi)
                phi = self.total_dt(phi, with_acc=False)
            self.constraints.append(phi)
        elif kw == "force":
            lhs, rhs = self._assignment(rest, lineno)
            if lhs not in self.coords or lhs in self.forces:
                raise ModelError("line %d: bad force on %r" % (lineno, lhs))
            self.forces[lhs] = self.expr(rhs, lineno)
        elif kw == "dependent":
            self._dependent(rest, lineno)
        elif kw == "initial":
            self._initial(rest, lineno)
        elif kw in ("integral", "field", "event"):  # not derived: audited or run
            pass
        else:
            raise ModelError("line %d: unknown statement %r" % (lineno, kw))

    def _assignment(self, toks, lineno):
        if len(toks) < 3 or toks[0][0] != "id" or toks[1] != ("op", "="):
            raise ModelError("line %d: expected NAME = EXPR" % lineno)
        return toks[0][1], toks[2:]

    def _parameters(self, toks, lineno):
        # p=v p=v ...: a value runs until the next depth-0 `NAME =`.
        starts = [i for i in range(len(toks) - 1)
                  if toks[i][0] == "id" and toks[i + 1] == ("op", "=")]
        if not starts or starts[0] != 0:
            raise ModelError("line %d: expected p=v" % lineno)
        for a, b in zip(starts, starts[1:] + [len(toks)]):
            name = toks[a][1]
            value = self.expr(toks[a + 2:b], lineno, constant=True)
            if not value.is_number:
                raise ModelError("line %d: non-constant %r" % (lineno, name))
            self.params.append((name, value))
            self.symbol(name)

    def _dependent(self, toks, lineno):
        names = []
        for i in range(0, len(toks), 2):
            if (toks[i][0] != "id" or i + 1 >= len(toks)
                    or toks[i + 1] != ("op", "'")
                    or toks[i][1] not in self.coords):
                raise ModelError("line %d: bad dependent velocity" % lineno)
            names.append(toks[i][1] + "_t")
        if not names or len(set(names)) != len(names):
            raise ModelError("line %d: bad dependent list" % lineno)
        self.dependent = names

    def _initial(self, toks, lineno):
        # name=v name'=v ...: a value runs until the next `NAME =`/`NAME' =`.
        starts = []
        for i in range(len(toks) - 1):
            if toks[i][0] != "id":
                continue
            if toks[i + 1] == ("op", "="):
                starts.append((i, toks[i][1], i + 2))
            elif (toks[i + 1] == ("op", "'") and i + 2 < len(toks)
                  and toks[i + 2] == ("op", "=")):
                starts.append((i, toks[i][1] + "_t", i + 3))
        if not starts or starts[0][0] != 0:
            raise ModelError("line %d: expected name=value" % lineno)
        ends = [s[0] for s in starts[1:]] + [len(toks)]
        for (_, name, a), b in zip(starts, ends):
            base = name[:-2] if name.endswith("_t") else name
            if base not in self.coords:
                raise ModelError("line %d: initial value of %r" % (lineno, name))
            self.initial[name] = self.expr(toks[a:b], lineno, constant=True)


def parse_model(path):
    stem = os.path.splitext(os.path.basename(path))[0]
    model = Model(stem)
    with open(path, encoding="utf-8") as f:
        text = f.read()
    for lineno, stmt in logical_lines(text):
        model.statement(lineno, stmt)
    if not model.coords or model.lagrangian is None:
        raise ModelError("coordinates and lagrangian are required")
    # Create every jet symbol and multiplier now, so that the random points
    # assign them all.
    model.q(), model.qt(), model.qtt()
    for nu in range(len(model.constraints)):
        model.symbol("lambda_%d" % (nu + 1))
    for c in model.coords:           # Hamiltonian momenta y_q (SPEC §3)
        model.symbol("y_" + c)
    return model


# ---------------------------------------------------------------------------
# Reference derivation (THEORY §0-§3, SPEC §3)

def derive(model):
    q, qt = model.q(), model.qt()
    L = model.lagrangian
    n = len(q)
    p = [sp.diff(L, v) for v in qt]
    Q = [model.forces.get(c, sp.Integer(0)) for c in model.coords]
    ref = {
        "lagrangian": L,
        "momenta": p,
        "mass_matrix": [[sp.diff(p[i], qt[j]) for j in range(n)]
                        for i in range(n)],
        "euler_lagrange": [model.total_dt(p[i], with_acc=True)
                           - sp.diff(L, q[i]) for i in range(n)],
        "forces": Q,
        "energy": sum(v * pi for v, pi in zip(qt, p)) - L,
    }
    phis = model.constraints
    G = [[sp.diff(phi, v) for v in qt] for phi in phis]
    lam = [model.symbol("lambda_%d" % (nu + 1)) for nu in range(len(phis))]
    if phis:
        ref["constraints"] = phis
        ref["constraint_jacobian"] = G
        ref["constraint_bias"] = [model.total_dt(phi, with_acc=False)
                                  for phi in phis]
        ref["reactions"] = [sum(lam[nu] * G[nu][i] for nu in range(len(phis)))
                            for i in range(n)]
    # THEORY §3: dE/dt = -dL/dt + Q.q_t + lambda.(G q_t) on motions; the
    # three terms are kept apart to scale the zero test.
    ref["balance_terms"] = [
        -sp.diff(L, model.t),
        sum((Q[i] * qt[i] for i in range(n)), sp.Integer(0)),
        sum((lam[nu] * sum(G[nu][i] * qt[i] for i in range(n))
             for nu in range(len(phis))), sp.Integer(0)),
    ]
    ref["energy_balance"] = sum(ref["balance_terms"])
    return ref


class ReducedRef:
    """THEORY §4-§5 for one choice of dependent velocities, in SymPy.

    Explicit alpha (constraints linear in the dependent velocities): alpha
    from the linear system, substituted everywhere, plain derivatives.
    Implicit alpha: the dependent velocity symbols stay and stand for
    alpha; its derivatives come from implicit differentiation and every
    derivative below applies the chain rule through them. Both cases use
    the same operators: in the explicit case no dependent symbol is left
    for the chain rule to act on. k = 0 is allowed (L* = L)."""

    def __init__(self, model, ref, dep_names, points):
        self.model = model
        t = model.t
        q, v, a = model.q(), model.qt(), model.qtt()
        n = len(q)
        vnames = [s.name for s in v]
        self.dep = [vnames.index(d) for d in dep_names]
        self.ind = [j for j in range(n) if j not in self.dep]
        k, m = len(self.dep), len(self.ind)
        self.n, self.k, self.m = n, k, m
        self.z = [v[j] for j in self.dep]
        self.v = [v[j] for j in self.ind]
        self.vtt = [a[j] for j in self.ind]
        self.y = [model.symbol("y_" + model.coords[j]) for j in self.ind]
        phis = model.constraints
        G = ref.get("constraint_jacobian", [])
        self.explicit = self._linear_in_dep(phis, points)
        root = None if self.explicit else self._quadratic_root(phis)
        if self.explicit or root is not None:
            if root is not None:
                self.explicit = True
                self.alpha = root
            elif k:
                Amat, b = sp.linear_eq_to_matrix(phis, self.z)
                sol = Amat.LUsolve(b)
                self.alpha = [sol[nu] for nu in range(k)]
            else:
                self.alpha = []
            self.sub = dict(zip(self.z, self.alpha))
            self.A = [[sp.diff(al, vr) for vr in self.v] for al in self.alpha]
            self.Aq = [[sp.diff(al, qj) for qj in q] for al in self.alpha]
            self.At = [sp.diff(al, t) for al in self.alpha]
            self.alpha_e = list(self.alpha)
        else:
            Gd = sp.Matrix([[G[nu][j] for j in self.dep] for nu in range(k)])
            Gdi = Gd.inv()
            Gi = sp.Matrix([[G[nu][j] for j in self.ind] for nu in range(k)])
            dq = sp.Matrix([[sp.diff(phi, qj) for qj in q] for phi in phis])
            dt = sp.Matrix([sp.diff(phi, t) for phi in phis])
            self.A = (-Gdi * Gi).tolist()
            self.Aq = (-Gdi * dq).tolist()
            self.At = list(-Gdi * dt)
            self.alpha = None
            self.sub = {}
            self.alpha_e = list(self.z)
        self.qdot = list(v)
        for nu, j in enumerate(self.dep):
            self.qdot[j] = self.alpha_e[nu]
        self._derive(ref)

    def _quadratic_root(self, phis):
        """alpha in closed form when one constraint is nonlinear in the
        dependent velocities and the others are linear: for the first
        dependent velocity u (in order) for which it works, the linear
        constraints solved for the others as w(u), the nonlinear one
        a u^2 + b u + c = 0 (a polynomial, a, b, c free of u, a nonzero
        at the initial state): u = -h + s sqrt(h^2 - c/a), h = b/(2a), on
        the branch of the initial state, the root nearest the model's
        initial value of u (`initial`, else 0; a tie takes s = +1),
        evaluated at t = 0, the `initial` coordinates and independent
        velocities, parameters at their defaults; then w(u). None when
        there is no such closed form."""
        k = self.k
        nonlin = [nu for nu, phi in enumerate(phis)
                  if any(sp.diff(phi, zi, zj) != 0 for zi in self.z for zj in self.z)]
        if k == 0 or len(phis) != k or len(nonlin) != 1:
            return None
        q = nonlin[0]
        model = self.model
        init = {model.t: sp.Integer(0)}
        for name, value in model.params:
            init[model.symbol(name)] = value
        for s_ in model.q() + model.qt():
            init[s_] = model.initial.get(s_.name, sp.Integer(0))
        for j, u in enumerate(self.z):
            others = [z for z in self.z if z != u]
            w = {}
            if others:
                lin = [phis[nu] for nu in range(k) if nu != q]
                Amat, bvec = sp.linear_eq_to_matrix(lin, others)
                if Amat.det() == 0:
                    continue
                sol = Amat.LUsolve(bvec)
                w = dict(zip(others, [sp.simplify(e) for e in sol]))
            P = phis[q].xreplace(w) if w else phis[q]
            try:
                P2 = sp.Poly(sp.expand(P), u)
            except sp.PolynomialError:
                continue
            if P2.degree() != 2 or any(c.has(u) for c in P2.all_coeffs()):
                continue
            a, b, c = P2.all_coeffs()
            h = b / (2 * a)
            sq = sp.sqrt(h ** 2 - c / a)
            at = dict(init)
            target = at.pop(u)
            for z in others:
                at.pop(z)
            if sp.N(a.xreplace(at), 30) == 0:
                continue
            plus, minus = [sp.N((-h + sg * sq).xreplace(at), 30) for sg in (1, -1)]
            sign = 1
            if plus.is_real and minus.is_real:
                sign = -1 if abs(minus - target) < abs(plus - target) else 1
            root = -h + sign * sq
            return [root if z == u else w[z].xreplace({u: root}) for z in self.z]
        return None

    def _linear_in_dep(self, phis, points):
        for phi in phis:
            for zi in self.z:
                for zj in self.z:
                    d2 = sp.diff(phi, zi, zj)
                    if d2 == 0:
                        continue
                    for pt in points[:3]:
                        val = numeric(d2, pt)
                        if val is None or abs(val) > 1e-20:
                            return False
        return True

    # -- derivatives of F(t, q, q_t_r[, q_t_dep = alpha]) ------------------

    def _chain(self, F, base, coeff):
        r = base
        for nu, z in enumerate(self.z):
            if F.has(z):
                r += sp.diff(F, z) * coeff(nu)
        return r

    def Dv(self, F, r):
        return self._chain(F, sp.diff(F, self.v[r]), lambda nu: self.A[nu][r])

    def Dq(self, F, j):
        q = self.model.q()
        return self._chain(F, sp.diff(F, q[j]), lambda nu: self.Aq[nu][j])

    def Dt(self, F):
        return self._chain(F, sp.diff(F, self.model.t), lambda nu: self.At[nu])

    def total(self, F):
        """d/dt along constrained motions, q_tt_r left as symbols."""
        r = self.Dt(F)
        for j in range(self.n):
            r += self.qdot[j] * self.Dq(F, j)
        for ri in range(self.m):
            r += self.vtt[ri] * self.Dv(F, ri)
        return r

    def Xstar(self, F, r):
        return self.Dq(F, self.ind[r]) + sum(
            (self.A[mu][r] * self.Dq(F, self.dep[mu]) for mu in range(self.k)),
            sp.Integer(0))

    def on(self, F):
        return F.xreplace(self.sub) if self.sub else F

    # -- the quantities ----------------------------------------------------

    def _derive(self, ref):
        k, m, n = self.k, self.m, self.n
        A = self.A
        zero = sp.Integer(0)
        self.Lstar = self.on(self.model.lagrangian)
        self.pstar = [self.on(ref["momenta"][j]) for j in self.dep]
        self.ystar = [self.Dv(self.Lstar, r) for r in range(m)]
        self.Estar = sum((self.v[r] * self.ystar[r] for r in range(m)),
                         zero) - self.Lstar
        self.alpha_bar = [sum((self.v[r] * A[nu][r] for r in range(m)), zero)
                          for nu in range(k)]
        # 001 eq. 18: E* = E|alpha + (alpha_bar - alpha) p*
        self.Estar_identity = self.on(ref["energy"]) + sum(
            ((self.alpha_bar[nu] - self.alpha_e[nu]) * self.pstar[nu]
             for nu in range(k)), zero)
        M = [[self.on(e) for e in row] for row in ref["mass_matrix"]]
        D = []
        for j in range(n):
            if j in self.ind:
                D.append([sp.Integer(1 if self.ind.index(j) == s else 0)
                          for s in range(m)])
            else:
                D.append([A[self.dep.index(j)][s] for s in range(m)])
        self.Mstar = [[sum((D[i][r] * M[i][j] * D[j][s]
                            for i in range(n) for j in range(n)
                            if D[i][r] != 0 and M[i][j] != 0 and D[j][s] != 0),
                           zero)
                       for s in range(m)] for r in range(m)]
        Q = [self.on(e) for e in ref["forces"]]
        self.Qstar = [Q[self.ind[r]] + sum((A[nu][r] * Q[self.dep[nu]]
                                            for nu in range(k)), zero)
                      for r in range(m)]
        self.B = [[self.total(A[nu][r]) - self.Xstar(self.alpha_e[nu], r)
                   for r in range(m)] for nu in range(k)]
        # THEORY §4 reduced equations, forces moved to the left (= 0).
        self.eqs = [self.total(self.ystar[r])
                    - self.Dq(self.Lstar, self.ind[r])
                    - sum((A[nu][r] * self.Dq(self.Lstar, self.dep[nu])
                           for nu in range(k)), zero)
                    - sum((self.pstar[nu] * self.B[nu][r] for nu in range(k)),
                          zero)
                    - self.Qstar[r] for r in range(m)]
        # The acceptance identity: E_r + dalpha/dq_t_r E_dep - Q* on the
        # constraint, q_tt_dep from differentiating alpha along the motion.
        acc = self.model.qtt()
        sub2 = dict(self.sub)
        for nu, j in enumerate(self.dep):
            sub2[acc[j]] = self.total(self.alpha_e[nu])
        E = [e.xreplace(sub2) for e in ref["euler_lagrange"]]
        self.eqs_proj = [E[self.ind[r]] + sum((A[nu][r] * E[self.dep[nu]]
                                               for nu in range(k)), zero)
                         - self.Qstar[r] for r in range(m)]
        self.ystar_dot = [self.total(y) for y in self.ystar]
        self.K = [[self.Dv(self.ystar[r], s) for s in range(m)]
                  for r in range(m)]

    def K_derivatives(self):
        return [self.Dv(self.K[r][s], u) for r in range(self.m)
                for s in range(self.m) for u in range(self.m)]


# ---------------------------------------------------------------------------
# Numbers

mpmath.mp.dps = DIGITS
_LAMBDIFIED = {}


def numeric(e, pt):
    """mpmath value of SymPy expression e at pt (Symbol -> mpmath number),
    or None where it is not finite. Raises ValueError for symbols pt does
    not assign."""
    entry = _LAMBDIFIED.get(e)
    if entry is None:
        syms = tuple(sorted(e.free_symbols, key=lambda s: s.name))
        entry = (syms, sp.lambdify(syms, e, modules="mpmath"))
        _LAMBDIFIED[e] = entry
    syms, fn = entry
    missing = [s.name for s in syms if s not in pt]
    if missing:
        raise ValueError("unexpected symbols %s" % sorted(missing))
    try:
        v = mpmath.mpmathify(fn(*[pt[s] for s in syms]))
    except (ZeroDivisionError, ValueError, OverflowError, TypeError):
        return None
    if mpmath.isnan(v) or mpmath.isinf(v):
        return None
    return v


def is_real(v):
    return v is not None and abs(mpmath.im(v)) <= 1e-25 * max(1, abs(v))


def random_points(model, seed):
    """NPOINTS assignments of every symbol; the last two all positive."""
    rng = random.Random(seed)
    syms = sorted(model.sym.values(), key=lambda s: s.name)
    points = []
    for k in range(NPOINTS):
        pt = {}
        for s in syms:
            v = rng.uniform(0.3, 1.5)
            if k < NPOINTS - 2 and rng.random() < 0.5:
                v = -v
            pt[s] = mpmath.mpf(v)
        points.append(pt)
    return points


class NoPoint(Exception):
    """No real point on the constraint manifold was found."""


class Sampler:
    """Random points on the constraint manifold (THEORY §7): t, q, the
    independent velocities and the parameters (positive) at random, the
    dependent velocities from alpha (explicit) or by Newton's method on phi
    (implicit), then either the true motion through the point (q_tt and
    lambda from the KKT system [M -G^T; G 0][q_tt; lambda] = [Q - h; -c])
    or random lambda and q_tt_r with q_tt_dep from G q_tt + c = 0. The
    momenta y_r are set to y*_r of the point."""

    def __init__(self, model, ref, red, seed):
        self.model, self.ref, self.red = model, ref, red
        self.rng = random.Random(seed)
        qtt = model.qtt()
        zero_acc = {a: sp.Integer(0) for a in qtt}
        self.h = [e.xreplace(zero_acc) for e in ref["euler_lagrange"]]
        self.lam = [model.symbol("lambda_%d" % (nu + 1))
                    for nu in range(red.k)]

    def _uniform(self, signed):
        v = self.rng.uniform(0.3, 1.5)
        if signed and self.rng.random() < 0.5:
            v = -v
        return mpmath.mpf(v)

    def _base(self):
        m = self.model
        pt = {m.symbol(name): self._uniform(False) for name, _ in m.params}
        for s in [m.t] + m.q() + self.red.v:
            pt[s] = self._uniform(True)
        return pt

    def _dependent(self, pt):
        red = self.red
        if red.k == 0:
            return True
        if red.explicit:
            for z, al in zip(red.z, red.alpha):
                val = numeric(al, pt)
                if not is_real(val):
                    return False
                pt[z] = mpmath.re(val)
            return True
        phis = self.model.constraints

        def f(*zs):
            p2 = dict(pt)
            p2.update(zip(red.z, zs))
            vals = [numeric(phi, p2) for phi in phis]
            if any(v is None for v in vals):
                raise ValueError("phi not finite")
            return vals if len(vals) > 1 else vals[0]
        for _ in range(6):
            x0 = [mpmath.mpf(self.rng.uniform(-2, 2)) for _ in red.z]
            try:
                sol = mpmath.findroot(f, x0 if red.k > 1 else x0[0])
            except (ValueError, ZeroDivisionError, TypeError):
                continue
            sol = list(sol) if red.k > 1 else [sol]
            if all(is_real(s) for s in sol):
                pt.update(zip(red.z, (mpmath.re(s) for s in sol)))
                return True
        return False

    def _values(self, exprs, pt):
        vals = [numeric(e, pt) for e in exprs]
        if not all(is_real(v) for v in vals):
            return None
        return [mpmath.re(v) for v in vals]

    def point(self, mode):
        m, ref, red = self.model, self.ref, self.red
        n, k = red.n, red.k
        v, acc = m.qt(), m.qtt()
        G = ref.get("constraint_jacobian", [])
        for _ in range(300):
            pt = self._base()
            if not self._dependent(pt):
                continue
            Gv = self._values([e for row in G for e in row], pt)
            c = self._values(ref.get("constraint_bias", []), pt)
            if Gv is None or c is None:
                continue
            Gm = mpmath.matrix(k, n) if k else None
            for nu in range(k):
                for j in range(n):
                    Gm[nu, j] = Gv[nu * n + j]
            Gd = mpmath.matrix([[Gm[nu, j] for j in red.dep]
                                for nu in range(k)]) if k else None
            if k and abs(mpmath.det(Gd)) < 1e-12:
                continue
            if mode == "motion":
                Mv = self._values([e for row in ref["mass_matrix"]
                                   for e in row], pt)
                rhs = self._values([Qi - hi for Qi, hi in
                                    zip(ref["forces"], self.h)], pt)
                if Mv is None or rhs is None:
                    continue
                KKT = mpmath.matrix(n + k, n + k)
                b = mpmath.matrix(n + k, 1)
                for i in range(n):
                    for j in range(n):
                        KKT[i, j] = Mv[i * n + j]
                    b[i] = rhs[i]
                for nu in range(k):
                    for j in range(n):
                        KKT[j, n + nu] = -Gm[nu, j]
                        KKT[n + nu, j] = Gm[nu, j]
                    b[n + nu] = -c[nu]
                try:
                    x = mpmath.lu_solve(KKT, b)
                except ZeroDivisionError:
                    continue
                for j in range(n):
                    pt[acc[j]] = x[j]
                for nu in range(k):
                    pt[self.lam[nu]] = x[n + nu]
            else:
                for s in self.lam + red.vtt:
                    pt[s] = self._uniform(True)
                if k:
                    rhs = mpmath.matrix(k, 1)
                    for nu in range(k):
                        rhs[nu] = -c[nu] - sum(Gm[nu, j] * pt[acc[j]]
                                               for j in red.ind)
                    x = mpmath.lu_solve(Gd, rhs)
                    for nu, j in enumerate(red.dep):
                        pt[acc[j]] = x[nu]
            ys = self._values(red.ystar, pt)
            if ys is None:
                continue
            pt.update(zip(red.y, ys))
            for s in m.sym.values():      # y of dependent coordinates
                pt.setdefault(s, self._uniform(True))
            return pt
        raise NoPoint("no real point on the constraint manifold found")


# ---------------------------------------------------------------------------
# Comparison

REDUCED_KEYS = ["dependent", "independent", "alpha", "L_star", "energy_star",
                "alpha_bar", "reduced_mass_matrix", "reduced_equations"]
NPOINTS_MANIFOLD = 4   # free and motion points each
CONSERVED_TOL = 1e-18  # |dE/dt| / max(1, |terms|) below this is zero


class Checker:
    def __init__(self, label, model, out):
        self.label = label
        self.model = model
        self.data = out
        self.errors = []
        self.notes = []
        self.compared = 0
        self.seed = sum(map(ord, label))
        self.points = random_points(model, seed=self.seed)
        names = {"t"} | set(model.sym)
        self.local = {name: model.symbol(name) for name in names}
        # names SymPy reserves are written NAME_ in the expressions
        # ("renamed"); every one of them must be listed there
        for name, new in out.get("renamed", {}).items():
            self.local[new] = self.local.pop(name, model.symbol(name))

    def fail(self, msg):
        self.errors.append(msg)

    def note(self, msg):
        self.notes.append(msg)

    def parse_json_expr(self, key, path, s):
        if not isinstance(s, str):
            self.fail("%s%s: expected an expression string, got %r"
                      % (key, path, s))
            return None
        try:
            return parse_expr(s, local_dict=dict(self.local),
                              transformations=(auto_number,),
                              global_dict=dict(JSON_GLOBALS))
        except Exception as exc:  # noqa: BLE001 - report any parse failure
            self.fail("%s%s: cannot parse %r: %s" % (key, path, s, exc))
            return None

    def syms(self, *groups):
        """Symbols allowed in an expression: t, q, parameters, plus groups."""
        m = self.model
        out = {m.t} | set(m.q()) | {m.symbol(n) for n, _ in m.params}
        for g in groups:
            out |= set(g)
        return out

    def compare(self, key, ref, got, path="", points=None, allowed=None,
                fallback=None):
        """Numeric comparison of ref (SymPy, nested lists) with chetaev's
        strings at points (default: random points of the whole jet space).
        allowed: the symbols chetaev's expressions may contain.
        fallback: other points at which agreement is also accepted (e.g. the
        constraint manifold for a quantity defined on motions)."""
        if isinstance(ref, list):
            if not isinstance(got, list) or len(got) != len(ref):
                self.fail("%s%s: expected a list of %d, got %s"
                          % (key, path, len(ref), json.dumps(got)[:200]))
                return
            for i, (r, g) in enumerate(zip(ref, got)):
                self.compare(key, r, g, "%s[%d]" % (path, i), points,
                             allowed, fallback)
            return
        theirs = self.parse_json_expr(key, path, got)
        if theirs is None:
            return
        self.compared += 1
        if allowed is not None:
            extra = theirs.free_symbols - allowed
            if extra:
                self.fail("%s%s: symbols %s do not belong here: %s"
                          % (key, path, sorted(s.name for s in extra), got))
                return
        msg = self.mismatch(ref, theirs, points or self.points)
        if msg and fallback:
            if self.mismatch(ref, theirs, fallback) is None:
                return
        if msg:
            self.fail("%s%s: %s\n      sympy:   %s\n      chetaev: %s"
                      % (key, path, msg, short(ref), got))

    def mismatch(self, ref, theirs, points):
        """None when ref and theirs agree at points, else a message."""
        valid = 0
        for pt in points:
            try:
                a = numeric(ref, pt)
                b = numeric(theirs, pt)
            except ValueError as exc:
                return str(exc)
            if a is None or b is None:
                continue
            valid += 1
            if abs(a - b) > max(RTOL * max(abs(a), abs(b)), ATOL):
                used = ref.free_symbols | theirs.free_symbols
                where = ", ".join("%s=%.17g" % (s.name, float(mpmath.re(v)))
                                  for s, v in sorted(pt.items(),
                                                     key=lambda kv: kv[0].name)
                                  if s in used)
                return "sympy=%s chetaev=%s at {%s}" % (fmt(a), fmt(b), where)
        if valid < MIN_VALID:
            return "only %d of %d points finite" % (valid, len(points))
        return None

    def run(self):
        out, m = self.data, self.model
        if not isinstance(out, dict):
            self.fail("output is not a JSON object")
            return
        for key in SPEC3_KEYS:
            if key not in out:
                self.fail("key %r missing" % key)
        if out.get("model") != m.name:
            self.fail("model: %r, want %r" % (out.get("model"), m.name))
        if out.get("coordinates") != m.coords:
            self.fail("coordinates: %r, want %r" % (out.get("coordinates"), m.coords))
        want_v = [c + "_t" for c in m.coords]
        if out.get("velocities") != want_v:
            self.fail("velocities: %r, want %r" % (out.get("velocities"), want_v))
        self.check_parameters(out.get("parameters"))
        self.check_initial()
        ref = derive(m)
        for key in ("constraints", "constraint_jacobian", "constraint_bias"):
            if not m.constraints and out.get(key) is not None:
                self.fail("%s: null expected without constraints, got %s"
                          % (key, json.dumps(out.get(key))[:200]))
        for key in ("lagrangian", "momenta", "mass_matrix", "euler_lagrange",
                    "forces", "energy", "constraints", "constraint_jacobian",
                    "constraint_bias"):
            if key not in ref:
                continue
            got = out.get(key)
            if got is None:
                self.fail("%s: null, expected a value" % key)
                continue
            self.compare(key, ref[key], got)
        self.check_reactions(ref)
        self.check_homogeneity()
        try:
            dep = self.check_split(ref)
            red = ReducedRef(m, ref, dep, self.points)
            smp = Sampler(m, ref, red, self.seed + 1)
            free = [smp.point("free") for _ in range(NPOINTS_MANIFOLD)]
            motion = [smp.point("motion") for _ in range(NPOINTS_MANIFOLD)]
        except NoPoint as exc:
            self.fail("sympy side: %s; reduced and Hamiltonian keys "
                      "not checked" % exc)
            return
        self.self_check(ref, red, free, motion)
        self.check_energy(ref, free, motion)
        if red.k:
            self.check_reduced(red, free)
        self.check_hamilton(red, free, motion)

    def check_parameters(self, got):
        want = [(name, float(v)) for name, v in self.model.params]
        if not isinstance(got, dict):
            self.fail("parameters: expected an object, got %r" % (got,))
            return
        if list(got) != [name for name, _ in want]:
            self.fail("parameters: names %r, want %r"
                      % (list(got), [name for name, _ in want]))
            return
        for name, v in want:
            g = got[name]
            if (not isinstance(g, (int, float)) or isinstance(g, bool)
                    or abs(g - v) > 1e-15 * abs(v)):
                self.fail("parameters.%s: %r, want %r" % (name, g, v))

    def check_initial(self):
        """The model file itself: holonomic constraints hold at the initial
        positions; the velocity constraints too when the file gives every
        dependent velocity (else chetaev recomputes them)."""
        m = self.model
        if not m.initial:
            return
        pt = {m.t: mpmath.mpf(0)}
        for name, value in m.params:
            pt[m.symbol(name)] = mpmath.mpf(float(value))
        for s in m.q() + m.qt():
            pt[s] = mpmath.mpf(float(m.initial.get(s.name, 0)))
        dep = m.dependent or [s.name for s in m.qt()]
        checks = [("holonomic constraint", g) for g in m.holonomic]
        if all(d in m.initial for d in dep):
            checks += [("constraint", phi) for phi in m.constraints]
        for what, e in checks:
            val = numeric(e, pt)
            if val is None or abs(val) > 1e-12:
                self.fail("initial: %s %s = %s at the initial state"
                          % (what, e, val))

    # -- THEORY §2-§3 ------------------------------------------------------

    def check_reactions(self, ref):
        m = self.model
        got = self.data.get("reactions")
        lam = [m.symbol("lambda_%d" % (nu + 1))
               for nu in range(len(m.constraints))]
        allowed = self.syms(m.qt(), lam)
        if not m.constraints:
            if got is not None:   # null, or R = 0
                self.compare("reactions", [sp.Integer(0)] * len(m.coords),
                             got, allowed=allowed)
            return
        if got is None:
            self.fail("reactions: null, expected a value")
            return
        self.compare("reactions", ref["reactions"], got, allowed=allowed)

    def homogeneity(self):
        """Degree sigma of each phi (Euler identity q_t.dphi/dq_t =
        sigma phi at every random point), or None."""
        m = self.model
        out = []
        for phi in m.constraints:
            euler = sum(v * sp.diff(phi, v) for v in m.qt())
            sigma = None
            for i, pt in enumerate(self.points):
                a, b = numeric(euler, pt), numeric(phi, pt)
                if a is None or b is None:
                    sigma = None
                    break
                if i == 0:
                    if abs(b) < 1e-10:
                        break
                    sigma = a / b
                elif abs(a - sigma * b) > 1e-20 * max(1, abs(a), abs(b)):
                    sigma = None
                    break
            if sigma is not None and abs(mpmath.im(sigma)) > 1e-20:
                sigma = None
            out.append(None if sigma is None else float(mpmath.re(sigma)))
        return out

    def check_homogeneity(self):
        got = self.data.get("homogeneity")
        want = self.homogeneity()
        if not want:
            if got not in (None, []):
                self.fail("homogeneity: %r, want null without constraints"
                          % (got,))
            return
        ok = isinstance(got, list) and len(got) == len(want)
        for g, w in zip(got if ok else [], want):
            if w is None:
                ok = ok and g is None
            else:
                ok = ok and isinstance(g, (int, float)) \
                    and not isinstance(g, bool) and abs(g - w) < 1e-12
        if not ok:
            self.fail("homogeneity: %s, want %s"
                      % (json.dumps(got), json.dumps(want)))

    def check_energy(self, ref, free, motion):
        m = self.model
        got = self.data.get("energy_balance")
        lam = [m.symbol("lambda_%d" % (nu + 1))
               for nu in range(len(m.constraints))]
        if got is None:
            self.fail("energy_balance: null, expected a value")
        else:
            self.compare("energy_balance", ref["energy_balance"], got,
                         allowed=self.syms(m.qt(), lam), fallback=free)
        # Our verdict: the balance with the true multipliers at points of
        # the true motion (THEORY §3, §7).
        conserved = True
        valid = 0
        largest = 0
        for pt in motion:
            terms = [numeric(e, pt) for e in ref["balance_terms"]]
            if any(x is None for x in terms):
                continue
            valid += 1
            total = sum(terms)
            largest = max(largest, abs(total))
            if abs(total) > CONSERVED_TOL * max([1] + [abs(x) for x in terms]):
                conserved = False
        if valid < MIN_VALID:
            self.fail("sympy side: the energy balance is finite at only %d "
                      "points of motions" % valid)
            return
        got = self.data.get("energy_conserved")
        if got != conserved:
            self.fail("energy_conserved: %s, want %s (sympy: max |dE/dt| on "
                      "motions %s)" % (json.dumps(got), json.dumps(conserved),
                                       fmt(largest)))

    # -- THEORY §4 ---------------------------------------------------------

    def check_split(self, ref):
        """The dependent velocities to use; checks the keys of the split."""
        m, out = self.model, self.data
        k = len(m.constraints)
        if k == 0:
            for key in REDUCED_KEYS:
                if out.get(key) is not None:
                    self.fail("%s: null expected for k = 0, got %s"
                              % (key, json.dumps(out.get(key))[:200]))
            return []
        vnames = [c + "_t" for c in m.coords]
        got = out.get("dependent")
        valid = (isinstance(got, list) and len(got) == k
                 and all(g in vnames for g in got) and len(set(got)) == k)
        if m.dependent is not None:
            if got != m.dependent:
                self.fail("dependent: %s, want %s (the dependent statement)"
                          % (json.dumps(got), json.dumps(m.dependent)))
            dep = m.dependent
        elif valid and self.block_regular(ref, got):
            dep = got
        else:
            if valid:
                self.fail("dependent: %s: the constraint Jacobian block is "
                          "singular at random points" % json.dumps(got))
            else:
                self.fail("dependent: %s, want %d velocity names"
                          % (json.dumps(got), k))
            dep = self.own_split(ref, vnames, k)
        want_i = [v for v in vnames if v not in dep]
        if out.get("independent") != want_i:
            self.fail("independent: %s, want %s"
                      % (json.dumps(out.get("independent")),
                         json.dumps(want_i)))
        return dep

    def block_regular(self, ref, dep):
        vnames = [c + "_t" for c in self.model.coords]
        cols = [vnames.index(d) for d in dep]
        block = sp.Matrix([[row[j] for j in cols]
                           for row in ref["constraint_jacobian"]])
        det = block.det(method="berkowitz")
        for pt in self.points[:3]:
            val = numeric(det, pt)
            if val is None or abs(val) < 1e-20:
                return False
        return True

    def own_split(self, ref, vnames, k):
        for cols in itertools.combinations(range(len(vnames) - 1, -1, -1), k):
            dep = [vnames[j] for j in sorted(cols)]
            if self.block_regular(ref, dep):
                return dep
        raise NoPoint("no regular choice of dependent velocities")

    def self_check(self, ref, red, free, motion):
        """The SymPy side against itself: THEORY's identities and the claim
        that the full and reduced forms share their motions. A failure here
        is a bug of this script (or of THEORY), not of chetaev."""
        m = self.model
        pairs = [("E* identity", red.Estar, red.Estar_identity, free)]
        pairs += [("reduced equation %d (L* form vs projection)" % r,
                   red.eqs[r], red.eqs_proj[r], free) for r in range(red.m)]
        pairs += [("reduced equation %d on the true motion" % r,
                   red.eqs[r], sp.Integer(0), motion) for r in range(red.m)]
        dE = m.total_dt(ref["energy"], with_acc=True)
        pairs.append(("dE/dt = balance on motions", dE,
                      ref["energy_balance"], motion))
        for what, a, b, pts in pairs:
            msg = self.mismatch(a, b, pts)
            if msg:
                self.fail("sympy self-check %s: %s" % (what, msg))

    def check_reduced(self, red, free):
        m, out = self.model, self.data
        dep_syms = red.z if not red.explicit else []
        base = self.syms(red.v, dep_syms)
        got = out.get("alpha")
        if red.explicit:
            if not isinstance(got, dict) or sorted(got) != sorted(
                    z.name for z in red.z):
                self.fail("alpha: %s, want an object over %s"
                          % (json.dumps(got)[:200], [z.name for z in red.z]))
            else:
                for z, al in zip(red.z, red.alpha):
                    self.compare("alpha", al, got[z.name], "." + z.name,
                                 free, base)
        elif got is not None:
            self.fail("alpha: %s, want null (implicit: the constraints are "
                      "nonlinear in the dependent velocities)"
                      % json.dumps(got)[:200])
        plan = [
            ("L_star", red.Lstar, base),
            ("energy_star", red.Estar, base),
            ("energy_star(E|alpha + (alpha_bar - alpha) p*)",
             red.Estar_identity, base),
            ("alpha_bar", red.alpha_bar, base),
            ("reduced_mass_matrix", red.Mstar, base),
            ("reduced_equations", red.eqs, base | set(red.vtt)),
            ("reduced_equations(E_r + dalpha/dq_t_r E_dep - Q*)",
             red.eqs_proj, base | set(red.vtt)),
        ]
        for label, ref, allowed in plan:
            key = label.split("(")[0]
            got = out.get(key)
            if got is None:
                if label == key:
                    self.fail("%s: null, expected a value" % key)
                continue
            self.compare(label, ref, got, points=free, allowed=allowed)
        # A sign flip is the likely slip: say so.
        got = out.get("reduced_equations")
        if isinstance(got, list) and len(got) == red.m:
            for r, g in enumerate(got):
                e = self.parse_json_expr("reduced_equations", "[%d]" % r, g)
                if (e is not None and self.mismatch(red.eqs[r], e, free)
                        and self.mismatch(-red.eqs[r], e, free) is None):
                    self.fail("reduced_equations[%d]: the negative of "
                              "THEORY §4 (left side minus forces)" % r)

    # -- THEORY §5 ---------------------------------------------------------

    def hamilton_obstacle(self, red, free):
        """Why the SymPy side cannot write H* symbolically either, or None."""
        if red.m > 4:
            return "m = %d > CH_HAMILTON_MAX_M" % red.m
        dK = red.K_derivatives()
        for pt in free:
            scale = max([1] + [abs(numeric(e, pt) or 0)
                               for row in red.K for e in row])
            for e in dK:
                val = numeric(e, pt)
                if val is not None and abs(val) > 1e-15 * scale:
                    return "L* is not quadratic in the independent velocities"
        singular = True
        for pt in free:
            K = mpmath.matrix([[numeric(e, pt) or 0 for e in row]
                               for row in red.K])
            scale = max([1] + [abs(K[i, j]) for i in range(red.m)
                               for j in range(red.m)])
            if abs(mpmath.det(K)) > 1e-15 * scale ** red.m:
                singular = False
        if singular:
            return "the Hessian K of L* is singular (degenerate Legendre map)"
        return None

    def check_hamilton(self, red, free, motion):
        m, out = self.model, self.data
        base = self.syms(red.v, red.z if not red.explicit else [])
        self.compare("momenta_star", red.ystar, out.get("momenta_star"),
                     points=free, allowed=base)
        H, PH = out.get("H_star"), out.get("poincare_hamilton")
        if H is None:
            if PH is not None:
                self.fail("poincare_hamilton: not null while H_star is null")
            why = self.hamilton_obstacle(red, free)
            if why:
                self.note("H_star null: sympy agrees (%s)" % why)
            elif not red.explicit:
                self.note("H_star null: alpha is implicit (on the manifold "
                          "K is regular and constant)")
            else:
                self.fail("H_star: null, but L* is quadratic in %s with a "
                          "regular Hessian: H* exists"
                          % [s.name for s in red.v])
            return
        ham = self.syms(red.y, red.z if not red.explicit else [])
        self.compare("H_star(at y = y*)", red.Estar, H, points=motion,
                     allowed=ham)
        if not isinstance(PH, dict) or sorted(PH) != ["q_t", "y_t"]:
            self.fail("poincare_hamilton: %s, want an object with q_t and y_t"
                      % json.dumps(PH)[:200])
            return
        self.compare("poincare_hamilton.q_t(at y = y*)", red.v, PH["q_t"],
                     points=motion, allowed=ham)
        Hexpr = self.parse_json_expr("H_star", "", H)
        if Hexpr is not None:
            self.compare("poincare_hamilton.q_t(dH*/dy)",
                         [sp.diff(Hexpr, y) for y in red.y], PH["q_t"],
                         points=motion, allowed=ham)
        self.compare("poincare_hamilton.y_t(d/dt y* on motions)",
                     red.ystar_dot, PH["y_t"], points=motion, allowed=ham)


def short(e):
    s = str(e)
    return s if len(s) <= 300 else s[:300] + "..."


def fmt(c):
    c = complex(c)
    if abs(c.imag) <= 1e-12 * max(1.0, abs(c.real)):
        return "%.15g" % c.real
    return "%.15g%+.15gj" % (c.real, c.imag)


def run_chetaev(chetaev, path):
    proc = subprocess.run([chetaev, "derive", path, "--format", "json"],
                          capture_output=True, text=True, timeout=TIMEOUT)
    if proc.returncode != 0:
        raise RuntimeError("exit %d: %s" % (proc.returncode, proc.stderr.strip()))
    return json.loads(proc.stdout)


def check_file(chetaev, path):
    """Error messages and notes for one model file (no errors: passed),
    and the number of expressions compared."""
    label = os.path.basename(path)
    try:
        model = parse_model(path)
    except ModelError as exc:
        return ["checker cannot read the model: %s" % exc], [], 0
    try:
        out = run_chetaev(chetaev, path)
    except (RuntimeError, ValueError, OSError,
            subprocess.TimeoutExpired) as exc:
        return ["chetaev derive --format json failed: %s" % exc], [], 0
    checker = Checker(label, model, out)
    checker.run()
    return checker.errors, checker.notes, checker.compared


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: sympy_check.py CHETAEV SRCDIR\n")
        return 2
    chetaev, srcdir = argv[1], argv[2]
    exdir = os.path.join(srcdir, "examples")
    files = sorted(os.path.join(exdir, f) for f in os.listdir(exdir)
                   if f.endswith(".nh"))
    passed = failed = 0
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in sorted(INLINE_MODELS.items()):
            path = os.path.join(tmp, name)
            with open(path, "w", encoding="utf-8") as f:
                f.write(text)
            files.append(path)
        if not files:
            print("sympy_check: no models found")
            return 1
        for path in files:
            errors, notes, compared = check_file(chetaev, path)
            label = os.path.basename(path)
            if errors:
                failed += 1
                print("FAIL %s (%d expressions compared)" % (label, compared))
                for e in errors:
                    print("  " + e)
            else:
                passed += 1
                print("ok   %s (%d expressions compared)" % (label, compared))
            for n in notes:
                print("  note: " + n)
            sys.stdout.flush()
    print("sympy_check: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
