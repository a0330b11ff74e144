#!/usr/bin/env python3
"""Side-by-side timing of the autoconvolution f*f behind the DOMAIN.md scores: numpy vs scipy vs milo.

For each arena file of first-autocorrelation-inequality, second-autocorrelation-inequality and
third-autocorrelation-inequality (the problems whose score is built on conv = f*f, /work/shared/DOMAIN.md),
plus seeded synthetic files (uniform [0,1)) at n = 600, 30,000, 100,000 (first problem) and 2,000,000
(second problem), it times in one run:
  numpy     np.convolve(f, f)                 (direct; skipped above n = 200,000)
  scipy     scipy.signal.fftconvolve(f, f)
  milo      `milo verify SLUG FILE --json --mode fast|exact`, using the compute time the JSON reports in
            "timings" (fast_seconds / exact_seconds), and the whole process wall time in parentheses.
Every time is the best of --repeat runs (fewer when the runs so far took over --budget seconds).

Usage: python3 benches/compare_numpy.py [--milo target/release/milo] [--repeat 5] [--budget 30] [--timeout 900]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
from scipy.signal import fftconvolve

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARENA = os.path.normpath(os.path.join(ROOT, "..", "shared", "arena"))
ARENA_PROBLEMS = ("first-autocorrelation-inequality", "second-autocorrelation-inequality",
                  "third-autocorrelation-inequality")
SYNTHETIC = [("first-autocorrelation-inequality", 600), ("first-autocorrelation-inequality", 30_000),
             ("first-autocorrelation-inequality", 100_000), ("second-autocorrelation-inequality", 2_000_000)]
NUMPY_MAX_N = 200_000


def best_of(fn, repeat, budget):
    """Best wall time (s) of fn() over up to `repeat` calls, stopping once `budget` seconds are spent."""
    best, spent = float("inf"), 0.0
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        dt = time.perf_counter() - t
        best, spent = min(best, dt), spent + dt
        if spent > budget:
            break
    return best


def run_milo(milo, label, slug, path, mode, args, notes):
    """(best compute seconds, best wall seconds) of milo in `mode`, or (None, None) with a note."""
    key = f"{mode}_seconds"
    best_c = best_w = float("inf")
    spent = 0.0
    for _ in range(args.repeat):
        t = time.perf_counter()
        try:
            p = subprocess.run([milo, "verify", slug, path, "--json", "--mode", mode],
                               capture_output=True, text=True, timeout=args.timeout)
        except subprocess.TimeoutExpired:
            notes.append(f"milo --mode {mode} timed out after {args.timeout} s on {label}")
            return None, None
        wall = time.perf_counter() - t
        try:
            timings = json.loads(p.stdout)["timings"]
            compute = float(timings[key])
        except (ValueError, KeyError, TypeError):
            notes.append(f"milo --mode {mode} on {label} (exit {p.returncode}) printed no "
                         f"JSON with timings.{key}: {(p.stdout or p.stderr).strip()[:200]!r}")
            return None, None
        best_c, best_w, spent = min(best_c, compute), min(best_w, wall), spent + wall
        if spent > args.budget:
            break
    return best_c, best_w


def load(path):
    with open(path) as fh:
        data = json.load(fh)
    return np.array(data["values"] if isinstance(data, dict) else data, dtype=np.float64)


def cases(tmp, notes):
    """Yield (label, slug, path) for the arena files, then for freshly written synthetic files."""
    if os.path.isdir(ARENA):
        for slug in ARENA_PROBLEMS:
            d = os.path.join(ARENA, slug)
            for name in sorted(os.listdir(d)) if os.path.isdir(d) else []:
                if name.endswith(".json"):
                    yield f"{slug}/{name}", slug, os.path.join(d, name)
    else:
        notes.append(f"{ARENA} not found: arena files skipped, synthetic files only")
    rng = np.random.default_rng(20260901)
    for slug, n in SYNTHETIC:
        path = os.path.join(tmp, f"synthetic-{slug.split('-')[0]}-{n}.json")
        with open(path, "w") as fh:
            json.dump({"values": rng.random(n).tolist()}, fh)
        yield f"synthetic {slug} (seeded)", slug, path


def ms(x):
    return "n/a" if x is None else f"{x * 1e3:.3f}"


def ratio(a, b):
    return "n/a" if a is None or b is None or b <= 0 else f"{a / b:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--milo", default=os.path.join(ROOT, "target", "release", "milo"))
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--budget", type=float, default=30.0, help="seconds per measurement before repeats stop")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per milo process")
    args = ap.parse_args()
    notes = []
    milo = args.milo if os.path.isfile(args.milo) and os.access(args.milo, os.X_OK) else None
    if milo is None:
        notes.append(f"milo binary not found at {args.milo} (build it with `cargo build --release`): "
                     "milo columns are n/a")
    header = ["file", "n", "numpy convolve ms", "scipy fftconvolve ms", "milo fast ms (wall)",
              "milo exact ms (wall)", "ratio numpy/milo-exact", "ratio scipy/milo-fast"]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for label, slug, path in cases(tmp, notes):
            f = load(path)
            n = len(f)
            np_s = best_of(lambda: np.convolve(f, f), args.repeat, args.budget) if n <= NUMPY_MAX_N else None
            sp_s = best_of(lambda: fftconvolve(f, f), args.repeat, args.budget)
            fast = exact = (None, None)
            if milo:
                fast = run_milo(milo, label, slug, path, "fast", args, notes)
                exact = run_milo(milo, label, slug, path, "exact", args, notes)
            cell = lambda c: "n/a" if c[0] is None else f"{ms(c[0])} ({ms(c[1])})"
            rows.append([label, str(n), "skipped" if n > NUMPY_MAX_N else ms(np_s), ms(sp_s),
                         cell(fast), cell(exact), ratio(np_s, exact[0]), ratio(sp_s, fast[0])])
            print(f"done: {label} n={n}", file=sys.stderr)
    print(f"Best of {args.repeat} runs (ms); milo columns: compute time from its JSON timings, "
          f"whole process wall time in parentheses.\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "|".join("---" for _ in header) + "|")
    for r in rows:
        print("| " + " | ".join(r) + " |")
    for note in notes:
        print(f"\nNote: {note}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
