"""Carrying a stopped window search on (oracles.window.checkpoint): the same answer, bound and nodes as the
uninterrupted search, against the brute force, with every stop's state checked; carried on
attempts stopped by node budgets as small as one node, resumed on every executor of this process
(one worker, three in turn, two threads), never raise and end at the uninterrupted answer."""

from __future__ import annotations

import dataclasses
import json
import math
import time

import numpy as np
import pytest

from oracles.contract.certificate import OBJECTIVE_TOL, Status
from oracles.contract.budget import Budget
from oracles.contract.stats import CarryStats, TreeStats, WindowStats
from oracles.routing.registry import make_oracle
from oracles.window.checkpoint import (
    Attempt,
    Carry,
    CarryError,
    CarryStore,
    kept_text,
    problem_key,
)
from oracles.window.engine import InProcess, Threads, WorkerResult, gather
from oracles.window.oracle import WindowOracle, answer, kept
from oracles.window.plan import resume
from oracles.window.pool import Pool
from tests.oracles.fuzz import FAMILIES, brute_force, fuzz_instance, parallel_instance

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
    order = resume(problem, state).tables.order
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
    nodes = whole.certificate.stat(WindowStats).nodes
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
        assert (
            "to certify: about" in cert.message and "nodes left" in cert.stat(TreeStats).to_certify
        )
        left = nodes - cert.stat(CarryStats).total_nodes  # what the uninterrupted search still made
        assert left / 3 - 2 <= cert.stat(TreeStats).tree_nodes <= 3 * left + 2
        stops += 1
        state = store.load(problem)
        assert state is not None and state.attempts == stops
        assert state.nodes == cert.stat(CarryStats).total_nodes
        _check_state(problem, truth, state)
    assert cert.certified and cert.stat(CarryStats).attempts == stops + 1
    assert truth.value_at(solution.w) == truth.minimum
    assert cert.objective == pytest.approx(whole.certificate.objective, abs=1e-12)
    assert cert.bound == pytest.approx(whole.certificate.bound, abs=1e-9)
    assert abs(cert.stat(CarryStats).total_nodes - nodes) <= 0.01 * nodes
    assert store.load(problem) is None  # a certified search keeps no state


@pytest.mark.parametrize("seed", range(6))
def test_a_search_stopped_on_one_worker_carried_on_on_several_finds_the_minimum(tmp_path, seed):
    # stopped on one worker, carried on with its open nodes in the pool of several
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
    start = resume(problem, state)
    assert sum(len(u) for u in start.units) == state.open_nodes > 0
    several = InProcess(3, chunk=2, min_levels=1) if seed % 2 else Threads(3, chunk=4, min_levels=1)
    solution = dataclasses.replace(first, executor=several).solve(problem, Budget.unlimited())
    c = solution.certificate
    assert c.certified and c.stat(CarryStats).attempts == 2 and c.stat(WindowStats).workers == 3
    assert c.stat(WindowStats).carried_open_nodes == state.open_nodes
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


