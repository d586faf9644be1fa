#!/usr/bin/python3
"""Independent SymPy cross-check of `chetaev derive --format json`.

Usage: sympy_check.py CHETAEV SRCDIR

For every model in SRCDIR/examples/*.nh, plus a few inline models written to
a temporary directory, this script parses the model file itself (its own
small parser for the language of SPEC §1, so that chetaev's parser is under
test too), derives the Lagrangian quantities with SymPy following THEORY
§0-§2 and SPEC §3, and compares them with chetaev's JSON at random numeric
points. Strings are never compared: chetaev may legitimately print a
different but equal form. Prints one line per model and a final line
`sympy_check: N passed, M failed`; exits 1 on any failure.
"""

import json
import os
import random
import re
import subprocess
import sys
import tempfile

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
# nonlinear constraint, continuation lines, every function of the language.
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
                phi = self.total_dt(phi, with_acc=False)
            self.constraints.append(phi)
        elif kw == "force":
            lhs, rhs = self._assignment(rest, lineno)
            if lhs not in self.coords or lhs in self.forces:
                raise ModelError("line %d: bad force on %r" % (lineno, lhs))
            self.forces[lhs] = self.expr(rhs, lineno)
        elif kw in ("dependent", "initial", "integral", "field"):
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
    return model


# ---------------------------------------------------------------------------
# Reference derivation (THEORY §0-§2, SPEC §3)

def derive(model):
    q, qt = model.q(), model.qt()
    L = model.lagrangian
    n = len(q)
    p = [sp.diff(L, v) for v in qt]
    ref = {
        "lagrangian": L,
        "momenta": p,
        "mass_matrix": [[sp.diff(p[i], qt[j]) for j in range(n)]
                        for i in range(n)],
        "euler_lagrange": [model.total_dt(p[i], with_acc=True)
                           - sp.diff(L, q[i]) for i in range(n)],
        "forces": [model.forces.get(c, sp.Integer(0)) for c in model.coords],
        "energy": sum(v * pi for v, pi in zip(qt, p)) - L,
    }
    if model.constraints:
        phis = model.constraints
        G = [[sp.diff(phi, v) for v in qt] for phi in phis]
        lam = [model.symbol("lambda_%d" % (nu + 1)) for nu in range(len(phis))]
        ref["constraints"] = phis
        ref["constraint_jacobian"] = G
        ref["constraint_bias"] = [model.total_dt(phi, with_acc=False)
                                  for phi in phis]
        ref["reactions"] = [sum(lam[nu] * G[nu][i] for nu in range(len(phis)))
                            for i in range(n)]
    return ref


# ---------------------------------------------------------------------------
# Comparison

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
            pt[s] = sp.Float(v, DIGITS)
        points.append(pt)
    return points


def evaluate(e, pt):
    """Complex value of e at pt, or None where it is not finite."""
    v = e.xreplace(pt).evalf(DIGITS)
    if v.free_symbols:
        raise ValueError("unexpected symbols %s" % sorted(map(str, v.free_symbols)))
    if v.has(sp.zoo, sp.oo, -sp.oo, sp.nan):
        return None
    try:
        c = complex(v)
    except (TypeError, ValueError):
        return None
    if c != c or abs(c) == float("inf"):
        return None
    return c


class Checker:
    def __init__(self, label, model, out):
        self.label = label
        self.model = model
        self.data = out
        self.errors = []
        self.compared = 0
        self.points = random_points(model, seed=sum(map(ord, label)))
        names = {"t"} | set(model.sym)
        self.local = {name: model.symbol(name) for name in names}

    def fail(self, msg):
        self.errors.append(msg)

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

    def compare(self, key, ref, got, path=""):
        if isinstance(ref, list):
            if not isinstance(got, list) or len(got) != len(ref):
                self.fail("%s%s: expected a list of %d, got %s"
                          % (key, path, len(ref), json.dumps(got)[:200]))
                return
            for i, (r, g) in enumerate(zip(ref, got)):
                self.compare(key, r, g, "%s[%d]" % (path, i))
            return
        theirs = self.parse_json_expr(key, path, got)
        if theirs is None:
            return
        self.compared += 1
        valid = 0
        for pt in self.points:
            try:
                a = evaluate(ref, pt)
                b = evaluate(theirs, pt)
            except ValueError as exc:
                self.fail("%s%s: %s in %r" % (key, path, exc, got))
                return
            if a is None or b is None:
                continue
            valid += 1
            if abs(a - b) > max(RTOL * max(abs(a), abs(b)), ATOL):
                used = ref.free_symbols | theirs.free_symbols
                where = ", ".join("%s=%.17g" % (s.name, float(v))
                                  for s, v in sorted(pt.items(),
                                                     key=lambda kv: kv[0].name)
                                  if s in used)
                self.fail("%s%s: sympy=%s chetaev=%s at {%s}\n"
                          "      sympy:   %s\n      chetaev: %s"
                          % (key, path, fmt(a), fmt(b), where, ref, got))
                return
        if valid < MIN_VALID:
            self.fail("%s%s: only %d of %d points finite"
                      % (key, path, valid, len(self.points)))

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
        ref = derive(m)
        for key in ("constraints", "constraint_jacobian", "constraint_bias"):
            if not m.constraints and out.get(key) is not None:
                self.fail("%s: null expected without constraints, got %s"
                          % (key, json.dumps(out.get(key))[:200]))
        for key, value in ref.items():
            got = out.get(key)
            if got is None:
                if key != "reactions":  # reactions: not yet required
                    self.fail("%s: null, expected a value" % key)
                continue
            self.compare(key, value, got)

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


def fmt(c):
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
    """Error messages for one model file (empty: passed) and a count."""
    label = os.path.basename(path)
    try:
        model = parse_model(path)
    except ModelError as exc:
        return ["checker cannot read the model: %s" % exc], 0
    try:
        out = run_chetaev(chetaev, path)
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as exc:
        return ["chetaev derive --format json failed: %s" % exc], 0
    checker = Checker(label, model, out)
    checker.run()
    return checker.errors, checker.compared


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
            errors, compared = check_file(chetaev, path)
            label = os.path.basename(path)
            if errors:
                failed += 1
                print("FAIL %s (%d expressions compared)" % (label, compared))
                for e in errors:
                    print("  " + e)
            else:
                passed += 1
                print("ok   %s (%d expressions compared)" % (label, compared))
            sys.stdout.flush()
    print("sympy_check: %d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
