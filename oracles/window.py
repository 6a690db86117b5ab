"""The window oracle: exact argmin over an IntegerGrid by branch and bound on the noise (issue 19).

For OPDisc and RSPM on generic tables (continuous columns, where the structured oracle has no
shape to use), F = N + L splits into a noise part N that is separable over the coordinates plus
a function of ||w||^2, and the data's 0/1 loss L (``oracles.noise_window``). The steps:

1. an incumbent: the grid search of ``oracles.grid_search`` (seeded, a few seconds);
2. a minorant N_lam <= F, separable again: N plus Lagrangian-weighted linear minorants of the
   rows' losses (``noise_window.tighten``); its minimum over the grid is a proven lower bound;
3. a depth-first branch and bound over the coordinates (``oracles.branch``): a prefix is kept
   while N_lam's least completion plus what its forced rows owe is at most the best exact value
   found; every whole point kept is evaluated with the exact rule (``Problem.objective``). When
   the search ends, the best is the exact minimum, certified through ``oracles.base.certify``
   with itself as the bound. Every minimizer lies in the noise WINDOW {N_lam <= F(incumbent)},
   which is what makes the search small when the noise is strong.

When the search does not end within ``search_share`` of the time limit (or ``max_nodes``), the
oracle does not certify on its own: with ``fallback="mip"`` it solves the reference formulation
(``oracles.mip``) on the remaining time with ``AutoOracle`` (the backend chosen by the model's
size alone: Gurobi when its licence takes the model, else HiGHS with its second opinion,
``oracles.highs``), and certifies only if the better of the two points meets the larger of the
proven bounds; with ``fallback=None`` it returns the best point uncertified with the search's
proven bound. The certificate's ``extra`` records the incumbent, the Lagrangian bound, the
search's nodes and leaves, and what was done.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from oracles.auto import AutoOracle
from oracles.base import (
    DEFAULT_THREADS,
    DEFAULT_TIME_LIMIT,
    OBJECTIVE_TOL,
    IntegerGrid,
    OracleError,
    Problem,
    Solution,
    Status,
    certify,
)
from oracles.branch import SearchStopped
from oracles.checks import check_choice, check_solver_options
from oracles.progress import reporter
from oracles.split import MapParts, combine, plan_split, sequential_parts

#: What the oracle does when the search does not certify: nothing (None) or the reference MIP.
FALLBACKS = (None, "mip")


@dataclass(frozen=True)
class WindowOracle:
    """Exact minimization of F over an IntegerGrid by branch and bound (module docstring).

    Args:
        time_limit: seconds for the whole solve, fallback included.
        threads: solver threads of the fallback (the search itself is numpy, one thread).
        max_nodes: the most nodes the search may make before it stops (then: the fallback).
        search_seconds: the grid search's budget (at most a tenth of the time limit).
        lagrange_iterations: subgradient steps of the Lagrangian minorant (0: none).
        fallback: ``"mip"`` (the reference formulation on the remaining time) or None.
        search_share: the share of the time limit the branch and bound may take before the
            fallback (or, without one, the uncertified answer).
        seed: the grid search's random restarts (numpy.random.default_rng(seed)).
        parts: the search is cut into this many parts (``oracles.split``), run by
            ``map_parts`` (default: one after the other in this process;
            ``pipeline.split_solve.ray_map_parts``: as Ray tasks).
        reference: the fallback's backends, in ``AutoOracle``'s order.
    """

    time_limit: float = DEFAULT_TIME_LIMIT
    threads: int = DEFAULT_THREADS
    max_nodes: int = 500_000_000
    search_seconds: float = 5.0
    lagrange_iterations: int = 300
    fallback: str | None = "mip"
    search_share: float = 0.8
    seed: int = 0
    parts: int = 1
    map_parts: MapParts | None = None
    reference: tuple[str, ...] = ("gurobi", "highs")
    name: str = "window"

    def __post_init__(self) -> None:
        check_choice("fallback", self.fallback, FALLBACKS)
        # the shared validation of time_limit and threads (the fallback's strict_eps is its
        # default, as in oracles.structured)
        check_solver_options(self.time_limit, self.threads)
        if not 0 < self.search_share <= 1:
            raise ValueError(f"search_share must be in (0, 1], found {self.search_share!r}")
        if self.max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, found {self.max_nodes!r}")
        # AutoOracle validates the names (and quotes them) and makes a list a tuple
        object.__setattr__(self, "reference", AutoOracle(prefer=self.reference).prefer)
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"parts must be an integer >= 1, found {self.parts!r}")

    def solve(self, problem: Problem) -> Solution:
        start = time.perf_counter()
        if not isinstance(problem.domain, IntegerGrid):
            raise OracleError(f"the window oracle needs an IntegerGrid, found {problem.domain!r}")
        deadline = time.time() + self.search_share * self.time_limit
        try:
            plan = plan_split(
                problem,
                parts=self.parts,
                seed=self.seed,
                deadline=deadline,
                search_seconds=min(self.search_seconds, 0.1 * self.time_limit),
                lagrange_iterations=self.lagrange_iterations,
                max_nodes=self.max_nodes,
            )
        except SearchStopped as err:  # the frontier alone: no part was searched
            return self._fallback(
                problem, None, math.inf, -math.inf, start, {"stopped": f"frontier: {err}"}
            )
        if self.map_parts is None:
            progress = reporter(problem.label, self.name)  # oracles.progress
            results = sequential_parts(plan.tables, plan.tasks, plan.incumbent, progress=progress)
        else:
            results = self.map_parts(plan.tables, plan.tasks, plan.incumbent)
        solution = combine(plan, results, seconds=time.perf_counter() - start, backend=self.name)
        cert = solution.certificate
        if cert.certified or cert.status is not Status.TIME_LIMIT:
            return solution
        extra = {**cert.extra, "stopped": cert.message}
        return self._fallback(problem, solution.w, cert.objective, cert.bound, start, extra)

    def _fallback(self, problem, w_best, best, lower, start, extra) -> Solution:
        if w_best is None:  # the frontier stopped before any part: the grid's origin, no bound
            w_best, lower = np.zeros(problem.d), -math.inf
            best = float(problem.objective(w_best))
        left = self.time_limit - (time.perf_counter() - start)
        if self.fallback is None or left <= 1.0:
            return certify(
                problem,
                w_best,
                status=Status.TIME_LIMIT,
                bound=lower,
                seconds=time.perf_counter() - start,
                backend=self.name,
                message=f"search stopped ({extra['stopped']}), no fallback",
                extra=extra,
            )
        backend = AutoOracle(time_limit=left, threads=self.threads, prefer=self.reference)
        solution = backend.solve(problem)
        cert = solution.certificate
        extra = {
            **extra,
            "fallback_status": cert.status.value,
            "fallback_bound": cert.bound,
            "fallback_objective": cert.objective,
        }
        trusted = cert.status in (Status.OPTIMAL, Status.TIME_LIMIT)
        bound = max(lower, cert.bound) if trusted else lower
        w, value = (solution.w, cert.objective) if cert.objective < best else (w_best, best)
        status = Status.OPTIMAL if value - bound <= OBJECTIVE_TOL else Status.TIME_LIMIT
        return certify(
            problem,
            w,
            status=status,
            bound=min(bound, value),
            seconds=time.perf_counter() - start,
            backend=self.name,
            fallback=f"search stopped; reference on {backend.name}",
            message=cert.message,
            extra=extra,
        )


__all__ = ["FALLBACKS", "WindowOracle"]
