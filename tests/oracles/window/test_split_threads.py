"""A split solve's parts on threads (``oracles.window.split_threads``): the same certified minimum as the
brute force and as the parts one after the other, a part that raises leaves the whole
uncertified, and the shared best only ever falls."""

from __future__ import annotations

import threading

import pytest

from oracles.window import split_threads
from oracles.budget import Budget
from oracles.window.split import combine, plan_split, sequential_parts
from oracles.window.split_threads import SharedBest, thread_parts
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance


@pytest.mark.parametrize(
    "family, seed", [(fuzz_instance, s) for s in range(6)] + [(parallel_instance, 3)]
)
def test_threads_find_the_brute_force_minimum_as_the_sequential_parts_do(family, seed):
    problem = family(seed)
    truth = brute_force(problem)
    plan = plan_split(problem, Budget.unlimited(), parts=4, search_seconds=0.02)
    threaded = combine(plan, thread_parts(2)(plan.tables, plan.tasks, plan.incumbent), seconds=0)
    sequential = combine(plan, sequential_parts(plan.tables, plan.tasks, plan.incumbent), seconds=0)
    assert threaded.certificate.certified and sequential.certificate.certified
    assert float(truth.value_at(threaded.w)) == float(truth.minimum)
    assert threaded.certificate.objective == sequential.certificate.objective
    assert threaded.certificate.threads == 2


def test_a_part_that_raises_leaves_the_whole_uncertified(monkeypatch):
    problem = parallel_instance(3)  # its frontier holds three parts
    plan = plan_split(problem, Budget.unlimited(), parts=3, search_seconds=0.02)
    assert len(plan.tasks) > 1
    real = split_threads.solve_part_below

    def flaky(tables, task, best, **options):
        if task.index == 1:
            raise RuntimeError("boom")
        return real(tables, task, best, **options)

    monkeypatch.setattr(split_threads, "solve_part_below", flaky)
    results = thread_parts(2)(plan.tables, plan.tasks, plan.incumbent)
    assert [r.index for r in results] == [t.index for t in plan.tasks]
    assert [r.finished for r in results].count(False) == 1
    assert "boom" in results[1].message
    assert not combine(plan, results, seconds=0).certificate.certified


def test_the_shared_best_only_falls_under_concurrent_offers():
    best = SharedBest(10.0)
    values = [float(v) for v in range(100, 0, -1)]

    def offer(chunk):
        for v in chunk:
            best.offer(v)

    threads = [threading.Thread(target=offer, args=(values[i::4],)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert best.value == 1.0
    assert best.offer(5.0) == 1.0


@pytest.mark.parametrize("threads, error", [(0, ValueError), (1.5, TypeError), (True, TypeError)])
def test_thread_counts_are_checked(threads, error):
    with pytest.raises(error, match="threads"):
        thread_parts(threads)
