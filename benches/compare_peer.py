#!/usr/bin/env python3
"""milo against a "peer": the numpy/scipy optimizer a competent user would write after reading
DOMAIN.md, run side by side at equal wall time, one core each, from every frozen arena start.

The peer minimises milo's own surrogates (log-sum-exp smooth max at temperature β of the
score-sized lag vector, so β means what it means in milo; src/objective/*.rs,
src/problems/*/objective.rs) with scipy's L-BFGS-B, gradients by real FFT with analytic adjoints:

  first   f = v²;  r = 2n·(f∗f)/S²,  surrogate LSE_β(r)                    (S = Σf)
  third   f = v (signed), same r, same surrogate (the score is |max r|)
  second  f = v²;  c = f∗f, N = (2Σc² + Σc_k c_(k+1))/(3(m+1)), L1 = Σc/(m+1),
          surrogate −N/(L1²·LSE_β(c/L1))  (the score is N/(L1·max c))
  erdős   h = sigmoid(v);  a = h·(n/2)/Σh,  r = (2/n)·(a ⋆ (1 − a)),  surrogate LSE_β(r)

Method, per start: block-repeat upsampling with 1e-6 multiplicative noise when the result fits the
arena's length limit (the second problem instead trims its zero ends, score-preserving), a β
cascade in half-decade steps from a floor (low after a resample, as DOMAIN.md measures: third
1e1, first 1e2) to a top β, up to 300 L-BFGS-B iterations a level (history 50), the levels
sharing half the budget equally (a level that stops early leaves its time to the next); then
basin hopping until the budget ends: multiplicative noise on the best (3% of the support at 5%,
or 1% on every cell), a cascade from a restart floor in 15% of the budget, keep the best. Every
objective evaluation also yields the point's float64 arena score; the best valid point seen is
kept (Erdős: a point that breaks the "≤ 1 after the rescale" rule is capped at the end of each
level, as milo's repair does), and the start is written back unless the result beats it. The
wall budget (counted from interpreter start) is checked inside the objective, which aborts the
running minimize.

  per problem     resample                   β floor   top β   restart floor
  erdős           none                       1e3       1e10    1e4
  first           ×4 when ≤ 100,000 values   1e2       1e10    1e7
                  (else none)                1e7
  second          trim the zero ends only    1e6       1e8     1e6
  third           ×4                         1e1       1e8     1e3

Measured choices (10 s budgets): Erdős improves only from a low floor at its own resolution
(block repeat ×2/×4 never beat the start); the first problem's 30,000-sample starts gain from a
polish at 1e7 but lose everything to a cascade from 1e5 (×4 would exceed 100,000 values); on the
second problem one evaluation at 3×(trimmed n) costs about 0.1–0.2 s, so ×3 followed by a low-β
cascade cannot recover the start's score within tens of seconds: the peer polishes the trimmed
start.

Usage:
  python3 benches/compare_peer.py [--budget 30] [--milo PATH] [--only SLUG_SUBSTRING]
                                  [--seed 1] [--out-dir DIR]
      For each start in ../shared/arena/MANIFEST.json (relative to the repository root), runs
      `milo optimize SLUG --start FILE --budget B --seed S --jobs 1 --out OUT` and the peer at the
      same time, each pinned to its own core (taskset, when there are two), scores the start and
      both results with `milo verify SLUG FILE --mode exact --json` and prints a markdown table;
      --out-dir also gets the rows as JSON lines (compare_peer.jsonl) and both constructions.
  python3 benches/compare_peer.py peer SLUG START.json --budget SECONDS --seed S --out OUT.json
      The peer alone; writes the best valid construction found as {"values": [...]} (the start
      when nothing beat it) and prints one JSON line with its float64 score.
"""
import time

STARTED = time.monotonic()  # the peer's wall budget counts from here, imports included

import argparse  # noqa: E402
import json  # noqa: E402
import math  # noqa: E402
import os  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
from decimal import Decimal  # noqa: E402

import numpy as np  # noqa: E402
from scipy.fft import irfft, next_fast_len, rfft  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARENA = os.path.normpath(os.path.join(ROOT, "..", "shared", "arena"))

