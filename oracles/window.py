"""The window oracle: exact argmin over an IntegerGrid by enumerating the noise window (issue 19).

For OPDisc and RSPM on generic tables (continuous columns, where the structured oracle has no
shape to use), F = N + L splits into a noise part N that is separable over the coordinates plus
a function of ||w||^2, and the data's 0/1 loss L (``oracles.noise_window``). The steps:

1. an incumbent: the grid search of ``oracles.grid_search`` (seeded, a few seconds);
2. a minorant N_lam <= F, separable again: N plus Lagrangian-weighted linear minorants of the
   rows' losses (``noise_window.tighten``); its minimum over the grid is a proven lower bound;
3. the window {k : N_lam(k) <= F(incumbent)}, enumerated exactly by dynamic programming: every
   minimizer is in it, and each of its points is evaluated with the exact rule
   (``Problem.objective``). The least is the exact minimum, certified through
   ``oracles.base.certify`` with itself as the bound.

When the window holds more than ``max_points`` points the oracle does not certify on its own:
with ``fallback="mip"`` it solves the reference formulation (``oracles.mip``) on the remaining
time with ``AutoOracle`` (the backend chosen by the model's size alone: Gurobi when its
licence takes the model, else HiGHS with its second opinion, ``oracles.highs``), and certifies only if the better of the two points meets the larger of
the two proven bounds; with ``fallback=None`` it returns the incumbent uncertified with the
Lagrangian bound. The certificate's ``extra`` records the window's size, the incumbent's value,
the Lagrangian bound and what was done.

Splitting (for Ray, issue 19 part 2): ``split_parts`` cuts the window by the values of its first
coordinates into ``GridPart`` records (the problem, the fixed coordinates, the shared threshold);
each is solved alone by ``solve_part`` and the minimum over the parts is the one-process answer.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from oracles.base import (
    DEFAULT_THREADS, DEFAULT_TIME_LIMIT, OBJECTIVE_TOL, IntegerGrid, OracleError, Problem,
    Solution, Status, certify,
)  # fmt: skip
from oracles.auto import AutoOracle
from oracles.grid_search import improve
from oracles.noise_window import (
    EVAL_BATCH, RowPrune, Split, WindowTooLarge, prefixes, restrict, row_prune, split_objective,
    tighten, window,
)  # fmt: skip

#: What the oracle does when the window is too large: nothing (None) or the reference MIP.
FALLBACKS = (None, "mip")


def best_of(problem: Problem, K: np.ndarray, step: float) -> tuple[np.ndarray, float]:
    """The point of K (integer, (m, d)) with the least EXACT objective, and that objective."""
    best_w, best_val = None, math.inf
    for start in range(0, len(K), EVAL_BATCH):
        W = step * K[start : start + EVAL_BATCH].astype(float)
        values = np.atleast_1d(problem.objective(W))
        i = int(np.argmin(values))
        if values[i] < best_val:
            best_w, best_val = W[i].copy(), float(values[i])
    return best_w, best_val


@dataclass(frozen=True, eq=False)
class GridPart:
    """One part of a split window: ``problem`` restricted to k_j = v for (j, v) in ``fixed``,
    searched below ``threshold`` (a value some grid point attains). Plain and picklable: a task
    rebuilds the tables from it."""

    problem: Problem
    fixed: tuple[tuple[int, int], ...]
    threshold: float
    max_points: int
    lagrange_iterations: int = 300


def tightened_split(problem: Problem, upper: float,
                   iterations: int) -> tuple[Split, float, RowPrune]:  # fmt: skip
    """The minorant N_lam tightened below ``upper`` (``noise_window.tighten``; the plain N with
    the rows' floor when ``iterations`` is 0), its proven lower bound, and its ``RowPrune``."""
    split = split_objective(problem)
    if iterations <= 0:
        plain = Split(split.unary, split.norm, split.const + split.loss_floor, split.rows, 0.0)
        return plain, -math.inf, row_prune(problem, split)
    return tighten(problem, split, upper, iterations=iterations)


def split_parts(problem: Problem, threshold: float, *, levels: int, max_points: int = 2_000_000,
                lagrange_iterations: int = 300) -> list[GridPart]:  # fmt: skip
    """The window below ``threshold`` cut by the values of its first ``levels`` coordinates
    (``noise_window.coordinate_order`` of the tightened split): one part per alive prefix.
    Every grid point with F <= threshold lies in exactly one part."""
    tight, _, prune = tightened_split(problem, threshold, lagrange_iterations)
    order, states = prefixes(tight, threshold, levels=levels, max_points=max_points, prune=prune)
    return [GridPart(problem, tuple((int(order[i]), int(v)) for i, v in enumerate(row)),
                     float(threshold), max_points, lagrange_iterations)
            for row in states]  # fmt: skip


def solve_part(part: GridPart) -> tuple[np.ndarray | None, float]:
    """The least exact objective in ``part`` below its threshold, and a point attaining it
    (None, +inf when the part holds no point below it). Raises ``WindowTooLarge``.

    The minorant is tightened on the whole problem (the same for every part), then restricted."""
    tight, _, prune = tightened_split(part.problem, part.threshold, part.lagrange_iterations)
    K = window(restrict(tight, dict(part.fixed)), part.threshold, max_points=part.max_points,
               prune=prune)
    if not len(K):
        return None, math.inf
    return best_of(part.problem, K, part.problem.domain.step)


@dataclass(frozen=True)
class WindowOracle:
    """Exact minimization of F over an IntegerGrid by the noise window (module docstring).

    Args:
        time_limit: seconds for the whole solve, fallback included.
        threads: solver threads of the fallback.
        max_points: the largest window enumerated (beyond it: the fallback).
        search_seconds: the grid search's budget (at most a tenth of the time limit).
        lagrange_iterations: subgradient steps of the Lagrangian minorant (0: none).
        fallback: ``"mip"`` (the reference formulation on the remaining time) or None.
        prune_rows: drop prefixes whose forced rows already cost too much
            (``noise_window.RowPrune``).
        window_share: the share of the time limit the window may take before the fallback (or,
            without one, the uncertified answer); evaluating its points comes on top.
        seed: the grid search's random restarts (numpy.random.default_rng(seed)).
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    threads: int = DEFAULT_THREADS
    max_points: int = 2_000_000
    search_seconds: float = 5.0
    lagrange_iterations: int = 300
    fallback: str | None = "mip"
    prune_rows: bool = True
    window_share: float = 0.5
    seed: int = 0
    name: str = "window"

    def __post_init__(self) -> None:
        if self.fallback not in FALLBACKS:
            raise ValueError(f"fallback must be one of {FALLBACKS}, found {self.fallback!r}")
        if not (math.isfinite(self.time_limit) and self.time_limit > 0):
            raise ValueError(f"time_limit must be finite and > 0, found {self.time_limit!r}")
        if not 0 < self.window_share <= 1:
            raise ValueError(f"window_share must be in (0, 1], found {self.window_share!r}")
        if self.max_points < 1:
            raise ValueError(f"max_points must be >= 1, found {self.max_points!r}")

    def solve(self, problem: Problem) -> Solution:
        start = time.perf_counter()
        if not isinstance(problem.domain, IntegerGrid):
            raise OracleError(f"the window oracle needs an IntegerGrid, found {problem.domain!r}")
        rng = np.random.default_rng(self.seed)
        budget = min(self.search_seconds, 0.1 * self.time_limit)
        w_inc, upper = improve(problem, seconds=budget, rng=rng)
        t_search = time.perf_counter() - start
        tight, lower, prune = tightened_split(problem, upper, self.lagrange_iterations)
        extra = {"incumbent": upper, "lagrange_bound": lower, "search_seconds": t_search}
        try:
            K = window(tight, upper, max_points=self.max_points,
                       prune=prune if self.prune_rows else None,
                       deadline=start + self.window_share * self.time_limit)
        except WindowTooLarge as err:
            extra["window"] = f"too large: {err}"
            return self._fallback(problem, w_inc, upper, lower, start, extra)
        extra["window_points"] = int(len(K))
        if not len(K):  # the incumbent is always in its window: a numerical failure
            return certify(problem, w_inc, status=Status.ERROR, bound=lower,
                           seconds=time.perf_counter() - start, backend=self.name,
                           message="empty window", extra=extra)  # fmt: skip
        w, value = best_of(problem, K, problem.domain.step)
        return certify(problem, w, status=Status.OPTIMAL, bound=value,
                       seconds=time.perf_counter() - start, backend=self.name,
                       solver_objective=value, extra=extra)  # fmt: skip

    def _fallback(self, problem, w_inc, upper, lower, start, extra) -> Solution:
        left = self.time_limit - (time.perf_counter() - start)
        if self.fallback is None or left <= 1.0:
            return certify(problem, w_inc, status=Status.TIME_LIMIT, bound=lower,
                           seconds=time.perf_counter() - start, backend=self.name,
                           message="window too large, no fallback", extra=extra)  # fmt: skip
        backend = AutoOracle(time_limit=left, threads=self.threads)
        solution = backend.solve(problem)
        cert = solution.certificate
        extra = {**extra, "fallback_status": cert.status.value, "fallback_bound": cert.bound,
                 "fallback_objective": cert.objective}  # fmt: skip
        trusted = cert.status in (Status.OPTIMAL, Status.TIME_LIMIT)
        bound = max(lower, cert.bound) if trusted else lower
        w, value = (solution.w, cert.objective) if cert.objective < upper else (w_inc, upper)
        status = Status.OPTIMAL if value - bound <= OBJECTIVE_TOL else Status.TIME_LIMIT
        return certify(problem, w, status=status, bound=bound,
                       seconds=time.perf_counter() - start, backend=self.name,
                       fallback=f"window too large; reference on {backend.name}",
                       message=cert.message, extra=extra)  # fmt: skip


__all__ = ["GridPart", "WindowOracle", "best_of",
           "solve_part", "split_parts", "tightened_split"]
