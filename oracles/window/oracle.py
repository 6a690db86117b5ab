"""The window oracle: exact argmin over an IntegerGrid by branch and bound on the noise.

For OPDisc and RSPM on generic tables (continuous columns, where the structured oracle has no
shape to use), F = N + L decomposes into a noise part N that is separable over the coordinates plus
a function of ||w||^2, and the data's 0/1 loss L (``oracles.window.minorant``). The steps:

1. an incumbent: the grid search of ``oracles.window.incumbent`` (seeded, a few seconds);
2. a minorant N_lam <= F, separable again: N plus Lagrangian-weighted linear minorants of the
   rows' losses (``noise_window.tighten``); its minimum over the grid is a proven lower bound;
3. a depth-first branch and bound over the coordinates (``oracles.window.tree``): a prefix is kept
   while N_lam's least completion plus what its forced rows owe is at most the best exact value
   found; every whole point kept is evaluated with the exact rule (``Problem.objective``). When
   the search ends, the best is the exact minimum, certified through ``oracles.base.certify``
   with itself as the bound. Every minimizer lies in the noise WINDOW {N_lam <= F(incumbent)},
   which is what makes the search small when the noise is strong.

When the search does not end before its budget's deadline (``oracles.budget``) or its node
limit, the oracle does not certify: it returns the best point found, uncertified (TIME_LIMIT),
with the search's proven bound and ``extra["stopped"]`` saying why. It is one strategy and builds
no other oracle: the routing table (``oracles.routing``) gives the search a share of the solve's
budget and hands a stopped search over to the reference formulation on the rest, joining the two
(the better point, the larger proven bound). The certificate's ``extra`` records the incumbent,
the Lagrangian bound, the search's nodes and leaves, and what was done.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.base import (
    REMOTE_CPU,
    OracleError,
    Solution,
    Status,
    certify,
    counts_cpu,
)
from oracles.window.tree import Nodes, SearchStopped
from oracles.budget import Budget
from oracles.window.checkpoint import Carry, CarryStore, problem_key
from oracles.solve_progress import reporter
from oracles.window.split import (
    MapParts,
    combine,
    open_after,
    plan_split,
    resume_split,
    sequential_parts,
)
from oracles.window.split_threads import thread_parts
from oracles.window.tree_size import TreeEstimate, estimate_tree, remaining_message

#: Parts a thread when a solve's threads search it (``oracles.window.split_threads``): more parts than
#: threads, so that a thread that finishes its part takes another.
PARTS_PER_THREAD = 4
#: The grid search's share of the search's time (at most ``search_seconds``).
GRID_SEARCH_SHARE = 0.1


@dataclass(frozen=True)
class WindowOracle:
    """Exact minimization of F over an IntegerGrid by branch and bound (module docstring).

    A solve's budget with more than one thread and no ``map_parts`` cuts the search into
    ``PARTS_PER_THREAD`` parts a thread, searched on that many threads of this process
    (``oracles.window.split_threads``).

    Args:
        max_nodes: the most nodes a part may make before it stops (and the budget's
            ``node_limit``, when it has one and is less).
        search_seconds: the grid search's budget (at most a tenth of the search's time).
        lagrange_iterations: subgradient steps of the Lagrangian minorant (0: none).
        seed: the grid search's random restarts (numpy.random.default_rng(seed)).
        parts: the search is cut into this many parts (``oracles.window.split``), run by
            ``map_parts`` (default: one after the other in this process;
            ``pipeline.donate_solve.ray_donating_parts``: as Ray tasks sharing their work).
        carry: a directory where a search that stops keeps its state and a later solve of the
            same problem carries on from it (``oracles.window.checkpoint``); None: every solve starts over.
    """

    max_nodes: int = 500_000_000
    search_seconds: float = 5.0
    lagrange_iterations: int = 300
    seed: int = 0
    parts: int = 1
    map_parts: MapParts | None = None
    carry: str | None = None
    name: str = "window"

    def __post_init__(self) -> None:
        if self.max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, found {self.max_nodes!r}")
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise ValueError(f"parts must be an integer >= 1, found {self.parts!r}")

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget) -> Solution:
        """The search on ``budget``. A budget that shares a best value and a stop signal with a
        race's rival (``Budget.shared``, ``oracles.race``) runs the search on threads
        (``oracles.window.split_threads``), one or more; a search whose parts run elsewhere
        (``map_parts``) does not read it."""
        start = time.perf_counter()
        if not isinstance(problem.domain, IntegerGrid):
            raise OracleError(f"the window oracle needs an IntegerGrid, found {problem.domain!r}")
        cpu = time.process_time()
        shared = budget.shared
        budget = budget.with_nodes(self.max_nodes)
        # a map_parts that is only a default (``elastic``: pipeline.elastic_solve) yields to
        # the budget's threads and to a race's shared best, as no map_parts does, and reports
        # progress as the search in this process does
        default = self.map_parts is None or getattr(self.map_parts, "elastic", False)
        threaded = default and (budget.threads > 1 or shared is not None)
        parts = max(self.parts, PARTS_PER_THREAD * budget.threads) if threaded else self.parts
        store = CarryStore(self.carry) if self.carry is not None else None
        carried = store.load(problem) if store is not None else None
        try:
            if carried is not None:
                plan = resume_split(problem, budget, carried, parts=parts)
            else:
                plan = plan_split(
                    problem,
                    budget,
                    parts=parts,
                    seed=self.seed,
                    search_seconds=min(self.search_seconds, GRID_SEARCH_SHARE * budget.seconds),
                    lagrange_iterations=self.lagrange_iterations,
                )
        except SearchStopped as err:  # the frontier alone: no part was searched
            origin = np.zeros(problem.d)
            return self.stopped(problem, origin, -math.inf, start, {"stopped": f"frontier: {err}"})
        grown: dict = {}  # what an elastic search did on the cluster (its ``record``)
        if threaded:  # the budget's CPUs as threads of this process (oracles.window.split_threads)
            results = thread_parts(budget.threads, shared)(plan.tables, plan.tasks, plan.incumbent)
        elif default:  # in this process (an elastic map_parts: until it grows, ``default``)
            progress = reporter(problem.label, self.name)  # oracles.solve_progress

            def estimate(best: float, left: tuple[np.ndarray, ...], made: int) -> str:
                """The progress line's cost to certify (``branch.ESTIMATE_EVERY``)."""
                rate = made / max(time.process_time() - cpu, 1e-9)
                return "to certify: " + remaining_message(cost_left(plan, left, best), 0, rate)

            run = sequential_parts if self.map_parts is None else self.map_parts
            results = run(
                plan.tables, plan.tasks, plan.incumbent, progress=progress, estimate=estimate
            )
            grown = getattr(run, "record", dict)()
        else:
            results = self.map_parts(plan.tables, plan.tasks, plan.incumbent)
        solution = combine(plan, results, seconds=time.perf_counter() - start, backend=self.name)
        if grown:
            c = solution.certificate
            solution = dataclasses.replace(
                solution, certificate=dataclasses.replace(c, extra={**c.extra, **grown})
            )
        left = open_after(plan, results)
        if store is not None:
            solution = self.kept(store, plan, left, solution, carried, cpu, start)
        cert = solution.certificate
        if cert.certified or cert.status is not Status.TIME_LIMIT:
            return solution
        extra = {**cert.extra, "stopped": cert.message}
        spent = time.process_time() - cpu + float(cert.extra.get(REMOTE_CPU, 0.0))  # every worker's
        rate = cert.extra.get("nodes", 0) / max(spent, 1e-9)
        estimate = cost_left(plan, left, min(cert.objective, plan.incumbent))
        extra.update(estimate.to_metrics(), nodes_per_cpu_second=rate)
        extra["to_certify"] = remaining_message(estimate, 0, rate)
        return self.stopped(problem, solution.w, cert.bound, start, extra)

    def kept(self, store, plan, left, solution, carried, cpu, start) -> Solution:
        """``solution`` with what every attempt spent in its ``extra`` (``carried_*`` before
        this one, ``total_*`` with it), its state kept when it stopped (``oracles.window.checkpoint``) and
        dropped when it certified."""
        c = solution.certificate
        nodes = int(c.extra.get("nodes", 0))
        spent_cpu = time.process_time() - cpu + float(c.extra.get(REMOTE_CPU, 0.0))
        seconds = time.perf_counter() - start
        before = carried or Carry(
            problem_key(plan.problem),
            plan.incumbent,
            plan.w_incumbent,
            plan.incumbent,
            plan.w_incumbent,
            -math.inf,
            (),
            0,
            0.0,
            0.0,
            0,
            self.lagrange_iterations,
        )
        now = before.spent(nodes, spent_cpu, seconds)
        extra = {
            **c.extra,
            "attempts": now.attempts,
            "carried_nodes": before.nodes,
            "carried_cpu_seconds": before.cpu_seconds,
            "carried_seconds": before.seconds,
            "total_nodes": now.nodes,
            "total_cpu_seconds": now.cpu_seconds,
            "total_seconds": now.seconds,
        }
        if c.certified:
            store.drop(plan.problem)
        elif c.status is Status.TIME_LIMIT:
            w_best = solution.w if c.objective <= before.best else before.w_best
            state = dataclasses.replace(
                now,
                best=min(c.objective, before.best),
                w_best=w_best,
                bound=max(c.bound, before.bound),
                open=left,
            )
            extra["carry"] = str(store.save(state))
        return dataclasses.replace(solution, certificate=dataclasses.replace(c, extra=extra))

    def stopped(self, problem, w_best, lower, start, extra) -> Solution:
        """The answer of a search that stopped: its best point, uncertified, with its proven
        bound ``lower`` (``extra["stopped"]`` says why)."""
        cost = f"; to certify: {extra['to_certify']}" if "to_certify" in extra else ""
        return certify(
            problem,
            w_best,
            status=Status.TIME_LIMIT,
            bound=lower,
            seconds=time.perf_counter() - start,
            backend=self.name,
            message=f"search stopped ({extra['stopped']}){cost}",
            extra=extra,
        )


