"""No false certificates (issues 11 and 18): every oracle against the exact brute force of
``fuzz.py``, on its two instance families (``mixed``: one-hot and continuous columns with rows
near the margin; ``parallel``: unmerged duplicate, proportional and repeated-column rows, where
a MIP presolve's parallel-row reduction acts).

The default run fuzzes ``FAST_SEEDS`` of each family; ``-m slow`` runs ``SLOW_SEEDS``:
5,000 instances. Both families hold OPDisc's, RSPM's and exact ERM's shapes. Zero false certificates is the bar; uncertified answers are allowed (and
reported).
"""

from __future__ import annotations

import tempfile
import time

import numpy as np
import pytest

from core.objective import MergedRows
from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import Status, budget_of
from oracles.contract.budget import Budget
from oracles.routing.registry import make_oracle
from oracles.contract.stats import WindowStats
from oracles.window.engine import InProcess, Threads
from oracles.window.oracle import WindowOracle
from tests.oracles.fuzz import (
    FAMILIES,
    KINDS,
    MULTIPLES,
    Tally,
    brute_force,
    judge,
)
from tests.oracles.licence import require_gurobi_licence
from tests.oracles.limited import limited

#: 60 of each family (about a second per oracle and family; 5 to 10 s for HiGHS and the window
#: oracle on ``parallel``); the coverage tests below check that these hold what the issue lists.
FAST_SEEDS = {"mixed": range(60), "parallel": range(60)}
SLOW_SEEDS = {"mixed": range(60, 2060), "parallel": range(60, 3060)}
#: Registered oracles, and ``window-parts``: the window oracle's search on 3 threads that donate
#: to each other (``oracles.window.engine.Threads``, looking at the pool every ``PARTS_CHUNK``
#: nodes; tests/pipeline/distributed runs the search's workers on Ray); ``window-donated``: its
#: search from the root by 3 workers stepped in turn in this process that donate their open
#: nodes to each other every 2 nodes (``oracles.window.engine.InProcess``).
ORACLES = (
    "enumerate",
    "highs",
    "gurobi",
    "structured",
    "auto",
    "window",
    "window-parts",
    "window-carried",
    "window-donated",
    "portfolio",
)
#: ``window-donated`` donates a node with at least this many levels below it (the fuzz's trees
#: are 2 to 6 levels deep). It has no grid search (an incumbent that does not depend on the
#: machine's load, and larger trees to share: donations on 57 and 56 of the 60 instances of
#: each family, where a 0.05 s grid search left 34 of the 60 mixed ones; the same 57 and 56
#: on the one engine of issue 44). Its ``-m slow`` run on the engine before issue 44: 5,000
#: instances, 5,000 certified, 0 false (and 0 with the 0.05 s grid search before); on the one
#: engine, 200 of them so far (and 200 of ``window-parts``): 200 certified, 0 false.
DONATED_MIN_LEVELS = 1
#: ``window-parts``: nodes a thread makes between two looks at the pool (small, so that the
#: threads share the fuzz's small trees; a solve's own is ``engine.WORKER_CHUNK``). It has no
#: grid search either (larger trees): its threads donated on 19 and 15 of the 60 instances of
#: each family (at load 6; when the other threads start in time: not asserted), where a 0.05 s
#: grid search left 4 and 4.
PARTS_CHUNK = 2
#: ``window-carried``: the window search stopped past every ``CARRY_NODES`` nodes and carried on
#: from its state (``oracles.window.checkpoint``) until it ends, at most ``CARRY_ATTEMPTS`` times.
CARRY_NODES = 10
CARRY_ATTEMPTS = 2000


class _CarriedOn:
    """The window search stopped and carried on to its end (``window-carried``)."""

    name = "window-carried"

    def __init__(self) -> None:
        self.directory = tempfile.mkdtemp(prefix="fuzz-carry-")

    def solve(self, problem, budget):
        oracle = WindowOracle(search_seconds=GRID_SEARCH_SECONDS, carry=self.directory)
        for _ in range(CARRY_ATTEMPTS):
            solution = oracle.solve(problem, Budget.unlimited().with_nodes(CARRY_NODES))
            if solution.certificate.status is not Status.TIME_LIMIT:
                break
        return solution


