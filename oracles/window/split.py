"""A split solve: the branch and bound of ``oracles.window.tree`` cut into parts solved apart.

No Ray here: this module says WHAT a split solve computes; ``map_parts`` says where the parts
run (``sequential_parts`` in this process by default; ``oracles.window.split_threads`` on threads;
workers that donate work to each other, ``oracles.window.donate``, on threads or, as Ray tasks,
``pipeline.donate_solve.ray_donating_parts`` and ``pipeline.elastic_solve.ElasticParts``).
``oracles.window.WindowOracle`` runs it (one part, the root, unless it is given ``parts``) and
falls back when it does not certify. The steps, for a Problem over an IntegerGrid:

1. an incumbent w_inc with exact value UB (the grid search, ``oracles.window.incumbent.improve``);
2. the minorant N_lam <= F tightened once below UB (``noise_window.tighten``), the search's
   tables (``branch.build_tables``), and the tree expanded breadth first until a level holds
   enough nodes (``branch.frontier``): every grid point with F <= UB lies below exactly one of
   them. The nodes are dealt round-robin, in order of their lower bounds, into ``parts`` groups
   (``branch.deal``), so every part holds a share of the most promising region and the parts
   balance by construction;
3. each part, given the best value B <= UB found so far (by any part, or the incumbent), is
   searched depth first below B (``branch.descend``), reading and lowering the shared best as
   it goes (``share``). Its result: the least exact objective v it found (+inf: none) and a
   proven bound on F over its points, min(v, the last B it searched below) when it finished;
4. ``combine``: value = min(UB, the parts' v), w the point attaining it (the incumbent, else the
   first part in order with the least v), bound = min(UB, the parts' bounds). Certified through
   ``oracles.base.certify`` (status OPTIMAL, so re-checked exactly) ONLY when every part
   finished; a part that failed or hit its limit leaves the whole uncertified (TIME_LIMIT or
   ERROR) with the larger of two proven bounds: the Lagrangian one, and min(UB, every part's
   bound), where a stopped part's is what its search proved and a failed part's -inf.

Why the bound is valid whatever order the parts ran in: every B a part used is attained by some
grid point, so B >= min F, and every point of a part with F at most the last B it used was
evaluated (a node is dropped only when its lower bound exceeds the B of that moment, which is at
least the last). The exact minimum is therefore found, and min F = value = bound (SPEC section 8:
a certificate is a proof, never a retry).

The answer does not depend on how the parts were scheduled except among exact ties of F: the
minimum value is always the one-process answer, and so is w whenever the argmin is unique.
"""

from __future__ import annotations

import math
import os
import time
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.base import REMOTE_CPU, OracleError, Solution, Status, certify
from oracles.window.tree import (
    Estimate,
    Nodes,
    SearchStopped,
    Share,
    Tables,
    build_tables,
    deal,
    descend,
    frontier,
)
from oracles.budget import Budget
from oracles.window.checkpoint import Carry
from oracles.window.incumbent import improve
from oracles.window.minorant import tightened_decomposition
from oracles.solve_progress import Reporter

#: The name a split solve's certificate carries as its backend (``WindowOracle``'s).
BACKEND = "window"
#: The frontier holds at least this many nodes per part before it is dealt.
NODES_PER_PART = 64
#: The most nodes the breadth-first frontier may hold.
MAX_FRONTIER = 200_000
#: A part's nodes are searched in groups that grow while a group takes less than this
#: (``solve_part_below``), and hold at most MAX_GROUP nodes.
GROUP_SECONDS = 0.1
MAX_GROUP = 4096


@dataclass(frozen=True, eq=False)
class PartTask:
    """What one part needs besides the shared ``Tables``: its index, its nodes' prefixes
    ((m, level) int8, in search order; plain numpy: one array, or one a level in the order to
    search them, as a search carried on from its open nodes has, ``oracles.window.checkpoint``), and its
    budget (``oracles.budget``: the solve's deadline, which a part in another process reads on
    its own clock, and the most nodes the part may make)."""

    index: int
    states: np.ndarray | tuple[np.ndarray, ...]
    budget: Budget = field(default_factory=lambda: Budget(math.inf))

    def levels(self) -> tuple[np.ndarray, ...]:
        """The prefixes a level at a time, in the order to search them."""
        if isinstance(self.states, np.ndarray):
            return (self.states,)
        return tuple(self.states)


