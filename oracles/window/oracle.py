"""The window oracle: exact argmin over an IntegerGrid by branch and bound on the noise.

For OPDisc and RSPM on generic tables (continuous columns, where the structured oracle has no
shape to use), F = N + L decomposes into a noise part N that is separable over the coordinates plus
a function of ||w||^2, and the data's 0/1 loss L (``oracles.window.minorant``). The steps:

1. the plan (``oracles.window.plan``): an incumbent from the grid search, the minorant
   N_lam <= F tightened below it (its minimum over the grid is a proven lower bound), the
   search's tables, and the root as the first unit; or, carried on, the state a stopped search
   kept (``oracles.window.checkpoint``);
2. the search (``oracles.window.engine``): workers take units from one pool and search them
   depth first, keeping a prefix while N_lam's least completion plus what its forced rows owe
   is at most the best exact value found (``oracles.window.tree``); every whole point kept is
   evaluated with the exact rule (``Problem.objective``). Where the workers run is the
   executor's business (this process, threads, or a cluster's Ray tasks), never the answer's;
3. the answer: when no node is left, the best is the exact minimum, certified through
   ``oracles.contract.certificate.certify`` with itself as the bound. Every minimizer lies in the noise WINDOW
   {N_lam <= F(incumbent)}, which is what makes the search small when the noise is strong.

When the search does not end before its budget's deadline (``oracles.contract.budget``) or its node
limit, the oracle does not certify: it returns the best point found, uncertified (TIME_LIMIT),
with the search's proven bound, its ``TreeStats`` (``oracles.contract.stats``) saying why it stopped
(``stopped``) and what the certificate would still cost (``to_certify``) (``oracles.window.tree_size``); with ``carry`` its open
nodes are kept for the next attempt. It is one strategy and builds no other oracle: the routing
table (``oracles.routing.routes``) gives the search a share of the solve's budget and hands a stopped
search over to the reference formulation on the rest.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import OracleError, Solution, Status, certify, counts_cpu
from oracles.contract.budget import Budget, Stop
from oracles.contract.progress import Price, Reporter, reporter
from oracles.contract.stats import CarryStats, TreeStats, WindowStats, merged
from oracles.window.checkpoint import Carry, CarryStore, problem_key
from oracles.window.engine import Executor, Searched, least_bound, local_executor
from oracles.window.plan import Plan, plan, resume
from oracles.window.pool import Pool
from oracles.window.tree import ESTIMATE_EVERY, Nodes, Tables
from oracles.window.tree_size import TreeEstimate, estimate_tree, remaining_message
from oracles.window.worker import Worker

#: The grid search's share of the search's time (at most ``search_seconds``).
GRID_SEARCH_SHARE = 0.1
#: The name the window search's certificates carry.
BACKEND = "window"


@dataclass(frozen=True)
class WindowOracle:
    """Exact minimization of F over an IntegerGrid by branch and bound (module docstring).

    Args:
        max_nodes: the most nodes a worker may make before it stops (and the budget's
            ``node_limit``, when it has one and is less); None: no limit but the budget's, so
            that the time limit decides. The default was 500,000,000 until it was found to end
            every search at about 220 CPU seconds (at 2.3 million nodes a CPU second) whatever
            its limit: a sweep at 600 s handed 380 s of each solve to a reference MILP that
            certified none, and a carried-on run priced at 45 CPU s stopped there again.
        search_seconds: the grid search's budget (at most a tenth of the search's time).
        lagrange_iterations: subgradient steps of the Lagrangian minorant (0: none).
        seed: the grid search's random restarts (numpy.random.default_rng(seed)).
        executor: where the workers run (``oracles.window.engine.Executor``); None, or one that
            does not accept the solve's budget: the budget's CPUs in this process (one worker,
            or one a thread; a race's search too).
        carry: a directory where a search that stops keeps its state and a later solve of the
            same problem carries on from it (``oracles.window.checkpoint``); None: every solve
            starts over.
    """

    #: The problem types it solves (``oracles.routing.routes.accepts``): a Problem; its domain must be
    #: an IntegerGrid (a Box is refused with an OracleError).
    accepts: ClassVar[tuple[type, ...]] = (Problem,)

    max_nodes: int | None = None
    search_seconds: float = 5.0
    lagrange_iterations: int = 300
    seed: int = 0
    executor: Executor | None = None
    carry: str | None = None
    name: str = BACKEND

    def __post_init__(self) -> None:
        if self.max_nodes is not None and self.max_nodes < 1:
            raise ValueError(f"max_nodes must be >= 1, found {self.max_nodes!r}")

    def executor_for(self, budget: Budget, racing: bool = False) -> Executor:
        """The executor of a solve on ``budget`` (in a race when ``racing``): this oracle's when
        it accepts it, else the budget's CPUs in this process (``engine.local_executor``)."""
        if self.executor is not None and self.executor.accepts(budget, racing):
            return self.executor
        return local_executor(budget.threads)

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget, stop: Stop | None = None) -> Solution:
        """The search on ``budget``; in a race (``oracles.routing.race``), ``stop`` says when the
        rival certified and the search stops."""
        start, cpu = time.perf_counter(), time.process_time()
        if not isinstance(problem.domain, IntegerGrid):
            raise OracleError(f"the window oracle needs an IntegerGrid, found {problem.domain!r}")
        budget = budget.with_nodes(self.max_nodes)
        store = CarryStore(self.carry) if self.carry is not None else None
        carried = store.load(problem) if store is not None else None
        if carried is not None:
            start_plan = resume(problem, carried)
        else:
            start_plan = plan(
                problem,
                budget,
                seed=self.seed,
                search_seconds=min(self.search_seconds, GRID_SEARCH_SHARE * budget.seconds),
                lagrange_iterations=self.lagrange_iterations,
            )
        progress = reporter(problem.label, self.name)  # oracles.contract.progress
        report = Progress(start_plan, progress, cpu) if progress.active else None
        searched = self.executor_for(budget, racing=stop is not None).run(
            start_plan.tables,
            start_plan.units,
            start_plan.incumbent,
            budget,
            stop=stop,
            report=report,
        )
        if report is not None:
            report.finish(searched)
        solution = answer(start_plan, searched, time.perf_counter() - start, self.name)
        if store is not None:
            solution = kept(store, start_plan, searched, solution, cpu, start)
        cert = solution.certificate
        if cert.certified or cert.status is not Status.TIME_LIMIT:
            return solution
        spent = time.process_time() - cpu + searched.remote_cpu_seconds  # every worker's
        rate = searched.nodes / max(spent, 1e-9)
        estimate = cost_left(
            start_plan.tables, searched.open, min(cert.objective, start_plan.incumbent)
        )
        tree = TreeStats(
            stopped=searched.message or cert.message,
            **estimate.to_metrics(),
            nodes_per_cpu_second=rate,
            to_certify=remaining_message(estimate, 0, rate),
        )
        return stopped(problem, solution.w, cert, time.perf_counter() - start, tree, self.name)


