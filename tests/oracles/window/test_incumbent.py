"""The grid heuristic (``oracles.window.incumbent``) proves nothing, so what is tested is what it
promises: exact grid points, exact objectives, the noise-only argmin by brute force, local minima
that no single move improves, and answers no worse than its starts."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.problem import Box, IntegerGrid, Problem
from oracles.contract.budget import Budget
from oracles.window.incumbent import (
    improve,
    local_search,
    logistic_direction,
    noise_argmin,
    rounded_along,
    starting_points,
)
from oracles.window.minorant import grid_cap
from tests.oracles.oracle_contract import make_instance
from tests.oracles.fuzz import fuzz_instance
from tests.oracles.window.test_minorant import _points


def _grid_ks(grid: IntegerGrid) -> np.ndarray:
    """Every integer k of the grid inside its norm bound (``test_minorant._points``), which
    is the set ``grid_cap`` bounds."""
    K = _points(grid)
    assert ((K * K).sum(axis=1) <= grid_cap(grid)).all()
    return K


def _inside(grid: IntegerGrid, k: np.ndarray) -> bool:
    return bool(np.all(np.abs(k) <= grid.bound) and int(k @ k) <= grid_cap(grid))


@pytest.mark.parametrize("seed", range(6))
def test_noise_argmin_is_the_brute_force_minimum_of_the_noise_alone(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 5))
    grid = IntegerGrid(d, int(rng.integers(1, 4)), float(rng.choice([1.0, 0.5])))
    grid = IntegerGrid(d, grid.bound, grid.step, 0.6 * d * (grid.bound * grid.step) ** 2)
    problem = Problem(
        np.zeros((0, d)),
        [],
        [],
        grid,
        linear=rng.normal(0, 2, d),
        norm_coef=float(rng.choice([-3.0, 3.0])),
        norm_radius_sq=grid.norm_sq_max + 0.5,
    )
    K = _grid_ks(grid)
    noise = problem.objective(grid.step * K.astype(float))  # no rows: F is the noise alone
    k = noise_argmin(problem)
    assert k.dtype.kind == "i" and _inside(grid, k)
    assert problem.objective(grid.step * k.astype(float)) == pytest.approx(noise.min(), abs=1e-9)


@pytest.mark.parametrize("seed", [0, 1, 2, 5, 6])
def test_starting_points_are_grid_points_the_first_two_zero_and_the_noise_argmin(seed):
    problem = fuzz_instance(seed)
    starts = starting_points(problem)
    assert len(starts) >= 2 and not starts[0].any()
    np.testing.assert_array_equal(starts[1], noise_argmin(problem))
    for k in starts:
        assert k.dtype.kind == "i" and k.shape == (problem.d,) and _inside(problem.domain, k)


def _single_moves(grid: IntegerGrid, k: np.ndarray):
    for j in range(grid.d):
        for v in range(-grid.bound, grid.bound + 1):
            if v != k[j]:
                other = k.copy()
                other[j] = v
                if _inside(grid, other):
                    yield other


@pytest.mark.parametrize("seed", range(0, 24, 3))
def test_local_search_ends_where_no_single_coordinate_change_improves(seed):
    # the contract's instances: scores on a 0.005 lattice, far from mu, so that the search's
    # floating-point scores and the exact rule agree (the fuzz's rows on the margin would not)
    problem = make_instance(seed)
    grid = problem.domain
    rng = np.random.default_rng(seed)
    K = _grid_ks(grid)
    start = K[rng.integers(len(K))]
    k = local_search(problem, start, budget=Budget.unlimited())
    assert _inside(grid, k)
    value = problem.objective(grid.step * k.astype(float))
    assert value <= problem.objective(grid.step * start.astype(float)) + 1e-9
    # the moves are scored in floating point: a better neighbour by more than rounding is a bug
    for other in _single_moves(grid, k):
        assert problem.objective(grid.step * other.astype(float)) >= value - 1e-9, (k, other)


@pytest.mark.parametrize("seed", range(0, 40, 5))
def test_improve_returns_an_exact_grid_point_no_worse_than_its_starts(seed):
    problem = fuzz_instance(seed)
    grid = problem.domain
    w, value = improve(
        problem,
        Budget.from_limit(5.0),
        rng=np.random.default_rng(seed),
        patience=5,
    )
    assert grid.contains(w)
    assert value == problem.objective(w)  # the exact rule, not the float scorer
    best_start = min(
        problem.objective(grid.step * k.astype(float)) for k in starting_points(problem)
    )
    assert value <= best_start
    K = _grid_ks(grid)
    assert value >= problem.objective(grid.step * K.astype(float)).min()  # a heuristic's value
    again = improve(
        problem,
        Budget.from_limit(5.0),
        rng=np.random.default_rng(seed),
        patience=5,
    )
    np.testing.assert_array_equal(again[0], w)  # the same generator, the same answer


def test_improve_starts_where_it_is_told_and_refuses_a_box():
    problem = Problem(np.zeros((0, 2)), [], [], IntegerGrid(2, 2), linear=[1.0, -1.0])
    w, value = improve(
        problem,
        Budget.from_limit(1.0),
        rng=np.random.default_rng(0),
        patience=0,
        starts=[np.array([2, -2])],
    )
    assert w.tolist() == [-2.0, 2.0] and value == -4.0  # the local search walks to the corner
    with pytest.raises(TypeError, match="IntegerGrid"):
        improve(
            Problem(np.zeros((0, 2)), [], [], Box(2)),
            Budget.from_limit(1.0),
            rng=np.random.default_rng(0),
        )


def test_a_zero_budget_still_returns_the_first_start_searched():
    problem = fuzz_instance(3)
    w, value = improve(problem, Budget(0.0), rng=np.random.default_rng(0))  # already expired
    assert problem.domain.contains(w) and value == problem.objective(w)
    assert math.isfinite(value)


@pytest.mark.parametrize("seed", range(4))
def test_the_logistic_direction_separates_rows_a_homogeneous_classifier_separates(seed):
    rng = np.random.default_rng(seed)
    d, n = 5, 60
    truth = rng.normal(size=d)
    X = rng.normal(size=(n, d))
    X = X[np.abs(X @ truth) > 0.3]  # a margin: separable through the origin
    positive = X @ truth > 0
    counts = rng.integers(1, 4, len(X)).astype(float)
    problem = Problem(
        X, np.where(positive, counts, 0.0), np.where(positive, 0.0, counts), IntegerGrid(d, 3, 0.5)
    )
    w = logistic_direction(problem)
    assert np.array_equal(X @ w > 0, positive)


@pytest.mark.parametrize("seed", range(6))
def test_points_rounded_along_a_direction_are_grid_points_best_first(seed):
    problem = fuzz_instance(seed)
    grid = problem.domain
    direction = np.random.default_rng(seed).normal(size=problem.d)
    points = rounded_along(problem, direction, 3)
    assert 1 <= len(points) <= 3
    assert all(_inside(grid, k) for k in points)
    values = [float(problem.objective(grid.step * k)) for k in points]
    assert values == sorted(values)
    assert rounded_along(problem, np.zeros(problem.d), 3) == []


def test_a_rounded_logistic_direction_classifies_every_row_where_one_can():
    # rows separable through the origin by a direction on the grid: some start classifies them
    # all (0 errors, the least any point has), whatever the local search would find
    rng = np.random.default_rng(7)
    d = 6
    truth = np.array([2.0, -1.0, 0.0, 1.0, 0.0, -2.0])
    X = rng.uniform(-1, 1, size=(200, d))
    X = X[np.abs(X @ truth) > 0.2]
    positive = X @ truth > 0
    grid = IntegerGrid(d, 2, 1.0)
    problem = Problem(X, positive.astype(float), (~positive).astype(float), grid)
    values = [float(problem.objective(grid.step * k)) for k in starting_points(problem)]
    assert min(values) == 0.0
