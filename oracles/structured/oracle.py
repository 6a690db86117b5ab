"""The structured oracle: exact argmin over an IntegerGrid by cutting the data along its shape.

Why: the reference formulation (``oracles.mip.formulation``, one binary per merged row with a big-M row)
does not certify the paper's Adult instance in reasonable time (SPEC section 8). Adult has a
shape that makes the problem much smaller than its 2,611 distinct rows: 20 binary (one-hot)
columns whose patterns form 174 cells, and 3 continuous columns (SPEC section 1).

How (``oracles.structured.shape`` for the maths):

1. Read the shape off the data: constant rows, single-coordinate rows (RSPM's separators,
   SPEC section 4) as unary costs, binary and continuous columns, cells.
2. For every combination v of the continuous weights inside the norm bound, a lower bound:
   each cell takes its own best score, the unary and exact norm terms their own minimum
   (computed lazily: a cheaper bound with every row at its cheaper label comes first, and the
   cell tables are built only for combinations that bound does not rule out).
3. Visit the combinations by increasing bound; solve each exactly below the incumbent by a
   compiled depth-first search over the binary columns (``oracles.structured.search``; when it
   needs more than a few thousand nodes, its bound is shifted by the LP relaxation's prices), and
   one that takes it more than ``max_search_nodes`` nodes as a small MILP over those columns
   (``oracles.structured.milp``, HiGHS) with the incumbent as a cutoff; stop when the next
   bound reaches the incumbent. Every combination is then either solved, proven no better
   than the incumbent by the search or by HiGHS, or proven so by its bound: the incumbent is
   the exact minimum, and the certificate's bound is the smallest of the per-combination
   lower bounds. The certificate's stats count them (``StructuredStats``): ``searched`` (and ``search_nodes``) by
   the search, ``subproblems`` by HiGHS (``search_handed`` of them after the search), and
   ``solved`` and ``cutoff`` by either.

Progress (``oracles.contract.progress``): when a listener is registered, the loop reports the incumbent
and the smallest per-combination lower bound.

Budget (``oracles.contract.budget``): no piece of work (a batch of cell bounds, a subproblem) starts once
the solve's deadline has passed, and every subproblem gets only what is left; the answer is then
the incumbent, uncertified (TIME_LIMIT), with the least of the per-combination bounds.

Exactness: every candidate w is re-evaluated with ``Problem.objective`` (SPEC section 2's rule
in floating point) and the answer goes through ``certify``. Scores that fall within a tiny band
of the margin (``structured_shape``, rounding) enter the bounds at their cheaper label; if
that leaves a gap the oracle does not certify on its own.

This oracle is one strategy: it never builds another oracle. What happens to a problem it
cannot solve is the routing table's (``oracles.routing.routes``): a problem without the shape
(``shape`` raises ShapeMismatch: a Box domain, or continuous weight combinations too many to
bound in the time limit, ``max_work``) goes to the window oracle when it carries OPDisc's or
RSPM's noise (``has_noise``) and to the reference formulation otherwise; a solve that cannot
finish exactly (a subproblem fails in HiGHS, its value disagrees with the tables, or borderline
scores leave a gap) raises ``HandOff`` with the reason, and the route hands the problem to the
reference formulation on what is left of the budget. The reference resolves the margin band
exactly (``oracles.mip.margin_band``), so the hand-over never certifies a point that is not the
argmin either. The cap is work, not a count: bounding one combination costs a threshold per row
and a cell x score table (``bounding_work``), so 16,875 combinations of Adult with age and
education-num (d = 25) or 94,969 with fnlwgt too (d = 26) fit in the default time limit, while
a count cap sized for Adult's 461 sent them to the reference, which does not certify them.
"""

from __future__ import annotations

import functools
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.problem import IntegerGrid, Problem
from core.validation import check_int, is_real
from oracles.contract.certificate import (
    OBJECTIVE_TOL,
    HandOff,
    Solution,
    Status,
    certify,
    counts_cpu,
)
from oracles.contract.budget import Budget
from oracles.mip.highs import threads_for
from oracles.contract.progress import reporter
from oracles.contract.stats import StructuredStats
from oracles.structured.milp import (
    build_subproblem,
    lp_multipliers,
    solve_subproblem,
    table_value,
)
from oracles.structured.search import column_order, search_combination
from oracles.structured.shape import Shape, ShapeMismatch, cell_bounds, decompose, separable_bounds

