"""Brute-force enumeration of an IntegerGrid: exact by construction, the reference in tests.

Every w of the grid (inside the norm bound) is evaluated with the exact rule, in chunks so that
memory stays bounded. Ties are broken by the first minimizer in lexicographic order of the
integer coordinates, so the answer is a deterministic function of the problem.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import OracleError, Solution, Status, certify, counts_cpu
from oracles.contract.budget import Budget

#: Refuse grids larger than this (points): enumeration is for small instances.
DEFAULT_MAX_POINTS = 5_000_000


def grid_points(domain: IntegerGrid, chunk: int = 65_536):
    """Yield the grid's points in lexicographic order, in (k, d) chunks, inside the norm bound."""
    values = domain.values
    for block in _product_chunks(len(values), domain.d, chunk):
        W = values[block]
        if domain.norm_sq_max is not None:
            W = W[np.einsum("kd,kd->k", W, W) <= domain.norm_sq_max + 1e-9]
        if len(W):
            yield W


def _product_chunks(base: int, d: int, chunk: int):
    total = base**d
    for start in range(0, total, chunk):
        idx = np.arange(start, min(start + chunk, total))
        digits = np.empty((len(idx), d), dtype=np.int64)
        for j in range(d - 1, -1, -1):
            digits[:, j] = idx % base
            idx = idx // base
        yield digits


@dataclass(frozen=True)
class EnumerationOracle:
    """Exact minimization by evaluating every point of an IntegerGrid.

    The budget (``oracles.contract.budget``) means what it means for every oracle: past its deadline,
    the best point found so far is returned uncertified (``Status.TIME_LIMIT``, bound -inf),
    checked between chunks of points. It runs on one thread whatever the budget's threads.
    """

    max_points: int = DEFAULT_MAX_POINTS
    name: str = "enumerate"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (Problem,)

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget) -> Solution:
        domain = problem.domain
        if not isinstance(domain, IntegerGrid):
            raise OracleError(f"enumeration needs an IntegerGrid domain, found {domain!r}")
        if domain.size_upper_bound > self.max_points:
            raise OracleError(
                f"enumeration of {domain.size_upper_bound} grid points exceeds max_points="
                f"{self.max_points}; use a MIP oracle"
            )
        start = time.perf_counter()
        best_value, best_w = np.inf, None
        status, bound = Status.OPTIMAL, None
        for W in grid_points(domain):
            if best_w is not None and budget.expired():
                status, bound = Status.TIME_LIMIT, -np.inf  # the rest of the grid is unseen
                break
            values = problem.objective(W)
            i = int(np.argmin(values))
            # strict improvement by more than rounding keeps the first minimizer (ties)
            if values[i] < best_value - 1e-12:
                best_value, best_w = float(values[i]), W[i]
        if best_w is None:
            raise OracleError("the grid has no point inside the norm bound")
        return certify(
            problem,
            best_w,
            status=status,
            bound=best_value if bound is None else bound,
            seconds=time.perf_counter() - start,
            backend=self.name,
            solver_objective=best_value,
        )


def all_objectives(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """Every grid point and its objective (for tests and the exponential mechanism)."""
    if not isinstance(problem.domain, IntegerGrid):
        raise OracleError("all_objectives needs an IntegerGrid domain")
    W = np.vstack(list(grid_points(problem.domain)))
    return W, np.asarray(problem.objective(W))


__all__ = ["EnumerationOracle", "all_objectives", "grid_points"]
