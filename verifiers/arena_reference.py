#!/usr/bin/env python3
"""Independent float64 reference for the four EinsteinArena scores.

Implements, literally and in numpy, the scoring formulas of the table
"How the arena scores a construction" in /work/shared/DOMAIN.md:

  erdos-min-overlap                   h *= (n/2)/sum(h); max(correlate(h, 1-h, "full")) * 2/n
  first-autocorrelation-inequality    dx = 0.5/n; max(conv(f,f)*dx) / (sum(f)*dx)^2
  second-autocorrelation-inequality   c = oaconvolve(max(f,0), ...); L2^2/(L1*Linf), L2^2 by the
                                      piecewise-linear quadrature with zero end points on the
                                      m+2 point grid np.linspace(-1/2, 1/2, m+2)
  third-autocorrelation-inequality    dx = 0.5/n; abs(max(conv(f,f)*dx)) / (sum(f)*dx)^2

Usage:
  arena_reference.py SLUG FILE   one JSON line {"problem", "n", "score", "valid"} or {"valid": false, "error"}
  arena_reference.py --all       one JSON line per MANIFEST.json entry, compared with arena_score_numpy
Exit status 0 for a scored or rejected construction, 2 for usage errors.
Beyond DOMAIN.md, non-finite values (NaN, +-inf) are rejected for every problem.
"""
import gzip
import json
import math
import os
import sys

import numpy as np

try:
    from scipy.signal import oaconvolve
except ImportError:  # the arena uses overlap-add FFT; direct convolution is the fallback
    oaconvolve = None

PROBLEMS = (
    "erdos-min-overlap",
    "first-autocorrelation-inequality",
    "second-autocorrelation-inequality",
    "third-autocorrelation-inequality",
)
ARENA = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "shared", "arena"))


class Invalid(Exception):
    pass


def load_values(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as fh:
        data = json.load(fh)
    values = data["values"] if isinstance(data, dict) else data
    if not isinstance(values, list):
        raise Invalid("expected {\"values\": [...]} or a bare array")
    return values


def erdos(h):
    n = len(h)
    if np.any(h < 0) or np.any(h > 1):
        raise Invalid("value outside [0, 1]")
    s = np.sum(h)
    if s == 0:
        raise Invalid("sum is zero")
    h = h * ((n / 2) / s)
    if np.any(h < 0) or np.any(h > 1):
        raise Invalid("value outside [0, 1] after rescaling to sum n/2")
    return np.max(np.correlate(h, 1 - h, mode="full")) * 2 / n


def first(f):
    n = len(f)
    if np.any(f < 0):
        raise Invalid("negative value")
    if not np.sum(f) > 0:
        raise Invalid("sum is not positive")
    dx = 0.5 / n
    return np.max(np.convolve(f, f) * dx) / (np.sum(f) * dx) ** 2


def second(f):
    if np.any(f < -1e-6):
        raise Invalid("value below -1e-6")
    f = np.maximum(f, 0.0)
    if not np.sum(f) > 0:
        raise Invalid("sum is not positive")
    c = oaconvolve(f, f) if oaconvolve is not None else np.convolve(f, f)
    m = len(c)
    y = np.concatenate([[0.0], c, [0.0]])
    y1, y2 = y[:-1], y[1:]
    # Interval widths of the m+2 point grid over [-1/2, 1/2], each 1/(m+1) up to rounding. The scalar
    # h = 1/(m+1) differs from the arena's float64 result by a few ulps; the grid form matches it exactly.
    h = np.diff(np.linspace(-0.5, 0.5, m + 2))
    l2sq = np.sum((h / 3) * (y1**2 + y1 * y2 + y2**2))
    l1 = np.sum(np.abs(c)) / (m + 1)
    linf = np.max(np.abs(c))
    return l2sq / (l1 * linf)


def third(f):
    n = len(f)
    dx = 0.5 / n
    s = (np.sum(f) * dx) ** 2
    if s < 1e-9:
        raise Invalid("(sum(f)*dx)^2 < 1e-9")
    return abs(np.max(np.convolve(f, f) * dx)) / s


SCORERS = dict(zip(PROBLEMS, (erdos, first, second, third)))


def score(slug, values):
    """Return {"problem", "n", "score", "valid": True} or {"valid": False, "error"}."""
    try:
        f = np.array(values, dtype=np.float64)
        if f.ndim != 1 or len(f) == 0:
            raise Invalid("values must be a non-empty flat array")
        if not np.all(np.isfinite(f)):
            raise Invalid("NaN or infinite value")
        s = float(SCORERS[slug](f))
        if not math.isfinite(s):
            raise Invalid(f"score is not finite ({s})")
    except (Invalid, ValueError, TypeError) as e:
        return {"valid": False, "error": str(e)}
    return {"problem": slug, "n": len(f), "score": s, "valid": True}


def run_all():
    with open(os.path.join(ARENA, "MANIFEST.json")) as fh:
        manifest = json.load(fh)
    shared = os.path.dirname(ARENA)
    for e in manifest:
        r = score(e["problem"], load_values(os.path.join(shared, e["file"])))
        ms = e["arena_score_numpy"]
        out = {"file": e["file"], "problem": e["problem"], "n": e["n"], "score": r.get("score"),
               "manifest_score": ms, "valid": r["valid"]}
        if r["valid"]:
            out["agree"] = r["score"] == ms
            out["rel_diff"] = abs(r["score"] - ms) / abs(ms)
        else:
            out["error"] = r["error"]
        print(json.dumps(out))


def main(argv):
    if argv == ["--all"]:
        run_all()
        return 0
    if len(argv) != 2 or argv[0] not in SCORERS:
        print(f"usage: {sys.argv[0]} SLUG FILE | --all\n  SLUG in: {', '.join(PROBLEMS)}", file=sys.stderr)
        return 2
    try:
        values = load_values(argv[1])
    except OSError as e:
        print(f"cannot read {argv[1]}: {e}", file=sys.stderr)
        return 2
    except (ValueError, KeyError, Invalid) as e:
        print(json.dumps({"valid": False, "error": f"bad input: {e!r}"}))
        return 0
    print(json.dumps(score(argv[0], values)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
