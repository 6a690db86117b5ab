"""The window search on Ray (pipeline.distributed.ray_search.RaySearch): with fixed extras
(``oracle.parts``) or grown onto idle CPUs and shrunk back, the one-process answer; no growth
while a run waits, extras recalled (their open nodes handed back) when runs wait again; a lost
extra's lease searched again; a worker gets the CPUs it holds; a solve returns near its limit
counting its workers' CPU, and extras the cluster never starts are cancelled at the deadline."""

from __future__ import annotations

import math
import time
from pathlib import Path

import numpy as np
import pytest

from core.problem import Problem
from oracles.contract.budget import Budget
from oracles.routing.registry import make_oracle
from oracles.contract.stats import ClusterStats, WindowStats
from oracles.window.engine import InProcess
from oracles.window.oracle import WindowOracle, answer, cost_left
from oracles.window.plan import plan
from pipeline.distributed import ray_search
from pipeline.distributed.ray_search import Demand, RaySearch, demand_actor
from tests.oracles.oracle_contract import hard_instance
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.pipeline.own_ray import own_ray
from tests.timing import assert_returns_near, timed

PROBLEMS = [fuzz_instance(s, max_points=3200) for s in (0, 5)] + [
    parallel_instance(2, max_points=3200)
]


def medium_instance(d: int = 11, seed: int = 7) -> Problem:
    """``tests.oracles.oracle_contract.hard_instance``'s shape at d = 11: the window search certifies
    it in about 2.9e5 nodes (measured: 1.8 CPU s with the plan)."""
    return hard_instance(d, seed)


def _plan(problem):
    return plan(problem, Budget.unlimited(), search_seconds=0.05)


def _run(executor, start, budget=None):
    """``executor``'s search of the plan ``start`` (unlimited unless ``budget``)."""
    budget = budget or Budget.unlimited()
    return executor.run(start.tables, start.units, start.incumbent, budget)


def _one(start):
    return answer(start, _run(InProcess(), start), 0.0)


def _check_same(start, searched, problem):
    got = answer(start, searched, 0.0)
    one = _one(start)
    a, b = got.certificate, one.certificate
    assert a.certified and b.certified, (a.message, b.message)
    assert a.objective == b.objective and a.bound == pytest.approx(b.bound, abs=1e-12)
    truth = brute_force(problem) if problem.d <= 6 else None
    if truth is not None and sum(v == truth.minimum for v in truth.values) == 1:
        np.testing.assert_array_equal(got.w, one.w)
    return a


@pytest.mark.parametrize("problem", PROBLEMS)
def test_without_ray_it_is_the_one_process_search(problem, monkeypatch):
    import ray

    monkeypatch.setattr(ray, "is_initialized", lambda: False)  # another test's Ray, if any
    start = _plan(problem)
    driver = RaySearch(chunk=2, min_levels=1, grow_every=0.0)
    a = _check_same(start, _run(driver, start), problem)
    assert driver.extras == 0 and driver.grown_at is None
    assert a.stat(WindowStats).nodes == _one(start).certificate.stat(WindowStats).nodes


def test_in_a_window_search_it_reports_the_best_a_valid_bound_and_the_cost_to_certify(
    monkeypatch,
):
    """As the search in this process does (tests/oracles/contract/test_progress.py)."""
    from oracles.window import oracle as window
    from tests.oracles.limited import limited
    from tests.oracles.contract.test_progress import _solve_with_and_without, same_answer

    monkeypatch.setattr(window, "ESTIMATE_EVERY", 0.0)  # its cost to certify at every report
    elastic = RaySearch(chunk=2000)
    oracle = limited(WindowOracle(search_seconds=0.05, executor=elastic), 120.0)
    plain, heard, seen = _solve_with_and_without(oracle, medium_instance(9), interval=0.0)
    assert plain.certificate.certified
    same_answer(plain, heard, extra=False)
    assert seen and all(p.backend == "window" for p in seen)
    assert all(p.incumbent >= plain.certificate.objective - 1e-9 for p in seen)
    assert all(p.bound <= plain.certificate.objective + 1e-9 for p in seen)
    notes = [p.note for p in seen if p.note]
    assert notes and all(n.startswith("to certify: about ") and "CPU-hours" in n for n in notes)


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of this module's own (two CPUs)."""
    with own_ray(2) as ray:
        yield ray


