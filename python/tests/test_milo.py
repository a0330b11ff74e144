"""The Python module against the CLI: same exact digits, same decisions, and one named exception
per bad input. Run by `.ci/run` after the cargo tests (`python3 -m pytest python/tests`)."""

import itertools
import json
import os
import pathlib
import signal
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import milo

ROOT = pathlib.Path(__file__).resolve().parents[2]
SHARED_ARENA = ROOT.parent / "shared" / "arena"


@pytest.fixture(scope="session")
def cli():
    """Runs the `milo` binary of this checkout (built by `cargo test --release` before this
    runs; built here when missing)."""
    binary = pathlib.Path(os.environ.get("MILO_BIN", ROOT / "target" / "release" / "milo"))
    if not binary.is_file():
        subprocess.run(["cargo", "build", "--release", "--bin", "milo"], cwd=ROOT, check=True)

    def run(*args):
        return subprocess.run([str(binary), *args], capture_output=True, text=True, cwd=ROOT)

    return run


@pytest.fixture(scope="session")
def arena_entries():
    """The public constructions of ../shared/arena, read from its MANIFEST."""
    manifest = SHARED_ARENA / "MANIFEST.json"
    if not manifest.is_file():
        pytest.skip("../shared/arena is absent (no frozen leaderboard constructions)")
    entries = json.loads(manifest.read_text())
    for entry in entries:
        entry["path"] = SHARED_ARENA.parent / entry["file"]
        data = json.loads(entry["path"].read_text())
        entry["values"] = np.asarray(data["values"] if isinstance(data, dict) else data)
    return entries


def test_problems_are_the_clis(cli):
    listed = json.loads(cli("problems", "--json").stdout)["problems"]
    assert milo.problems() == listed
    assert {p["slug"].split("-")[0] for p in milo.problems()} == {"erdos", "first", "second", "third"}


def test_exact_scores_of_every_shared_construction_are_the_clis_digit_for_digit(cli, arena_entries):
    for entry in arena_entries:
        got = milo.verify(entry["problem"], entry["values"])
        report = json.loads(cli("verify", entry["problem"], str(entry["path"]), "--json").stdout)
        assert got.score_exact == report["score_exact"], entry["file"]
        assert got.score == report["score_f64"], entry["file"]
        assert got.error_bound == report["error_bound"], entry["file"]
        assert got.n == report["n"] == len(entry["values"])


def test_compare_and_beats_agree_with_verify_against(cli, arena_entries):
    by_problem = {}
    for entry in arena_entries:
        by_problem.setdefault(entry["problem"], []).append(entry)
    pairs = 0
    for problem, entries in by_problem.items():
        for a, b in itertools.permutations(entries[:3], 2):
            run = cli("verify", problem, str(a["path"]), "--against", str(b["path"]), "--json")
            against = json.loads(run.stdout)["against"]
            decision = milo.compare(problem, a["values"], b["values"])
            assert decision.beats == against["beats"] == (run.returncode == 0), (a["file"], b["file"])
            assert decision.improvement == against["improvement"]
            assert decision.against_score_exact == against["against_score"]
            pairs += 1
        first = entries[0]
        run = cli("verify", problem, str(first["path"]), "--against", "arena", "--json")
        against = json.loads(run.stdout)["against"]
        decision = milo.beats(problem, first["values"])
        assert bool(decision) == against["beats"] == (run.returncode == 0)
        assert decision.improvement == against["improvement"]
        # A score given as a float is the decimal Python prints for it, as on the command line.
        score = milo.verify(problem, first["values"]).score
        run = cli("verify", problem, str(first["path"]), "--against", repr(score), "--json")
        assert milo.beats(problem, first["values"], score).improvement == json.loads(run.stdout)["against"]["improvement"]
    assert pairs >= 8


def test_optimize_improves_a_start_reproducibly_and_returns_a_valid_array():
    start = np.random.default_rng(7).random(300) + 0.1
    first = milo.optimize("first", start, evaluations=3000, seed=3)
    again = milo.optimize("first", start, evaluations=3000, seed=3)
    assert first.improved and first.score < milo.verify("first", start).score
    assert first.values.dtype == np.float64 and first.values.ndim == 1
    assert milo.verify("first", first.values).score_exact == first.score_exact
    assert np.array_equal(first.values, again.values) and first.score_exact == again.score_exact
    assert first.evaluations <= first.budget_evaluations == 3000
    assert first.start_score_exact == milo.verify("first", start).score_exact


def test_a_program_is_a_path_or_a_toml_text(tmp_path):
    program = textwrap.dedent(
        """
        name = "polish"
        [[steps]]
        kind = "lbfgs"
        parameterisation = "square"
        betas = [1000.0, 10000.0]
        iterations = 50
        """
    )
    path = tmp_path / "polish.toml"
    path.write_text(program)
    start = np.linspace(1.0, 2.0, 200)
    from_text = milo.optimize("third", start, program, evaluations=400, seed=1)
    from_path = milo.optimize("third", start, path, evaluations=400, seed=1)
    from_str_path = milo.optimize("third", start, str(path), evaluations=400, seed=1)
    assert from_text.improved
    assert from_text.score_exact == from_path.score_exact == from_str_path.score_exact


