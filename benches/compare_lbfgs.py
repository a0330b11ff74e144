#!/usr/bin/env python3
"""Side-by-side timing of one smooth-max L-BFGS step: numpy/scipy vs `milo optimize`, one core.

The same step runs on the same start for the same number of iterations, on the first
autocorrelation inequality (first-autocorrelation-inequality):

  f = v², c = f∗f (linear autoconvolution by real FFT, length 2n − 1), r = 2n·c/S², S = Σf,
  surrogate = LSE_β(r) = max r + (1/β)·ln Σ exp(β(r − max r)),
  ∂/∂f = (2n/S²)·2·(w ⋆ f) − (2/S)·Σ_k w_k r_k  (w = softmax weights),  ∂/∂v = 2v·∂/∂f,

exactly as src/objective/first_autocorrelation.rs and src/objective/smooth_max.rs compute it
(zero-padded FFT length: the smallest even 2^a·3^b·5^c ≥ 2n − 1, as src/fast.rs::fft_len).

  scipy  scipy.optimize.minimize(fun, v0, jac=True, method="L-BFGS-B",
         options={"maxiter": ITERS, "maxcor": HISTORY, "gtol": 0, "ftol": 0}); numpy rfft/irfft.
  milo   `milo optimize first-autocorrelation-inequality --start FILE --program P.toml
         --evaluations 1000000 --json --out OUT --trace TRACE`, P.toml one `lbfgs` step with
         parameterisation "square", betas = [BETA], history = HISTORY, iterations = ITERS.
         milo's `seconds` covers the whole run including two exact verifications (start and
         result); their cost is measured with `milo verify FILE --mode exact --json`
         (timings.exact_seconds) and 2× that is subtracted ("compute"). The trace's
         stages[0].seconds (the L-BFGS stage alone) is reported too.

The two line searches differ (scipy's L-BFGS-B: dcsrch, Moré–Thuente; milo: strong Wolfe, Nocedal &
Wright 3.5/3.6), so the table gives iterations, evaluations, time per evaluation and the ratio both
per run (equal iteration cap) and per evaluation. milo reports evaluations but not iterations; its
iterations are capped at ITERS (it can also stop earlier on its own gradient/cost tolerances or a
failed line search).

Cases: the arena's alphaevolve.json (n = 600) and ttt-discover.json (n = 30,000) when
../shared/arena exists, and seeded uniform [0.5, 1.5) starts at n = 3,000 and 100,000.

Usage: python3 benches/compare_lbfgs.py [--milo target/release/milo] [--beta 1e5] [--history 20]
       [--iters 200] [--repeat 3] [--budget 20] [--check-gradient]
"""
import os

for _var in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
             "NUMEXPR_NUM_THREADS", "VECLIB_MAXIMUM_THREADS"):
    os.environ[_var] = "1"

import argparse  # noqa: E402
import json  # noqa: E402
import subprocess  # noqa: E402
import sys  # noqa: E402
import time  # noqa: E402

import numpy as np  # noqa: E402
from scipy.optimize import minimize  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARENA = os.path.normpath(os.path.join(ROOT, "..", "shared", "arena", "first-autocorrelation-inequality"))
SLUG = "first-autocorrelation-inequality"
TMP = "/tmp/compare_lbfgs"


def fft_len(out_len):
    """Smallest even 2^a·3^b·5^c ≥ out_len (src/fast.rs::fft_len)."""
    best = max(1 << (out_len - 1).bit_length(), 2)
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            size = p35 * 2
            while size < out_len:
                size *= 2
            best = min(best, size)
            p35 *= 3
        p5 *= 5
    return best


class Objective:
    """LSE_β(2n·(f∗f)/S²) with f = v², value and gradient w.r.t. v; counts evaluations."""

    def __init__(self, n, beta):
        self.n, self.beta = n, beta
        self.m = fft_len(2 * n - 1)
        self.calls = 0

    def __call__(self, v):
        self.calls += 1
        n, m, beta = self.n, self.m, self.beta
        f = v * v
        s = f.sum()
        scale = 2.0 * n / (s * s)
        spec_f = np.fft.rfft(f, m)
        r = np.fft.irfft(spec_f * spec_f, m)[: 2 * n - 1]
        r *= scale
        top = r.max()
        w = np.exp(beta * (r - top))
        total = w.sum()
        w /= total
        value = top + np.log(total) / beta
        weighted = w @ r
        # (w ⋆ f)_i = Σ_k w_k f_{k−i}; m ≥ 2n − 1 keeps the circular wrap in the zero padding.
        corr = np.fft.irfft(np.fft.rfft(w, m) * np.conj(spec_f), m)[:n]
        grad_f = (2.0 * scale) * corr - 2.0 * weighted / s
        return value, 2.0 * v * grad_f


def true_score(f):
    """The arena's score max(conv·dx)/(S·dx)², dx = 0.5/n, with conv by FFT (float64)."""
    n = len(f)
    m = fft_len(2 * n - 1)
    spec = np.fft.rfft(f, m)
    conv = np.fft.irfft(spec * spec, m)[: 2 * n - 1]
    dx = 0.5 / n
    s = np.sum(f)  # numpy's pairwise sum
    return float(np.max(conv * dx) / (s * dx) ** 2)


