"""Type stubs of the Rust extension `milo._milo`; the public API is `milo` (``__init__.py``)."""

from os import PathLike
from typing import Any, Optional, Union

import numpy as np
import numpy.typing as npt

def problems_json() -> str:
    """The problems, rules and records as JSON (``milo problems --json``'s ``problems``)."""

def slug(name: str) -> str:
    """The slug of a problem name or first word; raises ``UnknownProblem``."""

def verify(
    problem: str, values: npt.NDArray[np.float64], mode: str = "both", allow_oversize: bool = False
) -> dict[str, Any]:
    """Validity and scores of a 1-D contiguous float64 array (read in place)."""

def compare(
    problem: str,
    values: npt.NDArray[np.float64],
    against_values: npt.NDArray[np.float64],
    allow_oversize: bool = False,
) -> dict[str, Any]:
    """Whether ``values`` beats ``against_values`` by the minimum improvement, on exact scores."""

def compare_with_score(
    problem: str, values: npt.NDArray[np.float64], against: str = "arena", allow_oversize: bool = False
) -> dict[str, Any]:
    """Whether ``values`` beats a decimal score, or the arena's #1 (``"arena"``)."""

def optimize(
    problem: str,
    start: npt.NDArray[np.float64],
    program_path: Optional[Union[str, PathLike[str]]] = None,
    program_text: Optional[str] = None,
    budget_seconds: Optional[float] = None,
    evaluations: Optional[int] = None,
    seed: int = 1,
    jobs: int = 1,
) -> dict[str, Any]:
    """Runs a program on ``start`` with the GIL released; a signal's exception carries the
    result so far as ``milo_result``."""

def _panic_for_tests() -> None:
    """Panics inside milo (the test that a panic reaches Python as ``InternalError``)."""
