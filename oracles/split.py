"""A split solve: the window oracle's search cut into parts solved apart (issue 19, item 2).

No Ray here: this module says WHAT a split solve computes; ``map_parts`` says where the parts
run (``sequential_parts`` in this process by default, ``pipeline.split_solve.ray_map_parts`` as
Ray tasks). The steps, for a Problem over an IntegerGrid (``oracles.window``'s notation):

1. an incumbent w_inc with exact value UB (the grid search, ``oracles.grid_search.improve``);
2. the minorant N_lam <= F tightened once below UB (``noise_window.tighten``) and the window
   {k : N_lam(k) <= UB} cut by the values of its first ``levels`` coordinates into parts
   (``oracles.window.split_parts``): every grid point with F <= UB lies in exactly one part;
3. each part, given the best value B <= UB found so far (by any part, or the incumbent):
   * PRUNED when its own lower bound lb = min of N_lam over the part (``separable_argmin`` of the
     restricted tables) satisfies lb - slack >= B: no point of the part is below B;
   * else enumerated exactly below B (its window {N_lam <= B}); its least exact objective v
     (+inf for an empty window), and its bound min(v, B): a point of the part outside that
     window has F >= N_lam > B;
4. ``combine``: value = min(UB, the parts' v), w the point attaining it (the incumbent, else the
   first part in order with the least v), bound = min(UB, the parts' bounds). Certified through
   ``oracles.base.certify`` (status OPTIMAL, so re-checked exactly) ONLY when every part
   finished; a part that failed or hit its limit leaves the whole uncertified (TIME_LIMIT or
   ERROR, with a bound no larger than that part's known lower bound).

Why the bound is valid whatever order the parts ran in: every B a part used is attained by
some grid point, so B >= min F, and every point with F < min(UB, all B used) was enumerated by
its part. The exact minimum is therefore found, and min F = value = bound (SPEC section 8: a
certificate is a proof, never a retry).

The answer does not depend on how the parts were scheduled except among exact ties of F (a
pruned or shrunk part may drop a point tied with the best): the minimum value is always the
one-process answer, and so is w whenever the argmin is unique.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from oracles.base import IntegerGrid, OracleError, Problem, Solution, Status, certify
from oracles.grid_search import improve
from oracles.noise_window import (
    RowPrune, Split, WindowTooLarge, restrict, separable_argmin, threshold_slack, window,
)  # fmt: skip
from oracles.window import GridPart, best_of, split_parts, tightened_split

#: The name a split solve's certificate carries as its backend.
BACKEND = "window-split"


@dataclass(frozen=True, eq=False)
class PartTask:
    """What one part needs, plain and picklable (numpy records only): its index, the part, and
    the minorant's tables tightened once for the whole problem (the same in every part)."""

    index: int
    part: GridPart
    tight: Split
    prune: RowPrune | None
    time_limit: float = math.inf


@dataclass(frozen=True, eq=False)
class PartResult:
    """How one part ended.

    Attributes:
        index: the part's position in the plan.
        status: OPTIMAL (searched to the end, or pruned), TIME_LIMIT (too large or too slow),
            ERROR (anything else).
        value: the least exact objective found in the part (+inf: none below the threshold).
        w: a point attaining ``value`` (None when it is +inf).
        bound: a proven lower bound on F over the part (-inf when nothing is proven).
        threshold: the best value the part was searched below.
        pruned: the part's lower bound alone ruled it out.
        points: how many points its window held.
        threads: the CPUs its task held.
    """

    index: int
    status: Status
    value: float
    w: np.ndarray | None
    bound: float
    threshold: float
    seconds: float
    pruned: bool = False
    points: int = 0
    threads: int = 1
    message: str = ""

    @property
    def finished(self) -> bool:
        return self.status is Status.OPTIMAL

    @classmethod
    def failed(cls, index: int, err: BaseException, *, seconds: float = 0.0,
               threads: int = 1) -> "PartResult":  # fmt: skip
        """A part whose solve raised ``err``: nothing found, nothing proven."""
        status = Status.TIME_LIMIT if isinstance(err, WindowTooLarge) else Status.ERROR
        return cls(index, status, math.inf, None, -math.inf, math.nan, seconds, threads=threads,
                   message=f"{type(err).__name__}: {err}")  # fmt: skip


