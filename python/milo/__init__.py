"""milo from Python: exact verification, comparison and optimization of EinsteinArena
constructions, on numpy arrays.

    >>> import milo, numpy as np
    >>> milo.verify("third", np.ones(400)).score_exact
    '1.999999999999999999999999999999999999999...'

Problems are named by slug or first word (``"erdos"``, ``"first"``, ``"second"``, ``"third"``).
Values are 1-D arrays or sequences of real numbers. A C-contiguous float64 array is read where it
lies (no copy); anything else is converted with ``numpy.asarray(values, dtype=float64)`` when its
dtype is a real number type (float, int, uint); bool, complex, object and text arrays are
refused. Every error is one exception under :class:`MiloError`, its message one line that names
the problem and the rule.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _milo
from ._errors import (
    InternalError,
    InvalidArgument,
    InvalidConstruction,
    MiloError,
    ProgramError,
    UnknownProblem,
)

__all__ = [
    "Decision",
    "InternalError",
    "InvalidArgument",
    "InvalidConstruction",
    "MiloError",
    "Optimized",
    "ProgramError",
    "UnknownProblem",
    "Verification",
    "beats",
    "compare",
    "optimize",
    "problems",
    "verify",
]

#: What a construction may be given as: a 1-D numpy array or a sequence of real numbers.
Values = Union[np.ndarray, Sequence[float]]


@dataclass(frozen=True)
class Verification:
    """A valid construction's scores, as ``milo verify --json`` gives them."""

    #: The problem's slug.
    problem: str
    #: Always True: an invalid construction raises :class:`InvalidConstruction` instead.
    valid: bool
    #: Number of values.
    n: int
    #: The float64 score as the arena computes it (None with ``mode="exact"``).
    score: Optional[float]
    #: A-priori bound on ``|score - exact score|`` (None with ``mode="exact"``).
    error_bound: Optional[float]
    #: The exact score as a decimal string of 40 significant digits (None with ``mode="fast"``).
    score_exact: Optional[str]
    #: Seconds spent checking the rules, on the float64 score and on the exact score.
    check_seconds: float
    fast_seconds: float
    exact_seconds: float


@dataclass(frozen=True)
class Decision:
    """Whether a construction beats a rival by the problem's minimum improvement, decided on
    exact values, as ``milo verify --against`` decides it. True in a boolean context when it
    beats the rival."""

    #: The problem's slug.
    problem: str
    #: Whether ``improvement >= min_improvement``.
    beats: bool
    #: How much better the construction is (positive = better), exact, 40 significant digits.
    improvement: str
    #: The problem's threshold for a new #1.
    min_improvement: float
    #: The construction's exact score.
    score_exact: str
    #: What the rival is (``"b"``, ``"value 1.5"``, or the arena #1's holder, value and date).
    against: str
    #: The rival's exact score.
    against_score_exact: str

    def __bool__(self) -> bool:
        return self.beats


@dataclass(frozen=True)
class Optimized:
    """What :func:`optimize` returns: the best construction and what the run spent."""

    #: The problem's slug.
    problem: str
    #: The best construction (valid; the start itself when nothing was better by exact scores).
    values: np.ndarray
    #: Its length.
    n: int
    #: Its exact score as a float64, and as a decimal string of 40 significant digits.
    score: float
    score_exact: str
    #: The start's exact score.
    start_score_exact: str
    #: How much better the best is than the start (positive = better), exact.
    improvement: str
    #: Whether the exact scores confirm an improvement.
    improved: bool
    #: Objective evaluations and wall seconds spent, beside the budgets given.
    evaluations: int
    seconds: float
    budget_evaluations: Optional[int]
    budget_seconds: Optional[float]
    #: Why the run stopped: converged, evaluation budget used, time budget used, interrupted.
    stopped: Optional[str]
    #: When the program stopped itself before its budget: why.
    converged_because: Optional[str]
    #: Whether a signal (Ctrl-C) stopped the run.
    interrupted: bool


def _slug(problem: str) -> str:
    """The slug of a problem name; raises :class:`UnknownProblem`."""
    if not isinstance(problem, str):
        raise UnknownProblem(f"a problem is named by a string, got {type(problem).__name__}")
    return _known_slug(problem)


@functools.lru_cache(maxsize=64)
def _known_slug(problem: str) -> str:
    """The slug of a problem name, asked of the Rust side once per name."""
    return _milo.slug(problem)