def check_gradient(n=50, beta=30.0, seed=7):
    """Central differences against the analytic gradient (for --check-gradient)."""
    rng = np.random.default_rng(seed)
    v = rng.uniform(0.5, 1.5, n)
    obj = Objective(n, beta)
    _, g = obj(v)
    worst = 0.0
    for i in range(n):
        h = 1e-6
        up, down = v.copy(), v.copy()
        up[i] += h
        down[i] -= h
        fd = (obj(up)[0] - obj(down)[0]) / (2 * h)
        worst = max(worst, abs(fd - g[i]))
    return worst


def run_scipy(v0, args):
    """(best seconds, result, evaluations counted by the objective) of L-BFGS-B from v0."""
    best, spent, res, calls = float("inf"), 0.0, None, 0
    for _ in range(args.repeat):
        obj = Objective(len(v0), args.beta)
        t = time.perf_counter()
        res = minimize(obj, v0.copy(), jac=True, method="L-BFGS-B",
                       options={"maxiter": args.iters, "maxcor": args.history, "gtol": 0, "ftol": 0})
        dt = time.perf_counter() - t
        best, spent, calls = min(best, dt), spent + dt, obj.calls
        if spent > args.budget:
            break
    return best, res, calls


def milo_json(cmd, timeout):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()[-500:]}")
    return json.loads(p.stdout)


def exact_seconds(milo, path, args):
    """Best `timings.exact_seconds` of `milo verify PATH --mode exact` over --repeat runs."""
    best = float("inf")
    for _ in range(args.repeat):
        out = milo_json([milo, "verify", SLUG, path, "--mode", "exact", "--json"], args.timeout)
        best = min(best, out["timings"]["exact_seconds"])
    return best


def run_milo(milo, start, program, label, args):
    """Best run of `milo optimize` (by compute seconds): its JSON, trace and out path."""
    best = None
    spent = 0.0
    for rep in range(args.repeat):
        out = f"{TMP}/{label}-milo-out.json"
        trace = f"{TMP}/{label}-milo-trace.json"
        for p in (out, trace):
            if os.path.exists(p):
                os.remove(p)
        t = time.perf_counter()
        res = milo_json([milo, "optimize", SLUG, "--start", start, "--program", program,
                         "--evaluations", "1000000", "--json", "--out", out, "--trace", trace],
                        args.timeout)
        wall = time.perf_counter() - t
        spent += wall
        with open(trace) as fh:
            tr = json.load(fh)
        if best is None or res["seconds"] < best[0]["seconds"]:
            best = (res, tr, wall)
            keep_out = f"{TMP}/{label}-milo-best.json"
            os.replace(out, keep_out)
        if spent > args.budget:
            break
    return best[0], best[1], best[2], keep_out


def write_values(path, values):
    with open(path, "w") as fh:
        json.dump({"values": [float(x) for x in values]}, fh)