def part_lower_bound(task: PartTask) -> float:
    """min of N_lam over the part's grid points (a proven lower bound on F there)."""
    restricted = restrict(task.tight, dict(task.part.fixed))
    value, _ = separable_argmin(restricted.unary, restricted.norm)
    return float(value + restricted.const)


def solve_part_below(task: PartTask, best: float, *, threads: int = 1) -> PartResult:
    """One part searched below ``min(best, its threshold)`` (module docstring, step 3).

    ``threads`` is recorded only: the enumeration is numpy in one thread and builds no solver
    model. Raises ``WindowTooLarge`` past the part's ``max_points`` or ``time_limit``."""
    start = time.perf_counter()
    part = task.part
    threshold = min(float(best), part.threshold)
    lower = part_lower_bound(task)
    if lower - threshold_slack(task.tight, threshold) >= threshold:
        return PartResult(task.index, Status.OPTIMAL, math.inf, None, lower, threshold,
                          time.perf_counter() - start, pruned=True, threads=threads)  # fmt: skip
    K = window(restrict(task.tight, dict(part.fixed)), threshold, max_points=part.max_points,
               prune=task.prune, deadline=start + task.time_limit)  # fmt: skip
    if not len(K):
        w, value = None, math.inf
    else:
        w, value = best_of(part.problem, K, part.problem.domain.step)
    return PartResult(task.index, Status.OPTIMAL, value, w, min(value, threshold), threshold,
                      time.perf_counter() - start, points=int(len(K)), threads=threads)  # fmt: skip


SolvePart = Callable[..., PartResult]
#: ``map_parts(tasks, incumbent) -> results`` (one per task, in order): where the parts run.
MapParts = Callable[[Sequence[PartTask], float], list]


def sequential_parts(tasks: Sequence[PartTask], incumbent: float, *,
                     solve: SolvePart = solve_part_below) -> list[PartResult]:  # fmt: skip
    """Every part in this process, in order, each searched below the best value so far. A part
    that raises is recorded as failed (``PartResult.failed``), the others go on."""
    best, results = float(incumbent), []
    for task in tasks:
        start = time.perf_counter()
        try:
            result = solve(task, best)
        except Exception as err:  # noqa: BLE001 - a failed part leaves the whole uncertified
            result = PartResult.failed(task.index, err, seconds=time.perf_counter() - start)
        if result.finished:
            best = min(best, result.value)
        results.append(result)
    return results


@dataclass(frozen=True, eq=False)
class SplitPlan:
    """The incumbent and the parts of one split solve (steps 1 and 2)."""

    problem: Problem
    w_incumbent: np.ndarray
    incumbent: float
    tasks: tuple[PartTask, ...]
    lagrange_bound: float
    seconds: float
    extra: dict = field(default_factory=dict)


def plan_split(problem: Problem, *, levels: int = 2, search_seconds: float = 1.0,
               seed: int = 0, max_points: int = 2_000_000, lagrange_iterations: int = 300,
               part_time_limit: float = math.inf) -> SplitPlan:  # fmt: skip
    """Steps 1 and 2 of the module docstring. Raises ``WindowTooLarge`` when the prefixes alone
    pass ``max_points``."""
    start = time.perf_counter()
    if not isinstance(problem.domain, IntegerGrid):
        raise OracleError(f"a split solve needs an IntegerGrid, found {problem.domain!r}")
    if levels < 1:
        raise ValueError(f"levels must be >= 1, found {levels!r}")
    w_inc, upper = improve(problem, seconds=search_seconds, rng=np.random.default_rng(seed))
    levels = min(int(levels), problem.d)
    tight, lower, prune = tightened_split(problem, upper, lagrange_iterations)
    parts = split_parts(problem, upper, levels=levels, max_points=max_points,
                        lagrange_iterations=lagrange_iterations)  # fmt: skip
    tasks = tuple(PartTask(i, part, tight, prune, part_time_limit)
                  for i, part in enumerate(parts))  # fmt: skip
    return SplitPlan(problem, np.asarray(w_inc, dtype=float), float(upper), tasks, float(lower),
                     time.perf_counter() - start, {"levels": levels})  # fmt: skip


