"""The routing table of the oracle layer: for each route and each kind of problem, which
strategies run, in what order, on what share of the budget (CVXPY's solving chain: one function,
``chain_for``, maps a problem's class to a chain).

A ROUTE is what a config or a caller names (``oracle=structured``, ``make_oracle("auto")``, the
data player's ``conjunctions_highs``). A STRATEGY is one oracle class doing one thing
(``STRATEGIES``): the structured search, the window search, HiGHS or Gurobi on the reference
formulation, enumeration, the convex solver, the synthetic-data MILPs and searches. Strategies
never build other oracles; every hand-over between them is a row of ``ROUTES`` below, and
oracle classes are built only here and in ``oracles.routing.registry`` (which names the routes).

Every strategy and every route keeps one contract (``oracles.contract.certificate.Oracle``):
``solve(problem, budget) -> Solution``. The route is the one place a budget is made from a time
limit; below it the budget is the only form of time.

How a problem is routed (``Route.solve``):

1. one ``Budget`` (``oracles.contract.budget``) is made from the route's time limit and threads (unless
   the caller gives one): the solve's deadline, checked before every piece of work and split
   between the chain's steps;
2. the problem is classified (``classify``) by its type: a mechanism's ``Problem`` by its domain
   (for the structured route by its shape too: ``StructuredOracle.shape``; a problem without it
   is classified by its domain and its noise, and the reason goes into the certificate's
   ``fallback``), OPSamp's surrogate, the data player's record or round, RSPM's selection. The
   row of (route, class) is the chain: OPSamp's surrogate goes to the convex solver on every
   route, the selection beside a data player to that data player's kind;
3. the chain of its (route, class) row runs (``Route.run``). A step runs on ``share`` of what is
   left of the budget; the first starts the chain, every other is reached from the step
   before it in one of four ways:

   * ``unavailable``: the step before could not run here (``SolverUnavailableError`` before it
     ran: gurobipy missing, no licence, the licence's size limit); fallback text
     ``gurobi: <why> -> highs``. Only that error falls back, and only before the backend ran:
     which backend solves then depends on the data through the model's size alone; a backend
     that ran and did not certify is the answer (SPEC section 8);
   * ``handed over``: the step before raised ``HandOff`` (the structured search's subproblem
     failed in HiGHS or disagreed with its tables, or scores at the margin left a gap); the
     next step solves the problem on what is left, fallback ``structured: <why> -> highs``;
   * ``stopped``: the step before is a search that stopped without proving its point (status
     TIME_LIMIT); when more than ``min_seconds`` are left the next step solves the problem and
     the two are joined: the better point, the larger of the two proven bounds (each is a lower
     bound on the same minimum), certified only if the point meets it (``certify``). The
     search's backend stays, fallback ``search stopped; reference on auto``. A window search
     that kept its state (a route with a carry directory: every sweep's) first goes on from it
     on the rest of the budget when its own price fits there (``Route.go_on``, ``goes_on``:
     GO_ON_MARGIN x its likely CPU seconds to certify, and the estimate's high end, within the
     CPU left at the share it had); the reference follows only a search that did not go on or
     stopped again, and ``RouteStats.went_on`` says why it went on;
   * ``raced``: the step runs beside the step before from the start, in another process
     (``Route.race``, ``oracles.routing.race``): the one that certifies first stops the other, and two
     uncertified answers are joined as after a stop, fallback ``raced with auto``.

A step may name another route (``auto``: the reference formulation on the route's backends in
order, ``Route.prefer``), run whole. The certificate's ``fallback`` records the chain taken, as
the oracles recorded it before the table existed; its ``seconds`` are the whole route's.

Privacy (SPEC section 8): the route a problem takes depends on the problem's class (its domain,
whether it carries noise, its shape: the data's size and structure, never the noise's values)
and on three events only, the hand-overs the oracles made before the table existed: a backend
that cannot run (before it runs), a structured search that cannot finish exactly, and a search
that stops (and whether its price fits the rest of its budget). In a race (``raced``) which
member ends first depends on time, and changes which proof is returned, not what it proves. A
certificate is a proof whatever the route (``oracles.contract.certificate.certify``), never a
retry with other noise.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from core.problem import (
    ConjunctionBatch,
    ConjunctionProblem,
    ConvexProblem,
    IntegerGrid,
    Problem,
    SelectionProblem,
)
from core.validation import check_choice
from oracles.contract.certificate import (
    OBJECTIVE_TOL,
    Certificate,
    HandOff,
    OracleError,
    Solution,
    Status,
    certify,
    counts_cpu,
)
from oracles.contract.budget import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, Budget
from oracles.synthetic.data_search import SearchConjunctionOracle
from oracles.synthetic.query_player import (
    EnumerationSelectionOracle,
    HighsSelectionOracle,
    SearchSelectionOracle,
)
from oracles.synthetic.data_player import EnumerationConjunctionOracle, HighsConjunctionOracle
from oracles.convex import ConvexOracle
from oracles.enumerate import EnumerationOracle
from oracles.mip.gurobi import GurobiOracle
from oracles.mip.highs import HighsOracle
from oracles.mip.formulation import DEFAULT_STRICT_EPS, SolverUnavailableError
from oracles.routing.race import GRACE, Entry, RaceStop, Rival
from oracles.contract.stats import (
    CarryStats,
    ClusterStats,
    RouteStats,
    Stats,
    TreeStats,
    WindowStats,
    merged,
)
from oracles.structured.oracle import StructuredOracle, has_noise
from oracles.structured.shape import Shape, ShapeMismatch
from oracles.window.checkpoint import Attempt, CarryStore, problem_key
from oracles.window.engine import Executor
from oracles.window.oracle import WindowOracle

# --- the problem classes -----------------------------------------------------------------------

#: An IntegerGrid whose data have the structured oracle's shape (one-hot cells, continuous
#: columns few enough to bound every combination in the time limit: ``oracles.structured.oracle``).
SHAPED_GRID = "shaped grid"
#: An IntegerGrid without that shape whose problem carries OPDisc's or RSPM's noise (generic
#: tables: many continuous columns; ``oracles.structured.oracle.has_noise``).
NOISY_GRID = "generic grid with noise"
#: An IntegerGrid without that shape and without noise: the exact 0/1 ERM.
EXACT_GRID = "generic grid without noise"
#: Any IntegerGrid (a route that does not read the shape).
GRID = "grid"
#: OPSamp's 0/1 problem over a continuous Box.
BOX = "box"
#: Any Problem (the reference formulation takes both domains).
ANY = "any problem"
#: OPSamp's surrogate problem (``core.problem.ConvexProblem``).
CONVEX = "convex surrogate"
#: The data player's best record (``core.problem.ConjunctionProblem``).
CONJUNCTIONS = "best record"
#: The data player's best records of one round (``core.problem.ConjunctionBatch``).
ROUND = "best records of a round"
#: RSPM's selection of a conjunction (``core.problem.SelectionProblem``).
SELECTION = "selection"
#: The classes of a mechanism's ``Problem``: what ``ANY`` matches (``GRID``: the grid ones).
GRID_CLASSES = (GRID, SHAPED_GRID, NOISY_GRID, EXACT_GRID)
PROBLEM_CLASSES = (*GRID_CLASSES, BOX)
#: A row's route that matches every route (OPSamp's surrogate on whatever route a sweep names).
EVERY = "*"

# --- how a step is reached ---------------------------------------------------------------------

FIRST = "first"
UNAVAILABLE = "unavailable"
HANDED_OVER = "handed over"
STOPPED = "stopped"
RACED = "raced"
WHEN = (FIRST, UNAVAILABLE, HANDED_OVER, STOPPED, RACED)


@dataclass(frozen=True)
class Step:
    """One member of a chain: ``strategy`` (a name of ``STRATEGIES``, else a route run whole),
    reached ``when`` (module docstring), on ``share`` of what is left of the budget, and only
    with more than ``min_seconds`` left (else the chain ends before it)."""

    strategy: str
    when: str = FIRST
    share: float = 1.0
    min_seconds: float = 0.0

    def __str__(self) -> str:
        text = self.strategy
        if self.share < 1.0:
            text += f" ({self.share:.0%} of the time)"
        if self.when != FIRST:
            text = f"{self.when}: {text}"
        if self.min_seconds:
            text += f" if > {self.min_seconds:g} s left"
        return text


@dataclass(frozen=True)
class Row:
    """The chain ``route`` runs on a problem of class ``problem``.

    Its options:

    * ``default``: ``route`` is the one a problem of this class takes when its caller names
      none (``route_for``: the pipeline's ``oracle.name``, the estimators' ``oracle=``, the
      exact error of a class of conjunctions);
    * ``backend``: the setting that picks this row among the rows of its class (the data
      player's ``backend``: ``route_for(CONJUNCTIONS, backend="highs")``);
    * ``preferred``: the chain's steps are the route's ``prefer`` backends in that order (the
      ``auto`` route: the reference formulation on the first backend that can run), the
      first reached ``first`` and each other when the one before is ``unavailable``.
    """

    route: str
    problem: str
    chain: tuple[Step, ...]
    default: bool = False
    backend: str | None = None
    preferred: bool = False

    def text(self) -> str:
        """The chain as docs/oracles.md writes it: its steps joined by arrows."""
        return " -> ".join(str(step) for step in self.chain)


#: The reference formulation's backends in order: Gurobi when its licence takes the model, else
#: HiGHS (the ``auto`` route; ``prefer=`` / ``reference=`` reorder or restrict them).
REFERENCE = ("gurobi", "highs")
#: The share of a structured or window route's budget its window search may take: the rest is
#: the reference formulation's when the search stops.
SEARCH_SHARE = 0.8
#: A stopped search is handed to the reference formulation only with this much time left.
MIN_REFERENCE_SECONDS = 1.0
#: A window search stopped at its share goes on from its kept state (``Route.go_on``) when
#: GO_ON_MARGIN x its likely CPU seconds to certify, and its estimate's high end, fit in the CPU
#: the rest of the budget gives it at the CPU share it had. In the 600 s carry-on on breast
#: cancer at epsilon 10 (docs/results/carry_order.md) the reference formulation's rest certified
#: none of the searches it followed, while one (opdisc run 9) was priced at 34 CPU s with about
#: 120 s left. The margin is the sweep's (``pipeline.sweep.progress.PRICE_MARGIN``).
GO_ON_MARGIN = 2.0
#: The least CPU share a go-on plans with (a search measured on a starved instant).
GO_ON_LEAST_SHARE = 0.05

#: THE routing table: (route, problem class, chain). docs/oracles.md shows it; its test checks
#: that the doc names exactly these routes.
ROUTES: tuple[Row, ...] = (
    Row(
        "structured",
        SHAPED_GRID,
        (Step("structured"), Step("auto", HANDED_OVER)),
        default=True,
    ),
    Row(
        "structured",
        NOISY_GRID,
        (
            Step("window", share=SEARCH_SHARE),
            Step("auto", STOPPED, min_seconds=MIN_REFERENCE_SECONDS),
        ),
        default=True,
    ),
    Row("structured", EXACT_GRID, (Step("auto"),), default=True),
    Row("structured", BOX, (Step("auto"),), default=True),
    Row(
        "window",
        GRID,
        (
            Step("window", share=SEARCH_SHARE),
            Step("auto", STOPPED, min_seconds=MIN_REFERENCE_SECONDS),
        ),
    ),
    Row("portfolio", GRID, (Step("window"), Step("auto", RACED))),
    Row("auto", ANY, (Step("gurobi"), Step("highs", UNAVAILABLE)), preferred=True),
    Row("highs", ANY, (Step("highs"),)),
    Row("gurobi", ANY, (Step("gurobi"),)),
    Row("enumerate", GRID, (Step("enumerate"),)),
    Row("convex", CONVEX, (Step("convex"),), default=True),
    Row(EVERY, CONVEX, (Step("convex"),)),
    Row("conjunctions_highs", CONJUNCTIONS, (Step("conjunctions_highs"),), backend="highs"),
    Row("conjunctions_highs", ROUND, (Step("conjunctions_highs"),), backend="highs"),
    Row("conjunctions_highs", SELECTION, (Step("selection_search"),), backend="highs"),
    Row(
        "conjunctions_enumerate",
        CONJUNCTIONS,
        (Step("conjunctions_enumerate"),),
        backend="enumerate",
    ),
    Row("conjunctions_enumerate", ROUND, (Step("conjunctions_enumerate"),), backend="enumerate"),
    Row(
        "conjunctions_enumerate",
        SELECTION,
        (Step("selection_enumerate"),),
        backend="enumerate",
    ),
    Row(
        "conjunctions_search",
        CONJUNCTIONS,
        (Step("conjunctions_search"),),
        default=True,
        backend="search",
    ),
    Row(
        "conjunctions_search",
        ROUND,
        (Step("conjunctions_search"),),
        default=True,
        backend="search",
    ),
    Row("conjunctions_search", SELECTION, (Step("selection_search"),), backend="search"),
    Row("selection", SELECTION, (Step("selection_search"),), default=True),
)

#: The strategies, by the name a step gives: one oracle class each.
STRATEGIES: dict[str, type] = {
    "structured": StructuredOracle,
    "window": WindowOracle,
    "highs": HighsOracle,
    "gurobi": GurobiOracle,
    "enumerate": EnumerationOracle,
    "convex": ConvexOracle,
    "conjunctions_highs": HighsConjunctionOracle,
    "conjunctions_enumerate": EnumerationConjunctionOracle,
    "conjunctions_search": SearchConjunctionOracle,
    "selection_search": SearchSelectionOracle,
    "selection_enumerate": EnumerationSelectionOracle,
    "selection_highs": HighsSelectionOracle,
}


def accepts(strategy: str) -> tuple[type, ...]:
    """The problem types the strategy ``strategy`` solves: its class's ``accepts`` (CVXPY's
    ``accepts``), checked against ``ROUTES`` by tests/oracles/routing/test_routes.py."""
    return STRATEGIES[strategy].accepts


#: The type of a problem of each class (``classify`` reads it back; ``PROBLEM_CLASSES`` are a
#: mechanism's ``Problem``).
CLASS_TYPES: dict[str, type] = {
    **dict.fromkeys(PROBLEM_CLASSES, Problem),
    CONVEX: ConvexProblem,
    CONJUNCTIONS: ConjunctionProblem,
    ROUND: ConjunctionBatch,
    SELECTION: SelectionProblem,
}

#: The routes, in the table's order.
ROUTE_NAMES: tuple[str, ...] = tuple(
    dict.fromkeys(row.route for row in ROUTES if row.route != EVERY)
)


def _matches(row: Row, route: str, problem_class: str) -> bool:
    """Whether ``row`` is the chain of ``route`` on a problem of ``problem_class``."""
    if row.route not in (route, EVERY):
        return False
    if row.problem == ANY:
        return problem_class in PROBLEM_CLASSES
    if row.problem == GRID:
        return problem_class in GRID_CLASSES
    return row.problem == problem_class


def chain_for(route: str, problem_class: str, prefer: tuple[str, ...] = REFERENCE) -> tuple:
    """The chain ``route`` runs on a problem of ``problem_class`` (its row of ``ROUTES``); the
    ``auto`` route's backends in the order of ``prefer``. OracleError when the route has none."""
    if route not in ROUTE_NAMES:
        raise ValueError(f"unknown route {route!r}; known: {list(ROUTE_NAMES)}")
    for row in ROUTES:
        if _matches(row, route, problem_class):
            if not row.preferred:
                return row.chain
            return tuple(
                Step(name, FIRST if i == 0 else UNAVAILABLE) for i, name in enumerate(prefer)
            )
    known = [row.problem for row in ROUTES if row.route == route]
    needs = "an IntegerGrid" if GRID in known else " or ".join(known)
    raise OracleError(f"the {route} route takes {needs}, not a {problem_class} problem")


