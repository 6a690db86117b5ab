"""Brute-force enumeration (``oracles.enumerate``), the exact reference of every other test: the
oracle contract run against itself (which proves the contract's instances solvable and its
assertions consistent), the grid's points, ties, and what it refuses."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from core.problem import Box, IntegerGrid, Problem
from oracles.contract.certificate import OracleError, Status
from oracles.contract.budget import Budget
from oracles.enumerate import EnumerationOracle, all_objectives, grid_points
from oracles.routing.registry import make_oracle
from tests.oracles.oracle_contract import OracleContract


class TestEnumerate(OracleContract):
    supports_box = False
    supports_time_limit = False

    @classmethod
    def make_oracle(cls, **options):
        return make_oracle("enumerate", **options)


# --- the grid's points ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "d, bound, step, norm_sq_max",
    [
        (1, 3, 1.0, None),
        (2, 2, 0.5, 1.0),
        (3, 1, 1.0, 2.0),
        (3, 2, 1.0, 0.0),
        (4, 1, 0.25, None),
    ],
)
def test_grid_points_are_the_grid_in_lexicographic_order_in_the_norm_bound(
    d, bound, step, norm_sq_max
):
    grid = IntegerGrid(d, bound, step, norm_sq_max)
    expected = [
        step * np.array(k, dtype=float)
        for k in itertools.product(range(-bound, bound + 1), repeat=d)
        if norm_sq_max is None or step * step * sum(x * x for x in k) <= norm_sq_max
    ]
    for chunk in (65_536, 7, 1):  # the chunking does not change the points or their order
        W = np.vstack(list(grid_points(grid, chunk=chunk)))
        np.testing.assert_array_equal(W, np.array(expected))


def _brute_minimum(problem) -> float:
    """min F over the grid by itertools, independent of ``grid_points``."""
    grid = problem.domain
    return min(
        problem.objective(grid.step * np.array(k, dtype=float))
        for k in itertools.product(range(-grid.bound, grid.bound + 1), repeat=grid.d)
        if grid.norm_sq_max is None
        or grid.step**2 * sum(x * x for x in k) <= grid.norm_sq_max + 1e-9
    )


@pytest.mark.parametrize("seed", range(8))
def test_the_oracle_returns_the_brute_force_minimum_certified(seed):
    rng = np.random.default_rng(seed)
    d = int(rng.integers(1, 4))
    grid = IntegerGrid(
        d, int(rng.integers(1, 3)), float(rng.choice([1.0, 0.5])), None if seed % 2 else 0.75 * d
    )
    problem = Problem(
        np.round(rng.uniform(-1, 1, (12, d)), 2),
        rng.integers(0, 4, 12),
        rng.integers(0, 4, 12),
        grid,
        linear=rng.normal(0, 1, d),
        margin=0.05,
    )
    solution = EnumerationOracle().solve(problem, Budget.unlimited())
    cert = solution.certificate
    assert cert.status is Status.OPTIMAL and cert.certified and cert.backend == "enumerate"
    assert cert.objective == cert.bound == pytest.approx(_brute_minimum(problem), abs=1e-12)
    assert problem.objective(solution.w) == cert.objective and grid.contains(solution.w)


def test_ties_go_to_the_first_minimizer_in_lexicographic_order():
    flat = Problem(np.zeros((0, 2)), [], [], IntegerGrid(2, 2))  # F = 0 everywhere
    assert EnumerationOracle().solve(flat, Budget.unlimited()).w.tolist() == [-2.0, -2.0]
    ball = Problem(np.zeros((0, 2)), [], [], IntegerGrid(2, 2, 1.0, 1.0))
    assert EnumerationOracle().solve(ball, Budget.unlimited()).w.tolist() == [-1.0, 0.0]
    # two minimizers, (0, 1) and (1, 0): the first in order wins
    two = Problem(np.zeros((0, 2)), [], [], IntegerGrid(2, 1, 1.0, 1.0), linear=[-1.0, -1.0])
    values = {tuple(w): two.objective(w) for w in np.vstack(list(grid_points(two.domain)))}
    assert values[(0.0, 1.0)] == values[(1.0, 0.0)] == min(values.values())
    assert EnumerationOracle().solve(two, Budget.unlimited()).w.tolist() == [0.0, 1.0]


def test_what_enumeration_refuses():
    with pytest.raises(OracleError, match="enumeration needs an IntegerGrid domain"):
        EnumerationOracle().solve(Problem(np.zeros((0, 2)), [], [], Box(2)), Budget.unlimited())
    big = Problem(np.zeros((0, 3)), [], [], IntegerGrid(3, 2))  # 125 points
    with pytest.raises(OracleError, match="enumeration of 125 grid points exceeds max_points=124"):
        EnumerationOracle(max_points=124).solve(big, Budget.unlimited())
    assert EnumerationOracle(max_points=125).solve(big, Budget.unlimited()).certificate.certified
    with pytest.raises(OracleError, match="all_objectives needs an IntegerGrid domain"):
        all_objectives(Problem(np.zeros((0, 2)), [], [], Box(2)))


def test_all_objectives_lists_every_point_with_its_objective():
    problem = Problem([[1.0, -0.5]], [2.0], [1.0], IntegerGrid(2, 1, 1.0, 1.0), linear=[0.1, 0.2])
    W, values = all_objectives(problem)
    assert W.tolist() == [[-1.0, 0.0], [0.0, -1.0], [0.0, 0.0], [0.0, 1.0], [1.0, 0.0]]
    np.testing.assert_array_equal(values, [problem.objective(w) for w in W])