# Per problem: f = φ(v); block-repeat factor (applied only within max_len); first β of the cascade
# after a resample (floor) and at the start's own resolution (polish_floor); top β; first β of the
# basin-hopping restarts; the arena's length limit; direction.
CONFIG = {
    "erdos-min-overlap": dict(
        param="sigmoid", factor=1, floor=None, polish_floor=1e3, top=1e10, restart_floor=1e4,
        max_len=100_000, maximize=False),
    "first-autocorrelation-inequality": dict(
        param="square", factor=4, floor=1e2, polish_floor=1e7, top=1e10, restart_floor=1e7,
        max_len=100_000, maximize=False),
    "second-autocorrelation-inequality": dict(
        param="square", factor=1, floor=None, polish_floor=1e6, top=1e8, restart_floor=1e6,
        max_len=2_000_000, maximize=True),
    "third-autocorrelation-inequality": dict(
        param="raw", factor=4, floor=1e1, polish_floor=1e5, top=1e8, restart_floor=1e3,
        max_len=100_000, maximize=False),
}
HISTORY, MAX_ITERS = 50, 300


# ---------------------------------------------------------------- surrogates and scores

def lse(x, beta):
    """Log-sum-exp smooth max of x and its softmax weights."""
    top = x.max()
    e = np.exp(beta * (x - top))
    total = e.sum()
    return top + math.log(total) / beta, e / total


def surrogate(slug, f, beta):
    """(surrogate value to minimise, its gradient in f, arena float64 score or None if invalid)."""
    n = len(f)
    size = next_fast_len(2 * n - 1, real=True)
    s = f.sum()
    if slug == "erdos-min-overlap":
        lam = n / 2 / s
        a = lam * f
        fa, fb = rfft(a, size), rfft(1 - a[::-1], size)
        r = irfft(fa * fb, size)[:2 * n - 1] * (2 / n)
        value, w = lse(r, beta)
        fw = rfft(w * (2 / n), size)
        ga = irfft(fw * fb.conj(), size)[:n] - irfft(fw * fa.conj(), size)[:n][::-1]
        grad = lam * ga - (ga @ a) / s
        return value, grad, (r.max() if a.max() <= 1 - 1e-12 else None)
    spectrum = rfft(f, size)
    c = irfft(spectrum * spectrum, size)[:2 * n - 1]
    if slug == "second-autocorrelation-inequality":
        m1 = 2 * n
        num = (2 * (c @ c) + c[1:] @ c[:-1]) / (3 * m1)
        l1 = c.sum() / m1
        u = c / l1
        sm, w = lse(u, beta)
        den = l1 * l1 * sm
        a, b = -1 / den, num / den ** 2
        dc = (a / (3 * m1)) * (4 * c + np.r_[0, c[:-1]] + np.r_[c[1:], 0])
        dc += b * (2 * l1 * sm / m1 - l1 * (w @ u) / m1) + b * l1 * w
        grad = 2 * irfft(rfft(dc, size) * spectrum.conj(), size)[:n]
        return -num / den, grad, num / (l1 * u.max() * l1)
    scale = 2 * n / (s * s)
    r = c * scale
    value, w = lse(r, beta)
    grad = 2 * scale * irfft(rfft(w, size) * spectrum.conj(), size)[:n] - 2 * (w @ r) / s
    if slug == "third-autocorrelation-inequality":
        return value, grad, (abs(r.max()) if (s * 0.5 / n) ** 2 >= 1e-9 else None)
    return value, grad, r.max()


def autoconvolve(f):
    """Full linear f∗f (length 2n − 1) by real FFT (numpy.convolve, O(n²), takes seconds at 10⁵)."""
    size = next_fast_len(2 * len(f) - 1, real=True)
    return irfft(rfft(f, size) ** 2, size)[:2 * len(f) - 1]