def fmt_ms(s):
    return f"{s * 1e3:.1f}" if s >= 0.01 else f"{s * 1e3:.2f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--milo", default=os.path.join(ROOT, "target", "release", "milo"))
    ap.add_argument("--beta", type=float, default=1e5)
    ap.add_argument("--history", type=int, default=20)
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=3, help="best of this many runs (each side)")
    ap.add_argument("--budget", type=float, default=20.0,
                    help="stop repeating a side once its runs took this many seconds")
    ap.add_argument("--timeout", type=float, default=900.0)
    ap.add_argument("--check-gradient", action="store_true",
                    help="check the numpy gradient against central differences first")
    args = ap.parse_args()

    milo = os.path.abspath(args.milo)
    if not os.path.exists(milo):
        sys.exit(f"no milo binary at {milo}: run `cargo build --release` first")
    os.makedirs(TMP, exist_ok=True)

    if args.check_gradient:
        print(f"gradient check (n = 50, β = 30): max |analytic − central difference| = {check_gradient():.2e}")

    program = f"{TMP}/program.toml"
    with open(program, "w") as fh:
        fh.write(f'name = "bench-lbfgs"\n[[steps]]\nkind = "lbfgs"\nparameterisation = "square"\n'
                 f"betas = [{args.beta!r}]\nhistory = {args.history}\niterations = {args.iters}\n")

    notes = []
    cases = []
    if os.path.isdir(ARENA):
        for name in ("alphaevolve", "ttt-discover"):
            path = os.path.join(ARENA, name + ".json")
            if os.path.exists(path):
                cases.append((f"arena {name}", name, path))
            else:
                notes.append(f"SKIP arena {name}: {path} missing")
    else:
        notes.append(f"SKIP arena cases: {ARENA} not found")
    rng = np.random.default_rng(20261202)
    for n in (3_000, 100_000):
        path = f"{TMP}/synthetic-{n}.json"
        write_values(path, rng.uniform(0.5, 1.5, n))
        cases.append((f"synthetic U[0.5,1.5)", f"synthetic-{n}", path))

    rows, scores = [], []
    for label, key, path in cases:
        with open(path) as fh:
            data = json.load(fh)
        f0 = np.asarray(data["values"] if isinstance(data, dict) else data, dtype=np.float64)
        n = len(f0)
        v0 = np.sqrt(np.maximum(f0, 0.0))  # Parameterisation::Square.inverse
        print(f"[{label}, n = {n}] scipy ...", file=sys.stderr, flush=True)
        s_sec, res, s_calls = run_scipy(v0, args)
        f_end = res.x * res.x
        s_score = true_score(f_end)
        s_file = f"{TMP}/{key}-scipy-out.json"
        write_values(s_file, f_end)
        print(f"[{label}, n = {n}] milo ...", file=sys.stderr, flush=True)
        m_res, m_trace, m_wall, m_out = run_milo(milo, path, program, key, args)
        ex_start = exact_seconds(milo, path, args)
        ex_out = exact_seconds(milo, m_out, args)
        m_compute = m_res["seconds"] - ex_start - ex_out
        stage = m_trace["stages"][0]
        m_evals = m_res["evaluations"]
        s_per_eval = s_sec / res.nfev
        m_per_eval = m_compute / m_evals
        m_verified = milo_json([milo, "verify", SLUG, m_out, "--mode", "exact", "--json"], args.timeout)
        s_verified = milo_json([milo, "verify", SLUG, s_file, "--mode", "exact", "--json"], args.timeout)
        if s_calls != res.nfev:
            notes.append(f"{key}: scipy nfev {res.nfev} ≠ objective calls {s_calls}")
        rows.append(dict(label=label, n=n, s_nit=res.nit, s_nfev=res.nfev, s_sec=s_sec,
                         s_msg=str(res.message), m_evals=m_evals, m_compute=m_compute,
                         m_stage=stage["seconds"], m_total=m_res["seconds"], m_wall=m_wall,
                         ex=(ex_start + ex_out) / 2,
                         ratio=s_sec / m_compute, ratio_eval=s_per_eval / m_per_eval,
                         s_per_eval=s_per_eval, m_per_eval=m_per_eval))
        scores.append(dict(label=label, n=n, start=true_score(f0), s_fun=float(res.fun), s_score=s_score,
                           s_exact=s_verified["score_exact"], m_stage_after=stage["score_after"],
                           m_exact=m_verified["score_exact"], m_improved=m_res["improved"]))
        print(f"[{label}, n = {n}] scipy {s_sec:.3f} s ({res.nit} it, {res.nfev} ev; {res.message}), "
              f"milo compute {m_compute:.3f} s ({m_evals} ev)", file=sys.stderr, flush=True)

    print(f"\nL-BFGS, first-autocorrelation-inequality, square parameterisation, β = {args.beta:g}, "
          f"history = {args.history}, iterations = {args.iters}; one core; best of up to {args.repeat}.\n")
    print("| case | n | scipy iters | scipy evals | scipy s | scipy ms/eval | milo evals (iters ≤ "
          f"{args.iters}) | milo compute s | milo stage s | milo total s (2× exact) | milo ms/eval "
          "| scipy/milo per run | scipy/milo per eval |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['label']} | {r['n']:,} | {r['s_nit']} | {r['s_nfev']} | {r['s_sec']:.3f} | "
              f"{fmt_ms(r['s_per_eval'])} | {r['m_evals']} | {r['m_compute']:.3f} | {r['m_stage']:.3f} | "
              f"{r['m_total']:.3f} (2×{r['ex']:.4f}) | {fmt_ms(r['m_per_eval'])} | "
              f"{r['ratio']:.2f}× | {r['ratio_eval']:.2f}× |")

    print("\nScores (lower is better). scipy surrogate = LSE_β at its last iterate; true scores are the "
          "arena's max(conv·dx)/(S·dx)²; 'exact' columns by `milo verify --mode exact`. milo's out file is "
          "the best construction it saw by true score (the start when the L-BFGS end point is worse); "
          "'milo L-BFGS end' is the trace's stages[0].score_after (float64).\n")
    print("| case | n | start | scipy surrogate | scipy true (numpy) | scipy exact (milo verify) | "
          "milo L-BFGS end | milo out exact (milo verify) | milo improved |")
    print("|---|---|---|---|---|---|---|---|---|")
    for s in scores:
        print(f"| {s['label']} | {s['n']:,} | {s['start']:.12f} | {s['s_fun']:.12f} | {s['s_score']:.12f} | "
              f"{s['s_exact'][:16]} | {s['m_stage_after']:.12f} | {s['m_exact'][:16]} | "
              f"{'yes' if s['m_improved'] else 'no'} |")

    print("\nscipy stop messages: " + "; ".join(f"{r['label']} n={r['n']}: {r['s_msg']}" for r in rows))
    for note in notes:
        print(note)


if __name__ == "__main__":
    main()
