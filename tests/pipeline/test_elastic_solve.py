"""A solve that grows onto idle Ray CPUs and shrinks back (pipeline.elastic_solve): the
one-process answer whether it grew or not, no growth while a run waits, extras recalled (their
open nodes handed back) when runs wait again."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from core.problem import Problem
from oracles.budget import Budget
from oracles.split import combine, plan_split, sequential_parts
from pipeline.elastic_solve import ElasticParts
from tests.oracles.contract import hard_instance
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.pipeline.own_ray import own_ray

PROBLEMS = [fuzz_instance(s, max_points=3200) for s in (0, 5)] + [
    parallel_instance(2, max_points=3200)
]


def medium_instance(d: int = 11, seed: int = 7) -> Problem:
    """``tests.oracles.contract.hard_instance``'s shape at d = 11: the window search certifies
    it in about 2.9e5 nodes (measured: 1.8 CPU s with the plan)."""
    return hard_instance(d, seed)


def _plan(problem):
    return plan_split(problem, Budget.unlimited(), parts=1, search_seconds=0.05)


def _one(plan):
    results = sequential_parts(plan.tables, plan.tasks, plan.incumbent)
    return combine(plan, results, seconds=0.0)


def _check_same(plan, results, problem):
    got = combine(plan, results, seconds=0.0)
    one = _one(plan)
    a, b = got.certificate, one.certificate
    assert a.certified and b.certified, (a.message, b.message)
    assert a.objective == b.objective and a.bound == pytest.approx(b.bound, abs=1e-12)
    truth = brute_force(problem) if problem.d <= 6 else None
    if truth is not None and sum(v == truth.minimum for v in truth.values) == 1:
        np.testing.assert_array_equal(got.w, one.w)
    return a


@pytest.mark.parametrize("problem", PROBLEMS)
def test_without_ray_it_is_the_one_process_search(problem):
    plan = _plan(problem)
    driver = ElasticParts(chunk=2, min_levels=1, grow_every=0.0)
    results = driver(plan.tables, plan.tasks, plan.incumbent)
    a = _check_same(plan, results, problem)
    assert driver.extras == 0 and driver.grown_at is None
    assert a.extra["nodes"] == _one(plan).certificate.extra["nodes"]


def test_in_a_window_search_it_reports_the_best_a_valid_bound_and_the_cost_to_certify():
    """As the search in this process does (tests/oracles/test_solve_progress.py)."""
    from oracles.window import WindowOracle
    from tests.oracles.limited import limited
    from tests.oracles.test_solve_progress import _solve_with_and_without, same_answer

    elastic = ElasticParts(chunk=2000, estimate_every=0.0)
    oracle = limited(WindowOracle(search_seconds=0.05, map_parts=elastic), 120.0)
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
    plan = _plan(problem)
    driver = ElasticParts(chunk=2, min_levels=1, grow_every=0.0)
    results = driver(plan.tables, plan.tasks, plan.incumbent)
    _check_same(plan, results, problem)
    assert driver.grown_at is not None and driver.extras >= 1


@pytest.mark.integration
def test_grown_it_still_reports_the_best_a_valid_bound_and_its_cpus(local_ray):
    """After the growth the progress line hears the best known, a bound the certified minimum
    does not fall below, and how many CPUs the search is on (no longer "no solver report")."""
    from oracles.solve_progress import listening
    from oracles.window import WindowOracle
    from tests.oracles.limited import limited

    elastic = ElasticParts(chunk=200, grow_every=0.0)
    oracle = limited(WindowOracle(search_seconds=0.05, map_parts=elastic), 120.0)
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
    assert cert.extra["elastic_extras"] >= 1 and cert.extra["elastic_nodes"] == 1  # one machine


@pytest.mark.integration
def test_it_does_not_grow_while_a_run_waits(local_ray):
    from pipeline.elastic_solve import demand_actor

    demand = demand_actor(local_ray, 1)
    try:
        problem = medium_instance()
        plan = _plan(problem)
        driver = ElasticParts(chunk=1000, grow_every=0.0)
        results = driver(plan.tables, plan.tasks, plan.incumbent)
        _check_same(plan, results, problem)
        assert driver.extras == 0
    finally:
        local_ray.kill(demand)


@pytest.mark.integration
def test_extras_give_their_nodes_back_when_runs_wait(local_ray):
    """Grown onto both CPUs (none idle), then a run waits: the extras are recalled, hand their
    open nodes back and end; the solve still certifies the one-process answer."""
    from pipeline.elastic_solve import demand_actor

    demand = demand_actor(local_ray, 0)
    try:
        # d = 15: long enough (the d = 14 search is 6.7M nodes, 4.9 CPU s with the vectorized
        # kernel) that two extras start before it ends and one is recalled
        problem = medium_instance(15)
        plan = _plan(problem)
        driver = ElasticParts(chunk=200, grow_every=0.05)
        calls = []
        original = driver._resize

        def resize(*args, **kwargs):
            out = original(*args, **kwargs)
            calls.append(driver.extras)
            if driver.extras >= 2 and len(calls) >= 3:  # grown onto both CPUs: a run waits
                local_ray.get(demand.set.remote(1))
            return out

        driver._resize = resize
        results = driver(plan.tables, plan.tasks, plan.incumbent)
        _check_same(plan, results, problem)
        assert driver.extras >= 2 and driver.recalled >= 1, (driver.extras, driver.recalled)
    finally:
        local_ray.kill(demand)


# --- a two-node cluster: the hard solve left alone takes the idle node's CPU --------------------


@pytest.fixture(scope="module")
def two_nodes():
    """A head and a worker node on 127.0.0.1, one CPU each, token authentication, this
    worktree's code on the workers' path (``tests.pipeline.test_sweep``'s cluster); stopped by
    its own handles, never `ray stop`."""
    import secrets
    import subprocess

    from tests.conftest import REPO
    from tests.pipeline.test_sweep import (
        BIN,
        _nodes_alive,
        env,
        free_port,
        stop_own,
        wait_for,
    )

    ray = str(BIN / "ray")
    port, dashboard = free_port(), free_port()
    environ = env(RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(16), PYTHONPATH=str(REPO))
    common = ["--node-ip-address", "127.0.0.1", "--num-cpus", "1", "--disable-usage-stats"]
    procs = []

    def start(args):
        agent = ["--dashboard-agent-listen-port", str(free_port())]
        procs.append(
            subprocess.Popen(
                [ray, "start", *args, *agent, *common, "--block"],
                env=environ,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                start_new_session=True,
                cwd=REPO,
            )
        )

    try:
        start(
            [
                "--head",
                "--port",
                str(port),
                "--include-dashboard",
                "true",
                "--dashboard-host",
                "127.0.0.1",
                "--dashboard-port",
                str(dashboard),
            ]
        )
        wait_for(lambda: _nodes_alive(ray, dashboard, environ) >= 1, 120, "the head", poll=1)
        start(["--address", f"127.0.0.1:{port}"])
        wait_for(lambda: _nodes_alive(ray, dashboard, environ) >= 2, 120, "the worker", poll=1)
        yield {"address": f"127.0.0.1:{port}", "env": environ}
    finally:
        stop_own(procs)


def _hard_tail(seconds: float, busy: float) -> dict:
    """On a Ray worker: the hard instance's window search with ``ElasticParts`` for
    ``seconds``, while another run holds the other CPU for its first ``busy`` seconds."""
    import ray

    problem = medium_instance(16)  # runs to its limit: the tail is measured whatever the load
    plan = plan_split(problem, Budget.from_limit(seconds), parts=1, search_seconds=0.2)
    driver = ElasticParts(grow_every=0.5)
    started = time.time()
    results = driver(plan.tables, plan.tasks, plan.incumbent)
    cert = combine(plan, results, seconds=0.0).certificate
    return {
        "node": ray.get_runtime_context().get_node_id(),
        "grown_at": driver.grown_at,
        "grew_at_time": None if driver.grown_at is None else started + driver.grown_at,
        "seconds": driver.seconds,
        "extras": driver.extras,
        "tail_worker_seconds": driver.tail_worker_seconds,
        "tail_cpu_seconds": driver.tail_cpu_seconds,
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

    from pipeline.elastic_solve import demand_actor

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


@pytest.mark.integration
def test_the_hard_solve_left_alone_runs_on_both_nodes(two_nodes):
    """Two runs on a two-node cluster (one CPU each): a hard solve and a short one. While the
    short run holds the other CPU the solve does not grow; once it ends the solve is the one
    left and grows onto the idle node: from then on its workers hold both CPUs (two one-CPU
    tasks at once on two one-CPU nodes: one on each), at least 1.8 CPU-seconds a second of
    holding, and the CPU they get is at least 1.8 a second over the machine's slowdown
    (``tests.timing``: other jobs share this machine's cores)."""
    import json
    import subprocess
    import sys

    from tests.conftest import REPO
    from tests.timing import slowdown

    script = (
        "import json; from tests.pipeline.test_elastic_solve import drive; "
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
    assert tail["tail_cpu_seconds"] / span >= 1.8 / slowdown(), (tail, slowdown())


@pytest.mark.integration
def test_a_sweeps_last_hard_solve_runs_on_both_nodes(two_nodes, tmp_path):
    """``python -m pipeline`` on the two-node cluster: breast cancer's OPDisc run 0 at epsilon
    10 (a search of about 1e9 nodes: ``bench.carry_table``) and a logistic regression, one
    run a node. Once the regression has ended the solve is the run left: it grows onto the
    idle node, its workers run on both nodes, and from its growth to its stop its workers got
    at least 1.8 CPU seconds a wall second (over the machine's slowdown, ``tests.timing``), as
    its certificate in the run's release.json records (``ElasticParts.record``)."""
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
    assert grown["elastic_tail_cpu_seconds"] / span >= 1.8 / slowdown(), (grown, slowdown())
