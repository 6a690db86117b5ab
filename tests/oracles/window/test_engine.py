"""The window search's one loop and its executors (``oracles.window.engine``) against the exact
brute force of ``fuzz.py``: every executor (one worker in this process, several stepped in turn,
threads) finds the brute-force minimum and the one-worker answer, makes the same nodes when it
starts at the minimum, leaves every better point below a node it keeps when it stops (a node
limit, a race's stop, a worker that raises), and the run in turn is the same every time."""

from __future__ import annotations

import math
import os
import pickle
import threading
import time

import numpy as np
import pytest

from oracles.contract.certificate import Status
from oracles.contract.budget import Budget
from oracles.routing.race import RaceStop
from oracles.contract.stats import TreeStats, WindowStats
from oracles.window.engine import (
    InProcess,
    Threads,
    WorkerResult,
    drive,
    gather,
    least_bound,
    local_executor,
    searched,
)
from oracles.window.oracle import WindowOracle, answer
from oracles.window.plan import plan
from oracles.window.pool import LocalClient, Pool, UnitRecord
from oracles.window.tree import frontier
from oracles.window.worker import Worker
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.oracles.window.test_worker import INSTANCES, better_points, covered, untimed_plan

#: OPDisc, exact ERM, RSPM and near-margin OPDisc (kinds cycle with period 4), both families.
CASES = [(fuzz_instance, seed) for seed in range(12)] + [
    (parallel_instance, seed) for seed in range(4)
]


def _executors():
    """Every executor this process runs, in the shapes the solves use and smaller ones that
    interleave and donate on the fuzz's small trees."""
    return {
        "one": InProcess(1),
        "one, chunks of 7": InProcess(1, chunk=7),  # a deep stack between two looks
        "three in turn": InProcess(3),
        "three donating": InProcess(3, chunk=2, min_levels=1),
        "two threads": Threads(2),
        "three threads donating": Threads(3, chunk=4, min_levels=1),
    }


def _run(executor, start, best=None, budget=None, **options):
    best = start.incumbent if best is None else best
    budget = Budget.unlimited() if budget is None else budget
    return executor.run(start.tables, start.units, best, budget, **options)


def _unique(truth) -> bool:
    """Whether one grid point attains the minimum (no exact tie)."""
    minimum = truth.minimum  # a property that scans every value
    return sum(v == minimum for v in truth.values) == 1


def _covers_every_better_point(problem, truth, start, result) -> None:
    """Every point better than the best value found lies below a node the search left."""
    found = min(result.value, start.incumbent)
    for k in better_points(problem, truth, found):
        assert covered(result.open, start.tables.order, k), k.tolist()


@pytest.mark.parametrize("make, seed", CASES)
def test_every_executor_finds_the_brute_force_minimum_and_the_one_workers_answer(make, seed):
    problem = make(seed)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    minimum = float(truth.minimum)
    one = answer(start, _run(InProcess(1), start), 0.0)
    unique = _unique(truth)
    assert one.certificate.certified
    assert one.certificate.objective == pytest.approx(minimum, abs=1e-9)
    for name, executor in _executors().items():
        result = _run(executor, start)
        assert result.finished and result.message == "" and not result.errors, name
        assert math.isinf(result.least_left) and result.open == ()
        solution = answer(start, result, 0.0)
        c = solution.certificate
        assert c.certified and c.status is Status.OPTIMAL, (name, c.message)
        assert float(truth.value_at(solution.w)) == pytest.approx(minimum, abs=1e-9), name
        assert c.bound <= minimum + 1e-9
        assert c.stat(WindowStats).workers == getattr(
            executor, "workers", getattr(executor, "threads", 0)
        )
        assert c.threads == getattr(executor, "threads", 1)
        if unique:  # no exact tie: the same point, the same objective
            assert np.array_equal(solution.w, one.w), name
            assert c.objective == one.certificate.objective, name
        else:
            assert c.objective == pytest.approx(one.certificate.objective, abs=1e-9), name


