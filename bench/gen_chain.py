#!/usr/bin/env python3
"""Writes an N-link planar pendulum (point masses, link angles as
coordinates, positions as defines) to stdout: the classic scaling model.

usage: gen_chain.py N
"""
import sys


def chain(n):
    out = [f"# {n}-link planar pendulum: point masses m on massless links of length l",
           f"model chain{n}",
           "coordinates " + " ".join(f"a{i}" for i in range(1, n + 1)),
           "parameters m=1 l=1 g=9.81"]
    for i in range(1, n + 1):
        px = f"x{i - 1} + " if i > 1 else ""
        py = f"y{i - 1} - " if i > 1 else "-"
        out.append(f"define x{i} = {px}l*sin(a{i})")
        out.append(f"define y{i} = {py}l*cos(a{i})")
    kin = " + ".join(f"x{i}'^2 + y{i}'^2" for i in range(1, n + 1))
    pot = " + ".join(f"y{i}" for i in range(1, n + 1))
    out.append(f"lagrangian m/2*({kin}) - m*g*({pot})")
    out.append("initial " + " ".join(f"a{i}=0.1" for i in range(1, n + 1)))
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(__doc__)
    sys.stdout.write(chain(int(sys.argv[1])))
