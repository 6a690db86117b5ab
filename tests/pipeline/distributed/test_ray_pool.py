"""The window search's pool on Ray (pipeline.distributed.ray_pool): a worker's client of the
pool actor takes, gives and releases units as a client of the pool in this process does, never
blocking; the tables arrive writable; what a task knows of itself."""

from __future__ import annotations

import time

import numpy as np
import pytest

from oracles.contract.budget import Budget
from oracles.window.engine import InProcess, Job
from oracles.window.plan import plan
from oracles.window.pool import DONE, IDLE, Pool
from pipeline.distributed.ray_pool import RayClient, node_id, worker_task, writable
from tests.oracles.fuzz import fuzz_instance
from tests.pipeline.own_ray import own_ray


def test_tables_read_only_come_back_writable_and_the_same():
    start = plan(fuzz_instance(1), Budget.unlimited(), search_seconds=0.0)
    frozen = start.tables
    for value in vars(frozen).values():
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
    thawed = writable(frozen)
    for name, value in vars(thawed).items():
        if isinstance(value, np.ndarray):
            assert value.flags.writeable and np.array_equal(value, getattr(frozen, name))


def test_outside_ray_a_task_has_no_node(monkeypatch):
    import ray

    # another test of this process may have started a Ray: this one asks a Ray that has none
    monkeypatch.setattr(ray, "get_runtime_context", lambda: None)
    assert node_id() == ""


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of this module's own (two CPUs)."""
    with own_ray(2) as ray:
        yield ray


def _until(client, nodes=0, seconds=30.0):
    """``client.take`` asked until it answers something other than IDLE."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        taken = client.take(nodes)
        if taken is not IDLE:
            return taken
    raise AssertionError("the pool never answered")


@pytest.mark.integration
def test_a_ray_client_takes_gives_and_ends_as_a_local_one(local_ray):
    units = [np.array([[1], [2]], np.int8), np.array([[3]], np.int8)]
    pool = local_ray.remote(num_cpus=0)(Pool).remote(units, 5.0)
    try:
        client = RayClient(pool, 0, 7.0, pause=0.0)
        first = _until(client)
        np.testing.assert_array_equal(first, units[0])
        client.put([np.array([[4, 1]], np.int8)], 3)  # a donation from the unit it holds
        assert client.known.wanted == 0
        client.offer(2.0)
        assert _until(client) is not DONE  # the second unit
        assert _until(client) is not DONE  # the donated one
        assert _until(client, 1) is DONE  # nothing queued, its last lease released by the take
        time.sleep(0.2)
        assert client.look().best <= 5.0
        client.release(0)
        assert local_ray.get(pool.finished.remote())
        assert local_ray.get(pool.offer.remote(np.inf)) == 2.0
    finally:
        local_ray.kill(pool)


@pytest.mark.integration
def test_a_worker_task_searches_the_whole_pool_as_one_process_does(local_ray):
    problem = fuzz_instance(3, max_points=3200)
    start = plan(problem, Budget.unlimited(), search_seconds=0.0)
    one = InProcess(1, 2).run(start.tables, start.units, start.incumbent, Budget.unlimited())
    pool = local_ray.remote(num_cpus=0)(Pool).remote(list(start.units), start.incumbent)
    try:
        task = local_ray.remote(num_cpus=1)(worker_task)
        job = Job(start.tables, (), start.incumbent, Budget.unlimited())
        result = local_ray.get(task.remote(job, 0, pool, 2, 1))
    finally:
        local_ray.kill(pool)
    assert result.message == "" and result.nodes == one.nodes and result.threads == 1
    assert result.node and min(result.value, start.incumbent) == min(one.value, start.incumbent)