@pytest.mark.parametrize("make, seed", INSTANCES[:10] + INSTANCES[24:28])
def test_started_at_the_minimum_every_executor_makes_the_same_nodes(make, seed):
    """Given the best value, the tree is fixed (``oracles.window.worker``): below the minimum
    from the start, the same nodes however the workers cut it (below a worse incumbent a worker
    may find the minimum sooner)."""
    problem = make(seed, max_points=3200)
    start = untimed_plan(problem)
    one = _run(InProcess(1), start)
    at_min = one.value if one.w is not None else start.incumbent
    base = _run(InProcess(1), start, best=at_min)
    assert base.finished
    assert base.w is None or base.value == pytest.approx(at_min, abs=1e-12)
    for name, executor in _executors().items():
        result = _run(executor, start, best=at_min)
        assert result.finished, name
        assert result.nodes == base.nodes, name
        assert result.floor == pytest.approx(at_min, abs=1e-12)
    # the best lowered by another worker's offer lowers this worker's threshold the same way
    pool = Pool(start.units, start.incumbent)
    pool.offer(at_min)
    worker = Worker(start.tables, 0, start.incumbent)
    lowered = drive(worker, LocalClient(pool, 0, pause=0.0), Budget.unlimited())
    assert lowered.nodes == base.nodes and pool.finished()
    assert lowered.best == pytest.approx(at_min, abs=1e-12)


@pytest.mark.parametrize("seed", [0, 3, 4, 7])
def test_units_searched_below_the_minimum_find_nothing_and_prove_their_bound(seed):
    problem = fuzz_instance(seed)
    minimum = float(brute_force(problem).minimum)
    start = plan(problem, Budget.unlimited(), search_seconds=0.02)
    tables = pickle.loads(pickle.dumps(start.tables))  # what a Ray task is shipped
    units = [pickle.loads(pickle.dumps(u)) for u in _split(start)]
    for executor in (InProcess(1), InProcess(3, chunk=2, min_levels=1), Threads(2)):
        below = executor.run(tables, units, minimum - 0.5, Budget.unlimited())
        assert below.finished and below.w is None and below.value == math.inf
        assert below.bound == below.floor == minimum - 0.5
        at = executor.run(tables, units, minimum, Budget.unlimited())
        assert at.finished and at.bound <= minimum + 1e-9
        assert at.w is None or at.value >= minimum - 1e-9


def _split(start, parts: int = 3) -> list[np.ndarray]:
    """The plan's tree cut breadth first into ``parts`` units (a carried state's several)."""
    nodes = frontier(start.tables, start.incumbent, at_least=10)
    return [u for u in np.array_split(nodes.states, parts) if len(u)]


@pytest.mark.parametrize("make, seed", [(parallel_instance, 5), (fuzz_instance, 9)])
def test_the_order_of_the_units_does_not_change_the_minimum(make, seed):
    problem = make(seed)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    units = _split(start)
    assert len(units) > 1
    ends = []
    for executor in (InProcess(1), InProcess(3, chunk=2, min_levels=1), Threads(2)):
        for order in (units, units[::-1]):
            result = executor.run(start.tables, order, start.incumbent, Budget.unlimited())
            assert result.finished
            ends.append(answer(start, result, 0.0))
    assert all(s.certificate.certified for s in ends)
    assert all(
        s.certificate.objective == pytest.approx(float(truth.minimum), abs=1e-9) for s in ends
    )
    if _unique(truth):
        assert all(np.array_equal(s.w, ends[0].w) for s in ends)


