"""SVG plots of `run --plot` and `check --loop --plot`: well-formed XML,
the expected elements (svg root with viewBox, axis lines, numeric tick
labels at nice, evenly spaced values, one path per series, a legend with
the variable names, no NaN), and the drawing itself: the tick labels give
the map from data to pixels, and every path's first and last points map
back to the first and last rows of the CSV. The CSV of a run is the same
bytes with and without --plot. Usage: plot.py CHETAEV SRCDIR"""
import math
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

BIN, SRC = sys.argv[1], sys.argv[2]
EX = os.path.join(SRC, "examples")
NS = "{http://www.w3.org/2000/svg}"
passed = failed = 0


def check(cond, what):
    global passed, failed
    if cond:
        passed += 1
    else:
        failed += 1
        print("FAIL:", what)


def run(*args):
    return subprocess.run([BIN, *args], capture_output=True, text=True)


def nice(step):
    """1, 2 or 5 times a power of ten."""
    e = math.floor(math.log10(step))
    m = step / 10 ** e
    return any(abs(m - v) < 1e-6 for v in (1, 2, 5, 10))


def axis_map(ticks, coord):
    """Linear map value -> pixel from the tick labels (least squares)."""
    vals = [float(t.text) for t in ticks]
    pix = [float(t.get(coord)) for t in ticks]
    n = len(vals)
    mv, mp = sum(vals) / n, sum(pix) / n
    a = sum((v - mv) * (p - mp) for v, p in zip(vals, pix)) / sum((v - mv) ** 2 for v in vals)
    return a, mp - a * mv


def path_points(d):
    toks = re.findall(r"[ML]|[-+0-9.eE]+", d)
    pts, cmd, i = [], None, 0
    while i < len(toks):
        if toks[i] in "ML":
            cmd = toks[i]
            i += 1
        pts.append((cmd, float(toks[i]), float(toks[i + 1])))
        i += 2
    return pts


def validate(svg_path, names, what):
    """Structure of one plot; returns (root, x map, y map, paths)."""
    text = open(svg_path).read()
    check(not re.search(r"nan|inf", text, re.I), what + ": NaN or inf in the SVG")
    root = ET.parse(svg_path).getroot()
    check(root.tag == NS + "svg", what + ": root is not svg")
    vb = [float(v) for v in root.get("viewBox", "").split()]
    check(len(vb) == 4 and vb[2] > 0 and vb[3] > 0, what + ": viewBox")
    axes = [l for l in root.iter(NS + "line") if l.get("class") == "axis"]
    check(len(axes) == 2, what + ": two axis lines")
    labels = [t for t in root.iter(NS + "text") if t.get("class") == "ticklabel"]
    xt = [t for t in labels if t.get("text-anchor") == "middle"]
    yt = [t for t in labels if t.get("text-anchor") == "end"]
    maps = []
    for ticks, coord, sign in ((xt, "x", 1), (yt, "y", -1)):
        vals = [float(t.text) for t in ticks]
        check(len(vals) >= 3, what + ": at least 3 ticks on each axis")
        steps = [b - a for a, b in zip(vals, vals[1:])]
        check(all(s > 0 for s in steps) and max(steps) - min(steps) <= 1e-9 * max(steps)
              and nice(steps[0]), what + ": ticks evenly spaced at nice values %r" % vals)
        check(len(set(t.text for t in ticks)) == len(ticks), what + ": distinct tick labels")
        a, b = axis_map(ticks, coord)
        check(a * sign > 0, what + ": axis direction")
        maps.append((a, b, vals[-1] - vals[0]))
    paths = [p for p in root.iter(NS + "path") if p.get("class") == "series"]
    check(len(paths) == len(names), what + ": %d paths for %d series" % (len(paths), len(names)))
    colours = {p.get("stroke") for p in paths}
    check(len(colours) == len(paths), what + ": distinct colours")
    legend = [g for g in root.iter(NS + "g") if g.get("class") == "legend"]
    check(len(legend) == 1, what + ": one legend")
    if legend:
        got = [t.text for t in legend[0].iter(NS + "text")]
        check(got == names, what + ": legend %r, want %r" % (got, names))
    pts = []
    for p in paths:
        pp = path_points(p.get("d"))
        check(len(pp) >= 2 and pp[0][0] == "M", what + ": path data")
        check(all(0 <= x <= vb[2] and 0 <= y <= vb[3] for _, x, y in pp),
              what + ": path inside the viewBox")
        pts.append(pp)
    return root, maps[0], maps[1], pts


def csv_rows(text):
    rows = [l.split(",") for l in text.strip().split("\n")]
    return rows[0], [[float(v) for v in r] for r in rows[1:]]


def data_back(mx, my, px, py):
    return (px - mx[1]) / mx[0], (py - my[1]) / my[0]


def check_ends(pts, mx, my, xs, ys, what):
    """First and last drawn points are the first and last data points, to
    1 % of the data's range (or 0.1 % of the axis for constant data)."""
    xr = max(max(xs) - min(xs), 0.1 * mx[2])
    yr = max(max(ys) - min(ys), 0.1 * my[2])
    for (cmd, px, py), i in ((pts[0], 0), (pts[-1], -1)):
        x, y = data_back(mx, my, px, py)
        check(abs(x - xs[i]) < 0.01 * xr and abs(y - ys[i]) < 0.01 * yr,
              what + ": point %d drawn at (%g, %g), data (%g, %g)" % (i, x, y, xs[i], ys[i]))