def arena_score(slug, f):
    """The arena's float64 score (convolutions by FFT), or None if f breaks the arena's rules."""
    n = len(f)
    if slug == "erdos-min-overlap":
        if f.min() < 0 or f.max() > 1 or n * f.max() > 2 * math.fsum(f):
            return None
        h = f * ((n / 2) / math.fsum(f))
        return np.correlate(h, 1 - h, "full").max() * 2 / n
    if slug == "second-autocorrelation-inequality":
        c = autoconvolve(np.maximum(f, 0))
        y = np.r_[0, c, 0]
        l2 = np.sum((y[:-1] ** 2 + y[:-1] * y[1:] + y[1:] ** 2) / (3 * (2 * n)))
        return l2 / (np.abs(c).sum() / (2 * n) * np.abs(c).max())
    dx = 0.5 / n
    peak = np.max(autoconvolve(f) * dx) / (math.fsum(f) * dx) ** 2
    if slug == "third-autocorrelation-inequality":
        return abs(peak) if (math.fsum(f) * dx) ** 2 >= 1e-9 else None
    return peak if f.min() >= 0 else None


def erdos_repair(h):
    """Cap the tallest values at c = 2·mean(min(h, c)): all are then ≤ 1 after the rescale."""
    h = np.clip(h, 0, 1)
    lo, hi = 0.0, h.max()
    for _ in range(100):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 2 * np.minimum(h, mid).mean() >= mid else (lo, mid)
    return np.minimum(h, lo * (1 - 1e-12))


# ---------------------------------------------------------------- the optimizer

def logit(p):
    return np.log(p / (1 - p))


PARAMS = {  # φ, dφ/dv as a function of (v, f), φ⁻¹
    "square": (np.square, lambda v, f: 2 * v, lambda f: np.sqrt(np.maximum(f, 0))),
    "raw": (lambda v: v, lambda v, f: 1.0, lambda f: f),
    "sigmoid": (lambda v: 0.5 * (1 + np.tanh(v / 2)), lambda v, f: f * (1 - f),
                lambda f: logit(np.clip(f, 1e-12, 1 - 1e-12))),
}


class _OutOfTime(Exception):
    """Raised inside the objective when the wall budget is spent."""