def combine(plan: SplitPlan, results: Sequence[PartResult], *, seconds: float,
            backend: str = BACKEND) -> Solution:  # fmt: skip
    """The whole answer from the parts' (module docstring, step 4)."""
    results = sorted(results, key=lambda r: r.index)
    if [r.index for r in results] != list(range(len(plan.tasks))):
        raise ValueError(f"need one result per part (0..{len(plan.tasks) - 1}), found "
                         f"{[r.index for r in results]}")  # fmt: skip
    w, value = plan.w_incumbent, plan.incumbent
    for r in results:
        if r.w is not None and r.value < value:
            w, value = r.w, r.value
    bound = min([plan.incumbent] + [r.bound for r in results])
    unfinished = [r for r in results if not r.finished]
    extra = {**plan.extra, "incumbent": plan.incumbent, "lagrange_bound": plan.lagrange_bound,
             "parts": len(results), "parts_pruned": sum(r.pruned for r in results),
             "parts_unfinished": len(unfinished),
             "window_points": sum(r.points for r in results),
             "part_seconds": sum(r.seconds for r in results)}  # fmt: skip
    threads = max([r.threads for r in results], default=1)
    if not results:  # the incumbent is always in its window: a numerical failure
        return certify(plan.problem, w, status=Status.ERROR, bound=plan.lagrange_bound,
                       seconds=seconds, backend=backend, message="no parts", extra=extra)
    if unfinished:
        status = (Status.ERROR if any(r.status is Status.ERROR for r in unfinished)
                  else Status.TIME_LIMIT)  # fmt: skip
        bound = min(bound, plan.lagrange_bound)  # a part's own bound is unknown
        message = f"{len(unfinished)} of {len(results)} parts unfinished: {unfinished[0].message}"
        return certify(plan.problem, w, status=status, bound=bound, seconds=seconds,
                       backend=backend, threads=threads, message=message, extra=extra)
    return certify(plan.problem, w, status=Status.OPTIMAL, bound=bound, seconds=seconds,
                   backend=backend, threads=threads, solver_objective=value, extra=extra)


def solve_split(problem: Problem, map_parts: MapParts = sequential_parts, *, levels: int = 2,
                search_seconds: float = 1.0, seed: int = 0, max_points: int = 2_000_000,
                lagrange_iterations: int = 300,
                part_time_limit: float = math.inf) -> Solution:  # fmt: skip
    """The exact argmin of F over ``problem``'s IntegerGrid by a split solve (module docstring),
    the parts run by ``map_parts``. Uncertified (TIME_LIMIT, the incumbent) when the prefixes
    alone are too many."""
    start = time.perf_counter()
    try:
        plan = plan_split(problem, levels=levels, search_seconds=search_seconds, seed=seed,
                          max_points=max_points, lagrange_iterations=lagrange_iterations,
                          part_time_limit=part_time_limit)  # fmt: skip
    except WindowTooLarge as err:
        w_inc, upper = improve(problem, seconds=search_seconds, rng=np.random.default_rng(seed))
        return certify(problem, w_inc, status=Status.TIME_LIMIT, bound=-math.inf,
                       seconds=time.perf_counter() - start, backend=BACKEND,
                       message=f"too many parts: {err}")  # fmt: skip
    results = map_parts(plan.tasks, plan.incumbent)
    return combine(plan, results, seconds=time.perf_counter() - start)


__all__ = ["BACKEND", "MapParts", "PartResult", "PartTask", "SplitPlan", "combine",
           "part_lower_bound", "plan_split", "sequential_parts", "solve_part_below",
           "solve_split"]
