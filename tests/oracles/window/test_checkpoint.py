"""Carrying a stopped window search on (oracles.window.checkpoint): the same answer, bound and nodes as the
uninterrupted search, against the brute force, with every stop's state checked."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from oracles.base import Status
from oracles.budget import Budget
from oracles.window.checkpoint import Carry, CarryStore, problem_key
from oracles.window.split import PartResult, open_after, plan_split, resume_split
from oracles.window.oracle import WindowOracle
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance

#: The grid search's time: long enough that it ends when its restarts stop improving (its
#: ``patience``), not at its clock, so that the whole search and the carried-on one start from
#: the same incumbent and make the same tree on a loaded machine too (at 0.05 s they did not at
#: load 10: 59 nodes against 34).
SEARCH_SECONDS = 60.0

INSTANCES = [(fuzz_instance, seed) for seed in range(10)] + [
    (parallel_instance, seed) for seed in range(4)
]


def _covered(state: Carry, order: np.ndarray, k: np.ndarray) -> bool:
    """Whether the grid point k (integer coordinates) lies below one of the state's open
    nodes (their prefixes are in search order)."""
    ks = k[order].astype(np.int8)
    return any(
        (states == ks[: states.shape[1]]).all(axis=1).any() for states in state.open if len(states)
    )


def _check_state(problem, truth, state: Carry) -> None:
    """A stop's state proves what it says: its bound is below the minimum, its best is the
    value of its point, and every point better than its best lies below an open node."""
    assert state.key == problem_key(problem)
    assert state.bound <= float(truth.minimum) + 1e-9
    assert float(truth.value_at(state.w_best)) == pytest.approx(state.best, abs=1e-9)
    order = resume_split(problem, Budget.unlimited(), state).tables.order
    K = np.rint(truth.points / problem.domain.step).astype(np.int64)
    for k, value in zip(K, truth.values):
        if float(value) < state.best - 1e-9:
            assert _covered(state, order, k), (k.tolist(), float(value), state.best)


@pytest.mark.parametrize("make, seed", INSTANCES)
def test_a_stopped_search_carried_on_is_the_uninterrupted_search(tmp_path, make, seed):
    problem = make(seed)
    truth = brute_force(problem)
    whole = WindowOracle(search_seconds=SEARCH_SECONDS).solve(problem, Budget.unlimited())
    assert whole.certificate.certified
    nodes = whole.certificate.extra["nodes"]
    store = CarryStore(str(tmp_path))
    carrying = WindowOracle(search_seconds=SEARCH_SECONDS, carry=str(tmp_path))
    limit = max(1, nodes // 5)
    stops = 0
    for _ in range(1000):
        solution = carrying.solve(problem, Budget.unlimited().with_nodes(limit))
        cert = solution.certificate
        if cert.certified:
            break
        assert cert.status is Status.TIME_LIMIT and "nodes" in cert.message
        # what its certificate still costs: the tree below its open nodes (oracles.window.tree_size)
        assert "to certify: about" in cert.message and "nodes left" in cert.extra["to_certify"]
        left = nodes - cert.extra["total_nodes"]  # what the uninterrupted search still made
        assert left / 3 - 2 <= cert.extra["tree_nodes"] <= 3 * left + 2
        stops += 1
        state = store.load(problem)
        assert state is not None and state.attempts == stops
        assert state.nodes == cert.extra["total_nodes"]
        _check_state(problem, truth, state)
    assert cert.certified and cert.extra["attempts"] == stops + 1
    assert truth.value_at(solution.w) == truth.minimum
    assert cert.objective == pytest.approx(whole.certificate.objective, abs=1e-12)
    assert cert.bound == pytest.approx(whole.certificate.bound, abs=1e-9)
    assert abs(cert.extra["total_nodes"] - nodes) <= 0.01 * nodes
    assert store.load(problem) is None  # a certified search keeps no state


@pytest.mark.parametrize("seed", range(6))
def test_a_search_carried_on_in_parts_finds_the_brute_force_minimum(tmp_path, seed):
    # stopped in one part, carried on with its open nodes dealt into three
    problem = fuzz_instance(seed)
    truth = brute_force(problem)
    store = CarryStore(str(tmp_path))
    first = WindowOracle(search_seconds=SEARCH_SECONDS, carry=str(tmp_path))
    stopped = first.solve(problem, Budget.unlimited().with_nodes(1))
    if stopped.certificate.certified:  # a tree of a node or two: nothing to carry
        assert store.load(problem) is None
        return
    state = store.load(problem)
    _check_state(problem, truth, state)
    plan = resume_split(problem, Budget.unlimited(), state, parts=3)
    assert sum(len(s) for t in plan.tasks for s in t.levels()) == state.open_nodes
    solution = dataclasses.replace(first, parts=3).solve(problem, Budget.unlimited())
    assert solution.certificate.certified and solution.certificate.extra["attempts"] == 2
    assert truth.value_at(solution.w) == truth.minimum


def test_the_state_is_read_for_its_own_problem_only(tmp_path):
    problem = parallel_instance(1)
    store = CarryStore(str(tmp_path))
    carrying = WindowOracle(search_seconds=SEARCH_SECONDS, carry=str(tmp_path))
    stopped = carrying.solve(problem, Budget.unlimited().with_nodes(1))
    assert not stopped.certificate.certified and store.load(problem) is not None
    other = dataclasses.replace(problem, linear=problem.linear + 1e-12)  # other noise
    assert problem_key(other) != problem_key(problem) and store.load(other) is None
    regrid = dataclasses.replace(
        problem, domain=dataclasses.replace(problem.domain, bound=problem.domain.bound + 1)
    )
    assert store.load(regrid) is None
    assert dataclasses.replace(problem, label="renamed") is not problem
    assert store.load(dataclasses.replace(problem, label="renamed")) is not None  # a name only


def test_a_state_survives_the_file(tmp_path):
    state = Carry(
        "k" * 32,
        3.5,
        np.array([1.0, -1.0]),
        2.5,
        np.array([0.0, 1.0]),
        -math.inf,
        (np.array([[1, 0, -1]], np.int8), np.array([[2], [-2]], np.int8)),
        120,
        1.5,
        2.0,
        2,
        300,
    )
    store = CarryStore(str(tmp_path))
    path = store.save(state)
    assert path.name == "k" * 32 + ".npz" and not list(tmp_path.glob("*.partial"))
    problem_store = CarryStore(str(tmp_path))
    loaded = problem_store.path(state.key)
    assert loaded.exists()


def test_a_lost_part_is_searched_again_from_its_own_prefixes():
    problem = parallel_instance(3)
    plan = plan_split(problem, Budget.unlimited(), parts=3, search_seconds=0.02)
    n = len(plan.tasks)
    assert n == 3
    lost = PartResult.failed(n - 1, RuntimeError("worker died"))  # nothing known of it
    stopped = dataclasses.replace(
        PartResult.failed(0, RuntimeError("x")),
        status=Status.TIME_LIMIT,
        open=(np.array([[0]], np.int8),),
    )
    finished = [
        dataclasses.replace(lost, index=i, status=Status.OPTIMAL, open=()) for i in range(1, n - 1)
    ]
    left = open_after(plan, [lost, *finished, stopped])
    assert left[0].tolist() == [[0]]  # the stopped part's open nodes, then the lost part's task
    assert len(left) == 1 + len(plan.tasks[n - 1].levels())
    assert all(np.array_equal(a, b) for a, b in zip(left[1:], plan.tasks[n - 1].levels()))


def test_a_state_with_no_node_left_certifies_its_best(tmp_path):
    # a search that stopped as its last node was made: nothing left to search, its best stands
    problem = fuzz_instance(2)
    truth = brute_force(problem)
    store = CarryStore(str(tmp_path))
    carrying = WindowOracle(search_seconds=SEARCH_SECONDS, carry=str(tmp_path))
    carrying.solve(problem, Budget.unlimited().with_nodes(0))
    state = store.load(problem)
    best = int(np.argmin([float(v) for v in truth.values]))
    done = dataclasses.replace(
        state, open=(), best=float(truth.values[best]), w_best=truth.points[best]
    )
    store.save(done)
    solution = carrying.solve(problem, Budget.unlimited())
    assert solution.certificate.certified and truth.value_at(solution.w) == truth.minimum
    assert solution.certificate.extra["carried_open_nodes"] == 0
