#!/usr/bin/python3
"""chetaev against SymPy 1.11 on the same generated model files, in one run
(called by bench/run.sh; see bench/README.md).

usage: compare.py BUILDDIR [--quick] [--sympy-cap N] [--timeout S]
                  [--gcc-max-kb K]

Prints five Markdown tables:
  1. per model (knife_edge, 1-, 10-, 24-, 50-trailer, 20-link pendulum;
     --quick: knife_edge, 1-trailer) and quantity, the
     chetaev figure, SymPy's with KanesMethod and with LagrangesMethod,
     and the ratio SymPy's better / chetaev;
  2. per model that SymPy ran, ns per call of chetaev's reduced rhs over
     SymPy Kane's (gcc -O2), timed again in 3 pairs of alternating runs
     (--quick: 1), and the median;
  3. growth on the n-trailer, N = 1 2 5 10 20 50 100 200 (--quick: 1 2),
     with the log-log slope of each column fitted over the measured N >= 5
     (--quick: all measured N);
  4. the last doubling of the growth table (N = 100 -> 200; --quick:
     1 -> 2) measured again by alternating runs of the two sizes, 3 pairs
     (--quick: 1): derive, emit all and derive in process, with the
     ratio of each pair, their median and the ratio of the minima, and
     the reference: work exactly proportional to the nodes each size's
     derivation makes (BUILDDIR/quadref, bench/quadref.c), as many nodes;
  5. the host's time per random memory load against the memory touched
     (BUILDDIR/memlat, bench/memlat.c; --quick: 8 and 32 MB).
Times are CPU seconds (user + system) of the measured process, read with
wait4: on the shared 2-core machine they are much steadier than wall
time, and every stage here is single-threaded. Each chetaev process and
each SymPy case is killed after S CPU seconds (default 120; RLIMIT_CPU,
and a wall-clock guard of 3 S): "timeout" for
chetaev (and the stage is not run on larger N of the same family), "> limit"
for SymPy. SymPy runs on the n-trailer only for N <= cap
(default 10: its Lagrange form takes about 30 s at N = 10 and 500 s at
N = 24); knife_edge and the pendulum always (within the timeout).
The in-process derive (BUILDDIR/derive_time: parse, every key, the tidy
for JSON, no printing, no process start-up; and once more without the
tidy, the derivation alone) is what SymPy's derive is:
bench/sympy_bench.py times the forming of the equations after Python,
SymPy and the model are loaded.
Emitted C larger than K kB (default 1000) is not compiled with gcc -O2
(minutes and gigabytes of memory): "skip" in the table.
"""
import math
import os
import resource
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
PY = "/usr/bin/python3"


def run(cmd, timeout, cwd=None):
    """Runs cmd in its own process group with a CPU-time limit of timeout
    seconds (RLIMIT_CPU, inherited by its children; on the shared machine
    a wall-clock limit would depend on the load) and a wall-clock guard of
    three times that; returns a dict with cpu (user + system seconds of
    the process), wall, rss_mb (peak RSS), rc (None when killed at a
    limit), out and err (text).
    The limit is set on the started process (prlimit), not in the child
    before exec: a preexec_fn makes the child a fork of this interpreter
    that runs Python before the exec, and the 7-10 ms that costs were
    counted as the measured program's CPU time."""
    with tempfile.TemporaryFile() as fo, tempfile.TemporaryFile() as fe:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=fo, stderr=fe, cwd=cwd, start_new_session=True)
        try:
            resource.prlimit(p.pid, resource.RLIMIT_CPU, (timeout, timeout + 1))
        except (ProcessLookupError, PermissionError):
            pass  # already gone (the wall-clock guard remains)
        fired = []

        def kill():
            fired.append(1)
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        timer = threading.Timer(3 * timeout, kill)
        timer.start()
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
        if os.WIFSIGNALED(status) and os.WTERMSIG(status) in (signal.SIGXCPU, signal.SIGKILL):
            fired.append(1)  # the CPU limit (or the wall guard)
        if fired:  # the group may hold compilers started by the child
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        fo.seek(0)
        fe.seek(0)
        return {"cpu": ru.ru_utime + ru.ru_stime, "wall": wall,
                "rss_mb": ru.ru_maxrss / 1024.0,
                "rc": None if fired else p.returncode,
                "out": fo.read().decode(errors="replace"),
                "err": fe.read().decode(errors="replace")}