def route_for(problem_class: str, backend: str | None = None) -> str:
    """The route a problem of ``problem_class`` takes when its caller names no route: the
    table's ``default`` row for it, or with ``backend`` the row of that ``backend`` option
    (``Row``). ValueError naming the backends the class has when none matches."""
    for row in ROUTES:
        if row.route == EVERY or not _matches(row, row.route, problem_class):
            continue
        if (row.default and backend is None) or (backend is not None and row.backend == backend):
            return row.route
    known = sorted({row.backend for row in ROUTES if row.problem == problem_class} - {None})
    raise ValueError(
        f"no route for a {problem_class} problem"
        + (f" with backend {backend!r}; known: {known}" if backend is not None else "")
    )


#: The route of a mechanism's problem when its caller names none: the pipeline's default
#: ``oracle.name`` (``pipeline.config.OracleConfig``) and the estimators' ``oracle``.
DEFAULT_ROUTE = route_for(SHAPED_GRID)


def steps_of(chain: tuple[Step, ...], problem_class: str, prefer=REFERENCE) -> tuple[str, ...]:
    """Every strategy ``chain`` may run on a problem of ``problem_class``, a step that names a
    route read through its own chain (``chain_for``), in the order of the chain."""
    names: list[str] = []
    for step in chain:
        if step.strategy in STRATEGIES:
            names.append(step.strategy)
        else:
            inner = chain_for(step.strategy, problem_class, prefer)
            names.extend(steps_of(inner, problem_class, prefer))
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True, eq=False)
class Classified:
    """A problem's class for a route (``classify``), and ``reason`` why it is not the route's
    first choice when the route asked (the certificate's fallback starts with it)."""

    problem_class: str
    reason: str = ""
    #: the problem's shape, read to classify it (the structured route's SHAPED_GRID): the
    #: structured search is given it (``Route._step``), not a second reading
    shape: Shape | None = None


