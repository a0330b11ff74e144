#!/usr/bin/env python3
"""Load an arena construction, verify it exactly, polish it for 30 s, and write it back.

    python3 examples/polish.py ../shared/arena/first-autocorrelation-inequality/alphaevolve.json first polished.json

The output is the arena's {"values": [...]}; the polish keeps the start when nothing beats it on
exact scores. Needs the module: `python3 -m pip install ./python`.
"""
import json
import sys

import numpy as np

import milo

source, problem, target = sys.argv[1:4]
with open(source) as f:
    data = json.load(f)
start = np.asarray(data["values"] if isinstance(data, dict) else data, dtype=np.float64)

before = milo.verify(problem, start)
print(f"start   n = {before.n:,}  exact {before.score_exact}")

result = milo.optimize(problem, start, budget_seconds=30, seed=1)
print(f"polish  n = {result.n:,}  exact {result.score_exact}  ({result.stopped}, "
      f"{result.evaluations:,} evaluations in {result.seconds:.1f} of {result.budget_seconds:.0f} s)")

decision = milo.beats(problem, result.values, "arena")
print(f"vs #1   {decision.against}: improvement {float(decision.improvement):.3e} "
      f"(needs {decision.min_improvement:g}) — {'BEATS it' if decision else 'does not beat it'}")

with open(target, "w") as f:
    json.dump({"values": result.values.tolist()}, f)
print(f"wrote   {target}")
