"""Work donation on a small local Ray (pipeline.donate_solve): the workers as Ray tasks pulling
from one pool actor give the one-process answer, and a lost worker's lease is searched again
(the solve still certifies the one-process answer)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from oracles.budget import Budget
from oracles.split import combine, plan_split, sequential_parts
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.pipeline.own_ray import own_ray

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