@pytest.mark.integration
@pytest.mark.parametrize("problem", [*PROBLEMS, medium_instance()])
def test_grown_onto_idle_cpus_it_gives_the_one_process_answer(local_ray, problem):
    start = _plan(problem)
    driver = RaySearch(chunk=2, min_levels=1, grow_every=0.0)
    _check_same(start, _run(driver, start), problem)
    assert driver.grown_at is not None and driver.extras >= 1


@pytest.mark.integration
def test_grown_it_still_reports_the_best_a_valid_bound_and_its_cpus(local_ray):
    """After the growth the progress line hears the best known, a bound the certified minimum
    does not fall below, and how many CPUs the search is on (no longer "no solver report")."""
    from oracles.contract.progress import listening
    from tests.oracles.limited import limited

    elastic = RaySearch(chunk=200, grow_every=0.0)
    oracle = limited(WindowOracle(search_seconds=0.05, executor=elastic), 120.0)
    seen = []
    with listening(seen.append, interval=0.0):
        solution = oracle.solve(medium_instance(14), oracle.budget())
    cert = solution.certificate
    assert cert.certified and elastic.grown_at is not None
    grown = [p for p in seen if p.note.startswith("searching on ")]
    assert grown, [p.note for p in seen]
    assert all(p.incumbent >= cert.objective - 1e-9 for p in grown)
    assert all(p.bound <= cert.objective + 1e-9 for p in grown)
    assert all(p.bound > -math.inf for p in grown)  # the bound proven when it grew
    assert cert.stat(ClusterStats).extras >= 1 and cert.stat(ClusterStats).nodes == 1  # one machine


@pytest.mark.integration
def test_it_does_not_grow_while_a_run_waits(local_ray):
    demand = demand_actor(local_ray, 1)
    try:
        problem = medium_instance()
        start = _plan(problem)
        driver = RaySearch(chunk=1000, grow_every=0.0)
        _check_same(start, _run(driver, start), problem)
        assert driver.extras == 0
    finally:
        local_ray.kill(demand)


@pytest.mark.integration
def test_extras_give_their_nodes_back_when_runs_wait(local_ray):
    """Grown onto both CPUs (none idle), then a run waits: the extras are recalled, hand their
    open nodes back and end; the solve still certifies the one-process answer."""
    demand = demand_actor(local_ray, 0)
    try:
        # d = 15: long enough (the d = 14 search is 6.7M nodes, 4.9 CPU s with the vectorized
        # kernel) that two extras start before it ends and one is recalled
        problem = medium_instance(15)
        start = _plan(problem)
        driver = RaySearch(chunk=200, grow_every=0.05)
        calls = []
        original = driver._resize

        def resize(*args, **kwargs):
            out = original(*args, **kwargs)
            calls.append(driver.extras)
            if driver.extras >= 2 and len(calls) >= 3:  # grown onto both CPUs: a run waits
                local_ray.get(demand.set.remote(1))
            return out

        driver._resize = resize
        _check_same(start, _run(driver, start), problem)
        assert driver.extras >= 2 and driver.recalled >= 1, (driver.extras, driver.recalled)
    finally:
        local_ray.kill(demand)


# --- a two-node cluster: the hard solve left alone takes the idle node's CPU --------------------


@pytest.fixture(scope="module")
def two_nodes():
    """A head and a worker node on 127.0.0.1, one CPU each, token authentication, this
    worktree's code on the workers' path (``tests.pipeline.sweep.test_fan_out.two_node_cluster``);
    stopped by its own handles, never `ray stop`."""
    from tests.conftest import REPO
    from tests.pipeline.sweep.test_fan_out import two_node_cluster

    with two_node_cluster(cwd=REPO, PYTHONPATH=str(REPO)) as cluster:
        yield cluster


def _hard_tail(seconds: float, busy: float) -> dict:
    """On a Ray worker: the hard instance's window search with ``RaySearch`` for
    ``seconds``, while another run holds the other CPU for its first ``busy`` seconds."""
    import ray

    problem = medium_instance(16)  # runs to its limit: the tail is measured whatever the load
    budget = Budget.from_limit(seconds)
    start = plan(problem, budget, search_seconds=0.2)
    driver = RaySearch(grow_every=0.5)
    started = time.time()
    searched = _run(driver, start, budget)
    cert = answer(start, searched, 0.0).certificate
    record = searched.cluster
    grown = driver.grown_at
    return {
        "node": ray.get_runtime_context().get_node_id(),
        "grown_at": grown,
        "grew_at_time": None if grown is None else started + grown,
        "seconds": None if record is None else grown + record.tail_seconds,
        "extras": driver.extras,
        "tail_worker_seconds": None if record is None else record.tail_worker_seconds,
        "tail_cpu_seconds": None if record is None else record.tail_cpu_seconds,
        "status": cert.status.name,
        "bound_ok": cert.bound <= cert.objective,
    }