def test_a_lost_workers_unit_is_kept_after_the_stopped_workers_nodes(tmp_path):
    """A worker lost mid-unit gives its lease back to the pool (``Pool.requeue``): the state
    kept holds the stopped workers' open nodes, then the lost unit from its own prefixes."""
    problem = parallel_instance(3)
    store = CarryStore(str(tmp_path))
    carrying = WindowOracle(search_seconds=SEARCH_SECONDS, carry=str(tmp_path))
    carrying.solve(problem, Budget.unlimited().with_nodes(1))
    start = resume(problem, store.load(problem))
    nodes = [u[i : i + 1] for u in start.units for i in range(len(u))]  # one node a unit
    assert len(nodes) >= 2
    lost, *rest = nodes
    pool = Pool([lost], start.incumbent)
    pool.take(1)
    pool.requeue(1, 4)  # worker 1 lost: nothing is known of what it searched
    results = [
        WorkerResult(0, math.inf, None, start.incumbent, tuple(rest), 3, 0, 0.1, 0.1, 0, "x"),
        WorkerResult(1, math.inf, None, start.incumbent, (), 4, 0, 0.1, 0.1, 0, "", "lost"),
    ]
    searched = gather(start.tables, results, pool, start.incumbent)
    assert not searched.finished and searched.errors == ("lost",)
    solution = answer(start, searched, 0.0)
    assert solution.certificate.status is Status.ERROR
    # an error is not kept; a stop with the same nodes left is, in that order
    stop = dataclasses.replace(searched, errors=())
    assert answer(start, stop, 0.0).certificate.status is Status.TIME_LIMIT
    kept(store, start, stop, answer(start, stop, 0.0), time.process_time(), time.perf_counter())
    state = store.load(problem)
    assert [u.tolist() for u in state.open] == [u.tolist() for u in [*rest, lost]]
    assert state.attempts == 2


#: The executors a carried state resumes on (the Ray one: ``tests/pipeline/distributed``).
CARRY_EXECUTORS = {
    "one": lambda: InProcess(1),
    "three-in-turn": lambda: InProcess(3, min_levels=1),
    "two-threads": lambda: Threads(2, min_levels=1),
}
#: Attempt i is stopped past 2**(i // 2) nodes a worker: 1, 1, 2, 2, 4, ... (a tree of n nodes
#: certifies within about 2 log2(n) attempts; 64 attempts are never reached).
CARRY_ATTEMPTS = 64