@pytest.mark.parametrize("limit", [1, 3])
@pytest.mark.parametrize("make, seed", INSTANCES[:8] + INSTANCES[24:28])
def test_a_stopped_search_leaves_every_better_point_open_and_its_bound_holds(make, seed, limit):
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    minimum = float(truth.minimum)
    start = untimed_plan(problem)
    budget = Budget.unlimited().with_nodes(limit)
    stopped = 0
    for name, executor in _executors().items():
        result = _run(executor, start, budget=budget)
        assert result.bound <= minimum + 1e-9, name
        assert result.least_left == least_bound(start.tables, result.open)
        solution = answer(start, result, 0.0)
        c = solution.certificate
        assert c.bound <= minimum + 1e-9 and c.objective >= minimum - 1e-9
        if result.finished:  # a tree of a few nodes: nothing left
            assert c.certified and c.objective == pytest.approx(minimum, abs=1e-9)
            continue
        stopped += 1
        assert result.message == f"more than {limit} nodes", name
        assert c.status is Status.TIME_LIMIT and not c.certified
        _covers_every_better_point(problem, truth, start, result)
    assert stopped >= 1


def test_an_oracle_stopped_after_one_node_says_why_and_what_is_left():
    problem = fuzz_instance(4, max_points=3200)
    truth = brute_force(problem)
    for executor in (InProcess(1), InProcess(3, chunk=2, min_levels=1), Threads(2)):
        oracle = WindowOracle(search_seconds=0.0, executor=executor)
        c = oracle.solve(problem, Budget.unlimited().with_nodes(1)).certificate
        assert c.status is Status.TIME_LIMIT and not c.certified
        assert c.bound <= float(truth.minimum) + 1e-9 <= c.objective + 2e-9
        assert (
            c.stat(TreeStats).stopped == "more than 1 nodes"
            and "nodes left" in c.stat(TreeStats).to_certify
        )
        assert c.stat(TreeStats).tree_nodes > 0 and c.stat(TreeStats).nodes_per_cpu_second > 0


class _Flaky:
    """``Worker.step`` raising in the workers ``fails`` says (each once at most, on its first
    step; ``fails`` None: whichever worker steps first)."""

    def __init__(self, fails=None):
        self.fails, self.raised, self._lock = fails, [], threading.Lock()
        self.real = Worker.step

    def __call__(self, worker, nodes, best=math.inf):
        with self._lock:
            due = worker.index not in self.raised and (
                worker.index in self.fails if self.fails is not None else not self.raised
            )
            if due:
                self.raised.append(worker.index)
        if due:
            raise RuntimeError(f"boom in worker {worker.index}")
        return self.real(worker, nodes, best)

    def patch(self, monkeypatch) -> _Flaky:
        """``Worker.step`` replaced by this (a function, so that it binds as a method)."""

        def step(worker, nodes, best=math.inf):
            return self(worker, nodes, best)

        monkeypatch.setattr(Worker, "step", step)
        return self


@pytest.mark.parametrize("make, seed", [(fuzz_instance, 4), (parallel_instance, 5)])
def test_a_worker_that_raises_leaves_the_whole_uncertified_unless_others_search_its_nodes(
    monkeypatch, make, seed
):
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    minimum = float(truth.minimum)
    start = untimed_plan(problem)
    cases = [
        # alone: its unit goes back to the pool and nobody searches it
        (InProcess(1), {0}, False),
        (Threads(2, chunk=4), {0, 1}, False),
        # with others: its lease is searched again by them, the answer certified
        (InProcess(3, chunk=2, min_levels=1), {1}, True),
        (InProcess(3, chunk=2, min_levels=1), {0}, True),
        (Threads(3, chunk=4, min_levels=1), None, True),
    ]
    for executor, fails, finished in cases:
        flaky = _Flaky(fails).patch(monkeypatch)
        result = _run(executor, start)
        monkeypatch.undo()
        assert flaky.raised, executor
        expected = sorted(f"RuntimeError: boom in worker {i}" for i in flaky.raised)
        assert sorted(result.errors) == expected
        assert result.finished is finished
        assert result.bound <= minimum + 1e-9
        solution = answer(start, result, 0.0)
        c = solution.certificate
        if finished:
            assert c.certified and c.objective == pytest.approx(minimum, abs=1e-9)
            continue
        assert not c.certified and c.status is Status.ERROR and "boom" in c.message
        assert c.bound <= minimum + 1e-9 and c.bound <= c.objective
        assert result.open  # the failed worker's unit is left, to be searched again
        _covers_every_better_point(problem, truth, start, result)


