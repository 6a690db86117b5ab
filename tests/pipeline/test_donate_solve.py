"""Work donation on a small local Ray (pipeline.donate_solve): the workers as Ray tasks pulling
from one pool actor give the one-process answer; a lost worker's lease is searched again (the
solve still certifies the one-process answer); a worker gets the CPUs it holds as threads; a
solve returns near its limit counting its workers' CPU, and workers the cluster never starts are
stopped at the deadline."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from oracles.budget import Budget
from oracles.registry import make_oracle
from oracles.split import combine, plan_split, sequential_parts
from oracles.window import WindowOracle
from tests.oracles.contract import hard_instance
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.pipeline.own_ray import own_ray
from tests.timing import assert_returns_near, timed

PROBLEMS = [fuzz_instance(0, max_points=3200), parallel_instance(2, max_points=3200)]


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of this module's own (two CPUs)."""
    with own_ray(2) as ray:
        yield ray


def _plan(problem):
    return plan_split(problem, Budget.unlimited(), parts=1, search_seconds=0.02)


def _one_process(plan):
    results = sequential_parts(plan.tables, plan.tasks, plan.incumbent)
    return combine(plan, results, seconds=0.0)


def _unique_argmin(problem) -> bool:
    truth = brute_force(problem)
    return sum(v == truth.minimum for v in truth.values) == 1


@pytest.mark.integration
@pytest.mark.parametrize("problem", PROBLEMS, ids=["opdisc", "parallel-rspm"])
def test_donating_workers_on_ray_give_the_one_process_answer(local_ray, problem):
    from pipeline.donate_solve import RayDonatingParts

    plan = _plan(problem)
    driver = RayDonatingParts(workers=3, chunk=2, min_levels=1)
    on_ray = combine(plan, driver(plan.tables, plan.tasks, plan.incumbent), seconds=0.0)
    one = _one_process(plan)
    a, b = on_ray.certificate, one.certificate
    assert a.certified and b.certified, (a.message, b.message)
    assert a.objective == b.objective and a.bound == pytest.approx(b.bound, abs=1e-12)
    assert a.objective <= driver.best_seen <= plan.incumbent
    assert sum(r.nodes for r in driver.unit_records) == a.extra["nodes"]
    if _unique_argmin(problem):
        np.testing.assert_array_equal(on_ray.w, one.w)


@pytest.mark.integration
@pytest.mark.parametrize("relaunches", [0, 4])
def test_a_lost_workers_lease_is_searched_again(local_ray, monkeypatch, tmp_path, relaunches):
    """Worker 0 takes the root unit and dies holding it (once): the lease goes back to the
    pool, the other workers (or its replacement) search it, and the solve certifies the
    one-process answer."""
    from pipeline import donate_solve

    original = donate_solve.donating_part_task
    marker = Path(tmp_path) / "died"

    def dying(tables, index, pool, budget, start_value, chunk, min_levels):
        import ray

        if index == 0 and not marker.exists():
            marker.write_text("once")
            assert ray.get(pool.take.remote(0, 0)) is not None  # holds the root
            raise RuntimeError("worker lost")
        return original(tables, index, pool, budget, start_value, chunk, min_levels)

    monkeypatch.setattr(donate_solve, "donating_part_task", dying)
    monkeypatch.setattr(donate_solve, "MAX_RELAUNCHES", relaunches)
    problem = PROBLEMS[0]
    plan = _plan(problem)
    driver = donate_solve.RayDonatingParts(workers=2, chunk=2, min_levels=1)
    results = driver(plan.tables, plan.tasks, plan.incumbent)
    assert marker.exists() and driver.relaunched == min(relaunches, 1)
    c = combine(plan, results, seconds=0.0).certificate
    one = _one_process(plan).certificate
    assert c.certified, c.message
    assert c.objective == one.objective and c.bound == pytest.approx(one.bound, abs=1e-12)
    assert math.isfinite(c.objective)


@pytest.mark.integration
def test_a_worker_gets_the_cpus_it_holds_as_threads(local_ray):
    """Two workers of 2 CPUs each on a 2-CPU Ray (the second starts when the first is done):
    the certificate reports the 2 CPUs a worker held."""
    from pipeline.donate_solve import ray_donating_parts

    oracle = WindowOracle(
        search_seconds=0.02, parts=2, map_parts=ray_donating_parts(cpus_per_task=2)
    )
    cert = oracle.solve(fuzz_instance(4), Budget.from_limit(60.0)).certificate
    assert cert.certified and cert.threads == 2, cert.message


def test_a_worker_holds_at_least_one_cpu():
    from pipeline.donate_solve import ray_donating_parts

    with pytest.raises(ValueError, match="cpus_per_task must be >= 1, found 0"):
        ray_donating_parts(cpus_per_task=0)


@pytest.mark.integration
def test_a_donating_solve_on_ray_returns_within_its_limit_and_counts_its_workers_cpu(local_ray):
    """A search that cannot finish in 2 s, its workers as Ray tasks: back near the limit (its
    CPU, the workers' in their processes and this one's, within 1.1 x the limit on its 2 CPUs
    plus 5 s; its wall-clock time within 1.1 x the limit plus 5 s, plus the slack a loaded
    machine takes: tests/timing.py), uncertified, its certificate counting the CPU its workers
    got in their processes beside this one's."""
    from pipeline.donate_solve import ray_donating_parts

    oracle = make_oracle(
        "window", time_limit=2.0, parts=2, map_parts=ray_donating_parts(1), fallback=None
    )
    with timed() as took:
        cert = oracle.solve(hard_instance(), oracle.budget()).certificate
    assert not cert.certified, cert.message
    assert_returns_near(2.0, took.wall, cert.cpu_seconds, took.slowdown, cpus=2)
    if cert.extra["remote_cpu_seconds"] == 0.0 and took.slowdown > 1.5:
        # on a loaded machine the workers may not have started before the 2 s deadline: they
        # are then cancelled, their units left open, never counted as searched
        assert "had not returned by the solve's deadline" in cert.message, cert.message
    else:
        assert cert.extra["remote_cpu_seconds"] > 0.0  # the two workers searched in their tasks
    assert cert.cpu_seconds >= cert.extra["remote_cpu_seconds"]


@pytest.mark.integration
def test_workers_the_cluster_never_starts_are_stopped_at_the_deadline(local_ray):
    """Workers that ask for more CPUs than the cluster has never start: the driver stops
    waiting for them PART_GRACE_SECONDS after the deadline, cancels them and leaves their units
    open (the solve stopped, not failed)."""
    from pipeline.donate_solve import PART_GRACE_SECONDS, ray_donating_parts

    oracle = make_oracle(
        "window", time_limit=1.0, parts=2, map_parts=ray_donating_parts(3), fallback=None
    )
    with timed() as took:
        cert = oracle.solve(hard_instance(), oracle.budget()).certificate
    # the driver waits out the grace on the wall clock; the slack is a loaded machine's
    assert took.wall <= 1.0 + PART_GRACE_SECONDS + 5.0 * took.slowdown, took.wall
    assert cert.status.value == "time_limit" and cert.extra["parts_unfinished"] == 2
    assert "had not returned by the solve's deadline" in cert.message
    assert cert.extra["remote_cpu_seconds"] == 0.0 and cert.bound <= cert.objective
