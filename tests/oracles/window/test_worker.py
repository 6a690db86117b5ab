"""One worker of the window search (``oracles.window.worker``) against the exact brute force of
``fuzz.py``: a donation moves nodes and loses none, and at every donation of a run on three
workers every point better than the best known lies below a node some worker or the pool holds
(what makes the answer exact whatever the executor, ``oracles.window.engine``)."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from oracles.contract.budget import Budget
from oracles.window.engine import InProcess
from oracles.window.plan import plan
from oracles.window.pool import Pool
from oracles.window.worker import Worker
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance

INSTANCES = [(fuzz_instance, seed) for seed in range(24)] + [
    (parallel_instance, seed) for seed in range(8)
]


def covered(units, order: np.ndarray, k: np.ndarray) -> bool:
    """Whether the grid point k (integer coordinates) lies below one of the prefixes in
    ``units`` (arrays of prefixes in search order ``order``)."""
    ks = k[order].astype(np.int8)
    return any((s == ks[: s.shape[1]]).all(axis=1).any() for s in units if len(s))


def better_points(problem, truth, best: float) -> list[np.ndarray]:
    """The integer points whose exact objective is below ``best`` (by more than rounding)."""
    K = np.rint(truth.points / problem.domain.step).astype(np.int64)
    cut = Fraction(best) - Fraction(1, 10**9)
    return [k for k, v in zip(K, truth.values) if v < cut]


def untimed_plan(problem):
    """The plan below an untimed incumbent (no grid search: the same plan whatever the
    machine's load, and larger trees to share)."""
    return plan(problem, Budget.unlimited(), search_seconds=0.0)


@pytest.mark.parametrize("make, seed", [(fuzz_instance, 3), (parallel_instance, 7)])
def test_a_donation_moves_nodes_and_loses_none(make, seed):
    """Worker.donate: the donor's open nodes after it and the donated ones are the open nodes
    before it (the same points below them), the shallowest first."""
    problem = make(seed, max_points=3200)
    start = untimed_plan(problem)
    w = Worker(start.tables, 0, start.incumbent, min_levels=1)
    (root,) = start.units
    w.load(root)
    assert len(w.open()) == 1 and np.array_equal(w.open()[0], root)
    truth = brute_force(problem)
    K = np.rint(truth.points / problem.domain.step).astype(np.int64)
    order = start.tables.order
    gave = 0
    while w.busy:
        w.step(1)
        before = w.open()
        given = w.donate()
        if given is None:
            continue
        gave += 1
        after = w.open()
        for k in K:
            assert covered(before, order, k) == (
                covered(after, order, k) or covered([given], order, k)
            )
        level = given.shape[1]
        assert all(s.shape[1] >= level for s in after)  # the shallowest open depth
        assert start.tables.d - level >= w.min_levels  # a subtree worth shipping
    assert gave > 0 and w.open() == () and w.donate() is None


def test_a_worker_hands_its_nodes_back_and_their_bound_holds():
    problem = fuzz_instance(7, max_points=3200)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    w = Worker(start.tables, 0, start.incumbent)
    w.load(start.units[0])
    w.step(5)
    assert w.busy and w.made >= 5
    best = min(w.value, w.best)
    least = w.least_bound_left()
    below = better_points(problem, truth, best)
    assert below  # the worker stopped before it found the minimum
    step = problem.domain.step
    assert least <= min(float(truth.value_at(step * k)) for k in below) + 1e-9
    left = w.hand_back()
    assert not w.busy and w.open() == () and w.least_bound_left() == float("inf")
    for k in below:
        assert covered(left, start.tables.order, k), k.tolist()


def test_a_worker_donates_nothing_with_fewer_levels_left_than_its_minimum():
    problem = fuzz_instance(3, max_points=3200)
    start = untimed_plan(problem)
    w = Worker(start.tables, 0, start.incumbent, min_levels=start.tables.d + 1)
    w.load(start.units[0])
    while w.busy:
        w.step(1)
        assert w.donate() is None


@pytest.mark.parametrize("make, seed", INSTANCES)
def test_at_every_donation_every_better_point_lies_below_a_held_node(make, seed):
    problem = make(seed, max_points=3200)
    truth = brute_force(problem)
    start = untimed_plan(problem)
    checked = []

    def on_donate(workers, pool: Pool, best: float) -> None:
        units = [u for w in workers for u in w.open()] + [s for _, s in pool.queued()]
        for k in better_points(problem, truth, best):
            assert covered(units, start.tables.order, k), (k.tolist(), best)
        checked.append(len(units))

    executor = InProcess(3, chunk=2, min_levels=1, on_donate=on_donate)
    searched = executor.run(start.tables, start.units, start.incumbent, Budget.unlimited())
    assert searched.finished and not searched.errors
    assert len(checked) == executor.pool.donations_made() == searched.donations
    assert min(searched.value, start.incumbent) == pytest.approx(float(truth.minimum), abs=1e-9)