@dataclass(frozen=True, eq=False)
class PartResult:
    """How one part ended.

    Attributes:
        index: the part's position in the plan.
        status: OPTIMAL (searched to the end), TIME_LIMIT (its time or node limit), ERROR
            (anything else).
        value: the least exact objective found in the part (+inf: none at or below the best).
        w: a point attaining ``value`` (None when it is +inf).
        bound: a proven lower bound on F over the part (-inf when nothing is proven).
        threshold: the best value the part was searched below when it started.
        nodes: nodes the search made; leaves: points it evaluated exactly.
        threads: the CPUs its task held.
        cpu_seconds: the CPU time it got (``time.process_time``), in the process ``pid`` it
            ran in (``combine`` adds the parts' run in other processes to the certificate's).
        open: a stopped part's nodes still to search, in order (``branch.Outcome.open``); a
            failed part's are unknown (None): its whole task is to search again.
        remote_cpu_seconds: of ``cpu_seconds``, what processes other than ``pid`` spent (the
            workers folded into it: ``oracles.window.donate.fold``; each process's CPU is in one
            result only).
    """

    index: int
    status: Status
    value: float
    w: np.ndarray | None
    bound: float
    threshold: float
    seconds: float
    nodes: int = 0
    leaves: int = 0
    threads: int = 1
    message: str = ""
    cpu_seconds: float = 0.0
    pid: int = 0
    open: tuple[np.ndarray, ...] | None = ()
    remote_cpu_seconds: float = 0.0

    @property
    def finished(self) -> bool:
        return self.status is Status.OPTIMAL

    @classmethod
    def failed(
        cls, index: int, err: BaseException, *, seconds: float = 0.0, threads: int = 1
    ) -> "PartResult":
        """A part whose solve raised ``err``: nothing found, nothing proven."""
        status = Status.TIME_LIMIT if isinstance(err, SearchStopped) else Status.ERROR
        return cls(
            index,
            status,
            math.inf,
            None,
            -math.inf,
            math.nan,
            seconds,
            threads=threads,
            message=f"{type(err).__name__}: {err}",
            open=None,
        )


