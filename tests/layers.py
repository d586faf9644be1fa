#!/usr/bin/env python3
"""The layer rule of README.md "Architecture" over the include graph of gen/ and runtime/.

gen/ has one folder per layer, lowest first: core, lang, mech, then doc and
codegen side by side, then jit, then app. A file includes headers of its own
folder and of lower layers only (doc and codegen never each other); every
project include is written from the root of gen/ ("mech/lagrange.h"), never
with "../". runtime/ is the emitted programs' runtime: it includes only the
C library and its own headers. The front ends' third-party headers stay in
one place each: FLINT in core/flint_compat.h, libtcc in jit/jit.c, SUNDIALS
in jit/cvode.c. The front ends (FRONT_ENDS) include of the project only the
public API, app/chetaev.h, and each other's headers. Prints one line per
violation; exit 1 if there is any.

usage: layers.py SRCDIR
"""
import os
import re
import sys

RANK = {'core': 0, 'lang': 1, 'mech': 2, 'doc': 3, 'codegen': 3, 'jit': 4, 'app': 5}
# Generated or shared headers and the lowest layer that may include them.
SPECIAL = {'embedded.h': 3, 'runtime/simulate.h': 4, 'runtime/integrate.h': 4}
OWNER = {'flint': {'core/flint_compat.h'}, 'libtcc.h': {'jit/jit.c'},
         'sundials': {'jit/cvode.c'}, 'cvode': {'jit/cvode.c'},
         'nvector': {'jit/cvode.c'}, 'sunmatrix': {'jit/cvode.c'},
         'sunlinsol': {'jit/cvode.c'}, 'arb': {'core/flint_compat.h'},
         'arf': {'core/flint_compat.h'}, 'acb': {'core/flint_compat.h'},
         'mag': {'core/flint_compat.h'}, 'gmp': {'core/flint_compat.h'},
         'mpfr': {'core/flint_compat.h'}}
# The command line and the repl: built on the public API alone.
FRONT_ENDS = {'app/main.c', 'app/repl.c', 'app/repl.h'}
FRONT_END_MAY = {'app/chetaev.h', 'app/repl.h'}
INC = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]', re.M)
C_LIBRARY = {'assert.h', 'complex.h', 'ctype.h', 'errno.h', 'fenv.h',
             'float.h', 'inttypes.h', 'iso646.h', 'limits.h', 'locale.h',
             'math.h', 'setjmp.h', 'signal.h', 'stdarg.h', 'stdbool.h',
             'stddef.h', 'stdint.h', 'stdio.h', 'stdlib.h', 'string.h',
             'tgmath.h', 'time.h', 'wchar.h', 'wctype.h'}


def main(src):
    bad = []
    gen = os.path.join(src, 'gen')
    files = 0
    for layer in sorted(os.listdir(gen)):
        d = os.path.join(gen, layer)
        if not os.path.isdir(d):
            if layer.endswith(('.c', '.h')):
                bad.append('gen/%s: a source outside the layers' % layer)
            continue
        if layer not in RANK:
            bad.append('gen/%s: a folder that is no layer' % layer)
            continue
        for name in sorted(os.listdir(d)):
            if not name.endswith(('.c', '.h')):
                continue
            files += 1
            rel = layer + '/' + name
            text = open(os.path.join(d, name), encoding='utf-8').read()
            for kind, inc in INC.findall(text):
                where = 'gen/%s includes %s' % (rel, inc)
                if kind == '<':
                    top = inc.split('/')[0]
                    if top in RANK or top == 'runtime':
                        bad.append('%s: a project header in angle brackets' % where)
                        continue
                    stem = re.split(r'[./_]', inc)[0]
                    for key, owners in OWNER.items():
                        if stem == key and rel not in owners:
                            bad.append('%s: only %s may' % (where, ' '.join(sorted(owners))))
                    continue
                if '..' in inc.split('/'):
                    bad.append('%s: a relative path' % where)
                    continue
                if rel in FRONT_ENDS and inc not in FRONT_END_MAY:
                    bad.append('%s: a front end includes only the public API' % where)
                    continue
                if inc in SPECIAL:
                    if RANK[layer] < SPECIAL[inc]:
                        bad.append('%s: above its layer' % where)
                    continue
                if inc.startswith('runtime/'):
                    bad.append('%s: a runtime header gen/ does not use' % where)
                    continue
                parts = inc.split('/')
                if len(parts) != 2 or parts[0] not in RANK:
                    bad.append('%s: not written from the root of gen/' % where)
                    continue
                if not os.path.exists(os.path.join(gen, inc)):
                    bad.append('%s: no such header' % where)
                    continue
                other = parts[0]
                if other == layer:
                    continue
                if RANK[other] > RANK[layer]:
                    bad.append('%s: a higher layer (%s above %s)' % (where, other, layer))
                elif RANK[other] == RANK[layer]:
                    bad.append('%s: a sibling layer (%s beside %s)' % (where, other, layer))
    rt = os.path.join(src, 'runtime')
    for name in sorted(os.listdir(rt)):
        if not name.endswith(('.c', '.h')):
            continue
        files += 1
        text = open(os.path.join(rt, name), encoding='utf-8').read()
        for kind, inc in INC.findall(text):
            if kind == '<' and inc not in C_LIBRARY:
                bad.append('runtime/%s includes <%s>: not the C library' % (name, inc))
            if kind == '"' and not os.path.exists(os.path.join(rt, inc)):
                bad.append('runtime/%s includes "%s": not runtime/' % (name, inc))
    for b in bad:
        print(b)
    print('%d files, %d violations' % (files, len(bad)))
    return 1 if bad else 0


if __name__ == '__main__':
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    sys.exit(main(sys.argv[1]))
