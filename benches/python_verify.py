#!/usr/bin/env python3
"""Side-by-side timing of `milo.verify` from Python against the arena's numpy scoring, in one process.

For the first autocorrelation problem (the autoconvolution max(f*f) of DOMAIN.md) on seeded uniform
[0.1, 1.1) arrays of n = 100,000 and 2,000,000 values (the second over the arena's length limit, so
scored with allow_oversize), it times in one run:
  numpy direct   verifiers/arena_reference.py's scorer (np.convolve, O(n^2); skipped above 200,000)
  scipy FFT      the same formula with scipy.signal.fftconvolve
  milo fast      milo.verify(..., mode="fast"): float64 FFT score with its error bound
  milo exact     milo.verify(..., mode="exact"): the exact rational score
and, for the module's overhead, the Python call's whole wall time against the in-process time the
same call reports (check + score) and against the CLI's in-process time for the same array (`milo
verify --json`'s timings: check + score, the file's parsing excluded); both in fresh processes
taken in turn, since one process's speed differs from the next's by several percent.
Every time is the best of --repeat runs.

Usage: python3 benches/python_verify.py [--milo target/release/milo] [--repeat 5]
Needs the module installed (`python3 -m pip install ./python`) and numpy, scipy.
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

import milo

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "verifiers"))
import arena_reference  # noqa: E402  (the arena's numpy formulas)

SLUG = "first-autocorrelation-inequality"
SIZES = (100_000, 2_000_000)
NUMPY_MAX_N = 200_000


def best_of(fn, repeat):
    """Best wall time (s) of fn() over `repeat` calls, and its last result."""
    best, result = float("inf"), None
    for _ in range(repeat):
        started = time.perf_counter()
        result = fn()
        best = min(best, time.perf_counter() - started)
    return best, result


def scipy_first(f):
    """The first problem's arena formula with an FFT convolution."""
    dx = 0.5 / len(f)
    return np.max(fftconvolve(f, f) * dx) / (np.sum(f) * dx) ** 2


def cli_in_process(binary, path, mode):
    """The CLI's in-process time for one verification: the check and the fast or exact score
    of its --json timings (the file's parsing excluded)."""
    run = subprocess.run(
        [binary, "verify", SLUG, path, "--json", "--mode", mode, "--allow-oversize"],
        capture_output=True, text=True, check=True,
    )
    timings = json.loads(run.stdout)["timings"]
    return timings["check_seconds"] + timings[f"{mode}_seconds"]


# One Python call in a fresh process, as the CLI's is: the array read from the same file.
FRESH_CALL = """
import json, sys, time
import numpy as np
import milo
with open(sys.argv[1]) as source:
    f = np.asarray(json.load(source)["values"])
started = time.perf_counter()
report = milo.verify(sys.argv[3], f, mode=sys.argv[2], allow_oversize=True)
wall = time.perf_counter() - started
print(wall, report.check_seconds + report.fast_seconds + report.exact_seconds)
"""


def overhead(binary, path, mode, repeat):
    """The Python call's best wall time, the best in-process time the call reports itself, and
    the CLI's best in-process time: each from `repeat` fresh processes, taken in turn (so both
    see the same machine and the same spread between processes)."""
    python, inner, cli = float("inf"), float("inf"), float("inf")
    for _ in range(repeat):
        run = subprocess.run(
            [sys.executable, "-c", FRESH_CALL, path, mode, SLUG], capture_output=True, text=True, check=True
        )
        wall, reported = map(float, run.stdout.split())
        python, inner = min(python, wall), min(inner, reported)
        cli = min(cli, cli_in_process(binary, path, mode))
    return python, inner, cli


def row(args, n, f, path):
    """One table row: the timings of the n-value array `f`, which the file `path` holds."""
    fast, fast_report = best_of(lambda: milo.verify(SLUG, f, mode="fast", allow_oversize=True), args.repeat)
    exact, _ = best_of(lambda: milo.verify(SLUG, f, mode="exact", allow_oversize=True), args.repeat)
    scipy_time, scipy_score = best_of(lambda: scipy_first(f), args.repeat)
    assert abs(scipy_score - fast_report.score) <= 1e-9 * scipy_score
    if n <= NUMPY_MAX_N:
        numpy_time, numpy_score = best_of(lambda: arena_reference.first(f), 1)
        assert abs(numpy_score - fast_report.score) <= fast_report.error_bound + 1e-12 * numpy_score
        numpy_cell, numpy_ratio = f"{numpy_time:.3f} s", f"{numpy_time / fast:.0f}×"
    else:
        numpy_cell, numpy_ratio = "not run (O(n²))", "—"
    fast_call = overhead(args.milo, path, "fast", args.repeat)
    exact_call = overhead(args.milo, path, "exact", args.repeat)
    percent = lambda a, b: f"{100 * (a / b - 1):+.1f} %"
    print(
        f"| {n:,} | {numpy_cell} | {scipy_time:.4f} s | {fast:.4f} s | {exact:.3f} s | {numpy_ratio} | "
        f"{scipy_time / fast:.1f}× | {percent(fast_call[0], fast_call[1])} / {percent(exact_call[0], exact_call[1])} | "
        f"{percent(fast_call[0], fast_call[2])} / {percent(exact_call[0], exact_call[2])} "
        f"(CLI {fast_call[2]:.4f} s / {exact_call[2]:.3f} s) |"
    )
    sys.stdout.flush()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--milo", default=os.path.join(ROOT, "target", "release", "milo"))
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(f"| n | numpy direct | scipy FFT | milo fast | milo exact | numpy / milo fast | "
          f"scipy / milo fast | the call over its own in-process time, fast / exact | "
          f"the call over the CLI's in-process time, fast / exact |")
    print("|---|---|---|---|---|---|---|---|---|")
    for n in SIZES:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as out:
            json.dump({"values": (np.random.default_rng(n).random(n) + 0.1).tolist()}, out)
        try:
            # The array the CLI reads, read as a user would.
            with open(out.name) as source:
                f = np.asarray(json.load(source)["values"])
            row(args, n, f, out.name)
        finally:
            os.unlink(out.name)
    print(f"\nmilo {milo.__name__} from {os.path.dirname(milo.__file__)}; {os.cpu_count()} cores; best of {args.repeat}.")


if __name__ == "__main__":
    main()