#: The class of each kind of problem that is not a mechanism's ``Problem``.
KINDS: tuple[tuple[type, str], ...] = (
    (ConvexProblem, CONVEX),
    (ConjunctionProblem, CONJUNCTIONS),
    (ConjunctionBatch, ROUND),
    (SelectionProblem, SELECTION),
)


def classify(route: str, problem: Any, structured: StructuredOracle, budget: Budget) -> Classified:
    """The class of ``problem`` for ``route`` (module docstring, step 2). Only the structured
    route reads the shape, on ``budget``'s time limit (``StructuredOracle.shape``), and the
    class carries it to the search that follows (``Classified.shape``)."""
    if not isinstance(problem, Problem):
        for kind, problem_class in KINDS:
            if isinstance(problem, kind):
                return Classified(problem_class)
        raise OracleError(f"the {route} route cannot solve a {type(problem).__name__}")
    if any(row.route == route and row.problem == SHAPED_GRID for row in ROUTES):
        try:
            return Classified(SHAPED_GRID, shape=structured.shape(problem, budget))
        except ShapeMismatch as why:
            if not isinstance(problem.domain, IntegerGrid):
                return Classified(BOX, reason=str(why))
            return Classified(NOISY_GRID if has_noise(problem) else EXACT_GRID, reason=str(why))
    return Classified(GRID if isinstance(problem.domain, IntegerGrid) else BOX)