def test_a_failed_search_through_the_oracle_is_an_error_not_a_certificate(monkeypatch):
    problem = parallel_instance(5, max_points=3200)
    _Flaky({0}).patch(monkeypatch)
    oracle = WindowOracle(search_seconds=0.0, executor=InProcess(1))
    c = oracle.solve(problem, Budget.unlimited()).certificate
    assert not c.certified and c.status is Status.ERROR
    assert c.bound <= float(brute_force(problem).minimum) + 1e-9


class _StopAfter:
    """A race's stop signal that fires on its ``looks``-th call (thread-safe)."""

    def __init__(self, looks: int):
        self.looks, self.calls, self._lock = looks, 0, threading.Lock()

    def __call__(self) -> str:
        with self._lock:
            self.calls += 1
            return "the rival certified" if self.calls >= self.looks else ""


@pytest.mark.parametrize("make, seed", [(fuzz_instance, 7), (parallel_instance, 7)])
def test_a_races_stop_signal_stops_the_search(make, seed):
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    for executor in (InProcess(1, chunk=2), InProcess(3, chunk=2, min_levels=1), Threads(2, 2)):
        stop = _StopAfter(4)
        result = _run(executor, start, stop=stop)
        assert stop.calls >= 4
        assert result.message == "the rival certified" and not result.finished
        assert result.bound <= float(truth.minimum) + 1e-9
        _covers_every_better_point(problem, truth, start, result)
    # through the oracle: the race's stop as the solve's argument, the rival certified already
    race = RaceStop()
    race.stop("the rival certified")
    c = WindowOracle(search_seconds=0.0).solve(problem, Budget.unlimited(), stop=race)
    assert c.certificate.status is Status.TIME_LIMIT
    assert c.certificate.stat(TreeStats).stopped == "the rival certified"
    assert c.certificate.stat(WindowStats).nodes == 0


def test_the_run_in_turn_is_the_same_every_time():
    problem = fuzz_instance(5, max_points=3200)
    start = untimed_plan(problem)
    runs = []
    for _ in range(2):
        executor = InProcess(4, chunk=2)
        result = _run(executor, start)
        records = [(r.parent, r.offset, r.nodes) for r in result.records]
        runs.append((records, executor.rounds, result.donations, result.nodes, result.value))
    assert runs[0] == runs[1]
    assert runs[0][2] > 0 and len(runs[0][0]) == runs[0][2] + 1  # the root and its donations
    assert math.isfinite(start.incumbent)


def test_the_instances_above_donate():
    """The coverage and node tests above are not vacuous: donations happen, on most instances."""
    donated = 0
    for make, seed in INSTANCES:
        start = untimed_plan(make(seed, max_points=3200))
        donated += _run(InProcess(3, chunk=2, min_levels=1), start).donations > 0
    assert donated >= 0.9 * len(INSTANCES), donated  # measured: 32 of 32


@pytest.mark.parametrize("make, seed", [(fuzz_instance, 7), (parallel_instance, 7)])
def test_threads_donate_to_an_idle_thread_and_keep_the_answer(monkeypatch, make, seed):
    """Threads donate too: the worker that took the root waits (5 s at most) before its first
    chunk until another thread has asked the pool for a unit, so that it has someone to give
    to; the answer and, at the minimum, the nodes are the one worker's."""
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    one = _run(InProcess(1), start)
    real = Worker.step

    def step(worker, nodes, best=math.inf):
        if not waited:  # the first chunk of the run: the root's
            waited.append(worker.index)
            deadline = time.monotonic() + 5.0
            while executor.pool.wanted() == 0 and time.monotonic() < deadline:
                time.sleep(0.001)
        return real(worker, nodes, best)

    monkeypatch.setattr(Worker, "step", step)
    for best in (start.incumbent, one.value):
        executor, waited = Threads(3, chunk=2, min_levels=1), []
        result = _run(executor, start, best=best)
        assert result.finished and result.donations > 0 and result.workers == 3
        assert min(result.value, best) == pytest.approx(float(truth.minimum), abs=1e-9)
        # units donated (a donated unit may make no node: the best found meanwhile prunes it)
        assert len(result.records) > 1 and sum(r.nodes for r in result.records) == result.nodes
    at_min = _run(InProcess(1), start, best=one.value)
    assert result.nodes == at_min.nodes  # the last run: started at the minimum


