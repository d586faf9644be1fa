#!/bin/sh
# chetaev against SymPy on the same generated models, in one run (not part
# of the test suite; `--quick` is its smoke test).
#   bench/run.sh BUILDDIR [--quick] [--sympy-cap N] [--timeout S] [--gcc-max-kb K]
# Prints five Markdown tables (bench/compare.py, bench/README.md): per
# model the derive time, model -> C, model -> first JIT'd rhs call,
# operations after CSE, ns per rhs call (gcc -O2, tcc) and peak RSS of
# chetaev and of SymPy 1.11 (KanesMethod and LagrangesMethod,
# bench/sympy_bench.py) with their ratios, then our reduced rhs over
# SymPy Kane's timed in alternating pairs, then the growth of each stage
# on the n-trailer with the fitted log-log exponent, then its last
# doubling measured by alternating runs of the two sizes (and the same
# for work exactly proportional to the nodes made, bench/quadref.c), then
# the host's time per random memory load against the memory touched
# (bench/memlat.c).
set -eu
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: bench/run.sh BUILDDIR [--quick] [--sympy-cap N] [--timeout S] [--gcc-max-kb K]" >&2; exit 2; }
dir=$1
shift
[ -x "$dir/chetaev" ] || { echo "build first: ninja -C $dir" >&2; exit 2; }
for tool in /usr/bin/python3 gcc tcc; do
    command -v $tool >/dev/null || { echo "bench/run.sh: $tool not found" >&2; exit 2; }
done
exec /usr/bin/python3 bench/compare.py "$dir" "$@"