def _carried_on(problem, executor, directory, check=None):
    """The search carried on through attempts stopped by node budgets from one node up, to its
    end (``CARRY_ATTEMPTS`` at most); ``check(state)`` is called with every stop's state."""
    oracle = WindowOracle(search_seconds=0.0, carry=directory, executor=executor)
    store = CarryStore(directory)
    for attempt in range(CARRY_ATTEMPTS):
        solution = oracle.solve(problem, Budget.unlimited().with_nodes(2 ** (attempt // 2)))
        cert = solution.certificate
        if cert.status is not Status.TIME_LIMIT:
            break
        state = store.load(problem)
        assert state is not None and state.attempts == attempt + 1
        if check is not None:
            check(state)
    return solution, attempt + 1


def _judge_carried(problem, truth, whole, solution, attempts) -> None:
    """The carried-on search certified the uninterrupted search's answer (the minimum)."""
    c = solution.certificate
    assert c.certified and c.status is Status.OPTIMAL, c.message
    assert c.stat(CarryStats).attempts == attempts
    assert float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL
    assert abs(c.objective - whole.certificate.objective) <= OBJECTIVE_TOL
    assert c.objective == pytest.approx(float(truth.value_at(solution.w)), abs=1e-9)


@pytest.mark.parametrize("executor", sorted(CARRY_EXECUTORS))
@pytest.mark.parametrize(
    "make, seed", [(fuzz_instance, 3), (fuzz_instance, 6), (parallel_instance, 5)]
)
def test_attempts_stopped_after_one_node_and_more_end_at_the_uninterrupted_answer(
    tmp_path, executor, make, seed
):
    problem = make(seed)
    truth = brute_force(problem)
    whole = WindowOracle(search_seconds=0.0).solve(problem, Budget.unlimited())
    assert whole.certificate.certified
    solution, attempts = _carried_on(
        problem,
        CARRY_EXECUTORS[executor](),
        str(tmp_path),
        check=lambda state: _check_state(problem, truth, state),
    )
    assert attempts > 2  # stopped at one node, and carried on
    _judge_carried(problem, truth, whole, solution, attempts)
    assert CarryStore(str(tmp_path)).load(problem) is None


#: ``-m slow``: 2,500 instances of each family, carried on on every executor (measured on 300 of
#: them: 0.23 CPU s an instance for the three, about 20 CPU minutes in all).
SLOW_CARRY_SEEDS = range(100, 2600)


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_attempts_carried_on_on_every_executor_end_at_the_uninterrupted_answer(tmp_path, family):
    for seed in SLOW_CARRY_SEEDS:
        problem = FAMILIES[family](seed)
        truth = brute_force(problem)
        whole = WindowOracle(search_seconds=0.0).solve(problem, Budget.unlimited())
        for name, make in CARRY_EXECUTORS.items():
            directory = str(tmp_path / f"{seed}-{name}")
            solution, attempts = _carried_on(problem, make(), directory)
            try:
                _judge_carried(problem, truth, whole, solution, attempts)
            except AssertionError as err:
                raise AssertionError(f"{family} seed {seed} on {name}: {err}") from err


# --- the problem's attempts (CarryStore.attempts, record, finish) ------------------------------


def _as_written_before_attempts(store: CarryStore, problem) -> None:
    """The kept state rewritten as the layout was before the attempts were recorded: no
    ``open_nodes`` in its header, no record of attempts beside it."""
    path = store.path(problem_key(problem))
    with np.load(path, allow_pickle=False) as data:
        arrays = {name: data[name] for name in data.files}
    meta = json.loads(str(arrays["meta"]))
    del meta["open_nodes"]
    arrays["meta"] = np.array(json.dumps(meta))
    with open(path, "wb") as out:
        np.savez(out, **arrays)
    store.attempts_path(problem_key(problem)).unlink(missing_ok=True)


def test_a_state_kept_before_attempts_were_recorded_carries_on_through_a_route(tmp_path):
    problem, directory = fuzz_instance(3), str(tmp_path)
    store = CarryStore(directory)
    stopped = WindowOracle(search_seconds=0.0, carry=directory).solve(
        problem, Budget.unlimited().with_nodes(1)
    )
    assert stopped.certificate.status is Status.TIME_LIMIT
    _as_written_before_attempts(store, problem)
    state = store.load(problem)
    assert store.summary(problem) == kept_text(state.open_nodes, state.bound)
    (older,) = store.attempts(problem)  # the state's own counts stand for its attempts
    assert older.number == 1 and older.cpu_seconds == state.cpu_seconds
    route = make_oracle("window", fallback=None, search_seconds=0.0, carry=directory)
    solution = route.solve(problem, Budget.unlimited())
    c, truth = solution.certificate, brute_force(problem)
    assert c.certified and float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL
    carry = c.stat(CarryStats)
    assert carry.attempts == 2 and carry.carried_cpu_seconds == state.cpu_seconds
    kept = kept_text(state.open_nodes, state.bound)
    assert carry.started_from == f"kept state of attempt 1 ({kept})"
    assert store.load(problem) is None and store.attempts(problem) == ()


def test_the_attempts_survive_the_file_and_one_it_cannot_read_is_refused_in_one_line(tmp_path):
    problem, store = fuzz_instance(0), CarryStore(str(tmp_path))
    assert store.attempts(problem) == ()
    attempts = (
        Attempt(
            1, 3, 0.25, 0.5, "window", False, "from scratch on window", "2 open nodes, bound 1"
        ),
        Attempt(2, 0, 0.125, 0.25, "structured", False, "from scratch on structured"),
    )
    store.record(problem, attempts)
    assert store.attempts(problem) == attempts
    path = store.attempts_path(problem_key(problem))
    path.write_text(json.dumps({"layout": 99, "key": problem_key(problem), "attempts": []}))
    with pytest.raises(CarryError) as refused:
        store.attempts(problem)
    assert str(refused.value).startswith(str(path)) and "\n" not in str(refused.value)
    path.write_text("{not json")
    with pytest.raises(CarryError, match="not a record of attempts this version reads"):
        store.attempts(problem)
    store.finish(problem)
    assert not path.exists() and store.attempts(problem) == ()
