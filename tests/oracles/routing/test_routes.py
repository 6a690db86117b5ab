"""oracles.routing.routes: the one routing table (its rows are docs/oracles.md's), how a problem is
classified, how a chain hands a problem on and what its certificate records, the ``auto`` route
(the reference formulation on Gurobi, else HiGHS: SPEC section 8), and that every route returns
within 1.1 x its time limit plus 5 s on a problem it cannot finish."""

from __future__ import annotations

import dataclasses
import math
import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from core.objective import MergedRows
from core.problem import (
    Box,
    ConjunctionBatch,
    ConjunctionProblem,
    IntegerGrid,
    Problem,
    SelectionProblem,
)
from oracles.routing import routes
from oracles.structured import oracle as structured_module
from oracles.contract.certificate import Certificate, HandOff, OracleError, Status, certify
from oracles.contract.budget import Budget, now
from oracles.synthetic.query_player import HighsSelectionOracle
from oracles.mip.gurobi import ERRNO_SIZE_LIMIT, GurobiOracle, LicenceLimitError
from oracles.mip.highs import HighsOracle
from oracles.mip.formulation import SolverUnavailableError
from oracles.routing.registry import DISCRETE, make_oracle
from oracles.routing.routes import (
    BOX,
    CONVEX,
    EVERY,
    EXACT_GRID,
    GRID,
    HANDED_OVER,
    NOISY_GRID,
    ROUND,
    ROUTE_NAMES,
    ROUTES,
    SELECTION,
    SHAPED_GRID,
    SPLIT,
    STOPPED,
    STRATEGIES,
    Route,
    Row,
    Step,
    chain_for,
    classify,
)
from oracles.contract.stats import CarryStats, MipStats, RouteStats, TreeStats, WindowStats
from oracles.structured.oracle import StructuredOracle
from oracles.structured.shape import decompose
from oracles.window.checkpoint import CarryStore, problem_key
from oracles.window.oracle import WindowOracle
from pipeline.data.synthetic import make_linear_threshold
from tests.oracles.oracle_contract import OracleContract, hard_instance, make_instance
from tests.oracles.fuzz import Tally, brute_force, fuzz_instance, judge
from tests.oracles.licence import require_gurobi_licence
from tests.oracles.limited import limited, on_limits
from tests.timing import assert_returns_near, timed

DOC = Path(__file__).resolve().parents[3] / "docs" / "oracles.md"


# --- the table ---------------------------------------------------------------------------------


def _doc_rows() -> list[tuple[str, str, str]]:
    """(route, problem, chain) of each row of docs/oracles.md's routing table."""
    text = DOC.read_text()
    section = text[text.index("## Routing\n") :]
    section = section[: section.index("\n## ", 1)]
    rows = []
    for line in section.splitlines():
        match = re.fullmatch(r"\| `([a-z_]+|\*)` \| (.+?) \| (.+?) \|", line.strip())
        if match:
            rows.append(match.groups())
    return rows


def test_the_docs_table_is_the_modules():
    """docs/oracles.md shows the routing table as written, not generated: it must name exactly
    the routes the module defines, each row with its problem class and chain."""
    rows = _doc_rows()
    assert {route for route, _, _ in rows} == {*ROUTE_NAMES, EVERY}
    assert rows == [(row.route, row.problem, row.text()) for row in ROUTES]


def test_every_step_is_a_strategy_or_a_route():
    for row in ROUTES:
        for step in row.chain:
            assert step.strategy in STRATEGIES or step.strategy in ROUTE_NAMES, step
            assert 0 < step.share <= 1


def test_a_route_has_no_chain_for_a_problem_it_does_not_take():
    with pytest.raises(OracleError, match="the window route takes an IntegerGrid, not a box"):
        chain_for("window", BOX)
    with pytest.raises(ValueError, match="unknown route 'cplex'"):
        chain_for("cplex", GRID)
    problem = Problem(np.eye(2), np.ones(2), np.zeros(2), Box(2))
    with pytest.raises(OracleError, match="IntegerGrid"):
        on_limits(make_oracle("window"), problem)


def test_the_auto_chain_follows_prefer():
    assert [s.strategy for s in chain_for("auto", GRID, ("highs",))] == ["highs"]
    chain = chain_for("auto", GRID, ("highs", "gurobi"))
    assert [(s.strategy, s.when) for s in chain] == [("highs", "first"), ("gurobi", "unavailable")]


# --- classification ----------------------------------------------------------------------------


def _erm(problem: Problem) -> Problem:
    return dataclasses.replace(problem, linear=np.zeros(problem.d), norm_coef=0.0)


