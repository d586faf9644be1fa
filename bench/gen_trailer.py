#!/usr/bin/env python3
"""Writes the N-trailer benchmark model of the performance issue to stdout:
a tractor (axle midpoint x, y, heading th0) pulling N trailers with
headings th1..thN, hitch distance d; one no-lateral-slip constraint per
axle; thrust F0 along the tractor's heading. n = N + 3 coordinates,
k = N + 1 constraints, 2 degrees of freedom at every size.

usage: gen_trailer.py N
"""
import sys


def trailer(n):
    th = [f"th{i}" for i in range(n + 1)]
    out = [f"# {n}-trailer: tractor and {n} trailers, no lateral slip at any axle",
           f"model trailer{n}",
           "coordinates x y " + " ".join(th),
           "parameters m=1 J=0.1 d=1 F0=1",
           "define x0 = x",
           "define y0 = y"]
    for i in range(1, n + 1):
        out.append(f"define x{i} = x{i - 1} - d*cos(th{i})")
        out.append(f"define y{i} = y{i - 1} - d*sin(th{i})")
    kin = " + ".join(f"m/2*(x{i}'^2 + y{i}'^2) + J/2*th{i}'^2" for i in range(n + 1))
    out.append(f"lagrangian {kin}")
    for i in range(n + 1):
        out.append(f"constraint -sin(th{i})*x{i}' + cos(th{i})*y{i}' = 0")
    out.append("force x = F0*cos(th0)")
    out.append("force y = F0*sin(th0)")
    out.append("dependent y' " + " ".join(f"th{i}'" for i in range(1, n + 1)))
    out.append("initial x'=1 th0'=0.1")
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit(__doc__)
    sys.stdout.write(trailer(int(sys.argv[1])))
