#!/usr/bin/env python3
"""Behaviour-neutral children over a 20-round run on the default suite (issue 13's target: at most
5% of the children have every task's gain equal to their parent's).

For each seed: `milo evolve --rounds 20 --jobs 1 --seed S` on the embedded default suite in a
temporary directory, then the count from the run's raw records (`lineage.jsonl`: every node with
a parent evaluation, its per-task gains against its parent's on the same tasks), printed beside
what `milo lineage` says. Evaluation budgets make the run deterministic: a seed gives the same
count on any machine.

  cargo build --release && python3 benches/neutral_children.py [--seeds 1 2 3] [--rounds 20]
"""

import argparse
import json
import pathlib
import subprocess
import sys
import tempfile
import time

MILO = pathlib.Path(__file__).resolve().parent.parent / "target" / "release" / "milo"
TARGET = 0.05


def neutral_children(run_dir):
    """(neutral, children) from the run's lineage records."""
    gains = lambda evaluation: [t["gain"] for t in evaluation["tasks"]]
    neutral = children = 0
    for line in (run_dir / "lineage.jsonl").read_text().splitlines():
        record = json.loads(line)
        if record.get("record") != "node" or record.get("parent_evaluation") is None:
            continue
        children += 1
        neutral += gains(record["evaluation"]) == gains(record["parent_evaluation"])
    return neutral, children


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[1])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    if not MILO.exists():
        sys.exit(f"no {MILO}: run `cargo build --release` first")
    print(f"| seed | rounds | children | neutral | share | target (≤ {TARGET:.0%}) | wall s |")
    print("|---|---|---|---|---|---|---|")
    missed = False
    for seed in args.seeds:
        with tempfile.TemporaryDirectory() as tmp:
            run_dir = pathlib.Path(tmp) / "run"
            started = time.monotonic()
            subprocess.run(
                [MILO, "evolve", "--rounds", str(args.rounds), "--jobs", "1",
                 "--seed", str(seed), "--run-dir", run_dir, "-q"],
                check=True, stdout=subprocess.DEVNULL,
            )
            wall = time.monotonic() - started
            neutral, children = neutral_children(run_dir)
            shown = subprocess.run([MILO, "lineage", run_dir], check=True,
                                   capture_output=True, text=True).stdout
            expected = f"children with every task's gain equal to their parent's: {neutral} of {children}"
            if expected not in shown:
                sys.exit(f"milo lineage disagrees with the records: expected '{expected}'")
        share = neutral / children if children else 0.0
        met = children > 0 and share <= TARGET
        missed |= not met
        print(f"| {seed} | {args.rounds} | {children} | {neutral} | {share:.1%} | "
              f"{'met' if met else 'missed'} | {wall:.0f} |")
    sys.exit(1 if missed else 0)


if __name__ == "__main__":
    main()