def test_the_structured_route_classifies_by_shape_noise_and_domain():
    budget = Budget.from_limit(600.0)
    shaped = classify("structured", fuzz_instance(0), StructuredOracle(), budget)
    assert shaped.problem_class == SHAPED_GRID and not shaped.reason
    tight = StructuredOracle(max_combos=1)
    noisy = classify("structured", fuzz_instance(0), tight, budget)
    assert noisy.problem_class == NOISY_GRID and "max_combos=1" in noisy.reason
    exact = classify("structured", _erm(fuzz_instance(0)), tight, budget)
    assert exact.problem_class == EXACT_GRID and "max_combos=1" in exact.reason
    box = classify("structured", Problem(np.eye(2), np.ones(2), np.zeros(2), Box(2)), tight, budget)
    assert box.problem_class == BOX and "not an IntegerGrid (Box)" in box.reason
    # the other routes do not read the shape
    assert classify("window", fuzz_instance(0), tight, budget).problem_class == GRID
    with pytest.raises(OracleError, match="the highs route cannot solve a object"):
        classify("highs", object(), tight, budget)


def test_the_shape_read_to_classify_is_the_one_searched(monkeypatch):
    problem, budget = fuzz_instance(0), Budget.from_limit(600.0)
    kind = classify("structured", problem, StructuredOracle(), budget)
    assert kind.shape is not None and kind.shape.problem is problem
    reads = []
    monkeypatch.setattr(
        structured_module, "decompose", lambda p, **caps: reads.append(p) or decompose(p, **caps)
    )
    solution = on_limits(make_oracle("structured", time_limit=600.0), problem)
    assert solution.certificate.backend == "structured" and solution.certificate.certified
    assert reads == [problem]  # read once, to classify; the search was given it
    with pytest.raises(ValueError, match="the shape was read from another problem"):
        StructuredOracle().search(fuzz_instance(1), kind.shape, budget)


def test_every_kind_of_problem_is_routed_by_the_table():
    # OPSamp's surrogate goes to the convex solver on every route a config may name
    for route in DISCRETE:
        assert [s.strategy for s in chain_for(route, CONVEX)] == ["convex"]
    # the selection beside a data player follows the data player's kind
    assert chain_for("conjunctions_enumerate", SELECTION)[0].strategy == "selection_enumerate"
    for route in ("conjunctions_highs", "conjunctions_search", "selection"):
        assert chain_for(route, SELECTION)[0].strategy == "selection_search"
    for route in ("conjunctions_highs", "conjunctions_enumerate", "conjunctions_search"):
        assert chain_for(route, ROUND)[0].strategy == route
    with pytest.raises(OracleError, match="the selection route takes"):
        chain_for("selection", GRID)


def test_a_route_solves_the_whole_game_of_its_data_player():
    rng = np.random.default_rng(3)
    levels = (2, 3, 2)
    conjunctions = (((0, 1),), ((1, 2), (2, 0)))
    problem = ConjunctionProblem(levels, conjunctions, np.array([1.0, -2.0]))
    noises = rng.normal(size=(4, sum(levels)))
    records = SelectionProblem(levels, 2, rng.integers(0, 2, (5, 3)), rng.normal(size=5))
    for name in ("conjunctions_enumerate", "conjunctions_search", "conjunctions_highs"):
        route = make_oracle(name, time_limit=30.0)
        batch = route.solve(ConjunctionBatch(problem, noises), route.budget())
        assert batch.certificate.certified and batch.records.shape == (4, 3)
        single = route.solve(ConjunctionBatch(problem, noises).row(2), route.budget())
        assert single.record.tolist() == batch.records[2].tolist()
        chosen = route.solve(records, route.budget())
        assert chosen.certificate.certified and chosen.sign in (1, -1)


# --- chains: hand-overs and what the certificate records --------------------------------------


class _HandsOver(StructuredOracle):
    """The structured search, reading the shape as it does, that cannot finish exactly."""

    def search(self, problem, shape, budget, start=None):  # solve's, and the route's with the
        raise HandOff("scores at the margin left a gap")  # shape it classified by


class _Stops:
    """A window search that stops at the origin with a proven bound of ``bound``."""

    name = "window"

    def __init__(self, bound: float):
        self.bound = bound

    def solve(self, problem, budget):
        w = np.zeros(problem.d)
        return certify(
            problem,
            w,
            status=Status.TIME_LIMIT,
            bound=self.bound,
            seconds=0.0,
            backend="window",
            message="search stopped (test)",
            stats=(TreeStats("test", 1.0, 1.0, 1.0, 0.0, 1.0, "about 1 node left"),),
        )


def _with(route: Route, **strategies) -> Route:
    return dataclasses.replace(route, strategies={**route.strategies, **strategies})


def test_a_hand_over_goes_to_the_reference_and_says_why():
    problem = fuzz_instance(4)
    route = _with(make_oracle("structured", reference=("highs",)), structured=_HandsOver())
    cert = route.solve(problem, route.budget()).certificate
    assert cert.backend == "highs" and cert.certified
    assert cert.fallback == "structured: scores at the margin left a gap -> highs"
    assert abs(cert.objective - float(brute_force(problem).minimum)) <= 1e-9


class _SlowHandOver(StructuredOracle):
    """A structured search that spends a while before it hands over."""

    def search(self, problem, shape, budget, start=None):
        time.sleep(0.2)
        raise HandOff("slow")


class _Recorded:
    """The reference formulation on HiGHS, recording the budget it was given."""

    name = "highs"

    def __init__(self):
        self.budgets = []

    def solve(self, problem, budget):
        self.budgets.append(budget)
        return HighsOracle().solve(problem, budget)