@dataclass(frozen=True, eq=False)
class Plan:
    """The chain a route runs on one problem (``Route.plan``): the problem's class and the
    steps of its row."""

    kind: Classified
    chain: tuple[Step, ...]
    prefer: tuple[str, ...] = REFERENCE

    @property
    def strategies(self) -> tuple[str, ...]:
        """Every strategy the chain may run (``steps_of``)."""
        return steps_of(self.chain, self.kind.problem_class, self.prefer)


def chain_text(solution: Solution) -> str:
    """The chain a solution took, as a certificate's ``fallback`` writes what followed a
    hand-over: its backend, or its own fallback chain ending there, or its backend and then the
    fallback that joined it."""
    c = solution.certificate
    if c.fallback is None:
        return c.backend
    if c.fallback.endswith(c.backend):
        return c.fallback
    return f"{c.backend} -> {c.fallback}"


def check_prefer(prefer: Any) -> tuple[str, ...]:
    """``prefer`` (the reference's backends) as a tuple of distinct names of ``REFERENCE``, else
    ValueError quoting it."""
    names = (prefer,) if isinstance(prefer, str) else tuple(prefer)
    unknown = [p for p in names if p not in REFERENCE]
    if not names or unknown or len(set(names)) != len(names):
        raise ValueError(
            f"prefer must be distinct names from {sorted(REFERENCE)}, found {prefer!r}"
        )
    return names


