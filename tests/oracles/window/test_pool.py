"""The pool of one window search (``oracles.window.pool``): units leased, released, donated and
requeued, none lost; its signals (idle, done, recall, stop); the best value only falls; the
replay of a run's units on simulated CPUs."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from oracles.contract.budget import Budget
from oracles.window.engine import RECALLED, drive, gather
from oracles.window.plan import plan
from oracles.window.pool import DONE, IDLE, LocalClient, Pool, UnitRecord, replay_makespan
from oracles.window.worker import Worker
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.oracles.window.test_worker import better_points, covered


def _unit(*rows):
    return np.array(rows, np.int8)


def test_units_are_leased_in_order_and_the_pool_ends_when_none_is_queued_or_leased():
    a, b = _unit([0]), _unit([1], [-1])
    pool = Pool([a, np.zeros((0, 1), np.int8), b])  # an empty unit is no unit
    assert [uid for uid, _ in pool.queued()] == [0, 1] and not pool.finished()
    uid, states = pool.take(0)
    assert uid == 0 and np.array_equal(states, a)
    assert pool.take(1)[0] == 1
    assert pool.take(2) is None and pool.wanted() == 1  # worker 2 waits, nothing queued
    assert not pool.finished() and len(pool.left()) == 2  # leased units are not done yet
    pool.release(0, 4)
    pool.release(1, 6)
    assert pool.finished() and pool.left() == ()
    assert [(r.parent, r.offset, r.nodes) for r in pool.unit_records()] == [(-1, 0, 4), (-1, 0, 6)]


def test_a_donation_is_a_unit_of_its_donors_lease_at_its_offset():
    pool = Pool([_unit([0])])
    assert pool.take(0)[0] == 0
    assert pool.take(1) is None and pool.look(0).wanted == 1
    pool.put(0, [_unit([0, 1], [0, -1]), np.zeros((0, 2), np.int8)], offset=7)
    assert pool.donations_made() == 1 and pool.look(0).wanted == 0
    uid, states = pool.take(1)
    assert uid == 1 and states.tolist() == [[0, 1], [0, -1]]
    assert pool.unit_records()[1] == UnitRecord(0, 7, 0)
    pool.release(1, 3)
    pool.take(0, 9)  # worker 0 done with its unit: released with its nodes, nothing queued
    assert pool.finished()
    assert [r.nodes for r in pool.unit_records()] == [9, 3]


def test_a_lost_workers_lease_goes_back_to_the_pool():
    a, b = _unit([0]), _unit([1])
    pool = Pool([a, b])
    assert pool.take(0, 0)[0] == 0 and pool.take(1, 0)[0] == 1
    assert pool.take(2, 0) is None and pool.wanted() == 1 and not pool.finished()
    pool.requeue(0, 5)  # worker 0 lost
    assert [uid for uid, _ in pool.queued()] == [0]  # first in line
    uid, states = pool.take(2, 0)
    assert uid == 0 and np.array_equal(states, a)
    pool.release(2, 7)
    pool.release(1, 3)
    assert pool.finished() and pool.left() == ()
    assert [r.nodes for r in pool.unit_records()] == [12, 3]
    pool.requeue(0)  # a worker that holds no lease: nothing happens
    assert pool.finished()


def test_an_adopted_worker_holds_the_pool_open_until_it_takes_its_next_unit():
    pool = Pool([], adopted=[5])
    assert not pool.finished() and pool.left() == ()
    assert pool.take(5) is None and pool.finished()


def test_the_local_client_says_idle_while_others_hold_units_and_done_at_the_end():
    pool = Pool([_unit([0])])
    first, second = LocalClient(pool, 0, pause=0.0), LocalClient(pool, 1, pause=0.0)
    assert np.array_equal(first.take(0), _unit([0]))
    assert second.take(0) is IDLE and second.look().wanted == 1
    first.put([_unit([0, 2])], 3)
    assert np.array_equal(second.take(0), _unit([0, 2]))
    first.release(5)
    assert first.take(0) is IDLE  # worker 1 still searches its unit
    second.requeue(2)  # worker 1 lost: its unit back
    assert np.array_equal(first.take(0), _unit([0, 2]))
    assert first.take(4) is DONE and second.take(0) is DONE and first.look().finished
    assert [r.nodes for r in pool.unit_records()] == [5, 6]


@pytest.mark.parametrize("worker, error", [(-1, ValueError), (1.0, TypeError), (True, TypeError)])
def test_a_client_needs_a_worker_index(worker, error):
    with pytest.raises(error, match="worker"):
        LocalClient(Pool([]), worker)


def test_a_stop_is_seen_by_every_look():
    pool = Pool([_unit([0])])
    assert pool.look(0).stopped == ""
    pool.stop("the rival certified")
    assert pool.look(0).stopped == pool.look(3).stopped == "the rival certified"
    pool.stop("")
    assert pool.look(0).stopped == "stopped"  # a stop always says so
    # a race's stop signal seen through the client, with the pool's other news
    reason = ""
    client = LocalClient(Pool([_unit([0])], best=3.0), 0, stop=lambda: reason)
    assert client.look().stopped == "" and client.look().best == 3.0
    reason = "raced"
    assert client.look().stopped == "raced" and client.look().best == 3.0


def test_the_best_only_falls_under_concurrent_offers():
    pool = Pool([], best=10.0)
    values = [float(v) for v in range(100, 0, -1)]

    def offer(chunk):
        for v in chunk:
            pool.offer(v)

    threads = [threading.Thread(target=offer, args=(values[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert pool.best == 1.0 and pool.look().best == 1.0
    assert pool.offer(5.0) == 1.0


def test_workers_are_counted_when_they_first_look():
    pool = Pool([_unit([0])])
    pool.look()  # the driver (-1) is not a worker
    pool.look(0)
    pool.look(2)
    pool.look(0)
    assert pool.started() == 2


@pytest.mark.parametrize(
    "make, seed", [(fuzz_instance, 4), (fuzz_instance, 7), (parallel_instance, 5)]
)
def test_a_recalled_worker_gives_every_open_node_back_and_another_ends_the_search(make, seed):
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    start = plan(problem, Budget.unlimited(), search_seconds=0.0)
    assert start.incumbent > float(truth.minimum)  # something to find below the incumbent
    pool = Pool(start.units, start.incumbent)
    chunks = []

    def recall_after_three(worker):
        chunks.append(worker.made)
        if len(chunks) == 3:
            pool.recall([0])

    first = Worker(start.tables, 0, start.incumbent, min_levels=1)
    gave = drive(
        first, LocalClient(pool, 0, pause=0.0), Budget.unlimited(), chunk=2, hook=recall_after_three
    )
    assert gave.message == RECALLED and gave.open == () and not first.busy
    assert pool.look(0).recalled and not pool.look(1).recalled
    left = pool.left()
    assert left and all(r.parent == 0 for r in pool.unit_records()[1:])
    for k in better_points(problem, truth, min(gave.best, gave.value)):
        assert covered(left, start.tables.order, k), k.tolist()
    second = Worker(start.tables, 1, pool.best)
    ended = drive(second, LocalClient(pool, 1, pause=0.0), Budget.unlimited())
    assert ended.message == "" and pool.finished()
    searched = gather(start.tables, [gave, ended], pool, start.incumbent)
    assert searched.finished and searched.message == "" and searched.workers == 2
    assert searched.nodes == gave.nodes + ended.nodes
    assert searched.value == pytest.approx(float(truth.minimum), abs=1e-9)


def test_the_replay_schedules_units_when_their_donor_made_them():
    # unit 0 (100 nodes) donated unit 2 (50 nodes) after 10 of its nodes; unit 1: 30 nodes
    records = [UnitRecord(-1, 0, 100), UnitRecord(-1, 0, 30), UnitRecord(0, 10, 50)]
    assert replay_makespan(records, 1) == 180
    assert replay_makespan(records, 2) == 100  # 2 starts at 30 on the second CPU, ends at 80
    assert replay_makespan(records, 3) == 100
    assert replay_makespan([UnitRecord(-1, 0, 40), UnitRecord(0, 30, 40)], 2) == 70
    assert replay_makespan([], 2) == 0
    with pytest.raises(ValueError, match="cpus"):
        replay_makespan(records, 0)
