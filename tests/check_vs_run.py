#!/usr/bin/python3
"""Cross-check `chetaev check` verdicts against simulation (issue 5).

For every examples/*.nh: the quantities listed by `check --format json`
are evaluated along a `run` (the adaptive default at rtol 1e-10, rows
every 0.1, t1 = 2, or to a stop event) and their drift
max |F(t) - F(0)| is compared with the verdict: a "conserved" quantity
must stay constant to integrator accuracy, a "not conserved" one must
visibly change. "unknown" verdicts are only reported.

The values are computed independently of `check`: E and declared integrals
from their CSV columns, momenta from `derive --format json`, field momenta
p.Y from the field components read out of the model file, and the frame
energy T_xi = E - p.xi (THEORY §6) with xi rebuilt from the report's `xi`
key (zero, a field, or least squares -S^T (S S^T)^-1 s).

Usage: check_vs_run.py PATH_TO_CHETAEV SRCDIR
"""
import csv
import glob
import io
import json
import os
import subprocess
import sys

import sympy
from sympy.parsing.sympy_parser import parse_expr

CONSERVED_TOL = 1e-8   # relative to max(1, |F(0)|)
CHANGED_TOL = 1e-6
RUN_ARGS = ['--t1', '2', '--dt-out', '0.1']


def chetaev(exe, *args):
    p = subprocess.run([exe] + list(args), capture_output=True, text=True,
                       timeout=120)
    return p.returncode, p.stdout, p.stderr


def split_top(text, sep=','):
    """Split at separators outside parentheses (components may call f(a, b))."""
    parts, depth, cur = [], 0, ''
    for ch in text:
        if ch in '([':
            depth += 1
        elif ch in ')]':
            depth -= 1
        if ch == sep and depth == 0:
            parts.append(cur)
            cur = ''
        else:
            cur += ch
    parts.append(cur)
    return [p.strip() for p in parts if p.strip()]


def model_syntax(expr):
    return expr.replace('^', '**')


def read_fields(path, local):
    """Fields (name -> {coord: sympy expr}) and defines without velocities,
    parsed from the model file with the model's own symbols."""
    local = dict(local)
    fields = {}
    with open(path) as f:
        for raw in f:
            line = raw.split('#', 1)[0].strip()
            if line.startswith('define ') and "'" not in line:
                name, rhs = line[len('define '):].split('=', 1)
                local[name.strip()] = parse_expr(model_syntax(rhs),
                                                 local_dict=local)
            elif line.startswith('field '):
                name, comps = line[len('field '):].split(':', 1)
                field = {}
                for comp in split_top(comps):
                    coord, rhs = comp.split('=', 1)
                    field[coord.strip()] = parse_expr(model_syntax(rhs),
                                                      local_dict=local)
                fields[name.strip()] = field
    return fields


class Model:
    def __init__(self, exe, path):
        rc, out, err = chetaev(exe, 'derive', path, '--format', 'json')
        if rc != 0:
            raise RuntimeError('derive failed: ' + err.strip())
        d = json.loads(out)
        self.coords = d['coordinates']
        self.vels = d['velocities']
        self.params = d['parameters']
        self.local = {n: sympy.Symbol(n)
                      for n in self.coords + self.vels + list(self.params)
                      + ['t']}
        self.p = [self.parse(e) for e in d['momenta']]
        # null when the model has no constraints
        self.S = sympy.Matrix([[self.parse(e) for e in row]
                               for row in d['constraint_jacobian'] or []])
        self.phi = [self.parse(e) for e in d['constraints'] or []]
        self.fields = read_fields(path, self.local)
        self.subs_params = {self.local[k]: v for k, v in self.params.items()}

    def parse(self, text):
        return parse_expr(text, local_dict=self.local)

    def p_dot(self, vec):
        """p . vec for a vector of expressions in (t, q, parameters)."""
        return sum((pi * vi for pi, vi in zip(self.p, vec)), sympy.Integer(0))

    def field_vec(self, name):
        comps = self.fields[name]
        return [comps.get(q, sympy.Integer(0)) for q in self.coords]

    def least_squares_xi(self):
        """xi = -S^T (S S^T)^-1 s with S q' + s = 0 the velocity-level
        constraints (a holonomic one contributes s = its partial t-derivative)."""
        vel0 = {self.local[v]: 0 for v in self.vels}
        s = []
        for phi in self.phi:
            has_vel = any(phi.has(self.local[v]) for v in self.vels)
            s.append(phi.subs(vel0) if has_vel
                     else sympy.diff(phi, self.local['t']))
        s = sympy.Matrix(s)
        xi = -self.S.T * (self.S * self.S.T).inv() * s
        return list(xi)

    def values(self, expr, rows):
        """expr evaluated along the CSV rows."""
        syms = [self.local['t']] + [self.local[q] for q in self.coords] \
            + [self.local[v] for v in self.vels]
        cols = ['t'] + self.coords + [q + "'" for q in self.coords]
        f = sympy.lambdify(syms, expr.subs(self.subs_params), 'math')
        return [float(f(*[r[c] for c in cols])) for r in rows]