def _other_run(seconds: float) -> tuple[str, float]:
    """Another run of the sweep: holds its CPU for ``seconds`` of CPU; its node and when it
    ended."""
    import ray

    end = time.process_time() + seconds
    while time.process_time() < end:
        pass
    return ray.get_runtime_context().get_node_id(), time.time()


def drive(address: str) -> dict:
    """The test below's driver, in a process of its own (Ray reads its token once a process):
    two runs on the cluster at ``address``, their nodes and times."""
    import ray

    ray.init(address=address, log_to_driver=False)
    try:
        demand = demand_actor(ray, 0)  # the sweep: both runs started, none waits
        other = ray.remote(num_cpus=1)(_other_run).remote(4.0)
        hard = ray.remote(num_cpus=1)(_hard_tail).remote(60.0, 4.0)
        other_node, other_ended = ray.get(other)
        tail = ray.get(hard)
        ray.kill(demand)
    finally:
        ray.shutdown()
    return {**tail, "other_node": other_node, "other_ended": other_ended}


#: The CPU seconds a wall second two workers on two one-CPU nodes get at the least, in a test:
#: more than one worker alone can get (1), and below the 2 they hold, since the two nodes'
#: Ray processes and the driver share the same two cores (measured: 1.79 at a load of 2, where
#: the load-average slowdown reads 1).
BOTH_COMPUTE = 1.5