# The issue's minimal reproduction: exact 0/1 ERM, d = 2, B = 2, D^2 = 2, mu = 1e-4. The minimum
# is loss 4 at w = (0, 1), where row 0 scores mu - 1e-7; the old MIP certified (1, 0), loss 5.
REPRO_X = np.array(
    [
        [1, 9.99e-05],
        [0, 0.9],
        [1, 0.875],
        [1, 0],
        [1, 0.2],
        [1, 0.3],
        [1, 0.25],
        [1, 0],
        [1, 1.000000000001e-04],
        [1, 0.875],
        [0, 0.38405083931733386],
    ]
)
REPRO_Y = np.array([-1, 1, 1, 1, 1, -1, 1, -1, -1, 1, -1])


def reproduction() -> Problem:
    rows = MergedRows.from_xy(REPRO_X, REPRO_Y)
    return Problem.from_rows(rows, IntegerGrid(2, 2, 1.0, 2.0), margin=1e-4, label="issue11")


#: The window search's grid search on these small grids: its restarts, not the search, took
#: 0.9 s of the 1.0 s an instance took with the default 5 s (a weaker incumbent leaves the
#: search more to prove, which is what is fuzzed).
GRID_SEARCH_SECONDS = 0.05


def _oracle(name: str):
    if name == "window-carried":
        return _CarriedOn()
    if name == "window-donated":
        donated = InProcess(3, chunk=2, min_levels=DONATED_MIN_LEVELS)
        oracle = WindowOracle(executor=donated, search_seconds=0.0, name=name)
        return limited(oracle, 30.0)
    if name == "window-parts":
        threads = Threads(3, chunk=PARTS_CHUNK, min_levels=DONATED_MIN_LEVELS)
        oracle = WindowOracle(executor=threads, search_seconds=0.0, name=name)
        return limited(oracle, 30.0)
    if name in ("window", "portfolio"):
        return make_oracle(name, time_limit=30.0, search_seconds=GRID_SEARCH_SECONDS)
    oracle = make_oracle(name, time_limit=30.0)
    if name == "gurobi":
        require_gurobi_licence()
    return oracle


_CACHE: dict = {}


def instances_and_truths(family: str, seeds, max_points: int = 800):
    """The family's instances for ``seeds`` with their brute force (built once per run)."""
    key = (family, seeds, max_points)
    if key not in _CACHE:
        problems = [(seed, FAMILIES[family](seed, max_points=max_points)) for seed in seeds]
        _CACHE[key] = problems, [brute_force(problem) for _, problem in problems]
    return _CACHE[key]


def _fuzz(name, instances, truths) -> Tally:
    oracle = _oracle(name)
    tally = Tally(name)
    for (seed, problem), truth in zip(instances, truths):
        start = time.perf_counter()
        solution = oracle.solve(problem, budget_of(oracle))
        tally.seconds += time.perf_counter() - start
        judge(tally, seed, problem, truth, solution)
    print(tally.line())
    return tally


@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("name", ORACLES)
def test_no_false_certificate_on_the_fast_fuzz(name, family):
    tally = _fuzz(name, *instances_and_truths(family, FAST_SEEDS[family]))
    assert tally.false == 0, "\n".join(tally.failures)
    # the reference and its users certify these small instances (measured: all of them)
    assert tally.certified >= 0.9 * tally.instances, tally.line()


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
@pytest.mark.parametrize("name", ORACLES)
def test_no_false_certificate_on_the_large_fuzz(name, family):
    tally = _fuzz(name, *instances_and_truths(family, SLOW_SEEDS[family], max_points=3200))
    assert tally.false == 0, "\n".join(tally.failures)