def run_rows(exe, path):
    for form in ('reduced', 'full'):
        rc, out, err = chetaev(exe, 'run', path, '--form', form, *RUN_ARGS)
        if rc == 0:
            rows = list(csv.DictReader(io.StringIO(out)))
            return form, [{k: float(v) for k, v in r.items()} for r in rows]
    raise RuntimeError('run failed: ' + err.strip())


def quantity_values(model, q, rows):
    name, kind = q['name'], q['kind']
    if kind == 'energy':
        return [r['E'] for r in rows]
    if kind == 'integral':
        return [r[name] for r in rows]
    if kind == 'momentum':
        i = model.coords.index(name[len('p_'):])
        return model.values(model.p[i], rows)
    if kind == 'field':
        return model.values(model.p_dot(model.field_vec(name[len('p.'):])),
                            rows)
    if kind == 'frame_energy':
        xi = q.get('xi')
        if xi == 'zero':
            return [r['E'] for r in rows]
        vec = model.least_squares_xi() if xi == 'least squares' \
            else model.field_vec(xi)
        pxi = model.values(model.p_dot(vec), rows)
        return [r['E'] - v for r, v in zip(rows, pxi)]
    raise RuntimeError('unknown kind ' + kind)


def main():
    exe, srcdir = sys.argv[1], sys.argv[2]
    passed = failed = 0
    for path in sorted(glob.glob(os.path.join(srcdir, 'examples', '*.nh'))):
        base = os.path.basename(path)
        try:
            rc, out, err = chetaev(exe, 'check', path, '--format', 'json')
            if rc != 0:
                raise RuntimeError('check failed: ' + err.strip())
            report = json.loads(out)
            model = Model(exe, path)
            form, rows = run_rows(exe, path)
        except Exception as e:  # one broken example must not hide the rest
            print('FAIL %s: %s' % (base, e))
            failed += 1
            continue
        for q in report['quantities']:
            verdict = q['verdict']
            try:
                vals = quantity_values(model, q, rows)
            except Exception as e:
                print('FAIL %-24s %-10s %-14s evaluation: %s'
                      % (base, q['name'], verdict, e))
                failed += 1
                continue
            f0 = vals[0]
            drift = max(abs(v - f0) for v in vals)
            scale = max(1.0, abs(f0))
            if verdict == 'conserved':
                ok = drift <= CONSERVED_TOL * scale
            elif verdict == 'not conserved':
                ok = drift >= CHANGED_TOL * scale
            else:
                ok = None
            tag = 'info' if ok is None else ('ok' if ok else 'FAIL')
            print('%-4s %-24s %-10s %-14s drift %.3e  (F0 %.6g, max_rate %.3g,'
                  ' form %s)' % (tag, base, q['name'], verdict, drift, f0,
                                 q['max_rate'], form))
            if ok is True:
                passed += 1
            elif ok is False:
                failed += 1
    print('check_vs_run: %d passed, %d failed' % (passed, failed))
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())