def test_arrays_are_read_in_place_and_other_dtypes_converted_by_the_rule():
    contiguous = np.random.default_rng(1).random(500)
    assert milo._array("first", contiguous) is contiguous
    strided = np.random.default_rng(2).random(1000)[::2]
    assert milo.verify("first", strided).score_exact == milo.verify("first", strided.copy()).score_exact
    integers = np.arange(1, 50)
    assert milo.verify("first", integers).score_exact == milo.verify("first", integers.astype(float)).score_exact
    assert milo.verify("first", list(integers)).score_exact == milo.verify("first", integers).score_exact
    single = np.float32([0.5, 0.25, 1.0])
    assert milo.verify("first", single).score_exact == milo.verify("first", single.astype(np.float64)).score_exact


@pytest.mark.parametrize(
    "values, rule",
    [
        ([1.0, float("nan"), 2.0], "finite"),
        ([1.0, float("inf")], "finite"),
        (np.ones((3, 4)), "1-D"),
        ([], "values"),
        ([True, False], "real numbers"),
        ([1 + 2j], "real numbers"),
        (["0.5"], "real numbers"),
        ([[1.0], [1.0, 2.0]], "1-D array"),
        ([-1.0, 2.0], "≥ 0"),
    ],
)
def test_each_bad_construction_raises_invalid_construction_naming_the_problem(values, rule):
    with pytest.raises(milo.InvalidConstruction) as raised:
        milo.verify("first", values)
    message = str(raised.value)
    assert "first-autocorrelation-inequality" in message and rule in message
    assert "\n" not in message
    assert isinstance(raised.value, ValueError)


def test_each_bad_argument_raises_its_own_exception():
    with pytest.raises(milo.UnknownProblem, match="did you mean 'third'"):
        milo.verify("thrid", [1.0])
    with pytest.raises(milo.UnknownProblem):
        milo.verify(3, [1.0])
    with pytest.raises(milo.ProgramError, match="steps"):
        milo.optimize("first", [1.0, 2.0], 'name = "empty"\nsteps = []\n', evaluations=10)
    with pytest.raises(milo.ProgramError, match="<program>"):
        milo.optimize("first", [1.0, 2.0], "this is not toml =\n", evaluations=10)
    with pytest.raises(milo.ProgramError):
        milo.optimize("first", [1.0, 2.0], pathlib.Path("/nonexistent/program.toml"), evaluations=10)
    with pytest.raises(milo.InvalidArgument, match="budget_seconds"):
        milo.optimize("first", [1.0, 2.0], budget_seconds=-1.0)
    with pytest.raises(milo.InvalidArgument, match="evaluations"):
        milo.optimize("first", [1.0, 2.0], evaluations=0)
    with pytest.raises(milo.InvalidArgument, match="against"):
        milo.beats("first", [1.0, 2.0], "the best one")
    with pytest.raises(milo.InvalidArgument, match="mode"):
        milo.verify("first", [1.0], mode="slow")
    with pytest.raises(milo.InvalidConstruction, match="start"):
        milo.optimize("first", np.ones((2, 2)), evaluations=10)
    for error in (milo.UnknownProblem, milo.ProgramError, milo.InvalidArgument, milo.InvalidConstruction):
        assert issubclass(error, milo.MiloError) and issubclass(error, ValueError)


def test_a_rust_panic_becomes_internal_error():
    with pytest.raises(milo.InternalError, match="deliberate panic") as raised:
        milo._milo._panic_for_tests()
    assert isinstance(raised.value, RuntimeError)
    # The module still works after it.
    assert milo.verify("third", np.ones(10)).valid


CHILD = """
import json, os, signal, sys, threading, time
import numpy as np
import milo
# Ctrl-C raises KeyboardInterrupt, as in a terminal, even when the tests run in a background job
# (whose children start with SIGINT ignored, and Python then leaves it ignored).
signal.signal(signal.SIGINT, signal.default_int_handler)
tasks = len(os.listdir("/proc/self/task"))
start = np.random.default_rng(1).random(2000) + 0.1
print("ready", flush=True)
try:
    milo.optimize("first", start, budget_seconds=600)
    print(json.dumps({"raised": None}))
except KeyboardInterrupt as signal:
    result = signal.result
    print(json.dumps({
        "raised": type(signal).__name__,
        "ended": time.monotonic(),
        "interrupted": result.interrupted,
        "stopped": result.stopped,
        "valid": milo.verify("first", result.values).valid,
        "threads": threading.active_count(),
        "tasks_grew": len(os.listdir("/proc/self/task")) - tasks,
    }))
"""


def test_ctrl_c_ends_a_long_optimize_within_a_second_with_the_best_so_far():
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD], stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    try:
        assert child.stdout.readline().strip() == "ready"
        # The run is under way once its process has spent CPU time past the import.
        ticks = lambda: sum(map(int, open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()[11:13]))
        begun = ticks()
        while ticks() - begun < 50:  # half a CPU second at 100 ticks a second
            time.sleep(0.01)
        sent = time.monotonic()
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=30)
        waited = time.monotonic() - sent
    finally:
        child.kill()
    report = json.loads(output)
    assert report["raised"] == "KeyboardInterrupt"
    assert report["interrupted"] and report["stopped"] == "interrupted" and report["valid"]
    assert report["threads"] == 1 and report["tasks_grew"] <= 0
    assert report["ended"] - sent <= 1.0, f"optimize took {report['ended'] - sent:.2f} s to stop"
    assert waited < 5.0
