"""Simple initial functions, one per problem, sampled at equally spaced midpoints.

They are the project's own starting points (no leaderboard data): run
`python3 constructions/simple_starts.py` from the project root to rewrite them, then
`milo verify SLUG FILE` to score them. Scores are listed in constructions/README.md.
"""
import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))


def midpoints(n, lo, hi):
    step = (hi - lo) / n
    return [lo + (i + 0.5) * step for i in range(n)]


def capped_arcsine(n, cap=1.5):
    # f(x) = min(cap, 1/sqrt(1 - 16x^2)) on (-1/4, 1/4): the arcsine shape near-extremal for
    # autoconvolution, capped so that its endpoint singularity does not dominate the samples.
    return [min(cap, 1.0 / math.sqrt(1.0 - 16.0 * x * x)) for x in midpoints(n, -0.25, 0.25)]


def erdos_ramp(n):
    # h rising from 0 to 1 and back on [0, 2]; the arena rescales it to integral 1.
    return [min(1.0, 2.0 * min(x, 2.0 - x)) * 0.5 for x in midpoints(n, 0.0, 2.0)]


def bump(n):
    # A smooth cosine bump: a simple positive start for the second problem.
    return [math.cos(math.pi * 2.0 * x) ** 2 for x in midpoints(n, -0.25, 0.25)]


STARTS = [
    ("erdos-min-overlap", "ramp-600.json", erdos_ramp(600)),
    ("first-autocorrelation-inequality", "capped-arcsine-600.json", capped_arcsine(600)),
    ("second-autocorrelation-inequality", "cosine-bump-1000.json", bump(1000)),
    ("third-autocorrelation-inequality", "capped-arcsine-400.json", capped_arcsine(400)),
    # A second shape for the third problem, so that its optimized starts differ in origin.
    ("third-autocorrelation-inequality", "cosine-bump-400.json", bump(400)),
]

if __name__ == "__main__":
    for slug, name, values in STARTS:
        os.makedirs(os.path.join(HERE, slug), exist_ok=True)
        with open(os.path.join(HERE, slug, name), "w") as out:
            json.dump({"values": values}, out)
        print(slug, name, len(values))
