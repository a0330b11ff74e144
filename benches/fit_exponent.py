"""Fitted exponent of time against n from criterion's results for `cargo bench --bench objective`.

Usage: python3 benches/fit_exponent.py [CRITERION_DIR]   (default: target/criterion)
Reads value_and_gradient/<problem>/<n>/new/estimates.json (mean, nanoseconds), prints a table and
the least-squares slope of log(time) on log(n) per problem (n log n over 600…2e6 gives about 1.08).
"""
import json
import math
import os
import sys

root = sys.argv[1] if len(sys.argv) > 1 else os.path.join("target", "criterion")
group = os.path.join(root, "value_and_gradient")
if not os.path.isdir(group):
    sys.exit(f"no criterion results under {group}; run `cargo bench --bench objective` first")
for problem in sorted(os.listdir(group)):
    points = []
    for n in os.listdir(os.path.join(group, problem)):
        path = os.path.join(group, problem, n, "new", "estimates.json")
        if n.isdigit() and os.path.isfile(path):
            with open(path) as fh:
                points.append((int(n), json.load(fh)["mean"]["point_estimate"] * 1e-9))
    points.sort()
    print(f"{problem}:")
    for n, t in points:
        print(f"  n = {n:>9}: {t * 1e3:10.3f} ms")
    if len(points) >= 2:
        xs = [math.log(n) for n, _ in points]
        ys = [math.log(t) for _, t in points]
        mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
        slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
        print(f"  fitted exponent (time ∝ n^k): k = {slope:.3f}")