def answer(start: Plan, searched: Searched, seconds: float, backend: str = BACKEND) -> Solution:
    """The search's answer (module docstring, step 3): the better of the plan's incumbent and
    the least value found (the incumbent among ties), certified when no node is left; else the
    larger of the plan's bound and what the search proved."""
    w, value = start.w_incumbent, start.incumbent
    if searched.w is not None and searched.value < value:
        w, value = searched.w, searched.value
    window = WindowStats(
        incumbent=start.incumbent,
        lagrange_bound=start.lagrange_bound,
        workers=searched.workers,
        donations=searched.donations,
        nodes=searched.nodes,
        leaves=searched.leaves,
        worker_cpu_seconds=searched.cpu_seconds,
        remote_cpu_seconds=searched.remote_cpu_seconds,  # this process's own is counted already
        carried_open_nodes=start.carried.open_nodes if start.carried is not None else None,
    )
    stats = (window,) if searched.cluster is None else (window, searched.cluster)
    bound = min(value, searched.bound)
    if searched.finished:
        status, message = Status.OPTIMAL, ""
    else:  # both lower bounds hold: the plan's and what the search proved
        status = Status.ERROR if searched.errors else Status.TIME_LIMIT
        bound, message = min(max(bound, start.lagrange_bound), value), searched.message
    return certify(
        start.problem,
        w,
        status=status,
        bound=bound,
        seconds=seconds,
        backend=backend,
        threads=searched.threads,
        solver_objective=value if searched.finished else None,
        message=message,
        stats=stats,
    )