#: Table entries the bounding pass computes per second on one core, set below the 13 to 19
#: million measured on Adult, d = 25 (docs/results/oracles.md).
WORK_ENTRIES_PER_SECOND = 10_000_000
#: Share of the time limit that bounding every combination may take (the rest: subproblems).
BOUNDING_SHARE = 0.5

#: Cell bounds are computed for this many combinations at a time, most promising first.
TABLE_BATCH = 64
#: Nodes the compiled search (``oracles.structured.search``) makes on one combination before
#: HiGHS takes it: most of Adult's combinations take it a few hundred to a few thousand; 100,000
#: are about 0.1 CPU s, less than HiGHS takes on the hard ones (up to 1.4 s each, proven at or near
#: its root by its cuts), so such a combination costs at most about twice HiGHS's time
#: (docs/results/structured_speed.md).
MAX_SEARCH_NODES = 100_000


@dataclass(frozen=True)
class StructuredOracle:
    """Exact minimization of F over an IntegerGrid through its shape (module docstring).

    Args:
        max_work: the problem does not have the shape when bounding every combination of the
            continuous weights would take more table entries than this
            (``structured_shape.bounding_work``); None: what fits in ``BOUNDING_SHARE`` of the
            time limit at ``WORK_ENTRIES_PER_SECOND``.
        max_combos: nor above this many combinations (None: no count cap).
    """

    max_combos: int | None = None
    max_work: float | None = None
    max_search_nodes: int = MAX_SEARCH_NODES
    name: str = "structured"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (Problem,)

    def __post_init__(self) -> None:
        if self.max_combos is not None:
            check_int("max_combos", self.max_combos)
        check_int("max_search_nodes", self.max_search_nodes, 0, why="0: HiGHS for each one")
        if self.max_work is not None and not (is_real(self.max_work) and self.max_work > 0):
            raise ValueError(
                f"max_work must be > 0 (inf: no limit) or None, found {self.max_work!r}"
            )

    def work_budget(self, budget: Budget) -> float:
        """The table entries a solve on ``budget`` may spend bounding (``max_work``, else
        ``BOUNDING_SHARE`` of the budget's time limit at ``WORK_ENTRIES_PER_SECOND``)."""
        if self.max_work is not None:
            return float(self.max_work)
        return BOUNDING_SHARE * budget.seconds * WORK_ENTRIES_PER_SECOND

    def shape(self, problem: Problem, budget: Budget) -> Shape:
        """The problem's shape, or ShapeMismatch saying why it does not have it (the routing
        table's question: ``oracles.routing.routes.classify``). Nothing is kept here: the route
        passes the shape it classified by to ``search`` as data (``Classified.shape``)."""
        return decompose(problem, max_combos=self.max_combos, max_work=self.work_budget(budget))

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget) -> Solution:
        """The search on ``budget`` over the problem's shape (``shape``, read here; the
        subproblems' HiGHS threads are the budget's, fixed once per process, ``oracles.mip.highs``).
        Raises HandOff when the problem does not have the shape or the search cannot finish
        exactly (module docstring)."""
        start = time.perf_counter()
        try:
            shape = self.shape(problem, budget)
        except ShapeMismatch as why:
            raise HandOff(str(why)) from why
        return self.search(problem, shape, budget, start)

    def search(
        self, problem: Problem, shape: Shape, budget: Budget, start: float | None = None
    ) -> Solution:
        """The search on ``budget`` over ``shape``, the problem's own (``shape``; the routing
        table reads it once, to classify the problem, and passes it here). ``start``: when the
        solve started (``time.perf_counter``; default now), for the certificate's seconds.
        Raises HandOff when the search cannot finish exactly (module docstring)."""
        if shape.problem is not problem:
            raise ValueError("search: the shape was read from another problem")
        start = time.perf_counter() if start is None else start
        return _CombinationSearch(self, problem, shape, budget, start).run()