def _result(index, value, w, *, pid=None, cpu=1.0, open_=(), message="", nodes=10):
    return WorkerResult(
        index,
        value,
        None if w is None else np.array(w, float),
        value,
        open_,
        nodes,
        1,
        1.0,
        cpu,
        os.getpid() if pid is None else pid,
        message,
    )


def test_gathered_results_keep_the_lower_index_among_ties_and_the_cpu_spent_elsewhere():
    start = untimed_plan(fuzz_instance(3))
    here = os.getpid()
    results = [
        _result(2, 1.0, [2.0], pid=here + 2, cpu=5.0),
        _result(0, 1.0, [0.0], cpu=2.0),
        _result(1, 3.0, [1.0], pid=here + 1, cpu=3.0, message="recalled"),
    ]
    out = searched(start.tables, results, [], 4.0, 2, [UnitRecord(-1, 0, 30)])
    assert out.finished and out.value == 1.0 and out.w.tolist() == [0.0]
    assert out.cpu_seconds == 10.0 and out.remote_cpu_seconds == 8.0
    assert out.workers == 3 and out.nodes == 30 and out.donations == 2 and out.message == ""
    window = answer(start, out, 0.0).certificate.stat(WindowStats)
    assert window.remote_cpu_seconds == 8.0 and window.worker_cpu_seconds == 10.0
    # every worker elsewhere: the CPU is all remote
    away = [_result(i, 2.0, None, pid=here + 1 + i, cpu=c) for i, c in ((0, 3.0), (1, 5.0))]
    assert searched(start.tables, away, [], 4.0, 0, []).remote_cpu_seconds == 8.0


def test_the_nodes_left_are_the_workers_then_the_pools_in_order():
    start = untimed_plan(parallel_instance(3))
    (root,) = start.units
    pool = Pool([root, root])
    pool.take(1)
    pool.requeue(1, 3)  # a lost worker's lease back in the queue
    stopped = np.array([[0]], np.int8)
    results = [
        _result(0, math.inf, None, open_=(stopped,), message="more than 5 nodes"),
        _result(1, math.inf, None, message="recalled"),
    ]
    out = gather(start.tables, results, pool, start.incumbent)
    assert not out.finished and out.message == "more than 5 nodes"
    assert [u.tolist() for u in out.open] == [[[0]], root.tolist(), root.tolist()]
    assert out.least_left == least_bound(start.tables, out.open)
    quiet = gather(start.tables, [_result(0, math.inf, None)], pool, start.incumbent)
    assert quiet.message == "units left in the pool" and len(quiet.open) == 2


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda: InProcess(0), ValueError),
        (lambda: InProcess(True), TypeError),
        (lambda: InProcess(2, chunk=0), ValueError),
        (lambda: Threads(0), ValueError),
        (lambda: Threads(1.5), TypeError),
        (lambda: Threads(2, chunk=2.0), TypeError),
    ],
)
def test_worker_counts_and_chunks_are_checked(make, error):
    with pytest.raises(error, match="workers|threads|chunk"):
        make()


def test_a_solve_in_this_process_runs_its_budgets_cpus():
    assert isinstance(local_executor(1), InProcess) and local_executor(1).workers == 1
    assert isinstance(local_executor(3), Threads) and local_executor(3).threads == 3
    oracle = WindowOracle()
    assert isinstance(oracle.executor_for(Budget.unlimited(2)), Threads)
    given = InProcess(3)
    assert WindowOracle(executor=given).executor_for(Budget.unlimited(2)) is given