def kept(
    store: CarryStore, start: Plan, searched: Searched, solution: Solution, cpu: float, t0: float
) -> Solution:
    """``solution`` with what every attempt spent in its ``CarryStats`` (``carried_*`` before this
    one, ``total_*`` with it), its state kept when it stopped (``oracles.window.checkpoint``)
    and dropped when it certified."""
    c = solution.certificate
    spent_cpu = time.process_time() - cpu + searched.remote_cpu_seconds
    before = start.carried or Carry(
        problem_key(start.problem),
        start.upper,
        start.w_upper,
        start.incumbent,
        start.w_incumbent,
        -math.inf,
        (),
        0,
        0.0,
        0.0,
        0,
        start.lagrange_iterations,
    )
    now = before.spent(searched.nodes, spent_cpu, time.perf_counter() - t0)
    spent = (before.nodes, before.cpu_seconds, before.seconds, now.nodes, now.cpu_seconds)
    carry = CarryStats(now.attempts, *spent, now.seconds)  # carried_* then total_*
    if c.certified:
        store.drop(start.problem)
    elif c.status is Status.TIME_LIMIT:
        w_best = solution.w if c.objective <= before.best else before.w_best
        state = dataclasses.replace(
            now,
            best=min(c.objective, before.best),
            w_best=w_best,
            bound=max(c.bound, before.bound),
            open=searched.open,
        )
        carry = dataclasses.replace(carry, carry=str(store.save(state)))
    return dataclasses.replace(solution, certificate=c.with_stats(carry))


def stopped(problem, w_best, cert, seconds: float, tree: TreeStats, backend: str) -> Solution:
    """The answer of a search that stopped: its best point, uncertified, with its proven bound
    (``tree.stopped`` says why, ``tree.to_certify`` what is left)."""
    cost = f"; to certify: {tree.to_certify}" if tree.to_certify else ""
    return certify(
        problem,
        w_best,
        status=Status.TIME_LIMIT,
        bound=cert.bound,
        seconds=seconds,
        backend=backend,
        threads=cert.threads,
        message=f"search stopped ({tree.stopped}){cost}",
        stats=merged(cert.stats, tree),
    )


class Progress:
    """A search's progress line (``oracles.contract.progress``): after every chunk of worker 0,
    when due, the best value known and the least bound of the nodes left (one worker: its
    open nodes and the pool's units; several: the bound the search started from, with how
    many search), and every ``ESTIMATE_EVERY`` seconds the cost to certify."""

    def __init__(self, start: Plan, progress: Reporter, cpu: float) -> None:
        self.plan, self.progress, self.cpu = start, progress, cpu
        self.started = time.perf_counter()
        self.cpu_started = time.process_time()  # the CPU share is of the search's own time
        self.noted = self.started
        self.note = ""
        self.price: Price | None = None  # the note's cost as numbers (the sweep's ETA)
        self._bounds: dict[int, float] = {}  # a queued unit's least bound, by its id
        self.proven = start.lagrange_bound  # the last bound reported while one worker searched

    def queued_bound(self, pool: Pool) -> float:
        least = math.inf
        for uid, states in pool.queued():
            if uid not in self._bounds:
                self._bounds[uid] = least_bound(self.plan.tables, (states,))
            least = min(least, self._bounds[uid])
        return least

    def __call__(self, worker: Worker, pool: Pool, workers: int, where: str = "") -> None:
        if not self.progress.due():
            return
        found = min(worker.value, worker.best, self.plan.incumbent)
        if workers > 1:  # the bound proven while one worker searched (bounds only rise)
            note = f"searching on {workers} {where or 'workers'}"
            self.progress.report(min(found, pool.best), min(found, self.proven), note=note)
            return
        least = min(found, worker.least_bound_left(), self.queued_bound(pool))
        self.proven = least = max(least, min(self.plan.lagrange_bound, found))
        now = time.perf_counter()
        if now - self.noted >= ESTIMATE_EVERY:
            left = worker.open() + tuple(states for _, states in pool.queued())
            cpu = max(time.process_time() - self.cpu, 1e-9)
            rate = worker.made / cpu
            estimate = cost_left(self.plan.tables, left, found)
            self.note, self.noted = "to certify: " + remaining_message(estimate, 0, rate), now
            share = search_share(time.process_time() - self.cpu_started, now - self.started)
            self.price = price_of(estimate, rate, share)
        self.progress.report(found, least, note=self.note, price=self.price)

    def finish(self, searched: Searched) -> None:
        """The last word: what the search proved."""
        found = min(searched.value, self.plan.incumbent)
        self.progress.report(found, min(found, searched.bound), force=True)


