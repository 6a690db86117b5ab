"""The noise window's pieces (``oracles.window.minorant``) against enumeration of small grids: the
decomposition F = N + L is exact, every minimizer lies in the window, the completion tables are the
least completions, and the tables they start from. (test_window.py checks the minorants and the
separable argmin; test_branch.py the search that uses them.)"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.objective import exact_positive
from core.problem import Box, IntegerGrid, Problem
from oracles.window.minorant import (
    WINDOW_REL_SLACK,
    Decomposition,
    completion_tables,
    coordinate_order,
    decompose_objective,
    grid_cap,
    norm_table,
    row_prune,
    separable_argmin,
    threshold_slack,
    tightened_decomposition,
)
from tests.oracles.fuzz import fuzz_instance


def _points(grid: IntegerGrid) -> np.ndarray:
    """Every integer k of the grid inside its norm bound (tau^2 ||k||^2 <= D^2)."""
    K = np.array(list(itertools.product(range(-grid.bound, grid.bound + 1), repeat=grid.d)))
    if grid.norm_sq_max is not None:
        K = K[grid.step**2 * (K * K).sum(axis=1) <= grid.norm_sq_max + 1e-9]
    return K


def _loss_part(problem: Problem, dec: Decomposition, K: np.ndarray) -> np.ndarray:
    """L(k): the cost of the rows the decomposition leaves out of N, by the exact rule."""
    rows = dec.rows
    positive = exact_positive(
        problem.points[rows], problem.domain.step * K.astype(float), problem.margin
    )
    return (np.where(positive, problem.neg[rows, None], problem.pos[rows, None])).sum(axis=0)


def _rspm_like(seed: int) -> Problem:
    """Zero rows, one-feature rows (RSPM's separators with negative weights), multi-feature
    rows, a linear and a norm term: every kind of row the decomposition sorts."""
    rng = np.random.default_rng(seed)
    d = 3
    X = np.vstack(
        [
            np.zeros((2, d)),
            np.eye(d),
            -np.eye(d),
            0.5 * np.eye(d),
            np.round(rng.uniform(-1, 1, (6, d)), 2),
        ]
    )
    n = len(X)
    return Problem(
        X,
        rng.normal(0, 2, n),
        rng.normal(0, 2, n),
        IntegerGrid(d, 2, 0.5, 1.5),
        linear=rng.normal(0, 1, d),
        norm_coef=float(rng.choice([-2.0, 2.0])),
        norm_radius_sq=2.0,
        margin=0.1,
    )


@pytest.mark.parametrize("make", [_rspm_like, fuzz_instance], ids=["rows-of-every-kind", "fuzz"])
@pytest.mark.parametrize("seed", [0, 1, 2, 3, 5])
def test_the_split_is_exact_and_every_minimizer_lies_in_the_window(make, seed):
    problem = make(seed)
    dec = decompose_objective(problem)
    K = _points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    N, L = dec.noise(K), _loss_part(problem, dec, K)
    np.testing.assert_allclose(N + L, F, rtol=0, atol=1e-9)  # F = N + L at every grid point
    assert np.all(L >= dec.loss_floor - 1e-12)
    # the rows of L are those with two or more nonzero features; the others are in N
    assert np.array_equal(dec.rows, np.flatnonzero((problem.points != 0).sum(axis=1) >= 2))
    # any grid point is an incumbent: every minimizer has N <= UB - L_min
    for upper in (F.max(), np.median(F), F.min()):
        window = N <= upper - dec.loss_floor + threshold_slack(dec, upper)
        assert window[F == F.min()].all()


def test_zero_and_one_feature_rows_go_into_the_constant_and_the_unary_table():
    # row 0 is zero (score 0 < mu: pays pos 3); row 1 is +1 iff w_0 >= 0.1 (pays neg 5 then, else
    # pos -2); row 2 is (1, 1): left to L
    problem = Problem(
        [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]],
        [3.0, -2.0, 4.0],
        [1.0, 5.0, 1.0],
        IntegerGrid(2, 1),
        linear=[0.5, 0.0],
        margin=0.1,
    )
    dec = decompose_objective(problem)
    assert dec.const == 3.0 and dec.rows.tolist() == [2] and dec.loss_floor == 1.0
    # unary[j, k + B]: linear_j tau k plus the one-feature rows of column j
    np.testing.assert_array_equal(dec.unary, [[-0.5 - 2.0, 0.0 - 2.0, 0.5 + 5.0], [0.0, 0.0, 0.0]])
    assert dec.norm.tolist() == [0.0, 0.0, 0.0] and dec.cap == 2


def test_grid_cap_and_norm_table():
    assert grid_cap(IntegerGrid(3, 2)) == 12  # d B^2 without a norm bound
    assert grid_cap(IntegerGrid(3, 2, 1.0, 5.0)) == 5
    assert grid_cap(IntegerGrid(2, 2, 0.5, 1.0)) == 4  # tau^2 q <= D^2
    problem = Problem(
        np.zeros((0, 2)), [], [], IntegerGrid(2, 2, 0.5, 1.0), norm_coef=-3.0, norm_radius_sq=1.5
    )
    q = np.arange(5)
    np.testing.assert_allclose(norm_table(problem), -3.0 * np.sqrt(1.5 - 0.25 * q))
    plain = Problem(np.zeros((0, 2)), [], [], IntegerGrid(2, 2, 0.5, 1.0))
    assert norm_table(plain).tolist() == [0.0] * 5


@pytest.mark.parametrize("seed", range(4))
def test_completion_tables_are_the_least_completions(seed):
    """Comp[j][p] = min over k of the coordinates order[j:] of their unary costs plus
    nu(p + their square sum), +inf where none fits, by enumeration (seeded; excluded norms)."""
    rng = np.random.default_rng(seed)
    d, B, cap = 3, 2, 7
    unary = rng.normal(size=(d, 2 * B + 1))
    norm = rng.normal(size=cap + 1)
    norm[rng.integers(0, cap + 1, 2)] = np.inf  # square sums that are not allowed
    dec = Decomposition(unary, norm, 0.0, np.zeros(0, dtype=int), 0.0)
    order = rng.permutation(d)
    comp = completion_tables(dec, order)
    assert comp.shape == (d + 1, cap + 1)
    for j in range(d + 1):
        suffix = order[j:]
        for p in range(cap + 1):
            best = math.inf
            for k in itertools.product(range(-B, B + 1), repeat=len(suffix)):
                r = sum(v * v for v in k)
                if p + r <= cap:
                    best = min(best, sum(unary[c, v + B] for c, v in zip(suffix, k)) + norm[p + r])
            assert comp[j, p] == pytest.approx(best, abs=1e-12) or comp[j, p] == best == math.inf
    value, _ = separable_argmin(unary, norm)
    assert comp[0, 0] == pytest.approx(value, abs=1e-12)  # no prefix: the separable minimum


def test_separable_argmin_skips_square_sums_that_are_not_allowed():
    unary = np.array([[0.0, 0.0, 0.0], [0.0, 0.0, 0.0]])  # B = 1, only the norm table matters
    norm = np.array([5.0, np.inf, -1.0])  # ||k||^2 = 1 excluded, 2 best
    value, k = separable_argmin(unary, norm)
    assert value == -1.0 and int(k @ k) == 2 and np.all(np.abs(k) == 1)


def test_coordinate_order_puts_the_widest_spread_first_ties_by_index():
    unary = np.array(
        [
            [0.0, 1.0, 2.0],  # spread 2
            [0.0, 5.0, np.inf],  # 5: an excluded value does not count
            [3.0, 1.0, 0.0],  # 3
            [0.0, 0.0, 0.0],  # 0
            [2.0, 0.0, 0.0],
        ]
    )  # 2, as coordinate 0: after it
    dec = Decomposition(unary, np.zeros(3), 0.0, np.zeros(0, dtype=int), 0.0)
    assert coordinate_order(dec).tolist() == [1, 2, 0, 4, 3]


def test_threshold_slack_grows_with_the_scale_of_the_tables():
    small = Decomposition(np.ones((2, 3)), np.zeros(3), 0.0, np.zeros(0, dtype=int), 0.0)
    large = Decomposition(
        1e6 * np.ones((2, 3)), np.array([0.0, np.inf, 1e6]), -1e6, np.zeros(0, dtype=int), 0.0
    )
    assert threshold_slack(small, 0.0) == pytest.approx(WINDOW_REL_SLACK * (1 + 2))
    assert threshold_slack(large, 10.0) == pytest.approx(WINDOW_REL_SLACK * (1 + 4e6 + 10))
    assert math.isfinite(threshold_slack(large, 10.0))  # +inf entries are left out


def test_without_iterations_the_minorant_is_n_plus_the_rows_floor():
    problem = fuzz_instance(1)
    dec = decompose_objective(problem)
    plain, lower, prune = tightened_decomposition(problem, upper=0.0, iterations=0)
    assert lower == -math.inf and plain.loss_floor == 0.0
    assert plain.const == dec.const + dec.loss_floor
    np.testing.assert_array_equal(plain.unary, dec.unary)
    K = _points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    assert np.all(plain.noise(K) <= F + 1e-9)  # still below F everywhere
    # the rows' weights are all still owed by a row forced to its costly label
    rows = dec.rows
    weight = np.abs(problem.pos[rows] - problem.neg[rows])
    np.testing.assert_array_equal(prune.extra, weight)
    np.testing.assert_array_equal(prune.costly_negative, problem.pos[rows] > problem.neg[rows])
    np.testing.assert_array_equal(prune.X, problem.points[rows] * problem.domain.step)
    assert prune.margin == problem.margin


def test_row_prune_owes_what_the_minorant_does_not_carry():
    problem = Problem([[1.0, 1.0], [1.0, -1.0]], [3.0, 0.0], [1.0, 2.0], IntegerGrid(2, 1))
    dec = decompose_objective(problem)
    prune = row_prune(problem, dec, np.array([0.5, 5.0]))
    assert prune.extra.tolist() == [1.5, 0.0]  # max(weight - lam weight, 0), weights 2 and 2
    assert prune.costly_negative.tolist() == [True, False]


def test_the_split_needs_a_grid():
    with pytest.raises(TypeError, match="IntegerGrid"):
        decompose_objective(Problem(np.eye(2), [1.0, 1.0], [0.0, 0.0], Box(2)))
