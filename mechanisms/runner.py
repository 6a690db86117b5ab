"""Running an objective-perturbation mechanism as three explicit steps.

    noise     = mechanism.draw_noise(rng, n, d)          # the only randomness before the oracle
    problems  = mechanism.problems(rows, noise)          # independent oracle calls (OPSamp: m)
    solutions = solve_many(oracle, problems)             # the caller decides how: loop, Ray, ...
    release   = mechanism.finish(rows, noise, solutions, rng, seconds)

The oracle calls are independent given the noise, so the pipeline can fan them out as a batch;
``run`` is the sequential reference.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Protocol, Sequence

import numpy as np

from mechanisms.base import Release, check_data, check_rng
from oracles.base import Solution
from oracles.objective import MergedRows


class OracleMechanism(Protocol):
    name: str

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> dict[str, Any]: ...

    def problems(self, rows: MergedRows, noise: dict[str, Any]) -> list[Any]: ...

    def finish(
        self,
        rows: MergedRows,
        noise: dict[str, Any],
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release: ...


SolveMany = Callable[[Any, Sequence[Any]], list[Solution]]


def solve_sequentially(oracle: Any, problems: Sequence[Any]) -> list[Solution]:
    return [oracle.solve(p) for p in problems]


def run(
    mechanism: OracleMechanism,
    X: np.ndarray,
    y: np.ndarray,
    oracle: Any,
    rng: np.random.Generator,
    *,
    solve_many: SolveMany = solve_sequentially,
) -> Release:
    """Run ``mechanism`` on (X, y) with ``oracle`` and an explicit generator."""
    X, y = check_data(X, y)
    rng = check_rng(rng)
    start = time.perf_counter()
    rows = MergedRows.from_xy(X, y)
    noise = mechanism.draw_noise(rng, rows.n, rows.d)
    problems = mechanism.problems(rows, noise)
    built = time.perf_counter()
    solutions = solve_many(oracle, problems)
    solved = time.perf_counter()
    timings = {"prepare": built - start, "solve": solved - built}
    release = mechanism.finish(rows, noise, solutions, rng, timings)
    return release