#: The estimate of a stopped search's tree (``cost_left``): fewer nodes a level than a
#: preflight's (``oracles.window.tree_size``), so that it takes a tenth of a second or so after
#: the search stopped. On breast cancer, RSPM at epsilon 10, stopped after 3.5 million nodes (40
#: open nodes at 24 levels): 0.16 s and 1.06e7 nodes left (9.1e6 to 1.2e7), where 1,000 a level
#: and 8 runs took 3.4 s and gave 1.09e7 (1.06e7 to 1.12e7).
ESTIMATE_WIDTH = 50
ESTIMATE_RUNS = 4


#: The least wall time a search's CPU share is measured over: over a shorter one the process's
#: CPU clock, which some machines advance in steps of 10 ms or more, says nothing (CI measured
#: 0.107 CPU s in 4.8 ms of wall on a one-worker search: a share of 22).
SHARE_LEAST_WALL = 1.0


def search_share(cpu_seconds: float, wall_seconds: float) -> float:
    """The CPU seconds a wall second that one worker's search has had: the process's
    ``cpu_seconds`` over ``wall_seconds``, at most 1 (one worker is one thread; the process's
    other threads are not its share), and 1 over less than ``SHARE_LEAST_WALL`` (not yet
    measured: the search is planned as if it had its CPU)."""
    if not wall_seconds >= SHARE_LEAST_WALL:
        return 1.0
    return min(max(cpu_seconds / wall_seconds, 0.0), 1.0)


def price_of(estimate: TreeEstimate, rate: float, cpu_share: float) -> Price | None:
    """The cost to certify of ``estimate`` as numbers (``oracles.contract.progress.Price``)
    at ``rate`` nodes a CPU second, the search having had ``cpu_share`` CPU seconds a wall
    second; None before the search has a rate (no node made yet)."""
    if not (rate > 0 and math.isfinite(rate)):
        return None
    likely = estimate.left(0) / rate
    high = max(estimate.high, estimate.nodes) / rate
    return Price(likely, high, cpu_share)


def cost_left(tables: Tables, left: Sequence[np.ndarray], best: float) -> TreeEstimate:
    """What a stopped search's certificate would still cost: the estimated tree below its open
    nodes ``left`` and its best value (``oracles.window.tree_size``; the nodes it made are not
    in it). It reads the tables only: the answer and its certificate are unchanged."""
    starts = [Nodes.from_states(tables, states) for states in left]
    return estimate_tree(
        tables,
        best,
        rng=np.random.default_rng(0),
        width=ESTIMATE_WIDTH,
        runs=ESTIMATE_RUNS,
        start=starts,
    )


__all__ = [
    "BACKEND",
    "GRID_SEARCH_SHARE",
    "Progress",
    "SHARE_LEAST_WALL",
    "WindowOracle",
    "answer",
    "cost_left",
    "price_of",
    "search_share",
]