@pytest.mark.parametrize("name", ORACLES)
def test_the_reproduction_certifies_the_true_minimum(name):
    problem = reproduction()
    truth = brute_force(problem)
    assert float(truth.minimum) == 4.0
    solution = (oracle := _oracle(name)).solve(problem, budget_of(oracle))
    cert = solution.certificate
    assert cert.certified, cert.message
    assert solution.w.tolist() == [0.0, 1.0] and cert.objective == 4.0


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_the_donated_parts_of_the_fast_fuzz_donate(family):
    """``window-donated`` is not one worker in disguise: its workers donate on most instances."""
    donating = 0
    for _, problem in instances_and_truths(family, FAST_SEEDS[family])[0]:
        driver = InProcess(3, chunk=2, min_levels=DONATED_MIN_LEVELS)
        oracle = WindowOracle(executor=driver, search_seconds=0.0)
        solution = oracle.solve(problem, Budget.unlimited())
        assert solution.certificate.stat(WindowStats).donations == driver.pool.donations_made()
        donating += driver.pool.donations_made() > 0
    assert donating >= 0.9 * len(FAST_SEEDS[family]), donating  # measured: 57 and 56 of 60


def test_the_fuzz_covers_what_the_issue_lists():
    """The instances the fuzz above runs (and their brute force, computed once): d 2 to 6,
    one-hot plus continuous, near-margin rows, both norm signs, negative RSPM
    weights, pure ERM, repeated rows with both labels, all-continuous rows."""
    instances, truths = instances_and_truths("mixed", FAST_SEEDS["mixed"])
    problems = [problem for _, problem in instances]
    assert {p.label.split("/")[0] for p in problems} == set(KINDS)
    assert {p.d for p in problems} == {2, 3, 4, 5, 6}
    opdisc = [p for p in problems if p.norm_coef != 0]
    assert any(p.norm_coef > 0 for p in opdisc) and any(p.norm_coef < 0 for p in opdisc)
    assert any(np.any(p.pos < 0) for p in problems if p.label.startswith("rspm"))
    exact_erm = sum(p.norm_coef == 0 and not p.linear.any() for p in problems)
    assert exact_erm >= len(problems) / 6
    assert any(np.any((p.pos > 0) & (p.neg > 0)) for p in problems)  # a repeat, both labels
    onehot = [np.all(np.isin(p.points, (0.0, 1.0)), axis=0).any() for p in problems]
    assert any(onehot) and not all(onehot)
    # rows near the margin: some grid point puts a score within 1e-6 of mu
    near = 0
    for p, truth in zip(problems[:40], truths):  # the brute force the fuzz above computed
        gap = np.abs(p.points @ truth.points.T - p.margin)
        near += bool((gap < 1e-6).any())
    assert near >= 30


def test_the_parallel_family_has_the_rows_a_presolve_merges():
    """Unmerged identical rows with both labels, proportional rows of both signs, identical
    feature columns; every kind; both signs of the norm term."""
    problems = [
        problem for _, problem in instances_and_truths("parallel", FAST_SEEDS["parallel"])[0]
    ]
    assert {p.label.split("/")[0] for p in problems} == {f"parallel-{k}" for k in KINDS}
    duplicated = proportional = repeated_column = 0
    for p in problems:
        X = p.points[: p.n_rows - (2 * p.d if "rspm" in p.label else 0)]
        pos, neg = p.pos[: len(X)], p.neg[: len(X)]
        _, first, counts = np.unique(X, axis=0, return_index=True, return_counts=True)
        duplicated += any(
            np.any((pos > 0) & np.all(X == X[i], axis=1))
            and np.any((neg > 0) & np.all(X == X[i], axis=1))
            for i, c in zip(first, counts)
            if c > 1
        )
        proportional += any(
            np.any(np.all(X == c * X[i], axis=1) & np.any(X != 0, axis=1))
            for c in MULTIPLES
            for i in range(len(X))
            if X[i].any()
        )
        repeated_column += any(
            np.array_equal(X[:, j], X[:, k]) for j in range(p.d) for k in range(j + 1, p.d)
        )
    half, eighth = len(problems) / 2, len(problems) / 8
    assert duplicated >= half and proportional >= half and repeated_column >= eighth, (
        duplicated,
        proportional,
        repeated_column,
    )
    opdisc = [p for p in problems if p.norm_coef != 0]
    assert any(p.norm_coef > 0 for p in opdisc) and any(p.norm_coef < 0 for p in opdisc)