#: The estimate of a stopped search's tree (``cost_left``): fewer nodes a level than a
#: preflight's (``oracles.window.tree_size``), so that it takes a tenth of a second or so after the
#: search stopped. On breast cancer, RSPM at epsilon 10, stopped after 3.5 million nodes (40 open
#: nodes at 24 levels): 0.16 s and 1.06e7 nodes left (9.1e6 to 1.2e7), where 1,000 a level and 8
#: runs took 3.4 s and gave 1.09e7 (1.06e7 to 1.12e7).
ESTIMATE_WIDTH = 50
ESTIMATE_RUNS = 4


def cost_left(plan, left: tuple[np.ndarray, ...], best: float) -> TreeEstimate:
    """What a stopped search's certificate would still cost: the estimated tree below its open
    nodes ``left`` and its best value (``oracles.window.tree_size``; the nodes it made are not in it).
    It reads the tables only: the answer and its certificate are unchanged."""
    starts = [Nodes.from_states(plan.tables, states) for states in left]
    return estimate_tree(
        plan.tables,
        best,
        rng=np.random.default_rng(0),
        width=ESTIMATE_WIDTH,
        runs=ESTIMATE_RUNS,
        start=starts,
    )


__all__ = ["GRID_SEARCH_SHARE", "PARTS_PER_THREAD", "WindowOracle"]