def _array(problem: str, values: Any, name: str = "values") -> np.ndarray:
    """``values`` as a 1-D C-contiguous float64 array, the same object when it is one already;
    raises :class:`InvalidConstruction` naming the problem and the rule it breaks."""
    try:
        array = np.asarray(values)
    except (ValueError, TypeError) as error:  # ragged nested sequences
        raise InvalidConstruction(f"{problem}: {name} must be a 1-D array of real numbers ({error})") from None
    if array.dtype.kind not in "fiu":
        raise InvalidConstruction(
            f"{problem}: {name} must be real numbers (float or int), got dtype {array.dtype}"
        )
    if array.ndim != 1:
        raise InvalidConstruction(
            f"{problem}: {name} must be a 1-D array, got shape {tuple(array.shape)}"
        )
    return np.ascontiguousarray(array, dtype=np.float64)


def problems() -> list[dict[str, Any]]:
    """The four problems as ``milo problems --json`` gives them: slug, title, direction,
    ``min_improvement``, ``max_len``, the score's formula, and the records (holder, value,
    date, length)."""
    return json.loads(_milo.problems_json())


def verify(
    problem: str, values: Values, *, mode: str = "both", allow_oversize: bool = False
) -> Verification:
    """Checks ``values`` against the problem's rules and scores them: the float64 score as the
    arena computes it, with an a-priori error bound, and the exact rational score to 40 digits.

    ``mode`` is ``"both"``, ``"fast"`` (float64 only) or ``"exact"``. ``allow_oversize`` scores
    arrays longer than the arena accepts. Raises :class:`InvalidConstruction` for an invalid
    construction, with the CLI's one-line message."""
    slug = _slug(problem)
    report = _milo.verify(slug, _array(slug, values), mode, allow_oversize)
    return Verification(valid=True, **report)


def compare(problem: str, a: Values, b: Values, *, allow_oversize: bool = False) -> Decision:
    """Whether ``a`` beats ``b`` by the problem's minimum improvement, decided on exact scores
    (``milo verify PROBLEM a --against b``)."""
    slug = _slug(problem)
    report = _milo.compare(slug, _array(slug, a, "a"), _array(slug, b, "b"), allow_oversize)
    return Decision(**report)


def beats(
    problem: str,
    values: Values,
    against: Union[str, float, Values] = "arena",
    *,
    allow_oversize: bool = False,
) -> Decision:
    """Whether ``values`` beats ``against`` by the problem's minimum improvement, decided on
    exact values. ``against`` is ``"arena"`` (the arena's #1 as ``problems/<slug>.toml`` records
    it), a score (a float, taken as the decimal Python prints for it, or a decimal string), or
    another construction."""
    slug = _slug(problem)
    array = _array(slug, values)
    if isinstance(against, (float, int)) and not isinstance(against, bool):
        against = repr(float(against))
    if isinstance(against, str):
        return Decision(**_milo.compare_with_score(slug, array, against, allow_oversize))
    rival = _array(slug, against, "against")
    return Decision(**_milo.compare(slug, array, rival, allow_oversize))


def optimize(
    problem: str,
    start: Values,
    program: Union[str, os.PathLike, None] = None,
    *,
    budget_seconds: Optional[float] = None,
    evaluations: Optional[int] = None,
    seed: int = 1,
    jobs: int = 1,
) -> Optimized:
    """Runs an optimizer program on ``start`` and returns the best construction with its exact
    score (``milo optimize``).

    ``program`` is a path to a program's TOML file, the TOML text itself, or None for the
    problem's default program. The budget is ``budget_seconds`` of wall clock and/or
    ``evaluations`` objective evaluations (30 s when neither is given); with ``evaluations`` and
    a seed the result is reproducible bit for bit. The GIL is released while the run goes on.

    Ctrl-C (or any signal whose handler raises) stops the run within a fraction of a second: the
    handler's exception (KeyboardInterrupt) is raised with the best so far, as an
    :class:`Optimized`, in its ``result`` attribute."""
    slug = _slug(problem)
    array = _array(slug, start, "start")
    path, text = None, None
    if isinstance(program, os.PathLike) or (
        isinstance(program, str) and "\n" not in program and os.path.isfile(program)
    ):
        path = os.fspath(program)
    elif isinstance(program, str):
        text = program
    elif program is not None:
        raise ProgramError(
            f"program must be a path, a TOML text or None, got {type(program).__name__}"
        )
    try:
        report = _milo.optimize(slug, array, path, text, budget_seconds, evaluations, seed, jobs)
    except BaseException as signal:
        partial = getattr(signal, "milo_result", None)
        if partial is not None:
            del signal.milo_result
            signal.result = Optimized(**partial)
        raise
    return Optimized(**report)