def test_a_hand_over_gets_what_is_left_of_the_budget():
    # the fuzz's 82.8 s on a 60 s limit: a reference after a hand-over must not start a limit
    # of its own
    recorded = _Recorded()
    route = _with(
        make_oracle("structured", reference=("highs",)), structured=_SlowHandOver(), highs=recorded
    )
    budget = Budget.from_limit(30.0)
    cert = route.solve(fuzz_instance(4), budget).certificate
    assert cert.certified and cert.fallback == "structured: slow -> highs"
    (given,) = recorded.budgets
    assert given.deadline == budget.deadline and given.left() < 30.0 - 0.2


def test_a_reference_with_too_little_time_left_is_not_run_and_the_certificate_says_so():
    # a 0.5 s budget never leaves the reference its MIN_REFERENCE_SECONDS after a search
    route = _with(make_oracle("window", reference=("highs",)), window=_Stops(-1e9))
    cert = route.solve(fuzz_instance(0), Budget.from_limit(0.5)).certificate
    assert cert.status is Status.TIME_LIMIT and cert.fallback is None and cert.bound == -1e9
    note = cert.stat(RouteStats).reference_skipped
    assert note.startswith("not run: ") and note.endswith("it needs more than 1 s"), note


def test_a_stopped_search_is_joined_with_the_reference():
    problem = fuzz_instance(0)
    minimum = float(brute_force(problem).minimum)
    route = _with(make_oracle("window", time_limit=30.0, reference=("highs",)), window=_Stops(-1e9))
    cert = route.solve(problem, route.budget()).certificate
    assert cert.backend == "window" and cert.certified  # the reference's point and bound
    assert cert.fallback == "search stopped; reference on auto"
    assert (
        cert.stat(RouteStats).fallback_status == "optimal"
        and cert.stat(TreeStats).stopped == "test"
    )
    assert abs(cert.objective - minimum) <= 1e-9
    # the search alone (fallback=None): its point, uncertified, with its own bound
    alone = on_limits(_with(make_oracle("window", fallback=None), window=_Stops(-1e9)), problem)
    assert alone.certificate.status is Status.TIME_LIMIT and alone.certificate.bound == -1e9
    assert alone.certificate.fallback is None
    # through the structured route, the chain says where it started
    structured = _with(
        make_oracle("structured", time_limit=30.0, max_combos=1, reference=("highs",)),
        window=_Stops(-1e9),
    )
    cert = structured.solve(problem, structured.budget()).certificate
    assert cert.fallback.startswith("structured: ") and cert.certified
    assert cert.fallback.endswith(" -> window -> search stopped; reference on auto")


def test_no_reference_after_a_search_that_left_a_second_or_less():
    problem = fuzz_instance(0)
    route = _with(make_oracle("window", reference=("highs",)), window=_Stops(-1e9))
    budget = Budget(now() + 0.5, seconds=10.0)  # the search left half a second
    cert = route.solve(problem, budget).certificate
    assert cert.status is Status.TIME_LIMIT and cert.fallback is None


def test_a_route_records_the_cpu_its_solve_got():
    cert = on_limits(make_oracle("structured"), make_instance(0)).certificate
    assert cert.certified and 0.0 <= cert.cpu_seconds <= cert.seconds * cert.threads + 0.5
    assert cert.to_params()["cpu_seconds"] == cert.cpu_seconds
    cert = on_limits(make_oracle("highs"), make_instance(0)).certificate
    assert 0.0 <= cert.cpu_seconds and math.isfinite(cert.cpu_seconds)


# --- the auto route (the reference formulation: Gurobi, else HiGHS) ----------------------------


class TestAuto(OracleContract):
    @classmethod
    def make_oracle(cls, **options):
        return make_oracle("auto", **options)


def test_missing_gurobipy_falls_back_to_highs(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)  # makes `import gurobipy` fail
    cert = on_limits(make_oracle("auto"), make_instance(3)).certificate
    assert cert.backend == "highs" and cert.certified
    assert cert.fallback.startswith("gurobi: gurobipy is not importable (")
    assert cert.fallback.endswith(") -> highs")


def test_no_fallback_when_the_first_backend_runs():
    cert = on_limits(make_oracle("auto", prefer=("highs",)), make_instance(4)).certificate
    assert cert.backend == "highs" and cert.fallback is None