@dataclass(frozen=True)
class Route:
    """An oracle that solves by its route's chains (module docstring): what ``make_oracle``
    returns for the routes of more than one strategy.

    Args:
        name: the route (a name of ``ROUTE_NAMES``).
        time_limit, threads: the limits of ``budget()``, each solve's budget from now
            (``oracles.contract.budget``), checked by ``oracles.routing.registry.make_oracle``; None: no
            deadline.
        strategies: the strategies the chains may run, with their options, by their name in
            ``STRATEGIES`` (a missing one runs with its defaults).
        prefer: the reference formulation's backends in order (the ``auto`` step).
        fallback: False ends a chain at a stopped search (the search alone).
        carry: the directory of the problems' kept states and attempts
            (``oracles.window.checkpoint``; the route's window search is built with the same):
            a solve of a mechanism's problem on an IntegerGrid reads the attempts made before
            it and records its own, whatever strategy ends it (``solve``); None: no account.
    """

    name: str
    time_limit: float | None = DEFAULT_TIME_LIMIT
    threads: int = DEFAULT_THREADS
    strategies: dict[str, Any] = field(default_factory=dict)
    prefer: tuple[str, ...] = REFERENCE
    fallback: bool = True
    carry: str | None = None

    def strategy(self, name: str) -> Any:
        """The strategy ``name`` with this route's options."""
        found = self.strategies.get(name)
        return found if found is not None else STRATEGIES[name]()

    def budget(self) -> Budget:
        """One solve's budget on this route's time limit and threads, from now (the one place
        a budget is made from a configured limit; ``oracles.contract.certificate.Configured``)."""
        return Budget.from_limit(self.time_limit, self.threads)

    def solve(self, problem: Any, budget: Budget) -> Solution:
        """``problem`` by its chain, on ``budget`` (a caller's own, or ``self.budget()``); with a
        carry directory, one attempt of the problem's account (``account``): the attempts
        before it are read first, and this one is recorded whatever its chain returns (or
        raises: then with the CPU this process spent, so the next attempt counts it)."""
        store = self.store(problem)
        if store is None:
            return self._solve(problem, budget)
        before = store.attempts(problem)  # a file it cannot read stops here, before any work
        kept = store.summary(problem)
        cpu, start = time.process_time(), time.perf_counter()
        try:
            solution = self._solve(problem, budget)
        except Exception as error:  # what it spent counts too (this process's CPU), then it fails
            spent = (time.process_time() - cpu, time.perf_counter() - start)
            failed = f"failed ({type(error).__name__})"
            number = (before[-1].number if before else 0) + 1
            store.record(problem, (*before, Attempt(number, 0, *spent, failed, False, failed)))
            raise
        return account(store, problem, before, kept, solution)

    def store(self, problem: Any) -> CarryStore | None:
        """Where this solve's account is kept: the carry directory, for a mechanism's problem
        on an IntegerGrid (what a state is keyed by, ``problem_key``); else None."""
        if self.carry is None or not isinstance(problem, Problem):
            return None
        return CarryStore(self.carry) if isinstance(problem.domain, IntegerGrid) else None

    def plan(self, problem: Any, budget: Budget) -> Plan:
        """Which chain runs ``problem`` on this route (module docstring, steps 1 and 2): its
        class and that class's row. The one answer, which ``solve`` runs and a preflight
        reads (``pipeline.sweep.preflight.shape_tree``)."""
        kind = classify(self.name, problem, self.strategy("structured"), budget)
        return Plan(kind, chain_for(self.name, kind.problem_class, self.prefer), self.prefer)

    @counts_cpu
    def _solve(self, problem: Any, budget: Budget) -> Solution:
        start = time.perf_counter()
        plan = self.plan(problem, budget)
        kind = plan.kind
        solution = self.run(plan.chain, problem, budget, kind)
        if kind.reason:  # the route's first choice declined the problem: say why
            solution = handed_on(
                problem, solution, f"{self.name}: {kind.reason} -> {chain_text(solution)}"
            )
        cert = dataclasses.replace(solution.certificate, seconds=time.perf_counter() - start)
        return dataclasses.replace(solution, certificate=cert)

    def run(
        self, chain: tuple[Step, ...], problem: Any, budget: Budget, kind: Classified
    ) -> Solution:
        """The chain's first step, and those reached from it (module docstring, step 3)."""
        first = 1
        while first < len(chain) and chain[first].when == UNAVAILABLE:
            first += 1
        group, rest = chain[:first], chain[first:]
        following = rest[0] if rest and self._follows(rest[0]) else None
        if following is not None and following.when == RACED:
            return self.race(group[0], following, problem, budget)
        try:
            solution = self._first_that_runs(group, problem, budget, kind)
        except HandOff as why:
            if following is None or following.when != HANDED_OVER:
                raise
            handed = self.run(rest, problem, budget, kind)
            return handed_on(problem, handed, f"{group[0].strategy}: {why} -> {chain_text(handed)}")
        stopped = solution.certificate.status is Status.TIME_LIMIT
        if following is not None and following.when == STOPPED and stopped:
            solution = self.go_on(group[0], problem, budget, solution)
            if solution.certificate.status is not Status.TIME_LIMIT:
                return solution
            left = budget.left()
            if left > following.min_seconds:
                reference = self.run(rest, problem, budget, kind)
                return join(
                    problem,
                    solution,
                    reference,
                    f"search stopped; reference on {following.strategy}",
                )
            # said in the certificate: a user (or a test on a loaded machine) sees why the
            # reference did not follow
            c = solution.certificate
            note = (
                f"not run: {max(left, 0.0):.2g} s left, it needs more than "
                f"{following.min_seconds:g} s"
            )
            skipped = RouteStats(reference_skipped=note)
            return dataclasses.replace(solution, certificate=c.with_stats(skipped))
        return solution

    def go_on(self, step: Step, problem: Problem, budget: Budget, solution: Solution) -> Solution:
        """A window search ``step`` that stopped (``solution``) and kept its state, on the rest of
        ``budget`` from that state for as long as its price fits the rest (``goes_on``); else
        ``solution`` as it is, for the reference formulation. Every go-on is one search with
        the stopped one (``gone_on``)."""
        if step.strategy != "window" or budget.node_limit is not None:
            return solution  # a node limit: the caller bounded the solve's work by its nodes
        while True:
            c = solution.certificate
            carried = c.stat(CarryStats)
            if carried is None or carried.carry is None or c.status is not Status.TIME_LIMIT:
                return solution  # no kept state to go on from (a route without a carry store)
            why = goes_on(c, budget.left(), budget.threads)
            if why is None:
                return solution
            went = self.strategy(step.strategy).solve(problem, budget)
            window = went.certificate.stat(WindowStats)
            solution = gone_on(solution, went, why)
            if window is None or window.nodes == 0:  # no progress: the budget is spent
                return solution

    def race(self, first: Step, rival: Step, problem: Problem, budget: Budget) -> Solution:
        """``first`` (the window search) here and ``rival`` (a route, run whole) in another
        process, side by side (``oracles.routing.race``): the rival holds half the budget's CPUs (at
        least one), the search the rest (at least one); the one that certifies first stops the
        other, and two uncertified answers are joined."""
        rival_threads = max(1, budget.threads // 2)
        stop = RaceStop()
        entry = Entry(
            # the rival keeps no account: this route's solve records the attempt
            dataclasses.replace(
                self, name=rival.strategy, strategies=self._reference(), carry=None
            ),
            problem,
            budget.with_threads(rival_threads),
        )
        search_budget = budget.with_threads(max(1, budget.threads - rival_threads))
        with Rival(entry, on_certified=lambda: stop.stop(f"{rival.strategy} certified")) as other:
            searched = self.strategy(first.strategy).solve(problem, search_budget, stop=stop)
            if searched.certificate.certified:
                return handed_on(problem, searched, f"raced with {rival.strategy}: search first")
            answer = other.result(until=budget.deadline + GRACE)
            why = other.error or ("not started" if not other.started else "no answer")
        if answer is None:
            message = f"raced with {rival.strategy}: {why}"
            return handed_on(problem, searched, message)
        return join(problem, searched, answer, f"raced with {rival.strategy}")

    def _reference(self) -> dict[str, Any]:
        """The reference formulation's backends among this route's strategies (what a rival
        process receives: plain options, picklable)."""
        return {name: self.strategies[name] for name in REFERENCE if name in self.strategies}

    def _follows(self, step: Step) -> bool:
        """Whether this route runs ``step`` at all (``fallback=False`` drops a search's
        hand-over)."""
        return self.fallback or step.when != STOPPED

    def _first_that_runs(self, group, problem, budget: Budget, kind: Classified) -> Solution:
        """The first step of ``group`` that can run; the ones that could not in ``fallback``."""
        reasons: list[str] = []
        last: SolverUnavailableError | None = None
        for step in group:
            if step.strategy not in STRATEGIES and len(group) == 1:
                return self._step(step, problem, budget, kind)  # it says itself what could not run
            try:
                solution = self._step(step, problem, budget, kind)
            except SolverUnavailableError as err:
                reasons.append(f"{step.strategy}: {err}")
                last = err
                continue
            if not reasons:
                return solution
            fallback = " -> ".join([*reasons, step.strategy])
            return Solution(
                solution.w, dataclasses.replace(solution.certificate, fallback=fallback)
            )
        names = tuple(step.strategy for step in group)
        raise SolverUnavailableError(
            f"no backend of {names!r} could run: {'; '.join(reasons)}"
        ) from last

    def _step(self, step: Step, problem, budget: Budget, kind: Classified) -> Solution:
        """One step on its share of what is left: a strategy, or a route run whole."""
        if step.share < 1.0:
            budget = budget.share(step.share)
        if step.strategy not in STRATEGIES:  # a route, run whole
            return self.run(
                chain_for(step.strategy, kind.problem_class, self.prefer), problem, budget, kind
            )
        strategy = self.strategy(step.strategy)
        if step.strategy == "structured" and kind.shape is not None:
            return strategy.search(problem, kind.shape, budget)  # the shape classified by
        return strategy.solve(problem, budget)


def account(
    store: CarryStore,
    problem: Problem,
    before: tuple[Attempt, ...],
    kept: str | None,
    solution: Solution,
) -> Solution:
    """``solution``, one attempt of ``problem``, with the account of every attempt in its
    ``CarryStats`` (``oracles.window.checkpoint``): ``before``, the attempts recorded before it,
    and ``kept``, the window state kept when it started (``CarryStore.summary``). It says what
    this attempt started from: the kept state, when its window search resumed it (wherever the
    chain reached the search), else from scratch on the backend that answered (and why the kept
    state was not used: not needed when it certified, not reached when no window search ran).
    Certified, the problem's state and attempts are removed (``CarryStore.finish``: nothing is
    resumed or counted twice later); else this attempt is recorded, with the state it kept."""
    c = solution.certificate
    number = (before[-1].number if before else 0) + 1
    window, searched = c.stat(WindowStats), c.stat(CarryStats)  # the window search's own
    state_of = next((a.number for a in reversed(before) if a.kept is not None), None)
    of = f" of attempt {state_of}" if state_of is not None else ""
    if window is not None and window.carried_open_nodes is not None:
        n = window.carried_open_nodes  # (a state kept beside no header: its nodes alone)
        what = kept or f"{n:,} open node{'' if n == 1 else 's'}"
        started = f"kept state{of} ({what})"
    else:  # the window search when it ran (whichever backend the route's answer names)
        started = f"from scratch on {'window' if window is not None else c.backend}"
        if kept is not None:
            why = "not needed" if c.certified else "not reached" if window is None else "not used"
            started += f" (the kept window state{of} {why})"
    nodes = window.nodes if window is not None else 0
    carried_nodes = sum(a.nodes for a in before)
    carried_cpu = float(sum(a.cpu_seconds for a in before))
    carried_seconds = float(sum(a.seconds for a in before))
    path = None
    if c.certified:
        store.finish(problem)
    else:
        wrote = searched is not None and searched.carry is not None  # this attempt's search
        left = store.summary(problem)
        this = Attempt(
            number,
            nodes,
            c.cpu_seconds,
            c.seconds,
            c.backend,
            False,
            started,
            left if wrote else None,
        )
        store.record(problem, (*before, this))
        path = str(store.path(problem_key(problem))) if left is not None else None
    stats = CarryStats(
        number,
        carried_nodes,
        carried_cpu,
        carried_seconds,
        carried_nodes + nodes,
        carried_cpu + c.cpu_seconds,
        carried_seconds + c.seconds,
        carry=path,
        started_from=started,
    )
    return dataclasses.replace(solution, certificate=c.with_stats(stats))


def goes_on(certificate: Certificate, left: float, threads: int) -> str | None:
    """Why a window search that stopped with ``certificate`` goes on from its kept state on the
    ``left`` seconds of its budget on ``threads`` CPUs, or None when it does not: its price
    (``TreeStats``: the tree left over the nodes a CPU second it made), GO_ON_MARGIN x likely
    and the high end, fits in the CPU seconds left at the CPU share the search had (at most
    one a thread, at least GO_ON_LEAST_SHARE)."""
    tree = certificate.stat(TreeStats)
    if tree is None or not math.isfinite(left):
        return None
    likely, high = tree.cpu_seconds(), tree.cpu_seconds_high()  # nan without a rate
    held = certificate.seconds * max(certificate.threads, 1)
    share = certificate.cpu_seconds / held if held > 0 else 1.0
    share = min(max(share, GO_ON_LEAST_SHARE), 1.0)
    can = max(left, 0.0) * threads * share
    need = max(GO_ON_MARGIN * likely, high)
    if not (math.isfinite(need) and need <= can):
        return None
    return (
        f"went on from its kept state: about {likely:.3g} CPU s to certify "
        f"(high {high:.3g}) with {can:.3g} CPU s left"
    )


def gone_on(stopped: Solution, went: Solution, why: str) -> Solution:
    """A window search that stopped (``stopped``) and went on from its kept state (``went``,
    its answer: the better point of both, the larger bound): one search, its nodes, leaves and
    CPU the two steps' sums, started as the first started (``carried_open_nodes``), the go-on
    said in ``RouteStats.went_on``."""
    first, then = stopped.certificate.stat(WindowStats), went.certificate.stat(WindowStats)
    c = went.certificate
    records: list[Stats] = [RouteStats(went_on=why)]
    if first is not None and then is not None:
        records.append(
            dataclasses.replace(
                then,
                incumbent=first.incumbent,
                lagrange_bound=first.lagrange_bound,
                nodes=first.nodes + then.nodes,
                leaves=first.leaves + then.leaves,
                worker_cpu_seconds=first.worker_cpu_seconds + then.worker_cpu_seconds,
                remote_cpu_seconds=first.remote_cpu_seconds + then.remote_cpu_seconds,
                carried_open_nodes=first.carried_open_nodes,
            )
        )
    seconds = stopped.certificate.seconds + c.seconds
    return dataclasses.replace(
        went, certificate=dataclasses.replace(c.with_stats(*records), seconds=seconds)
    )


def handed_on(problem: Problem, solution: Solution, fallback: str) -> Solution:
    """``solution`` of the step a problem was handed on to, certified again as the route's
    answer (the same certificate) with the chain ``fallback``."""
    c = solution.certificate
    return certify(
        problem,
        solution.w,
        status=c.status,
        bound=c.bound,
        seconds=c.seconds,
        backend=c.backend,
        threads=c.threads,
        solver_objective=c.solver_objective,
        fallback=fallback,
        message=c.message,
        stats=c.stats,
    )


#: The window search's records (``oracles.contract.stats``), which ``join`` keeps from the step
#: that followed a stopped one that made none of their kind.
SEARCH_RECORDS = (WindowStats, ClusterStats, CarryStats, TreeStats)


def join(problem: Problem, searched: Solution, reference: Solution, fallback: str) -> Solution:
    """A stopped search and the reference formulation that followed it or raced it (module
    docstring): the better point, the larger proven bound (the reference's only when it ended
    optimal or at a limit), certified only when the point meets it; ``fallback`` says how. The
    stats are the stopped step's, with how the other ended (``RouteStats``) and, when a window
    search followed a stopped structured search, the search's own records (``SEARCH_RECORDS``:
    what the CPU count and the carried account read)."""
    s, r = searched.certificate, reference.certificate
    before = s.stat(RouteStats)  # a search that went on before it stopped says so still
    route = RouteStats(
        went_on=before.went_on if before is not None else None,
        fallback_status=r.status.value,
        fallback_bound=r.bound,
        fallback_objective=r.objective,
    )
    trusted = r.status in (Status.OPTIMAL, Status.TIME_LIMIT)
    bound = max(s.bound, r.bound) if trusted else s.bound
    w, value = (
        (reference.w, r.objective) if r.objective < s.objective else (searched.w, s.objective)
    )
    status = Status.OPTIMAL if value - bound <= OBJECTIVE_TOL else Status.TIME_LIMIT
    kinds = {type(record) for record in s.stats}
    followed = [x for x in r.stats if type(x) in SEARCH_RECORDS and type(x) not in kinds]
    return certify(
        problem,
        w,
        status=status,
        bound=min(bound, value),
        seconds=s.seconds + r.seconds,
        backend=s.backend,
        fallback=fallback,
        message=r.message,
        stats=merged(s.stats, *followed, route),
    )


# --- building the routes -------------------------------------------------------------------------


def structured_route(
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    max_combos: int | None = None,
    max_work: float | None = None,
    reference: Any = REFERENCE,
    executor: Executor | None = None,
    carry: str | None = None,
) -> Route:
    """The ``structured`` route (the default): ``max_combos``, ``max_work`` are the structured
    search's (``oracles.structured.oracle``), ``executor`` and ``carry`` the window search's
    (``oracles.window.oracle``), ``reference`` the reference formulation's backends in
    order."""
    return Route(
        "structured",
        time_limit,
        threads,
        {
            "structured": StructuredOracle(max_combos=max_combos, max_work=max_work),
            "window": WindowOracle(executor=executor, carry=carry),
        },
        check_prefer(reference),
        carry=carry,
    )


def window_route(
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    fallback: str | None = "mip",
    reference: Any = REFERENCE,
    **search: Any,
) -> Route:
    """The ``window`` route: the window search (``search``: ``WindowOracle``'s options:
    max_nodes, search_seconds, lagrange_iterations, seed, executor, carry), handed to the
    reference formulation (``reference``'s backends) when it stops, unless ``fallback`` is None."""
    check_choice("fallback", fallback, (None, "mip"))
    return Route(
        "window",
        time_limit,
        threads,
        {"window": WindowOracle(**search)},
        check_prefer(reference),
        fallback=fallback is not None,
        carry=search.get("carry"),
    )


def portfolio_route(
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    reference: Any = REFERENCE,
    **search: Any,
) -> Route:
    """The ``portfolio`` route: the window search (``search``: ``WindowOracle``'s options)
    raced from the start against the reference formulation (``reference``'s backends) in
    another process (``Route.race``, ``oracles.routing.race``)."""
    return Route(
        "portfolio",
        time_limit,
        threads,
        {"window": WindowOracle(**search)},
        check_prefer(reference),
        carry=search.get("carry"),
    )


def auto_route(
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    prefer: Any = REFERENCE,
    strict_eps: float = DEFAULT_STRICT_EPS,
    carry: str | None = None,
) -> Route:
    """The ``auto`` route: the reference formulation on the first backend of ``prefer`` that can
    run (``strict_eps``: every backend's, ``oracles.mip.formulation``); ``carry``: the
    problems' attempts (``Route``)."""
    backends = {name: STRATEGIES[name](strict_eps=strict_eps) for name in REFERENCE}
    return Route("auto", time_limit, threads, backends, check_prefer(prefer), carry=carry)


def _strategy(name: str) -> Callable:
    """The route ``name`` of one strategy of the same name: its options are that strategy's
    (``STRATEGIES[name]``) but ``carry``, the route's (the problems' attempts: ``Route``); the
    other strategies its rows name (a data player's selection) run with their defaults."""
    cls = STRATEGIES[name]

    def build(
        *,
        time_limit: float | None = DEFAULT_TIME_LIMIT,
        threads: int = DEFAULT_THREADS,
        carry: str | None = None,
        **options: Any,
    ) -> Route:
        return Route(name, time_limit, threads, {name: cls(**options)}, carry=carry)

    build.__name__ = f"{name}_route"
    build.__doc__ = f"The {name} route: the {cls.__name__} strategy (its options)."
    return build


def selection_route(
    *, time_limit: float | None = DEFAULT_TIME_LIMIT, threads: int = DEFAULT_THREADS
) -> Route:
    """The ``selection`` route: RSPM's selection by the exact branch and bound (on Adult it
    certifies a k = 3 selection in under 0.1 s, where the MILP did not certify within 300 s,
    docs/results/synthetic.md); ``selection_highs`` is a strategy to call directly."""
    return Route("selection", time_limit, threads)


#: How each route is built: ``(*, time_limit, threads, **options) -> Route``.
BUILDERS: dict[str, Callable[..., Route]] = {
    "structured": structured_route,
    "auto": auto_route,
    "highs": _strategy("highs"),
    "gurobi": _strategy("gurobi"),
    "enumerate": _strategy("enumerate"),
    "window": window_route,
    "portfolio": portfolio_route,
    "convex": _strategy("convex"),
    "conjunctions_highs": _strategy("conjunctions_highs"),
    "conjunctions_enumerate": _strategy("conjunctions_enumerate"),
    "conjunctions_search": _strategy("conjunctions_search"),
    "selection": selection_route,
}
#: The routes that run the window search (they take ``executor``; every route takes ``carry``).
SPLIT = tuple(
    name
    for name in ROUTE_NAMES
    if any(step.strategy == "window" for row in ROUTES if row.route == name for step in row.chain)
)


__all__ = [
    "ANY",
    "BOX",
    "BUILDERS",
    "CONJUNCTIONS",
    "CONVEX",
    "DEFAULT_ROUTE",
    "EXACT_GRID",
    "FIRST",
    "GRID",
    "HANDED_OVER",
    "NOISY_GRID",
    "REFERENCE",
    "ROUTES",
    "ROUTE_NAMES",
    "Plan",
    "Route",
    "Row",
    "EVERY",
    "GRID_CLASSES",
    "KINDS",
    "PROBLEM_CLASSES",
    "ROUND",
    "SELECTION",
    "SHAPED_GRID",
    "SPLIT",
    "STOPPED",
    "STRATEGIES",
    "Step",
    "UNAVAILABLE",
    "chain_for",
    "CLASS_TYPES",
    "accepts",
    "chain_text",
    "check_prefer",
    "classify",
    "route_for",
    "steps_of",
    "selection_route",
]
