"""What a window search starts from (``oracles.window.plan``): the incumbent is its point's exact
value, the Lagrangian bound holds, the first unit is the root; a carried state resumes to the
same tables, below its best, from its open nodes; and a carried state with no open node left
certifies its best at once on every executor (issue 44: it crashed every donating executor with
a ZeroDivisionError)."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from core.problem import Box, Problem
from oracles.contract.certificate import OracleError, Status
from oracles.contract.budget import Budget
from oracles.contract.stats import CarryStats, WindowStats
from oracles.window.checkpoint import Carry, CarryStore, problem_key
from oracles.window.engine import InProcess, Threads
from oracles.window.oracle import WindowOracle
from oracles.window.plan import plan, resume
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance

CASES = [(fuzz_instance, s) for s in range(0, 12, 2)] + [(parallel_instance, s) for s in range(3)]


def _carry(start, *, best=None, w_best=None, bound=-math.inf, open_=None) -> Carry:
    """A state as a stopped search of ``start`` keeps it (``oracles.window.oracle.kept``)."""
    return Carry(
        problem_key(start.problem),
        start.upper,
        start.w_upper,
        start.incumbent if best is None else best,
        start.w_incumbent if w_best is None else w_best,
        bound,
        start.units if open_ is None else open_,
        0,
        0.0,
        0.0,
        1,
        start.lagrange_iterations,
    )


def _same_tables(a, b) -> None:
    for field in dataclasses.fields(a):
        x, y = getattr(a, field.name), getattr(b, field.name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, err_msg=field.name)
        elif callable(x):
            continue
        else:
            assert x == y, field.name


@pytest.mark.parametrize("make, seed", CASES)
def test_the_plan_starts_from_an_exact_incumbent_a_valid_bound_and_the_root(make, seed):
    problem = make(seed)
    truth = brute_force(problem)
    start = plan(problem, Budget.unlimited(), search_seconds=0.0, lagrange_iterations=50)
    assert float(truth.value_at(start.w_incumbent)) == pytest.approx(start.incumbent, abs=1e-9)
    assert start.upper == start.incumbent and np.array_equal(start.w_upper, start.w_incumbent)
    assert start.lagrange_bound <= float(truth.minimum) + 1e-9
    assert start.carried is None and start.lagrange_iterations == 50
    if start.units:  # the root, unless its bound already exceeds the incumbent
        (root,) = start.units
        assert root.shape == (1, 0)
    else:
        assert start.incumbent == pytest.approx(float(truth.minimum), abs=1e-9)


def test_the_plan_refuses_a_box():
    problem = Problem(np.eye(2), np.ones(2), np.zeros(2), Box(2))
    with pytest.raises(OracleError, match="IntegerGrid"):
        plan(problem, Budget.unlimited())


@pytest.mark.parametrize("make, seed", CASES[:4])
def test_a_resumed_plan_rebuilds_the_same_tables_below_the_carried_best(make, seed):
    problem = make(seed)
    truth = brute_force(problem)
    start = plan(problem, Budget.unlimited(), search_seconds=0.0)
    best = int(np.argmin([float(v) for v in truth.values]))
    opened = (np.array([[0]], np.int8), np.array([[1, 0], [-1, 0]], np.int8))
    carried = _carry(
        start,
        best=float(truth.values[best]),
        w_best=truth.points[best],
        bound=start.lagrange_bound + 1.0,  # a carried bound above the Lagrangian one is kept
        open_=opened + (np.zeros((0, 2), np.int8),),
    )
    again = resume(problem, carried)
    _same_tables(start.tables, again.tables)
    assert again.upper == start.upper and np.array_equal(again.w_upper, start.w_upper)
    assert again.incumbent == float(truth.values[best])
    assert np.array_equal(again.w_incumbent, truth.points[best])
    assert [u.tolist() for u in again.units] == [u.tolist() for u in opened]  # empty ones dropped
    assert again.lagrange_bound == start.lagrange_bound + 1.0
    assert again.carried is carried
    lower = resume(problem, dataclasses.replace(carried, bound=-math.inf))
    assert lower.lagrange_bound == start.lagrange_bound  # else the Lagrangian one


@pytest.mark.parametrize(
    "executor",
    [InProcess(1), InProcess(3), InProcess(3, chunk=2, min_levels=1), Threads(2), Threads(3)],
    ids=["one", "three-in-turn", "three-donating", "two-threads", "three-threads"],
)
@pytest.mark.parametrize("make, seed", [(fuzz_instance, 2), (parallel_instance, 1)])
def test_a_carried_state_with_no_open_node_certifies_its_best_at_once(
    tmp_path, executor, make, seed
):
    # a search that stopped as its last node closed: nothing left to search, its best stands
    problem = make(seed)
    truth = brute_force(problem)
    best = int(np.argmin([float(v) for v in truth.values]))
    start = plan(problem, Budget.unlimited(), search_seconds=0.0)
    store = CarryStore(str(tmp_path))
    store.save(_carry(start, best=float(truth.values[best]), w_best=truth.points[best], open_=()))
    oracle = WindowOracle(search_seconds=0.0, carry=str(tmp_path), executor=executor)
    solution = oracle.solve(problem, Budget.unlimited())
    c = solution.certificate
    assert c.certified and c.status is Status.OPTIMAL, c.message
    assert truth.value_at(solution.w) == truth.minimum
    assert c.stat(WindowStats).carried_open_nodes == 0 and c.stat(WindowStats).nodes == 0
    assert c.stat(CarryStats).attempts == 2 and store.load(problem) is None