@pytest.mark.integration
def test_the_hard_solve_left_alone_runs_on_both_nodes(two_nodes):
    """Two runs on a two-node cluster (one CPU each): a hard solve and a short one. While the
    short run holds the other CPU the solve does not grow; once it ends the solve is the one
    left and grows onto the idle node: from then on its workers hold both CPUs (two one-CPU
    tasks at once on two one-CPU nodes: one on each), at least 1.8 CPU-seconds a second of
    holding, and the CPU they get is more than one worker alone could get: at least
    ``BOTH_COMPUTE`` a second over the machine's slowdown
    (``tests.timing``: other jobs share this machine's cores)."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.timing import slowdown

    script = (
        "import json; from tests.pipeline.distributed.test_ray_search import drive; "
        f"print('RESULT', json.dumps(drive({two_nodes['address']!r})))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        check=False,
        env=two_nodes["env"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
    )
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, done.stderr[-3000:]
    tail = json.loads(lines[-1][len("RESULT ") :])
    print(tail, f"slowdown {slowdown():.2f}")
    assert tail["extras"] >= 1 and tail["grown_at"] is not None, tail
    assert tail["bound_ok"]
    assert tail["other_node"] != tail["node"]  # the two runs at once, one a node
    assert tail["grew_at_time"] >= tail["other_ended"] - 0.05  # not while the other run ran
    span = tail["seconds"] - tail["grown_at"]
    assert span >= 30.0, tail  # a tail long enough to measure
    assert tail["tail_worker_seconds"] / span >= 1.8, tail
    assert tail["tail_cpu_seconds"] / span >= BOTH_COMPUTE / slowdown(), (tail, slowdown())


@pytest.mark.integration
def test_a_sweeps_last_hard_solve_runs_on_both_nodes(two_nodes, tmp_path):
    """``python -m pipeline`` on the two-node cluster: breast cancer's OPDisc run 0 at epsilon
    10 (a search of about 1e9 nodes: ``bench.carry_table``) and a logistic regression, one
    run a node. Once the regression has ended the solve is the run left: it grows onto the
    idle node, its workers run on both nodes, and from its growth to its stop its workers got
    more CPU than one worker alone could get, at least ``BOTH_COMPUTE`` CPU seconds a wall
    second (over the machine's slowdown, ``tests.timing``), as
    its certificate in the run's release.json records (``RaySearch.record``)."""
    import json
    import subprocess
    import sys

    from mlflow import MlflowClient

    from bench.generic_instances import write_table
    from tests.conftest import REPO
    from tests.timing import slowdown

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "+sweep=table",
            *write_table("breast_cancer", tmp_path / "breast_cancer.csv"),
            "sweep.mechanisms=[opdisc,logistic_regression]",
            "sweep.epsilons=[10.0]",
            "sweep.seeds=1",
            "oracle.time_limit=75",
            f"cluster.address={two_nodes['address']}",
            f"tracking.tracking_uri={uri}",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        cwd=REPO,
        env=two_nodes["env"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    # 4: the solve stops uncertified at its limit, so its run's privacy does not hold
    assert done.returncode == 4 and "privacy does not hold" in done.stderr, done.stderr[-3000:]
    client = MlflowClient(uri)
    experiment = client.get_experiment_by_name("oracle-dp")  # conf/tracking's default
    (opdisc,) = client.search_runs([experiment.experiment_id], "tags.mechanism = 'opdisc'")
    client.download_artifacts(opdisc.info.run_id, "release.json", str(tmp_path))
    (cert,) = json.loads((tmp_path / "release.json").read_text())["certificates"]
    grown = cert["extra"]
    print(grown, f"slowdown {slowdown():.2f}")
    assert cert["backend"] == "window" and grown.get("elastic_extras", 0) >= 1, cert
    assert grown["elastic_nodes"] == 2, grown  # its own node and the idle one
    span = grown["elastic_tail_seconds"]
    assert span >= 30.0, grown  # a tail long enough to measure
    assert grown["elastic_tail_worker_seconds"] / span >= 1.8, grown
    assert grown["elastic_tail_cpu_seconds"] / span >= BOTH_COMPUTE / slowdown(), (
        grown,
        slowdown(),
    )


# --- fixed extras (``oracle.parts``) ------------------------------------------------------------


def _unique_argmin(problem) -> bool:
    truth = brute_force(problem)
    return sum(v == truth.minimum for v in truth.values) == 1


@pytest.mark.integration
@pytest.mark.parametrize("problem", PROBLEMS[:2], ids=["opdisc", "mixed"])
def test_fixed_extras_on_ray_give_the_one_process_answer(local_ray, problem):
    start = _plan(problem)
    driver = RaySearch(2, grow=False, chunk=2, min_levels=1)
    searched = _run(driver, start)
    a = _check_same(start, searched, problem)
    assert driver.extras == 2 and searched.workers >= 2
    assert sum(r.nodes for r in searched.records) == a.stat(WindowStats).nodes


@pytest.mark.integration
@pytest.mark.parametrize("relaunches", [0, 4])
def test_a_lost_extras_lease_is_searched_again(local_ray, monkeypatch, tmp_path, relaunches):
    """Extra 1 takes the root unit and dies holding it (once): the lease goes back to the pool,
    worker 0 (or the replacement) searches it, and the solve certifies the one-process
    answer."""
    original = ray_search.worker_task
    marker = Path(tmp_path) / "died"

    def dying(job, index, pool, chunk, min_levels):
        import ray

        if index == 1 and not marker.exists():
            marker.write_text("once")
            ray.get(pool.take.remote(1, 0))  # holds a unit, if one is queued
            raise RuntimeError("worker lost")
        return original(job, index, pool, chunk, min_levels)

    monkeypatch.setattr(ray_search, "worker_task", dying)
    monkeypatch.setattr(ray_search, "MAX_RELAUNCHES", relaunches)
    problem = PROBLEMS[0]
    start = _plan(problem)
    driver = RaySearch(1, grow=False, chunk=2, min_levels=1)
    c = _check_same(start, _run(driver, start), problem)
    assert marker.exists() and driver.relaunched <= min(relaunches, 1)
    assert math.isfinite(c.objective)


@pytest.mark.integration
def test_a_worker_gets_the_cpus_it_holds_as_threads(local_ray):
    """One extra of 2 CPUs on a 2-CPU Ray: the certificate reports the 2 CPUs it held."""
    oracle = WindowOracle(search_seconds=0.02, executor=RaySearch(1, grow=False, cpus_per_task=2))
    cert = oracle.solve(medium_instance(13), Budget.from_limit(60.0)).certificate
    assert cert.certified, cert.message
    assert cert.threads == 2 or cert.stat(ClusterStats).extras == 1, cert


def test_an_extra_holds_at_least_one_cpu():
    with pytest.raises(ValueError, match="cpus_per_task >= 1"):
        RaySearch(1, cpus_per_task=0)


@pytest.mark.integration
def test_a_solve_on_ray_returns_within_its_limit_and_counts_its_workers_cpu(local_ray):
    """A search that cannot finish in 2 s, an extra as a Ray task: back near the limit (its
    CPU, the extra's in its process and this one's, within 1.1 x the limit on its 2 CPUs
    plus 5 s; its wall-clock time within 1.1 x the limit plus 5 s, plus the slack a loaded
    machine takes: tests/timing.py), uncertified, its certificate counting the CPU its extra
    got in its process beside this one's."""
    oracle = make_oracle("window", time_limit=2.0, executor=RaySearch(1, grow=False), fallback=None)
    with timed() as took:
        cert = oracle.solve(hard_instance(), oracle.budget()).certificate
    assert not cert.certified, cert.message
    assert_returns_near(2.0, took.wall, cert.cpu_seconds, took.slowdown, cpus=2)
    if cert.stat(WindowStats).remote_cpu_seconds == 0.0:
        # on a loaded machine the extra may not have started before the 2 s deadline: it is
        # then cancelled, its lease left open, never counted as searched
        assert took.slowdown > 1.5, cert.stats
    assert cert.cpu_seconds >= cert.stat(WindowStats).remote_cpu_seconds


@pytest.mark.integration
def test_extras_the_cluster_never_starts_are_cancelled_at_the_deadline(local_ray):
    """Extras that ask for more CPUs than the cluster has never start: the solve stops waiting
    for them PART_GRACE_SECONDS after the deadline, cancels them and leaves their leases open
    (the solve stopped, not failed)."""
    driver = RaySearch(2, grow=False, cpus_per_task=3)
    oracle = make_oracle("window", time_limit=1.0, executor=driver, fallback=None)
    with timed() as took:
        cert = oracle.solve(hard_instance(), oracle.budget()).certificate
    # the driver waits out the grace on the wall clock; the slack is a loaded machine's
    assert took.wall <= 1.0 + ray_search.PART_GRACE_SECONDS + 5.0 * took.slowdown, took.wall
    assert cert.status.value == "time_limit" and driver.cancelled == 2
    assert cert.stat(WindowStats).remote_cpu_seconds == 0.0 and cert.bound <= cert.objective


@pytest.mark.integration
@pytest.mark.parametrize(
    "make, seed", [(fuzz_instance, 3), (fuzz_instance, 6), (parallel_instance, 5)]
)
def test_attempts_stopped_after_one_node_carry_on_on_ray_to_the_uninterrupted_answer(
    local_ray, tmp_path, make, seed
):
    """As on the executors of this process (tests/oracles/window/test_checkpoint.py): attempts
    stopped past 1, 1, 2, 2, 4, ... nodes a worker, each carried on from the state the last
    kept, on worker 0 and two extras on Ray; every stop's state checked against the brute
    force, and the last attempt certifies the uninterrupted answer."""
    from tests.oracles.window.test_checkpoint import _carried_on, _check_state, _judge_carried

    problem = make(seed)
    truth = brute_force(problem)
    whole = WindowOracle(search_seconds=0.0).solve(problem, Budget.unlimited())
    executor = RaySearch(2, grow=False, chunk=2, min_levels=1)
    solution, attempts = _carried_on(
        problem, executor, str(tmp_path), check=lambda state: _check_state(problem, truth, state)
    )
    assert attempts > 2  # stopped at one node, and carried on
    _judge_carried(problem, truth, whole, solution, attempts)


# --- the idle CPUs to the solve nearest to certifying (Demand.look, price_of) -------------------


def test_the_demand_ranks_each_solve_by_its_price_and_forgets_a_silent_one():
    clock = [0.0]
    demand = Demand(0, clock=lambda: clock[0])
    assert demand.look("dear", 20000.0) == (0, 0)  # alone: first
    assert demand.look("cheap", 300.0) == (0, 0)
    assert demand.look("dear", 20000.0) == (0, 1)  # one cheaper
    assert demand.look("new") == (0, 2)  # no price: after every priced one
    assert demand.look("tie", 300.0) == (0, 1)  # a tie: the lesser name first
    assert demand.look("cheap", 300.0) == (0, 0)
    demand.gone("cheap")
    assert demand.look("dear", 20000.0) == (0, 1)
    clock[0] = ray_search.PRICE_HOLDS + 1.0  # "tie" said nothing since: it no longer counts
    assert demand.look("dear", 19000.0) == (0, 0)
    demand.set(3)
    assert demand.look("dear", 19000.0) == (3, 0)


class _FakeCluster:
    """``Cluster`` on a plain ``Demand`` (no Ray): ``idle`` CPUs, answers at once."""

    def __init__(self, demand: Demand, solve: str, idle: list[int]) -> None:
        self.demand, self.solve, self.idle = demand, solve, idle

    def look(self, price: float = math.nan) -> tuple[int, int, int]:
        waiting, rank = self.demand.look(self.solve, price)
        return self.idle[0], waiting, rank

    def say(self, price: float) -> None:
        self.demand.look(self.solve, price)


def test_idle_cpus_go_to_the_solve_nearest_to_certifying_first():
    """Issue 45, item 3: two solves priced at 20,000 and 300 CPU seconds; one CPU falls idle:
    the cheap one takes it whichever looks first; two more: the dear one gets the second (an
    idle CPU is never kept from everyone), the cheap one the third."""
    demand, idle, launched, priced = Demand(0), [0], [], []
    solves = {}
    for name, price in (("dear", 20000.0), ("cheap", 300.0)):
        driver = RaySearch(grow_every=0.0)

        def launch(ray, name=name):
            launched.append(name)
            idle[0] -= 1

        driver._launch = launch
        solves[name] = (driver, _FakeCluster(demand, name, idle), price)

    def look_all():
        for name, (driver, cluster, price) in solves.items():  # the dear one looks first
            driver._resize(
                None, cluster, lambda: None, lambda p=price, n=name: priced.append(n) or p
            )

    look_all()
    assert launched == [] and priced == []  # nothing idle, too early to price
    idle[0] = 1
    look_all()
    assert launched == [] and priced == ["dear", "cheap"]  # each priced itself first
    look_all()
    assert launched == ["cheap"] and idle[0] == 0
    idle[0] = 2
    look_all()
    assert launched == ["cheap", "dear", "cheap"] and idle[0] == 0
    assert priced == ["dear", "cheap"]  # once a solve


def test_a_solve_prices_itself_after_a_while_even_with_nothing_idle():
    demand = Demand(0)
    driver = RaySearch(grow_every=0.0)
    cluster = _FakeCluster(demand, "a", [0])
    driver._resize(None, cluster, lambda: None, lambda: 50.0)
    assert driver.price.at is None
    driver._begun -= ray_search.PRICE_AFTER
    driver._resize(None, cluster, lambda: None, lambda: 50.0)
    assert driver.price.at == 50.0 and demand.prices["a"][0] == 50.0  # said at once
    driver._resize(None, cluster, lambda: None, lambda: 50.0)
    assert 0.0 <= demand.prices["a"][0] <= 50.0  # less what it spent since


def test_a_solves_price_is_its_tree_below_its_open_nodes_at_its_own_rate():
    start = _plan(medium_instance())
    est = cost_left(start.tables, start.units, start.incumbent)
    price = ray_search.price_of(start.tables, start.units, start.incumbent, 1000, 0.5)
    assert price == pytest.approx(est.nodes / 2000.0) and price > 0
    assert ray_search.price_of(start.tables, (), start.incumbent, 1000, 0.5) == 0.0
    assert math.isnan(ray_search.price_of(start.tables, start.units, start.incumbent, 0, 0.0))


def test_a_cluster_says_its_price_to_the_sweeps_demand_and_reads_its_rank(local_ray):
    demand = demand_actor(local_ray, 0)
    try:
        local_ray.get(demand.look.remote("cheaper", 1.0))
        cluster = ray_search.Cluster(local_ray, "ours")
        deadline = time.monotonic() + 30
        while cluster.look(5.0)[1:] != (0, 1):
            assert time.monotonic() < deadline, "the demand never answered"
            time.sleep(0.05)
        cluster.gone()
        assert local_ray.get(demand.look.remote("cheaper", 1.0)) == (0, 0)
        assert "ours" not in local_ray.get(demand.look.remote("x"))  # (waiting, rank) only
    finally:
        local_ray.kill(demand)