def run_plot(stem, args, plot_args, names, xy=None, tag=""):
    what = stem + tag
    model = os.path.join(EX, stem + ".nh")
    svg = os.path.join(tmp, what + ".svg")
    plain = run("run", model, *args)
    r = run("run", model, *args, "--plot", svg, *plot_args)
    check(r.returncode == 0, what + ": exit %d: %s" % (r.returncode, r.stderr))
    if r.returncode:
        return
    check(r.stdout == plain.stdout, what + ": CSV changed by --plot")
    _, mx, my, pts = validate(svg, names, what)
    header, rows = csv_rows(r.stdout)
    if xy:
        xs = [row[header.index(xy[0])] for row in rows]
        ys = [row[header.index(xy[1])] for row in rows]
        check_ends(pts[0], mx, my, xs, ys, what)
        check(abs(mx[0] + my[0]) <= 1e-3 * abs(mx[0]), what + ": equal scales %g %g" % (mx[0], my[0]))
        return
    ts = [row[0] for row in rows]
    for name, pp in zip(names, pts):
        check_ends(pp, mx, my, ts, [row[header.index(name)] for row in rows], what + " " + name)


tmp = tempfile.mkdtemp()

# A knife edge path in the plane, the Chaplygin sleigh's coordinates (the
# default variables), a double pendulum's angles and energy, a vertical
# disk's contact point.
run_plot("knife_edge", ["--t1", "5"], ["--xy", "x,y"], ["(x, y)"], xy=("x", "y"))
run_plot("chaplygin_sleigh", ["--t1", "5"], [], ["x", "y", "th"])
run_plot("double_pendulum", ["--t1", "3", "--every", "2"], ["--plot-vars", "a1,a2,a1',E"],
         ["a1", "a2", "a1'", "E"])
run_plot("vertical_disk", ["--t1", "6", "--form", "full"], ["--xy", "x,y"], ["(x, y)"],
         xy=("x", "y"))
# Many rows: the path is thinned but still ends at the last row.
run_plot("pendulum_xy", ["--t1", "20", "--dt", "1e-3"], ["--plot-vars", "x"], ["x"], tag="_long")

# check --loop --plot: both loops of the double pendulum's two
# independent coordinates, closed, centred, at t = 0 a circle of radius
# 1e-3 (one scale on both axes).
svg = os.path.join(tmp, "loop.svg")
r = run("check", os.path.join(EX, "double_pendulum.nh"), "--loop", "32", "--plot", svg)
check(r.returncode == 0, "check --loop --plot: %s" % r.stderr)
if r.returncode == 0:
    names = ["t = 0", "a1: t = 1", "a2: t = 1"]
    root, mx, my, pts = validate(svg, names, "loop")
    check(abs(mx[0] + my[0]) <= 1e-3 * abs(mx[0]), "loop: equal scales")
    radii = [math.hypot(*data_back(mx, my, px, py)) for _, px, py in pts[0]]
    check(all(abs(rr - 1e-3) < 2e-5 for rr in radii), "loop at t = 0 is the circle of radius 1e-3")
    dashed = [p.get("stroke-dasharray") is not None for p in root.iter(NS + "path")]
    check(dashed == [True, False, False], "loop: the start curve dashed")
    # Signed (shoelace) areas of the drawn curves: pi r^2 at the start;
    # the sum over the planes is -I1, conserved by the flow.
    def area(pp):
        xy = [data_back(mx, my, px, py) for _, px, py in pp]
        return 0.5 * sum(x0 * y1 - x1 * y0 for (x0, y0), (x1, y1) in zip(xy, xy[1:]))
    a0 = area(pts[0])
    check(abs(a0 - math.pi * 1e-6) < 0.02 * math.pi * 1e-6, "loop: start area %g" % a0)
    a1 = area(pts[1]) + area(pts[2])
    check(abs(a1 - 2 * a0) < 0.02 * a0, "loop: end areas sum to %g, want %g" % (a1, 2 * a0))
    for pp in pts:
        check(len(pp) == 33 and pp[0][1:] == pp[-1][1:], "loop curves are closed (33 points)")

# Errors: usage (exit 2) before anything runs, nothing written.
knife = os.path.join(EX, "knife_edge.nh")
bad_svg = os.path.join(tmp, "bad.svg")
for args, pat in ((["--plot", bad_svg, "--plot-vars", "nosuch"], "no column 'nosuch'"),
                  (["--xy", "x,y"], "need --plot"),
                  (["--plot", bad_svg, "--xy", "x"], "--xy needs two columns"),
                  (["--plot", bad_svg, "--xy", "x,y", "--plot-vars", "x"], "exclude each other"),
                  (["--plot"], "needs a value")):
    r = run("run", knife, *args)
    check(r.returncode == 2 and pat in r.stderr and r.stdout == "",
          "run %s: exit %d, %r" % (args, r.returncode, r.stderr))
    check(not os.path.exists(bad_svg), "run %s wrote a plot" % args)
r = run("check", knife, "--plot", bad_svg)
check(r.returncode == 2 and "--plot needs --loop" in r.stderr, "check --plot without --loop")
for cmd in ("run", "check"):
    h = run(cmd, "--help").stdout
    check("--plot" in h, cmd + " --help documents --plot")

print("plot: %d passed, %d failed" % (passed, failed))
sys.exit(1 if failed else 0)