def solve_part_below(
    tables: Tables,
    task: PartTask,
    best: float,
    *,
    threads: int = 1,
    share: Share | None = None,
    progress: Reporter | None = None,
    estimate: Estimate | None = None,
) -> PartResult:
    """One part searched depth first below ``best`` (module docstring, step 3).

    The part's nodes are searched in their order (least lower bound first) in GROUPS, each by
    one ``descend``, the next below the best value the last proved: ``descend`` looks at the
    clock inside a node's subtree, not between subtrees that end quickly, so the deadline is
    looked at between groups too. A group starts with one node and doubles while groups take
    under ``GROUP_SECONDS`` (halves when one takes more). The nodes searched, the points found
    and the bound proven are those of one ``descend`` over the whole part; a part stopped
    between groups proves the least lower bound of the nodes it did not search.

    ``threads`` is recorded only: the search is numpy in one thread and builds no solver model.
    """
    start, cpu = time.perf_counter(), time.process_time()
    budget = task.budget
    levels = task.levels()
    w, value, threshold, bound = None, math.inf, float(best), math.inf
    made = leaves = 0
    size, finished, message = 1, True, ""
    left: list[np.ndarray] = []  # a stopped part's nodes still to search, in order
    for g, states in enumerate(levels):
        nodes = Nodes.from_states(tables, states)
        order = np.argsort(nodes.lb, kind="stable")
        pos = 0
        while pos < len(order):
            if budget.expired() or budget.spent(made):
                finished, message = False, budget.stopped_by(made)
                break
            group = order[pos : pos + size]
            out = descend(
                tables,
                nodes.take(group),
                threshold,
                budget.after(made),
                share=share,
                progress=progress,
                estimate=estimate,
            )
            made, leaves, pos = made + out.nodes, leaves + out.leaves, pos + len(group)
            if out.w is not None and out.value < value:
                w, value = out.w, out.value
            bound = min(bound, out.bound)
            if not out.finished:
                finished, message = False, out.message
                left.extend(out.open)
                break
            threshold = min(threshold, out.bound)  # the best value it searched below at its end
            size = min(MAX_GROUP, 2 * size) if out.seconds < GROUP_SECONDS else max(1, size // 2)
        if not finished:  # the part stopped: what it has not searched yet, in order
            if pos < len(order):
                left.append(nodes.states[order[pos:]])
            left.extend(s for s in levels[g + 1 :] if len(s))
            for rest in left:
                least = Nodes.from_states(tables, rest).lb.min(initial=math.inf)
                bound = min(bound, float(least) + tables.const)
            break
    if finished:
        bound = min(bound, value, threshold)
    status = Status.OPTIMAL if finished else Status.TIME_LIMIT
    return PartResult(
        task.index,
        status,
        value,
        w,
        bound,
        float(best),
        time.perf_counter() - start,
        made,
        leaves,
        threads,
        message,
        time.process_time() - cpu,
        os.getpid(),
        tuple(left),
    )


SolvePart = Callable[..., PartResult]


def part_or_failure(
    solve: SolvePart, tables: Tables, task: PartTask, best: float, **options
) -> PartResult:
    """``solve(tables, task, best, **options)``, or, when it raises, the part recorded as failed
    (``PartResult.failed``: nothing found, nothing proven, so the whole is uncertified); every
    place a part runs (in turn, on threads, as a Ray task) goes through here."""
    start = time.perf_counter()
    try:
        return solve(tables, task, best, **options)
    except Exception as err:  # noqa: BLE001 - a failed part leaves the whole uncertified
        seconds = time.perf_counter() - start
        return PartResult.failed(
            task.index, err, seconds=seconds, threads=options.get("threads", 1)
        )


#: ``map_parts(tables, tasks, incumbent) -> results`` (one per task, in order): where the parts
#: run.
MapParts = Callable[[Tables, Sequence[PartTask], float], list]


def sequential_parts(
    tables: Tables,
    tasks: Sequence[PartTask],
    incumbent: float,
    *,
    solve: SolvePart = solve_part_below,
    progress: Reporter | None = None,
    estimate: Estimate | None = None,
) -> list[PartResult]:
    """Every part in this process, in order, each searched below the best value so far. A part
    that raises is recorded as failed (``PartResult.failed``), the others go on. ``progress``
    (with ``estimate``'s note) hears from a search of ONE part only (its bound is the whole's
    only then)."""
    best, results = float(incumbent), []
    options: dict = {}
    if progress is not None and len(tasks) == 1:
        options = {"progress": progress, "estimate": estimate}
    for task in tasks:
        result = part_or_failure(solve, tables, task, best, **options)
        if result.finished:
            best = min(best, result.value)
        results.append(result)
    return results


@dataclass(frozen=True, eq=False)
class SplitPlan:
    """The incumbent, the search's tables and the parts of one split solve (steps 1 and 2)."""

    problem: Problem
    w_incumbent: np.ndarray
    incumbent: float
    tables: Tables
    tasks: tuple[PartTask, ...]
    lagrange_bound: float
    seconds: float
    extra: dict = field(default_factory=dict)


def plan_split(
    problem: Problem,
    budget: Budget,
    *,
    parts: int = 1,
    search_seconds: float = 1.0,
    seed: int = 0,
    lagrange_iterations: int = 300,
) -> SplitPlan:
    """Steps 1 and 2 of the module docstring on ``budget``: the grid search on at most
    ``search_seconds`` of it, every part on the rest (its node limit: each part's). Raises
    ``SearchStopped`` when the frontier alone passes ``MAX_FRONTIER`` nodes."""
    start = time.perf_counter()
    if not isinstance(problem.domain, IntegerGrid):
        raise OracleError(f"a split solve needs an IntegerGrid, found {problem.domain!r}")
    if isinstance(parts, bool) or not isinstance(parts, int) or parts < 1:
        raise ValueError(f"parts must be an integer >= 1, found {parts!r}")
    w_inc, upper = improve(problem, budget.sub(search_seconds), rng=np.random.default_rng(seed))
    tight, lower, prune = tightened_decomposition(problem, upper, lagrange_iterations)
    tables = build_tables(problem, tight, prune)
    at_least = 1 if parts == 1 else NODES_PER_PART * parts
    nodes = frontier(tables, upper, at_least=at_least, max_nodes=MAX_FRONTIER)
    tasks = tuple(
        PartTask(i, nodes.states[group], budget) for i, group in enumerate(deal(nodes, parts))
    )
    return SplitPlan(
        problem,
        np.asarray(w_inc, dtype=float),
        float(upper),
        tables,
        tasks,
        float(lower),
        time.perf_counter() - start,
        {"parts_asked": parts, "frontier_level": nodes.level, "frontier_nodes": len(nodes)},
    )


def resume_split(problem: Problem, budget: Budget, carried: Carry, *, parts: int = 1) -> SplitPlan:
    """The plan of a search carried on from ``carried`` (``oracles.window.checkpoint``): the tables rebuilt
    below the same incumbent with the same Lagrangian steps, the carried best as the value to
    search below, and the open nodes dealt into ``parts`` parts, each keeping their order (a
    level group at a time, each group's nodes round-robin by their bounds)."""
    start = time.perf_counter()
    tight, lower, prune = tightened_decomposition(
        problem, carried.upper, carried.lagrange_iterations
    )
    tables = build_tables(problem, tight, prune)
    shares: list[list[np.ndarray]] = [[] for _ in range(parts)]
    for states in carried.open:
        nodes = Nodes.from_states(tables, states)
        for i, group in enumerate(deal(nodes, parts)):
            shares[i].append(nodes.states[np.sort(group)])
    tasks = tuple(
        PartTask(i, tuple(share), budget) for i, share in enumerate(s for s in shares if s)
    )
    return SplitPlan(
        problem,
        np.asarray(carried.w_best, dtype=float),
        float(carried.best),
        tables,
        tasks,
        max(float(lower), float(carried.bound)),
        time.perf_counter() - start,
        {"parts_asked": parts, "carried_open_nodes": carried.open_nodes},
    )


def open_after(plan: SplitPlan, results: Sequence[PartResult]) -> tuple[np.ndarray, ...]:
    """The nodes a split solve has still to search once its parts ended (in part order): a
    stopped part's open nodes, a failed part's whole task again (re-run from its own
    prefixes), nothing of a finished part."""
    left: list[np.ndarray] = []
    for r in sorted(results, key=lambda r: r.index):
        if r.finished:
            continue
        left.extend(plan.tasks[r.index].levels() if r.open is None else r.open)
    return tuple(s for s in left if len(s))


def combine(
    plan: SplitPlan, results: Sequence[PartResult], *, seconds: float, backend: str = BACKEND
) -> Solution:
    """The whole answer from the parts' (module docstring, step 4)."""
    results = sorted(results, key=lambda r: r.index)
    if [r.index for r in results] != list(range(len(plan.tasks))):
        raise ValueError(
            f"need one result per part (0..{len(plan.tasks) - 1}), found "
            f"{[r.index for r in results]}"
        )
    w, value = plan.w_incumbent, plan.incumbent
    for r in results:
        if r.w is not None and r.value < value:
            w, value = r.w, r.value
    bound = min([plan.incumbent] + [r.bound for r in results])
    unfinished = [r for r in results if not r.finished]
    extra = {
        **plan.extra,
        "incumbent": plan.incumbent,
        "lagrange_bound": plan.lagrange_bound,
        "parts": len(results),
        "parts_unfinished": len(unfinished),
        "nodes": sum(r.nodes for r in results),
        "leaves": sum(r.leaves for r in results),
        "part_seconds": sum(r.seconds for r in results),
        "part_cpu_seconds": sum(r.cpu_seconds for r in results),
        # the parts' CPU in other processes (Ray tasks): this process's own is counted already
        REMOTE_CPU: sum(
            r.cpu_seconds if r.pid not in (0, os.getpid()) else r.remote_cpu_seconds
            for r in results
        ),
    }
    threads = max([r.threads for r in results], default=1)
    # a carried-on search with no node left (every point better than the carried best lay below
    # an open node, and none is left: the best is the minimum) certifies below, as a whole one
    left = plan.extra.get("carried_open_nodes")
    if not results and left != 0:  # no node below the incumbent: impossible unless rounding failed
        return certify(
            plan.problem,
            w,
            status=Status.ERROR,
            bound=plan.lagrange_bound,
            seconds=seconds,
            backend=backend,
            message="no parts",
            extra=extra,
        )
    if unfinished:
        status = (
            Status.ERROR if any(r.status is Status.ERROR for r in unfinished) else Status.TIME_LIMIT
        )
        # a stopped part proved its own bound, a failed one -inf; both lower bounds hold
        bound = min(max(bound, plan.lagrange_bound), value)
        message = f"{len(unfinished)} of {len(results)} parts unfinished: {unfinished[0].message}"
        return certify(
            plan.problem,
            w,
            status=status,
            bound=bound,
            seconds=seconds,
            backend=backend,
            threads=threads,
            message=message,
            extra=extra,
        )
    return certify(
        plan.problem,
        w,
        status=Status.OPTIMAL,
        bound=bound,
        seconds=seconds,
        backend=backend,
        threads=threads,
        solver_objective=value,
        extra=extra,
    )


__all__ = [
    "BACKEND",
    "MapParts",
    "PartResult",
    "PartTask",
    "SplitPlan",
    "combine",
    "open_after",
    "part_or_failure",
    "plan_split",
    "resume_split",
    "sequential_parts",
    "solve_part_below",
]