def has_noise(problem: Problem) -> bool:
    """OPDisc's and RSPM's problems (an IntegerGrid) carry a noise term, exact ERM's do not:
    OPDisc's is linear (and the norm term), RSPM's is the real-valued weights of its separator
    rows, while data rows weigh whole counts. The noise, not the data, decides it (SPEC
    section 8)."""
    if not isinstance(problem.domain, IntegerGrid):
        return False
    if np.any(problem.linear != 0) or problem.norm_coef != 0.0:
        return True
    weights = np.concatenate([problem.pos, problem.neg])
    return bool(np.any((weights < 0) | (weights != np.round(weights))))


class _CombinationSearch:
    """One solve: bounds, then the combinations by increasing bound (module docstring)."""

    def __init__(
        self, oracle: StructuredOracle, problem: Problem, shape: Shape, budget: Budget, start: float
    ):
        self.oracle, self.problem, self.shape, self.start = oracle, problem, shape, start
        self.budget = budget
        zero = np.zeros(problem.d)
        self.best_w, self.best_value = zero, float(problem.objective(zero))
        self.best_model: float | None = None  # the tables' value of best_w, when it has one
        self.progress = reporter(problem.label, oracle.name)  # oracles.contract.progress
        self.stats = {
            "subproblems": 0,
            "cutoff": 0,
            "solved": 0,
            "max_sub_seconds": 0.0,
            "sub_seconds": 0.0,
            "max_breakpoints": 0,
            "tabled": 0,
            "searched": 0,
            "search_nodes": 0,
            "search_handed": 0,
        }

    def offer(self, w: np.ndarray, model_value: float | None) -> None:
        value = float(self.problem.objective(w))
        if value < self.best_value:
            self.best_w, self.best_value, self.best_model = w, value, model_value

    def take(
        self, kP: np.ndarray, kC: np.ndarray, claimed: float | None, f_v, borderline, who: str
    ) -> tuple[float, bool]:
        """A point k_C of combination ``kP`` that ``who`` (the search, HiGHS) found at value
        ``claimed``: its tables' value, which must agree with the claim (else HandOff), offered
        as the incumbent; and whether, its combination being borderline, the point's exact
        value lies above the tables' (a gap the reference must close)."""
        model = table_value(self.shape, kP, kC, f_v)
        if claimed is not None and abs(model - claimed) > 1e-6 * max(1, abs(model)):
            raise HandOff(
                f"{who} on the combination k_P={kP.tolist()}: value {claimed!r} != table "
                f"value {model!r}"
            )
        w = self.shape.weights(kP, kC)
        self.offer(w, model if not borderline else None)
        return model, bool(borderline) and float(self.problem.objective(w)) > model + OBJECTIVE_TOL

    def run(self) -> Solution:
        shape = self.shape
        threads, thread_note = threads_for(self.budget.threads)
        base, floor = separable_bounds(shape)
        plan = column_order(shape)
        nv = len(shape.combos)
        lower = base + floor  # per combination: the best proven lower bound so far
        tabled = np.zeros(nv, dtype=bool)  # has its cell bound (SPEC section 1's relaxation)
        borderline = np.zeros(nv, dtype=bool)
        closed = np.zeros(nv, dtype=bool)  # solved or cut off by HiGHS
        status, notes = Status.OPTIMAL, []
        open_borderline = False
        while True:
            if self.progress.due():  # the minimum lies in [min of the bounds, incumbent]
                self.progress.report(self.best_value, min(self.best_value, float(lower.min())))
            i = int(np.argmin(np.where(closed, np.inf, lower)))
            if closed[i] or lower[i] >= self.best_value:
                break  # every open combination is bounded by the incumbent
            if self.budget.expired():
                status = Status.TIME_LIMIT
                notes.append("time limit reached between subproblems")
                break
            if not tabled[i]:  # the cell bounds of the most promising untabled combinations
                todo = np.flatnonzero(~tabled & ~closed & (lower < self.best_value))
                todo = todo[np.argsort(lower[todo], kind="stable")[:TABLE_BATCH]]
                cell_part, border = cell_bounds(shape, todo)
                lower[todo] = np.maximum(lower[todo], base[todo] + cell_part)
                tabled[todo], borderline[todo] = True, border
                self.stats["tabled"] += len(todo)
                continue
            closed[i] = True
            kP = shape.combos[i]
            f_v = shape.tables(kP)[0][0] if shape.n_cells else np.zeros((0, 1))
            if len(shape.binary_cols) == 0:  # nothing left to choose: the value is the bound's
                kC = np.zeros(0, dtype=np.int64)
                # a lower bound, exact unless the combination is borderline (then the gap goes
                # to the reference, below, not ERROR)
                lower[i], gap = self.take(kP, kC, None, f_v, borderline[i], "the tables")
                open_borderline |= gap
                continue
            # built when first needed: for the search's multipliers (the LP's prices), then for
            # HiGHS if the search hands the combination on
            subproblem = functools.cache(lambda kP=kP, f_v=f_v: build_subproblem(shape, kP, f_v))
            if self.oracle.max_search_nodes > 0:  # the compiled search first
                found = search_combination(
                    shape,
                    plan,
                    kP,
                    f_v,
                    self.best_value,
                    max_nodes=self.oracle.max_search_nodes,
                    budget=self.budget,
                    multipliers=lambda: lp_multipliers(subproblem(), self.budget),
                )
                self.stats["searched"] += 1
                self.stats["search_nodes"] += found.nodes
                threshold = self.best_value
                if found.kC is not None:
                    model, gap = self.take(kP, found.kC, found.value, f_v, borderline[i], "search")
                    open_borderline |= gap
                if found.outcome in ("solved", "cutoff"):
                    # solved: its minimum (the search's sum or the tables', the lesser);
                    # cutoff: nothing below the incumbent it was given
                    done = min(found.value, model) if found.outcome == "solved" else threshold
                    lower[i] = max(lower[i], done)
                    self.stats[found.outcome] += 1
                    continue
                if found.outcome == "time_limit":
                    status = Status.TIME_LIMIT
                    notes.append(f"time limit in the search of k_P={kP.tolist()}")
                    break
                self.stats["search_handed"] += 1  # node_limit: HiGHS takes it (below)
            sub = subproblem()
            self.stats["max_breakpoints"] = max(self.stats["max_breakpoints"], sub.n_breakpoints)
            cutoff = None
            if math.isfinite(self.best_value):
                cutoff = self.best_value + 1e-6 * max(1.0, abs(self.best_value))
            res = solve_subproblem(sub, cutoff=cutoff, budget=self.budget)
            self.stats["subproblems"] += 1
            self.stats["sub_seconds"] += res.seconds
            self.stats["max_sub_seconds"] = max(self.stats["max_sub_seconds"], res.seconds)
            if res.outcome == "error":
                raise HandOff(
                    f"HiGHS failed on the subproblem of k_P={kP.tolist()} ({res.status_name})"
                )
            if res.kC is not None and res.outcome in ("solved", "time_limit"):
                _, gap = self.take(kP, res.kC, res.value, f_v, borderline[i], "HiGHS")
                open_borderline |= gap
            lower[i] = max(lower[i], res.bound)
            if res.outcome == "time_limit":
                status = Status.TIME_LIMIT
                notes.append(f"time limit in the subproblem of k_P={kP.tolist()}")
                break
            self.stats["cutoff" if res.outcome == "cutoff" else "solved"] += 1
        bound = float(min(self.best_value, lower.min()))
        if status is Status.OPTIMAL and self.best_value - bound > OBJECTIVE_TOL:
            if open_borderline:
                raise HandOff("scores at the margin left a gap")
            status = Status.ERROR  # pragma: no cover - every combination was closed
            notes.append(f"closed every combination but bound {bound!r} < {self.best_value!r}")
        stats = StructuredStats(
            **shape.describe(),
            **self.stats,
            combinations_pruned_by_bound=int(nv - closed.sum()),
        )
        return certify(
            self.problem,
            self.best_w,
            status=status,
            bound=bound,
            seconds=time.perf_counter() - self.start,
            backend=self.oracle.name,
            threads=threads,
            solver_objective=self.best_model,
            message=" | ".join([*notes, thread_note] if thread_note else notes),
            stats=(stats,),
        )


__all__ = [
    "BOUNDING_SHARE",
    "MAX_SEARCH_NODES",
    "TABLE_BATCH",
    "WORK_ENTRIES_PER_SECOND",
    "StructuredOracle",
    "has_noise",
]