def keyvals(text):
    return dict(line.split("=", 1) for line in text.splitlines() if "=" in line)


def middle(xs):
    """The median of xs (the upper one of an even count)."""
    return sorted(xs)[len(xs) // 2]


class Bench:
    def __init__(self, build, quick, cap, timeout, gcc_max_kb):
        self.bin = os.path.join(build, "chetaev")
        self.build = build
        self.derive_time = os.path.join(build, "derive_time")
        self.quick, self.cap, self.timeout = quick, cap, timeout
        self.gcc_max = gcc_max_kb * 1024
        self.tmp = tempfile.mkdtemp(prefix="chetaev-bench-")
        self.ch, self.sy, self.dead = {}, {}, {}

    def model(self, name):
        path = os.path.join(self.tmp, name + ".nh")
        if not os.path.exists(path):
            m = re.fullmatch(r"(trailer|chain)(\d+)", name)
            if name == "knife_edge":
                shutil.copy(os.path.join(ROOT, "examples", "knife_edge.nh"), path)
            elif m:
                gen = "gen_trailer.py" if m.group(1) == "trailer" else "gen_chain.py"
                with open(path, "w") as fh:
                    subprocess.run([PY, os.path.join(BENCH, gen), m.group(2)],
                                   stdout=fh, check=True)
            else:
                raise ValueError(name)
        return path

    def timed(self, cmd, reps):
        """Median CPU over reps runs (one run when it takes over 30 s:
        until the twenty-second round over 1 s, which left the 100- and
        200-trailer, whose ratio is target 5, to one run each on a host
        whose speed varies by 30% over minutes); the result of the last
        run for the rest."""
        rs = []
        for _ in range(reps):
            r = run(cmd, self.timeout)
            rs.append(r)
            if r["rc"] != 0 or r["cpu"] > 30.0:
                break
        r = dict(rs[-1])
        r["cpu"] = middle([x["cpu"] for x in rs])
        return r

    def chetaev(self, name):
        """derive, emit (all forms), first rhs call, ops, ns/eval."""
        if name in self.ch:
            return self.ch[name]
        nh, res = self.model(name), {}
        self.ch[name] = res
        out = os.path.join(self.tmp, "gen_" + name)
        res["derive"] = self.stage(name, "derive",
                                   [self.bin, "derive", nh, "--format", "json"])[0]
        res["derive_in"], res["derive_raw"] = self.in_process(nh, res["derive"])
        res["emit"], e = self.stage(name, "emit",
                                    [self.bin, "emit", nh, "--form", "all", "-o", out])
        res["rss"] = e["rss_mb"] if e and e["rc"] == 0 else res["emit"]
        if not e or e["rc"] != 0:
            return res
        res["first"] = self.stage(name, "first",
                                  [self.bin, "run", nh, "--t1", "0.001", "--method", "rk4", "--dt", "0.001",
                                   "-o", os.path.join(self.tmp, "one.csv")])[0]
        pre = os.path.join(out, name + "_reduced")
        res["ops"] = header_ops(pre + ".h")
        res["ops_full"] = header_ops(os.path.join(out, name + "_full.h"))
        res["rhs_ops"] = header_rhs_ops(pre + ".h")
        res["rhs_ops_full"] = header_rhs_ops(os.path.join(out, name + "_full.h"))
        res["full_prefix"] = os.path.join(out, name + "_full")
        hand = os.path.join(BENCH, "hand", name + "_reduced.c")
        for cc in ("gcc", "tcc"):
            res.update(self.harness(cc, pre, hand if os.path.exists(hand) else None))
        ham = os.path.join(out, name + "_hamilton")
        if os.path.exists(ham + ".c"):
            res["ham_gcc_ns"] = self.harness("gcc", ham, None)["gcc_ns"]
        return res

    def in_process(self, nh, whole):
        """The derivation timed inside one process (bench/derive_time.c):
        SymPy's derive_s is measured the same way, after its start-up.
        Median of 11 repeats, of 3 over 0.1 s; with
        the display tidy of derive.h and without (the derivation alone)."""
        if not num(whole):
            return whole, whole
        r = self.derive_time_run(nh, 11 if whole < 0.1 else 3)
        if r["rc"] != 0:
            failed = stage(r)
            return failed, failed
        return r["cpu"], r["raw"]

    def derive_time_run(self, nh, reps):
        """One process of derive_time with reps repeats: run()'s dict with
        cpu and raw set to its derive_ms and raw_ms in seconds when it
        succeeded."""
        r = run([self.derive_time, nh, str(reps)], 3 * self.timeout)
        if r["rc"] == 0:
            kv = keyvals(r["out"])
            r["cpu"], r["raw"] = float(kv["derive_ms"]) / 1e3, float(kv["raw_ms"]) / 1e3
        return r

    def stage(self, name, what, cmd):
        """One chetaev stage; once it timed out on a family member
        (trailerN, chainN), larger members are not run: "timeout"."""
        m = re.fullmatch(r"([a-z_]+?)(\d+)", name)
        fam, n = (m.group(1), int(m.group(2))) if m else (name, 0)
        if self.dead.get((fam, what), n + 1) <= n:
            return "timeout", None
        r = self.timed(cmd, 3)
        if r["rc"] is None:
            self.dead[(fam, what)] = n
        return stage(r), r

    def harness(self, cc, pre, hand):
        """ns/eval of PREFIX_rhs (and of the hand kernel) with rhs_bench.c."""
        if cc == "gcc" and os.path.getsize(pre + ".c") > self.gcc_max:
            return {f"{cc}_ns": "skip"}
        d, p = os.path.split(pre)
        exe = pre + "." + cc
        cmd = [cc, "-O2", f'-DBENCH_HEADER="{p}.h"', f"-DPREFIX={p}", "-I" + d,
               os.path.join(BENCH, "rhs_bench.c"), pre + ".c", "-lm", "-o", exe]
        if hand:
            cmd[-3:-3] = ["-DHAND", hand]
        b = run(cmd, self.timeout)
        if b["rc"] != 0:
            return {f"{cc}_ns": stage(b)}
        r = run([exe], self.timeout)
        if r["rc"] != 0:
            return {f"{cc}_ns": stage(r)}
        kv = keyvals(r["out"])
        res = {f"{cc}_ns": float(kv["emitted_indep_ns"]), f"{cc}_exe": exe}
        if "hand_indep_ns" in kv:
            res[f"{cc}_hand_ns"] = float(kv["hand_indep_ns"])
            res[f"{cc}_hand_ratio"] = float(kv["hand_ratio_indep"])
            res["hand_maxdiff"] = kv["maxdiff"]
        return res

    def sympy_allowed(self, name):
        m = re.fullmatch(r"trailer(\d+)", name)
        return self.cap > 0 and (not m or int(m.group(1)) <= self.cap)

    def sympy(self, name, method):
        key = (name, method)
        if key in self.sy:
            return self.sy[key]
        if not self.sympy_allowed(name):
            self.sy[key] = None
            return None
        nh = self.model(name)
        ch = self.chetaev(name)
        cmd = [PY, os.path.join(BENCH, "sympy_bench.py"), nh, "--method", method,
               "--outdir", os.path.join(self.tmp, f"sy_{name}_{method}"),
               "--cc", "gcc,tcc"]
        if "full_prefix" in ch:
            cmd += ["--against", ch["full_prefix"]]
        r = run(cmd, self.timeout)
        kv = keyvals(r["out"])
        res = {"timeout": r["rc"] is None,
               "error": r["rc"] not in (0, None) and (r["err"].strip().splitlines() or ["?"])[-1]}
        for k, v in kv.items():
            try:
                res[k] = float(v)
            except ValueError:
                res[k] = v
        self.sy[key] = res
        return res


def stage(r):
    """CPU seconds of a finished process, or why there is none."""
    if r["rc"] is None:
        return "timeout"
    if r["rc"] != 0:
        return "error"
    return r["cpu"]


def header_ops(h):
    """add + mul + div + calls after CSE from the emitted header comment."""
    try:
        text = open(h).read(2000)
    except OSError:
        return "-"
    m = re.search(r"after CSE[^:]*: (\d+) add, (\d+) mul, (\d+) div, (\d+) calls", text)
    return sum(int(x) for x in m.groups()) if m else "-"


def header_rhs_ops(h):
    """Operations per rhs call before its numeric solve, from the emitted
    header (reduced: the note on the independent accelerations; full:
    kn_dyn), the count comparable to SymPy's (its M and forcing)."""
    try:
        text = open(h).read(2000)
    except OSError:
        return "-"
    m = re.search(r"(?:independent accelerations|right side): .*?(\d+) operations per call",
                  text)
    return int(m.group(1)) if m else "-"


def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def fmt(v, unit=""):
    if v is None:
        return "-"
    if not num(v):
        return str(v)
    if unit == "s":
        return f"{v:.3f}" if v < 10 else f"{v:.1f}"
    if unit == "int":
        return str(int(round(v)))
    return f"{v:.4g}" if v < 1000 else str(int(round(v)))


def ratio(sy, ch, limit):
    """SymPy / chetaev, '> x' when SymPy did not finish within limit."""
    if sy == "> limit" and num(ch) and ch > 0:
        return f"> {limit / ch:.3g}"
    if not (num(sy) and num(ch)) or ch <= 0:
        return "-"
    r = sy / ch
    return f"{r:.3g}" if r < 1000 else f"{r:.0f}"


def sy_value(s, key, scale=1.0):
    """One SymPy figure: the value, '> limit' when the run was killed
    before it, 'error', or None when SymPy was not run (over the cap)."""
    if s is None:
        return None
    if key in s and num(s[key]):
        return s[key] * scale
    if s.get("timeout"):
        return "> limit"
    if s.get("error"):
        return "error"
    return "-"


def best(a, b):
    vals = [v for v in (a, b) if num(v)]
    if vals:
        return min(vals)
    return "> limit" if "> limit" in (a, b) else None


ROWS = [  # label, chetaev key, SymPy key, scale, unit
    ("derive [s]", "derive", "derive_s", 1, "s"),
    ("derive in process [s]", "derive_in", "derive_s", 1, ""),
    ("derive in process, no display tidy [s]", "derive_raw", "derive_s", 1, ""),
    ("model → C file [s]", "emit", "to_c_s", 1, "s"),
    ("model → first rhs call [s]", "first", "first_s", 1, "s"),
    ("ops after CSE, reduced form", "ops", "ops", 1, "int"),
    ("ops after CSE, full form", "ops_full", "ops", 1, "int"),
    ("ops per rhs call before its solve, reduced form", "rhs_ops", "ops", 1, "int"),
    ("ops per rhs call before its solve, full form", "rhs_ops_full", "ops", 1, "int"),
    ("ns/eval gcc -O2, reduced form", "gcc_ns", "gcc_indep_ns", 1, ""),
    ("ns/eval tcc, reduced form", "tcc_ns", "tcc_indep_ns", 1, ""),
    ("ns/eval gcc -O2, full form", "full_gcc_ns", "gcc_indep_ns", 1, ""),
    ("ns/eval gcc -O2, hamilton form", "ham_gcc_ns", "gcc_indep_ns", 1, ""),
    ("peak RSS [MB]", "rss", "peak_rss_mb", 1, "int"),
]


def main_table(b, models):
    print("| model | quantity | chetaev | SymPy Kane | SymPy Lagrange | SymPy best / chetaev |")
    print("|---|---|---|---|---|---|")
    for name in models:
        ch = b.chetaev(name)
        sk, sl = b.sympy(name, "kane"), b.sympy(name, "lagrange")
        for s in (sk, sl):
            if s is not None and num(s.get("to_c_s")) and num(s.get("tcc_build_ms")):
                s["first_s"] = s["to_c_s"] + s["tcc_build_ms"] / 1e3
        # chetaev's full form timed by the SymPy harness (same state)
        full = [s.get("gcc_against_indep_ns") for s in (sk, sl) if s]
        full = [v for v in full if num(v)]
        ch["full_gcc_ns"] = min(full) if full else None
        for label, ck, sk_, scale, unit in ROWS:
            c = ch.get(ck)
            a, l = sy_value(sk, sk_, scale), sy_value(sl, sk_, scale)
            cell = fmt(c, unit)
            if ck in ("gcc_ns", "tcc_ns") and num(ch.get(ck.replace("_ns", "_hand_ns"))):
                cell += (f" (hand {fmt(ch[ck.replace('_ns', '_hand_ns')])}, "
                         f"{ch[ck.replace('_ns', '_hand_ratio')]:.2f}x)")
            print(f"| {name} | {label} | {cell} | {fmt(a, unit)} | {fmt(l, unit)} | "
                  f"{ratio(best(a, l), c, b.timeout)} |")
        diffs = [s.get("gcc_maxdiff") for s in (sk, sl) if s and "gcc_maxdiff" in s]
        if diffs or "hand_maxdiff" in ch:
            print(f"| {name} | max. rel. diff. (full vs SymPy; reduced vs hand) | "
                  f"{ch.get('hand_maxdiff', '-')} | {fmt(sk and sk.get('gcc_maxdiff'))} | "
                  f"{fmt(sl and sl.get('gcc_maxdiff'))} | |")


def kernel_pairs_table(b, models, pairs):
    """Target 4's ratio to SymPy measured by alternating runs: the
    reduced form's rhs_bench (gcc -O2) and SymPy Kane's, built above,
    run in turns (ours, SymPy's, ours, ...). The main table's two figures
    come from processes minutes apart, and in a slow phase of the host
    one of them may run at twice its time; a pair here is a second
    apart. Per model the ratio ns(chetaev reduced) / ns(SymPy Kane) of
    each pair and their median (target 4: <= 0.25 on the 10-trailer)."""
    print("| model | reduced rhs ÷ SymPy Kane's, gcc -O2, alternating pairs | median |")
    print("|---|---|---|")
    for name in models:
        ours, theirs = b.chetaev(name).get("gcc_exe"), (b.sympy(name, "kane") or {}).get("gcc_exe")
        if not (ours and theirs):
            continue
        ratios = []
        for _ in range(pairs):
            a, c = run([ours], b.timeout), run([theirs], b.timeout)
            if a["rc"] != 0 or c["rc"] != 0:
                ratios = []
                break
            ratios.append(float(keyvals(a["out"])["emitted_indep_ns"])
                          / float(keyvals(c["out"])["emitted_indep_ns"]))
        cells = ", ".join(f"{x:.3f}" for x in ratios) or "error"
        med = f"{middle(ratios):.3f}" if ratios else "-"
        print(f"| {name} | {cells} | {med} |")


def slope(points):
    """Least-squares slope of log y against log N."""
    pts = [(math.log(n), math.log(y)) for n, y in points if num(y) and y > 0]
    if len(pts) < 2:
        return "-"
    mx = sum(p[0] for p in pts) / len(pts)
    my = sum(p[1] for p in pts) / len(pts)
    sxx = sum((p[0] - mx) ** 2 for p in pts)
    return f"{sum((p[0] - mx) * (p[1] - my) for p in pts) / sxx:.2f}" if sxx else "-"


GROWTH = [  # label, source, key, unit
    ("chetaev derive [s]", "ch", "derive", "s"),
    ("chetaev derive in process [s]", "ch", "derive_in", ""),
    ("chetaev emit all [s]", "ch", "emit", "s"),
    ("chetaev emit all peak RSS [MB]", "ch", "rss", "int"),
    ("chetaev ops (reduced)", "ch", "ops", "int"),
    ("chetaev ns gcc -O2", "ch", "gcc_ns", ""),
    ("chetaev ns tcc", "ch", "tcc_ns", ""),
    ("chetaev ns gcc -O2, hamilton", "ch", "ham_gcc_ns", ""),
    ("SymPy Kane derive [s]", "kane", "derive_s", "s"),
    ("SymPy Lagrange derive [s]", "lagrange", "derive_s", "s"),
    ("SymPy Kane ops", "kane", "ops", "int"),
    ("SymPy Kane ns gcc -O2", "kane", "gcc_indep_ns", ""),
]


def growth_table(b, ns, fit_from):
    print("| N | " + " | ".join(g[0] for g in GROWTH) + " |")
    print("|---" * (len(GROWTH) + 1) + "|")
    cols = {g[0]: [] for g in GROWTH}
    for n in ns:
        name = f"trailer{n}"
        ch = b.chetaev(name)
        src = {"ch": ch, "kane": b.sympy(name, "kane"), "lagrange": b.sympy(name, "lagrange")}
        cells = []
        for label, s, key, unit in GROWTH:
            v = ch.get(key) if s == "ch" else sy_value(src[s], key)
            cols[label].append((n, v))
            cells.append(fmt(v, unit))
        print(f"| {n} | " + " | ".join(cells) + " |")
    print(f"| slope (log-log, N >= {fit_from}) | " + " | ".join(
        slope([p for p in cols[g[0]] if p[0] >= fit_from]) for g in GROWTH) + " |")


def doubling_table(b, n, pairs):
    """Target 5's last doubling, N/2 -> N trailers, measured by
    alternating runs of the two sizes (N/2, N, N/2, N, ...): on the
    shared host the speed drifts by 20-30% over the minutes between the
    growth table's rows, and a ratio of two figures taken minutes apart
    carries that drift; each pair here is taken within seconds. Per
    stage the pairs' CPU seconds and ratios, their median, and the ratio
    of the two sizes' fastest runs (other jobs only ever add time; 4.00
    is O(N^2)). The last row is the reference (bench/quadref.c): as many
    nodes as each size's derivation made, by work exactly proportional
    to them, so its ratio is the nodes' ratio times what the memory
    hierarchy adds on this host when the tables grow by that factor."""
    small, large = b.model(f"trailer{n // 2}"), b.model(f"trailer{n}")
    out = os.path.join(b.tmp, "doubling")

    def whole(cmd):
        return lambda nh: run([b.bin] + cmd(nh), b.timeout)

    stages = [("derive --format json", whole(lambda nh: ["derive", nh, "--format", "json"])),
              ("emit --form all", whole(lambda nh: ["emit", nh, "--form", "all", "-o", out])),
              ("derive in process", lambda nh: b.derive_time_run(nh, 1))]
    quadref = os.path.join(b.build, "quadref")
    knodes = {}
    for nh in (small, large):
        r = b.derive_time_run(nh, 1)
        if r["rc"] == 0 and "nodes" in keyvals(r["out"]):
            knodes[nh] = max(1, int(keyvals(r["out"])["nodes"]) // 1000)
    if os.path.exists(quadref) and len(knodes) == 2:
        stages.append((f"reference: {knodes[small]} -> {knodes[large]} K nodes (quadref)",
                       lambda nh: run([quadref, str(knodes[nh])], b.timeout)))
    print(f"| stage, N = {n // 2} -> {n}, alternating | CPU N = {n // 2} [s] "
          f"| CPU N = {n} [s] | ratios | median ratio | ratio of minima |")
    print("|---|---|---|---|---|---|")
    for label, f in stages:
        a, c = [], []
        for _ in range(pairs):
            for nh, got in ((small, a), (large, c)):
                got.append(stage(f(nh)))
        ok = all(num(x) for x in a + c)
        ratios = [y / x for x, y in zip(a, c)] if ok else []
        print(f"| {label} | " + ", ".join(fmt(x, "s") for x in a) + " | "
              + ", ".join(fmt(x, "s") for x in c) + " | "
              + (", ".join(f"{r:.2f}" for r in ratios) if ok else "-") + " | "
              + (f"{middle(ratios):.2f} | {min(c) / min(a):.2f}" if ok else "- | -")
              + " |")


def latency_table(b, sizes):
    """The host's time per random load against the memory touched
    (bench/memlat.c): chetaev's hash tables are probed at random places,
    so where this rises between the peak RSS of one N and the next, CPU
    time grows faster than the work (bench/icount.sh counts the work)."""
    memlat = os.path.join(b.build, "memlat")
    kv = {}
    if os.path.exists(memlat):  # "ns_8=129.9" a line
        kv = keyvals(run([memlat] + [str(s) for s in sizes], b.timeout)["out"])
    print("| memory touched [MB] | " + " | ".join(str(s) for s in sizes) + " |")
    print("|---" * (len(sizes) + 1) + "|")
    print("| ns per dependent random load | "
          + " | ".join(kv.get(f"ns_{s}", "error") for s in sizes) + " |")


def main(argv):
    opts = {"--sympy-cap": None, "--timeout": "120", "--gcc-max-kb": "1000"}
    quick, pos, i = False, [], 0
    while i < len(argv):
        if argv[i] == "--quick":
            quick = True
        elif argv[i] in opts and i + 1 < len(argv) and argv[i + 1].isdigit():
            opts[argv[i]] = argv[i + 1]
            i += 1
        else:
            pos.append(argv[i])
        i += 1
    if len(pos) != 1 or pos[0].startswith("-"):
        sys.exit(__doc__)
    cap = int(opts["--sympy-cap"] if opts["--sympy-cap"] is not None else (1 if quick else 10))
    b = Bench(pos[0], quick, cap, int(opts["--timeout"]), int(opts["--gcc-max-kb"]))
    try:
        if quick:
            models, ns, fit_from = ["knife_edge", "trailer1"], [1, 2], 1
        else:
            models = ["knife_edge", "trailer1", "trailer10", "trailer24", "trailer50", "chain20"]
            ns, fit_from = [1, 2, 5, 10, 20, 50, 100, 200], 5
        print(f"chetaev against SymPy {sympy_version()}; CPU seconds; timeout "
              f"{b.timeout} s a process; SymPy on the n-trailer for N <= {cap}\n")
        main_table(b, models)
        print()
        kernel_pairs_table(b, models, 1 if quick else 3)
        print()
        growth_table(b, ns, fit_from)
        print()
        doubling_table(b, ns[-1], 1 if quick else 3)
        print()
        latency_table(b, [8, 32] if quick else [8, 32, 128, 512])
    finally:
        shutil.rmtree(b.tmp, ignore_errors=True)


def sympy_version():
    r = subprocess.run([PY, "-c", "import sympy; print(sympy.__version__)"],
                       capture_output=True, text=True)
    return r.stdout.strip() or "?"


if __name__ == "__main__":
    main(sys.argv[1:])