def test_every_backend_unavailable_raises_with_the_chain(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    with pytest.raises(SolverUnavailableError, match="no backend of \\('gurobi',\\) could run"):
        on_limits(make_oracle("auto", prefer=("gurobi",)), make_instance(0))


def test_a_time_limit_is_reported_not_retried_elsewhere():
    """An uncertified answer is returned as it is: no silent retry on another backend."""
    oracle = make_oracle("auto", time_limit=0.2, prefer=("highs", "gurobi"))
    cert = oracle.solve(hard_instance(), oracle.budget()).certificate
    assert cert.backend == "highs" and cert.fallback is None
    assert cert.status in (Status.TIME_LIMIT, Status.NO_SOLUTION) and not cert.certified


@pytest.mark.parametrize("prefer", [(), ("cplex",), ("highs", "highs")])
def test_prefer_is_validated_with_the_value_quoted(prefer):
    with pytest.raises(ValueError, match="prefer must be distinct names"):
        make_oracle("auto", prefer=prefer)


def test_options_reach_every_backend():
    oracle = make_oracle("auto", time_limit=12.0, threads=2, strict_eps=1e-5, prefer="highs")
    assert oracle.prefer == ("highs",) and (oracle.time_limit, oracle.threads) == (12.0, 2)
    assert all(oracle.strategy(b).strict_eps == 1e-5 for b in ("highs", "gurobi"))


def test_gurobi_over_its_licence_after_the_first_model_is_not_retried_elsewhere(monkeypatch):
    """Band cuts (a second model) over the licence: Gurobi ran, so the answer is its own,
    uncertified, and the route does not hand the problem to HiGHS (SPEC section 8)."""
    require_gurobi_licence()
    problem = fuzz_instance(7)  # Gurobi needs a second model (band cuts) on this one
    assert (
        GurobiOracle().solve(problem, Budget.unlimited()).certificate.stat(MipStats).band_rounds
        == 2
    )
    real = GurobiOracle._run
    calls = []

    def run(self, gp, milp, budget):
        calls.append(milp.n_cols)
        if len(calls) > 1:
            raise LicenceLimitError(ERRNO_SIZE_LIMIT, 2001, 2001)
        return real(self, gp, milp, budget)

    monkeypatch.setattr(GurobiOracle, "_run", run)
    cert = on_limits(make_oracle("auto", time_limit=30.0), problem).certificate
    assert len(calls) == 2
    assert cert.backend == "gurobi" and cert.fallback is None
    assert cert.status is Status.ERROR and not cert.certified
    assert "took the model over Gurobi's licence" in cert.message


# --- limits: every path returns within 1.1 x its limit + 5 s (idle; tests/timing.py) -------------


def _within(limit: float, solve) -> tuple[object, object]:
    """The solve's times (``tests.timing.timed``) and answer, once it is shown to return near ``limit``: its CPU within
    1.1 x limit + 5 s, its wall-clock time too, plus the slack a loaded machine takes
    (tests/timing.py: at load 7 to 14 on 2 cores a 1 s solve took 6.4 s of wall-clock)."""
    with timed() as took:
        solution = solve()
    assert_returns_near(limit, took.wall, took.cpu, took.slowdown)
    return took, solution


def _shaped_erm() -> Problem:
    """Exact 0/1 ERM with the structured shape (one-hot groups, 3 continuous columns, 1,971
    distinct rows): one subproblem alone takes HiGHS more than 2 s."""
    data = make_linear_threshold(2000, 3, groups=(5, 5, 4, 4), levels=6, label_noise=0.2, seed=1)
    rows = MergedRows.from_xy(data.features, data.labels)
    return Problem.from_rows(rows, IntegerGrid(rows.d, 4, 1.0, float(rows.d)), label="shaped")


def _enumeration_problem() -> Problem:
    rng = np.random.default_rng(0)
    X = np.round(rng.normal(size=(300, 13)), 2)
    return Problem(X, rng.integers(0, 3, 300), rng.integers(0, 3, 300), IntegerGrid(13, 1))


#: (route, options, problem, limit, the backend that answers, the start of its fallback)
PATHS = {
    "structured subproblems": (
        "structured",
        {"max_work": math.inf},
        _shaped_erm,
        1.0,
        "structured",
    ),
    "structured -> window": ("structured", {}, hard_instance, 1.0, "window"),
    "structured -> reference": ("structured", {}, lambda: _erm(hard_instance()), 1.0, None),
    "window -> reference": ("window", {"max_nodes": 2000}, hard_instance, 2.0, "window"),
    "window threads": ("window", {"fallback": None}, hard_instance, 1.0, "window"),
    "highs, second opinion": ("highs", {}, hard_instance, 1.0, "highs"),
    "auto": ("auto", {"prefer": ("highs",)}, hard_instance, 1.0, "highs"),
    "enumerate": ("enumerate", {"max_points": 2_000_000}, _enumeration_problem, 1.0, "enumerate"),
}


@pytest.fixture(scope="module")
def compiled():
    """The window search's compiled kernel (``oracles.window.kernel``, numba), compiled before
    the clock starts: numba compiles it once per machine and source version (its cache), and
    that first compilation, seconds long, is not a solve's."""
    on_limits(make_oracle("window", time_limit=60.0, fallback=None), fuzz_instance(0))


@pytest.mark.parametrize("path", PATHS)
def test_every_path_returns_within_its_limit(path, compiled):
    route, options, problem, limit, backend = PATHS[path]
    threads = 3 if path == "window threads" else 1  # the search's workers on 3 threads
    oracle = make_oracle(route, time_limit=limit, threads=threads, **options)
    took, solution = _within(limit, lambda: oracle.solve(problem(), oracle.budget()))
    cert = solution.certificate
    assert not cert.certified and cert.status in (Status.TIME_LIMIT, Status.NO_SOLUTION)
    if backend is not None:
        assert cert.backend == backend, cert
    if route == "window" and "max_nodes" in options:  # the search stopped, the MIP followed
        if cert.fallback is None and took.slowdown > 1.5:
            # a loaded machine can leave less than the reference's minimum after the search:
            # then the certificate says so (measured at load 12-16), and nothing else changes
            assert cert.stat(RouteStats).reference_skipped.startswith("not run: "), cert.stats
        else:
            assert cert.fallback == "search stopped; reference on auto"


def test_gurobi_returns_within_its_limit():
    require_gurobi_licence()
    _, solution = _within(
        1.0, lambda: on_limits(make_oracle("gurobi", time_limit=1.0), hard_instance())
    )
    assert not solution.certificate.certified


def test_the_selection_milp_shares_one_budget_between_its_signs():
    rng = np.random.default_rng(0)
    levels = (6, 5, 5, 4, 4, 3, 3, 2)
    records = np.column_stack([rng.integers(0, k, 3000) for k in levels])
    problem = SelectionProblem(
        levels,
        3,
        records,
        rng.normal(0, 1, 3000),
        tuple(rng.normal(0, 1, k) for k in levels),
        0.0,
    )
    _within(1.0, lambda: on_limits(limited(HighsSelectionOracle(), 1.0), problem))


def test_the_data_players_milp_returns_within_its_limit():
    rng = np.random.default_rng(0)
    levels = (6,) * 10
    conjunctions = tuple(
        tuple((int(a), int(rng.integers(0, 6))) for a in rng.choice(10, 3, replace=False))
        for _ in range(3000)
    )
    problem = ConjunctionProblem(levels, conjunctions, rng.normal(0, 1, len(conjunctions)))
    oracle = make_oracle("conjunctions_highs", time_limit=1.0)
    _within(1.0, lambda: oracle.solve(problem, oracle.budget()))


# --- the table against the strategies' declarations (CVXPY's ``accepts``) ----------------------


def _classes_of(row: routes.Row) -> tuple[str, ...]:
    """The problem classes a row matches (ANY and GRID stand for several)."""
    if row.problem == routes.ANY:
        return routes.PROBLEM_CLASSES
    if row.problem == routes.GRID:
        return routes.GRID_CLASSES
    return (row.problem,)


def test_every_row_runs_only_strategies_that_accept_its_problem_class():
    checked = 0
    for row in routes.ROUTES:
        for problem_class in _classes_of(row):
            for name in routes.steps_of(row.chain, problem_class):
                assert issubclass(routes.CLASS_TYPES[problem_class], routes.accepts(name)), (
                    row,
                    name,
                )
                checked += 1
    assert checked > len(routes.ROUTES)  # every row was read, nested routes too


def test_every_problem_a_route_can_take_has_its_row():
    # a user can hand a route any problem that one of its strategies accepts: it has a chain
    for route in routes.ROUTE_NAMES:
        names = {
            name
            for row in routes.ROUTES
            if row.route == route
            for problem_class in _classes_of(row)
            for name in routes.steps_of(row.chain, problem_class)
        }
        types = {t for name in names for t in routes.accepts(name)}
        # the classes ``classify`` gives on this route: the shapes only where a row reads them
        shaped = any(r.route == route and r.problem == routes.SHAPED_GRID for r in routes.ROUTES)
        grids = (routes.SHAPED_GRID, routes.NOISY_GRID, routes.EXACT_GRID)
        # a box is refused in one line by the routes whose search takes grids only (window,
        # portfolio, enumerate: ``accepts`` names types, not domains), so grids are checked
        given = (*grids, routes.BOX) if shaped else (routes.GRID,)
        others = tuple(c for _, c in routes.KINDS)
        for problem_class in (*given, *others):
            if routes.CLASS_TYPES[problem_class] in types:
                assert routes.chain_for(route, problem_class), (route, problem_class)


def test_a_strategy_that_accepts_nothing_of_a_row_is_caught():
    # the check above can fail: a row sending a selection to the convex oracle is refused
    row = routes.Row("x", routes.SELECTION, (routes.Step("convex"),))
    names = routes.steps_of(row.chain, routes.SELECTION)
    assert not issubclass(routes.CLASS_TYPES[routes.SELECTION], routes.accepts(names[0]))


def test_route_for_reads_the_table_defaults_and_backends():
    assert routes.route_for(routes.SHAPED_GRID) == routes.DEFAULT_ROUTE == "structured"
    assert routes.route_for(routes.SELECTION) == "selection"
    assert routes.route_for(routes.CONVEX) == "convex"
    for backend in ("search", "highs", "enumerate"):  # the data player's backends (catalog)
        assert routes.route_for(routes.CONJUNCTIONS, backend=backend) == f"conjunctions_{backend}"
    with pytest.raises(ValueError, match="known: \\['enumerate', 'highs', 'search'\\]"):
        routes.route_for(routes.CONJUNCTIONS, backend="gurobi")


def test_the_plan_is_the_chain_the_route_runs():
    problem = make_instance(0)
    plan = make_oracle("window", time_limit=5.0).plan(problem, Budget.from_limit(5.0))
    assert plan.chain == routes.chain_for("window", routes.GRID)
    assert plan.strategies == ("window", "gurobi", "highs")


# --- carrying on: a problem's attempts, whatever route ends them (issue 45) ------------------


def _first_attempt(route: Route, problem: Problem) -> Certificate:
    """An attempt stopped after a node (and too short for a reference to follow): it keeps the
    window search's state and records itself."""
    cert = route.solve(problem, Budget.from_limit(0.5).with_nodes(1)).certificate
    assert cert.status is Status.TIME_LIMIT, cert.message
    carry = cert.stat(CarryStats)
    assert carry.attempts == 1 and carry.started_from == "from scratch on window"
    assert carry.total_cpu_seconds == cert.cpu_seconds > 0.0 and carry.carried_cpu_seconds == 0.0
    assert carry.carry is not None and Path(carry.carry).exists()
    return cert


def test_every_route_with_a_window_search_takes_a_carry_directory_and_gives_it_the_search(
    tmp_path,
):
    for name in SPLIT:
        route = make_oracle(name, carry=str(tmp_path))
        assert route.carry == str(tmp_path) and route.strategy("window").carry == str(tmp_path)
    for name in DISCRETE:  # every route of a mechanism's problem keeps the account
        assert make_oracle(name, carry=str(tmp_path)).carry == str(tmp_path)
    assert make_oracle("highs").carry is None


def test_a_structured_step_that_certifies_after_a_kept_state_counts_every_attempt(tmp_path):
    # issue 45: a short limit left the window search's state (the shape unread: max_combos=1
    # here); a longer one let the structured search certify from scratch
    problem, directory = fuzz_instance(0), str(tmp_path)
    first = _first_attempt(
        make_oracle("structured", max_combos=1, reference=("highs",), carry=directory), problem
    )
    second = on_limits(make_oracle("structured", reference=("highs",), carry=directory), problem)
    c = second.certificate
    assert c.certified and c.backend == "structured"
    assert abs(c.objective - float(brute_force(problem).minimum)) <= 1e-9
    carry = c.stat(CarryStats)
    assert carry.attempts == 2 and carry.carry is None
    assert carry.started_from == (
        "from scratch on structured (the kept window state of attempt 1 not needed)"
    )
    assert carry.carried_cpu_seconds == first.cpu_seconds  # each attempt measured, as recorded
    assert carry.total_cpu_seconds == first.cpu_seconds + c.cpu_seconds
    assert carry.total_seconds == pytest.approx(first.seconds + c.seconds)
    assert list(tmp_path.iterdir()) == []  # certified: nothing to resume or count again
    third = on_limits(make_oracle("structured", reference=("highs",), carry=directory), problem)
    assert third.certificate.stat(CarryStats).attempts == 1  # a new account


def _chain_row(monkeypatch, *chain: Step) -> None:
    """The structured route's row for a shaped grid replaced by ``chain``."""
    row = Row("structured", SHAPED_GRID, chain, default=True)
    assert routes.ROUTES[0].problem == SHAPED_GRID
    monkeypatch.setattr(routes, "ROUTES", (row, *routes.ROUTES[1:]))


class _StructuredStops(StructuredOracle):
    """The structured search, reading the shape as it does, that stops without a proof."""

    def search(self, problem, shape, budget, start=None):
        w = np.zeros(problem.d)
        return certify(
            problem, w, status=Status.TIME_LIMIT, bound=-1e9, seconds=0.0, backend="structured"
        )


#: How a route reaches the window search: first (the window route; the structured route on a
#: generic grid), after the structured search handed over, after it stopped. A race (the
#: portfolio) is tests/oracles/routing/test_race.py's, behind ``integration``.
REACHED = {
    "first on the window route": lambda mp, d: make_oracle(
        "window", fallback=None, search_seconds=0.0, carry=d
    ),
    "first on the structured route's generic grid": lambda mp, d: make_oracle(
        "structured", max_combos=1, reference=("highs",), carry=d
    ),
    "after a hand-over": lambda mp, d: (
        _chain_row(mp, Step("structured"), Step("window", HANDED_OVER))
        or _with(make_oracle("structured", carry=d), structured=_HandsOver())
    ),
    "after the structured search stopped": lambda mp, d: (
        _chain_row(mp, Step("structured"), Step("window", STOPPED))
        or _with(make_oracle("structured", carry=d), structured=_StructuredStops())
    ),
}


@pytest.mark.parametrize("reached", sorted(REACHED))
@pytest.mark.parametrize("seed", [0, 3])
def test_the_window_search_resumes_the_kept_state_wherever_its_route_reaches_it(
    tmp_path, monkeypatch, reached, seed
):
    problem, directory = fuzz_instance(seed), str(tmp_path)
    route = REACHED[reached](monkeypatch, directory)
    first = _first_attempt(route, problem)
    store = CarryStore(directory)
    kept = store.summary(problem)
    state = store.load(problem)
    second = route.solve(problem, Budget.unlimited()).certificate
    assert second.certified and second.stat(WindowStats).carried_open_nodes == state.open_nodes
    assert abs(second.objective - float(brute_force(problem).minimum)) <= 1e-9
    carry = second.stat(CarryStats)
    assert carry.attempts == 2 and carry.started_from == f"kept state of attempt 1 ({kept})"
    assert carry.total_cpu_seconds == first.cpu_seconds + second.cpu_seconds
    assert carry.total_nodes == (first.stat(WindowStats).nodes + second.stat(WindowStats).nodes)
    assert store.summary(problem) is None and store.attempts(problem) == ()


def test_an_uncertified_attempt_that_did_not_reach_the_kept_state_says_so_and_keeps_it(
    tmp_path, monkeypatch
):
    problem, directory = fuzz_instance(0), str(tmp_path)
    first = _first_attempt(make_oracle("structured", max_combos=1, carry=directory), problem)
    _chain_row(monkeypatch, Step("structured"))
    second = _with(make_oracle("structured", carry=directory), structured=_StructuredStops())
    c = on_limits(second, problem).certificate
    assert c.status is Status.TIME_LIMIT and c.backend == "structured"
    carry = c.stat(CarryStats)
    assert carry.started_from == (
        "from scratch on structured (the kept window state of attempt 1 not reached)"
    )
    assert carry.carry == str(CarryStore(directory).path(problem_key(problem)))
    assert carry.total_cpu_seconds == first.cpu_seconds + c.cpu_seconds
    # the third attempt still resumes the first's state, and counts all three
    third = make_oracle("structured", max_combos=1, carry=directory)
    done = third.solve(problem, Budget.unlimited()).certificate
    assert done.certified and done.stat(CarryStats).attempts == 3
    assert done.stat(CarryStats).started_from.startswith("kept state of attempt 1 (")
    total = first.cpu_seconds + c.cpu_seconds + done.cpu_seconds
    assert done.stat(CarryStats).total_cpu_seconds == total
    assert abs(done.objective - float(brute_force(problem).minimum)) <= 1e-9


class _Fails(StructuredOracle):
    """The structured search, reading the shape as it does, that fails after a while."""

    def search(self, problem, shape, budget, start=None):
        deadline = time.process_time() + 0.05
        while time.process_time() < deadline:  # CPU spent before it fails
            pass
        raise OracleError("a search that fails")


def test_an_attempt_that_fails_is_counted_by_the_next(tmp_path, monkeypatch):
    problem, directory = fuzz_instance(0), str(tmp_path)
    _chain_row(monkeypatch, Step("structured"))
    failing = _with(make_oracle("structured", carry=directory), structured=_Fails())
    with pytest.raises(OracleError, match="a search that fails"):
        on_limits(failing, problem)
    (failed,) = CarryStore(directory).attempts(problem)
    assert failed.backend == "failed (OracleError)" and failed.cpu_seconds >= 0.05
    monkeypatch.undo()
    cert = on_limits(make_oracle("structured", carry=directory), problem).certificate
    assert cert.certified and abs(cert.objective - float(brute_force(problem).minimum)) <= 1e-9
    carry = cert.stat(CarryStats)
    assert carry.attempts == 2 and carry.started_from == "from scratch on structured"
    assert carry.total_cpu_seconds == failed.cpu_seconds + cert.cpu_seconds


# --- a stopped window search goes on when its price fits the rest (Route.go_on) ----------------


@dataclasses.dataclass(frozen=True)
class _StopsAfterNodes(WindowOracle):
    """The window search whose first solve stops after ``first_nodes`` nodes (as a search
    stops at its share of the time), the later ones on their budgets; ``calls`` its budgets."""

    first_nodes: int = 5
    calls: list = dataclasses.field(default_factory=list)

    def solve(self, problem, budget, stop=None):
        self.calls.append(budget)
        if len(self.calls) == 1:
            budget = budget.with_nodes(self.first_nodes)
        return super().solve(problem, budget, stop=stop)


def test_a_stopped_search_whose_price_fits_goes_on_from_its_state_and_certifies(tmp_path):
    problem = fuzz_instance(0)  # its search makes 34 nodes
    window, reference = _StopsAfterNodes(carry=str(tmp_path)), _Recorded()
    route = _with(
        make_oracle("window", time_limit=30.0, reference=("highs",), carry=str(tmp_path)),
        window=window,
        highs=reference,
    )
    budget = route.budget()
    c = route.solve(problem, budget).certificate
    assert c.certified and c.backend == "window" and c.fallback is None
    assert abs(c.objective - float(brute_force(problem).minimum)) <= 1e-9
    assert len(window.calls) == 2 and reference.budgets == []  # no reference ran
    first, then = window.calls
    assert first.deadline < then.deadline == budget.deadline  # its share, then all the rest
    went = c.stat(RouteStats).went_on
    assert went.startswith("went on from its kept state: about ") and "CPU s left" in went
    # one search: its nodes the two steps' (the first stopped after 5 a worker and a few more
    # in flight), one attempt from scratch, nothing kept
    searched, carry = c.stat(WindowStats), c.stat(CarryStats)
    assert searched.nodes > window.first_nodes and searched.carried_open_nodes is None
    assert carry.attempts == 1 and carry.started_from == "from scratch on window"
    assert carry.total_nodes == searched.nodes and carry.carry is None
    assert carry.total_cpu_seconds == c.cpu_seconds
    assert list(tmp_path.iterdir()) == []


def test_without_a_kept_state_a_stopped_search_goes_to_the_reference_as_before():
    problem = fuzz_instance(0)
    window, reference = _StopsAfterNodes(), _Recorded()  # no carry directory: no state
    route = _with(
        make_oracle("window", time_limit=30.0, reference=("highs",)),
        window=window,
        highs=reference,
    )
    c = route.solve(problem, route.budget()).certificate
    assert len(window.calls) == 1 and len(reference.budgets) == 1
    assert c.certified and c.fallback == "search stopped; reference on auto"
    assert c.stat(RouteStats).went_on is None


def _stopped_at(cpu: float, seconds: float, nodes: float, high: float, rate: float):
    """A window certificate stopped after ``seconds`` (``cpu`` CPU s on one thread), its tree
    ``nodes`` left (high end ``high``) at ``rate`` nodes a CPU second."""
    problem = fuzz_instance(0)
    tree = TreeStats("time limit", nodes, 0.0, high, 0.0, rate, "words")
    c = certify(
        problem,
        np.zeros(problem.d),
        status=Status.TIME_LIMIT,
        bound=-1e9,
        seconds=seconds,
        backend="window",
        stats=(tree,),
    ).certificate
    return dataclasses.replace(c, cpu_seconds=cpu)


@pytest.mark.parametrize(
    "cert, left, threads, goes",
    [
        # 34 CPU s likely, 40 high, at full CPU: 2 x 34 = 68 <= 120 on one thread
        (_stopped_at(480.0, 480.0, 34e6, 40e6, 1e6), 120.0, 1, True),
        (_stopped_at(480.0, 480.0, 34e6, 40e6, 1e6), 67.0, 1, False),  # the margin: 68 > 67
        (_stopped_at(480.0, 480.0, 34e6, 40e6, 1e6), 34.0, 2, True),  # two threads: 68
        (_stopped_at(480.0, 480.0, 10e6, 90e6, 1e6), 89.0, 1, False),  # the high end: 90
        (_stopped_at(240.0, 480.0, 34e6, 40e6, 1e6), 120.0, 1, False),  # half a CPU: 60 < 68
        (_stopped_at(240.0, 480.0, 34e6, 40e6, 1e6), 136.0, 1, True),  # 68 of 136 s at half
        (_stopped_at(960.0, 480.0, 34e6, 40e6, 1e6), 67.0, 1, False),  # share at most 1
        (_stopped_at(480.0, 480.0, 34e6, 40e6, 0.0), 1e9, 1, False),  # no rate: no price
        (_stopped_at(480.0, 480.0, math.inf, math.inf, 1e6), 1e9, 1, False),
    ],
)
def test_a_stopped_search_goes_on_only_when_its_price_fits_the_cpu_left(cert, left, threads, goes):
    why = routes.goes_on(cert, left, threads)
    assert (why is not None) == goes, why
    if goes:
        assert why.startswith("went on from its kept state: about 34 CPU s to certify")
    assert routes.goes_on(dataclasses.replace(cert, stats=()), left, threads) is None


def test_no_false_certificate_from_a_search_that_went_on(tmp_path):
    """60 random small instances (the fuzz's kinds, ties at the margin among them), each search
    stopped after 1 to 8 nodes a worker and gone on from its kept state: every certificate
    against the brute force; every one certified by the window search itself."""
    tally, went = Tally("window, gone on"), 0
    for seed in range(60):
        problem, directory = fuzz_instance(seed), tmp_path / str(seed)
        window = _StopsAfterNodes(first_nodes=1 + seed % 8, carry=str(directory))
        route = _with(
            make_oracle("window", time_limit=30.0, reference=("highs",), carry=str(directory)),
            window=window,
        )
        solution = route.solve(problem, route.budget())
        judge(tally, seed, problem, brute_force(problem), solution)
        went += solution.certificate.stat(RouteStats) is not None
        assert solution.certificate.fallback is None  # never the reference
    print(tally.line(), f"{went} went on")
    assert tally.false == 0, "\n".join(tally.failures)
    assert tally.certified == tally.instances
    assert went >= 30  # measured: 39 went on; the others certified within their first nodes


def test_a_search_that_went_on_and_stopped_again_keeps_saying_so_beside_the_reference():
    problem = fuzz_instance(0)
    went = _Stops(-1e9).solve(problem, Budget.from_limit(1.0))
    went = dataclasses.replace(
        went, certificate=went.certificate.with_stats(RouteStats(went_on="went on: test"))
    )
    reference = HighsOracle().solve(problem, Budget.from_limit(30.0))
    joined = routes.join(problem, went, reference, "search stopped; reference on auto")
    route = joined.certificate.stat(RouteStats)
    assert route.went_on == "went on: test" and route.fallback_status == "optimal"