class Peer:
    """Smooth-max L-BFGS-B cascades with upsampling and basin hopping, best point kept."""

    def __init__(self, slug, start, budget, seed):
        self.slug, self.cfg = slug, CONFIG[slug]
        self.phi, self.dphi, self.inverse = PARAMS[self.cfg["param"]]
        self.deadline = time.monotonic() + budget
        self.budget = budget
        self.rng = np.random.default_rng(seed)
        self.start, self.start_score = start, arena_score(slug, start)
        self.best_f, self.best = start.copy(), self.start_score

    def beats(self, score, other):
        """Whether score is valid and strictly better than other (None: invalid)."""
        if score is None or not np.isfinite(score):
            return False
        return other is None or (score > other if self.cfg["maximize"] else score < other)

    def consider(self, f, score):
        if self.beats(score, self.best):
            self.best_f, self.best = f.copy(), score

    def cascade(self, f, floor, seconds):
        """L-BFGS-B at β = floor, floor·√10, … up to the top β, each level at most MAX_ITERS
        iterations and an equal share of what remains of `seconds`; returns the final f."""
        v, end = self.inverse(f), time.monotonic() + seconds
        levels = betas(floor, self.cfg["top"])
        for i, beta in enumerate(levels):
            level_end = time.monotonic() + (end - time.monotonic()) / (len(levels) - i)

            def fun(v):
                if time.monotonic() > self.deadline:
                    raise _OutOfTime
                f = self.phi(v)
                value, grad, score = surrogate(self.slug, f, beta)
                self.consider(f, score)
                return value, grad * self.dphi(v, f)

            def stop_level(_):
                if time.monotonic() > level_end:
                    raise StopIteration  # scipy ends the level and returns its current iterate

            v = minimize(fun, v, jac=True, method="L-BFGS-B", callback=stop_level,
                         options=dict(maxiter=MAX_ITERS, maxcor=HISTORY, ftol=0, gtol=0)).x
            if self.slug == "erdos-min-overlap":
                h = erdos_repair(self.phi(v))
                self.consider(h, arena_score(self.slug, h))
        return self.phi(v)

    def perturb(self, f):
        """Multiplicative noise: 5% on 3% of the support, or 1% on every cell."""
        noise = np.zeros(len(f))
        if self.rng.random() < 0.5:
            support = np.flatnonzero(f)
            cells = self.rng.choice(support, max(1, len(support) * 3 // 100), replace=False)
            noise[cells] = 0.05 * self.rng.standard_normal(len(cells))
        else:
            noise = 0.01 * self.rng.standard_normal(len(f))
        g = f * (1 + noise)
        return np.clip(g, 0, 1) if self.slug == "erdos-min-overlap" else g

    def run(self):
        cfg, f = self.cfg, self.best_f
        if self.slug == "second-autocorrelation-inequality":
            support = np.flatnonzero(f > 0)
            f = f[support[0]:support[-1] + 1]
        factor = cfg["factor"] if len(f) * cfg["factor"] <= cfg["max_len"] else 1
        if factor > 1:
            f = np.repeat(f, factor) * (1 + 1e-6 * self.rng.standard_normal(len(f) * factor))
        floor = cfg["floor"] if factor > 1 else cfg["polish_floor"]
        try:
            self.cascade(f, floor, 0.5 * self.budget)
            while True:
                self.cascade(self.perturb(self.best_f), cfg["restart_floor"], 0.15 * self.budget)
        except _OutOfTime:
            pass
        best = arena_score(self.slug, self.best_f)  # the same formula as the start's score
        if self.beats(best, self.start_score):
            return self.best_f, best
        return self.start, self.start_score


def betas(floor, top):
    """Half-decade steps from floor to top, both included."""
    count = int(round(2 * math.log10(top / floor))) + 1
    return list(np.logspace(math.log10(floor), math.log10(top), count))


# ---------------------------------------------------------------- command line

def load(path):
    with open(path) as fh:
        data = json.load(fh)
    return np.array(data["values"] if isinstance(data, dict) else data, dtype=np.float64)


def peer_main(argv):
    ap = argparse.ArgumentParser(prog="compare_peer.py peer", description="Run the peer alone.")
    ap.add_argument("slug", choices=sorted(CONFIG))
    ap.add_argument("start")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", required=True)
    args = ap.parse_args(argv)
    start = load(args.start)
    # Leave time to write the result (up to 4× the start's length after a resample).
    remaining = args.budget - (time.monotonic() - STARTED) - 0.3 - 8e-6 * len(start)
    peer = Peer(args.slug, start, remaining, args.seed)
    best_f, best = peer.run()
    with open(args.out, "w") as fh:
        json.dump({"values": best_f.tolist()}, fh)
    print(json.dumps({"problem": args.slug, "n_start": len(start), "n_best": len(best_f),
                      "start_f64": peer.start_score, "best_f64": best,
                      "seconds": round(time.monotonic() - STARTED, 3)}))


def exact_score(milo, slug, path):
    """The exact score from `milo verify --mode exact --json` as a Decimal (None if invalid)."""
    p = subprocess.run([milo, "verify", slug, path, "--mode", "exact", "--json"],
                       capture_output=True, text=True)
    try:
        report = json.loads(p.stdout)
    except ValueError:
        return None
    return Decimal(report["score_exact"]) if report.get("valid") else None


def problem_specs(milo):
    """slug → (direction, min_improvement) from `milo problems --json`."""
    out = subprocess.run([milo, "problems", "--json"], capture_output=True, text=True, check=True)
    return {p["slug"]: (p["direction"], Decimal(repr(p["min_improvement"])))
            for p in json.loads(out.stdout)["problems"]}


def race(commands, envs, logs):
    """Start every command at once (stderr to its log); return each one's (exit code, wall s)."""
    t0 = time.monotonic()
    procs = []
    for command, env, log in zip(commands, envs, logs):
        with open(log, "w") as fh:
            procs.append(subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=fh))
    results = [None] * len(procs)
    while any(r is None for r in results):
        for i, p in enumerate(procs):
            if results[i] is None and p.poll() is not None:
                results[i] = (p.returncode, time.monotonic() - t0)
        time.sleep(0.02)
    return results


def fmt(x):
    return "invalid" if x is None else f"{float(x):#.10g}"


def driver_main(argv):
    ap = argparse.ArgumentParser(description="milo vs the numpy/scipy peer at equal wall time.")
    ap.add_argument("--budget", type=float, default=30.0)
    ap.add_argument("--milo", default=os.path.join(ROOT, "target", "release", "milo"))
    ap.add_argument("--only", default="", help="run the starts whose problem slug contains this")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out-dir")
    args = ap.parse_args(argv)
    manifest = os.path.join(ARENA, "MANIFEST.json")
    if not os.path.exists(manifest):
        print(f"note: {manifest} not found (no ../shared beside the repository): nothing to run")
        return
    with open(manifest) as fh:
        starts = [s for s in json.load(fh) if args.only in s["problem"]]
    specs = problem_specs(args.milo)
    pin = shutil.which("taskset") and (os.cpu_count() or 1) >= 2
    single = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    if args.out_dir:
        os.makedirs(args.out_dir, exist_ok=True)
    print(f"budget {args.budget:g} s each, seed {args.seed}, milo {args.milo}, "
          f"{'pinned to cores 0 and 1' if pin else 'not pinned (no taskset or one core)'}\n")
    print("| problem | start | start score | milo | peer | better | milo s | peer s |")
    print("|---|---|---|---|---|---|---|---|")
    rows = []
    for entry in starts:
        slug, start = entry["problem"], os.path.join(os.path.dirname(ARENA), entry["file"])
        direction, threshold = specs[slug]
        with tempfile.TemporaryDirectory(prefix="compare_peer.") as tmp:
            outs = {who: os.path.join(tmp, f"{who}.json") for who in ("milo", "peer")}
            commands = [
                [args.milo, "optimize", slug, "--start", start, "--budget", f"{args.budget:g}",
                 "--seed", str(args.seed), "--jobs", "1", "--out", outs["milo"]],
                [sys.executable, os.path.abspath(__file__), "peer", slug, start,
                 "--budget", f"{args.budget:g}", "--seed", str(args.seed), "--out", outs["peer"]],
            ]
            if pin:
                commands = [["taskset", "-c", str(core)] + c for core, c in enumerate(commands)]
            logs = [os.path.join(tmp, f"{who}.log") for who in outs]
            results = race(commands, [os.environ, single], logs)
            scores = {who: exact_score(args.milo, slug, path) if os.path.exists(path) else None
                      for who, path in outs.items()}
            for (code, _), who, log in zip(results, outs, logs):
                if code != 0:
                    with open(log) as fh:
                        tail = fh.read()[-300:].strip()
                    print(f"note: {who} on {entry['file']} exited {code}: {tail!r}",
                          file=sys.stderr)
            if args.out_dir:
                for who, path in outs.items():
                    if os.path.exists(path):
                        shutil.copy(path, os.path.join(
                            args.out_dir, f"{slug}.{entry['source']}.{who}.json"))
        start_score = exact_score(args.milo, slug, start)
        milo, peer = scores["milo"], scores["peer"]
        if milo is None or peer is None:
            better = "peer" if milo is None and peer is not None else (
                "milo" if peer is None and milo is not None else "neither")
        else:
            gain = (milo - peer) if direction == "maximize" else (peer - milo)
            better = "milo" if gain >= threshold else ("peer" if -gain >= threshold else "tie")
        row = dict(problem=slug, start=entry["source"], n=entry["n"], start_score=fmt(start_score),
                   milo=fmt(milo), peer=fmt(peer), better=better, min_improvement=str(threshold),
                   milo_seconds=round(results[0][1], 2), peer_seconds=round(results[1][1], 2),
                   budget=args.budget, seed=args.seed)
        rows.append(row)
        print(f"| {slug} | {entry['source']} | {row['start_score']} | {row['milo']} | "
              f"{row['peer']} | {better} | {row['milo_seconds']:.1f} | {row['peer_seconds']:.1f} |",
              flush=True)
    if args.out_dir:
        with open(os.path.join(args.out_dir, "compare_peer.jsonl"), "w") as fh:
            fh.writelines(json.dumps(r) + "\n" for r in rows)


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "peer":
        peer_main(sys.argv[2:])
    else:
        driver_main(sys.argv[1:])
