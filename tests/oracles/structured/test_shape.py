"""The shape the structured oracle exploits (``oracles.structured.shape``), read off the data:
constant and one-feature rows, binary and continuous columns, cells, one-hot groups, the dyadic
scale, the combinations of continuous weights (counted, listed, capped), and the pieces of the
bounds against brute force. (test_structured.py checks the tables and the root bound against
``Problem.objective``.)"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.problem import Box, IntegerGrid, Problem
from oracles.enumerate import grid_points
from oracles.structured.shape import (
    MAX_LISTED_COMBOS,
    ShapeMismatch,
    _cells,
    _combos,
    _count_combos,
    decompose,
    dyadic_scale,
    onehot_groups,
    separable_bounds,
    squares_knapsack,
)


def test_combinations_are_listed_in_lexicographic_order():
    for p, B, cap in [(0, 2, 3), (1, 2, 1), (3, 2, 5), (4, 3, 9)]:
        rows = [()]
        for _ in range(p):
            rows = [
                r + (k,)
                for r in rows
                for k in range(-B, B + 1)
                if sum(x * x for x in r) + k * k <= cap
            ]
        expected = np.asarray(rows, dtype=np.int64).reshape(len(rows), p)
        np.testing.assert_array_equal(_combos(p, B, cap), expected)
        assert _count_combos(p, B, cap) == len(expected)


def test_more_combinations_than_are_ever_listed_fall_back():
    d = 24  # every column continuous: (2 * 4 + 1)^24 grid points, far more than are listed
    X = np.linspace(0.05, 0.95, 3 * d).reshape(3, d)
    problem = Problem(X, [1.0, 0.0, 1.0], [0.0, 1.0, 0.0], IntegerGrid(d, bound=4))
    with pytest.raises(ShapeMismatch, match=f"more than the {MAX_LISTED_COMBOS}"):
        decompose(problem)


# --- what decompose reads off the data ----------------------------------------------------------


def _mixed_problem(**kwargs) -> Problem:
    """Columns 0-2 one-hot, 3 continuous (quarters); a zero row; one-feature rows on columns 1
    and 3 (one of them exactly at the margin); a norm term over B = 2, D^2 = 5."""
    X = np.array(
        [
            [1, 0, 0, 0.25],
            [0, 1, 0, 0.75],
            [0, 0, 1, 0.5],
            [1, 0, 0, -0.25],
            [0, 0, 0, 0.0],
            [0, 1, 0, 0.0],
            [0, 0, 0, 0.125],
        ]
    )
    args = dict(
        points=X,
        pos=[1.0, 2.0, 0.5, 3.0, 4.0, 1.5, 2.5],
        neg=[2.0, 1.0, 1.0, 0.0, 1.0, -1.0, 0.5],
        domain=IntegerGrid(4, 2, 1.0, 5.0),
        linear=[0.1, -0.2, 0.3, 0.4],
        norm_coef=-1.5,
        norm_radius_sq=6.0,
        margin=0.125,
    )
    return Problem(**(args | kwargs))


def test_decompose_sorts_rows_and_columns():
    problem = _mixed_problem()
    shape = decompose(problem)
    assert shape.const == 4.0  # the zero row: score 0 < mu, pays pos
    assert shape.binary_cols.tolist() == [0, 1, 2] and shape.cont_cols.tolist() == [3]
    assert shape.groups == ((0, 1, 2),)
    assert shape.cell_of.shape == (4,) and shape.n_cells == 3 and shape.max_cell_size == 1
    assert shape.pos.tolist() == [1.0, 2.0, 0.5, 3.0]
    # unary[j, k + B] = linear_j tau k + the one-feature rows of column j by the exact rule:
    # row (0, 1, 0, 0) is +1 iff k_1 >= 1 (pays neg -1), else pays pos 1.5; row
    # (0, 0, 0, 0.125) is +1 iff 0.125 k_3 >= 0.125, i.e. k_3 >= 1: exactly at mu counts
    ks = np.arange(-2, 3)
    np.testing.assert_allclose(shape.unary[1], -0.2 * ks + np.where(ks >= 1, -1.0, 1.5))
    np.testing.assert_allclose(shape.unary[3], 0.4 * ks + np.where(ks >= 1, 0.5, 2.5))
    np.testing.assert_allclose(shape.unary[0], 0.1 * ks)
    assert shape.dyadic == (2, 0)  # quarters in the cells' rows (0.125 is a one-feature row)
    # the norm table: N(q) where q is a sum of 4 squares <= 4 each, up to the cap 5
    assert shape.cap == 5
    np.testing.assert_allclose(shape.norm, -1.5 * np.sqrt(6.0 - np.arange(6)))
    assert shape.combos.tolist() == [[-2], [-1], [0], [1], [2]]


def test_decompose_refuses_what_it_cannot_cut():
    with pytest.raises(ShapeMismatch, match=r"the domain is not an IntegerGrid \(Box\)"):
        decompose(Problem(np.eye(2), [1.0, 1.0], [0.0, 0.0], Box(2)))
    with pytest.raises(
        ShapeMismatch,
        match=r"1 continuous columns give 5 weight combinations "
        r"\(max_combos=4\)",
    ):
        decompose(_mixed_problem(), max_combos=4)
    assert len(decompose(_mixed_problem(), max_combos=5).combos) == 5


def test_the_norm_table_is_infinite_where_no_grid_point_has_that_square_sum():
    # d = 1, B = 2: ||k||^2 in {0, 1, 4}; 2 and 3 are not sums of one square
    problem = Problem(
        [[0.5]], [1.0], [0.0], IntegerGrid(1, 2, 1.0, 4.0), norm_coef=1.0, norm_radius_sq=4.0
    )
    norm = decompose(problem).norm
    assert np.isinf(norm[[2, 3]]).all() and np.isfinite(norm[[0, 1, 4]]).all()


@pytest.mark.parametrize(
    "Xb, expected",
    [
        ([[1, 0, 0, 1, 0], [0, 1, 0, 0, 1], [0, 0, 1, 1, 0]], ((0, 1, 2), (3, 4))),
        ([[1, 0], [0, 1]], ((0, 1),)),
        ([[1, 1, 0], [0, 0, 1]], ()),  # two 1s in one row: not one-hot
        ([[1, 0, 1], [0, 1, 0]], ()),  # a trailing column that is not a group
    ],
)
def test_onehot_groups_are_consecutive_columns_with_one_1_per_row(Xb, expected):
    Xb = np.array(Xb, dtype=float)
    assert onehot_groups(Xb, np.arange(Xb.shape[1])) == expected
    assert onehot_groups(Xb, np.arange(Xb.shape[1]) + 10) == tuple(
        tuple(c + 10 for c in g) for g in expected
    )  # reported by the columns' own indices


def test_cells_are_the_distinct_binary_patterns():
    cells, cell_of = _cells(np.array([[1, 0], [0, 1], [1, 0], [0, 1], [0, 0]]))
    assert cells.tolist() == [[0, 0], [0, 1], [1, 0]]
    assert cell_of.tolist() == [2, 1, 2, 1, 0]
    empty, of = _cells(np.zeros((0, 2)))
    assert empty.shape == (0, 2) and of.shape == (0,)
    one, of = _cells(np.zeros((3, 0)))  # no binary column: every row in one empty cell
    assert one.shape == (1, 0) and of.tolist() == [0, 0, 0]


def test_dyadic_scale_finds_the_smallest_exponents_or_none():
    X = np.array([[1.0, 0.25], [0.0, 0.75]])
    assert dyadic_scale(X, np.array([1]), 1.0, 2) == (2, 0)
    assert dyadic_scale(X, np.array([1]), 0.5, 2) == (2, 1)
    assert dyadic_scale(np.array([[1.0, 0.1]]), np.array([1]), 1.0, 2) is None  # 0.1
    assert dyadic_scale(X, np.array([1]), 0.1, 2) is None  # tau = 0.1
    # partial sums beyond 2^52 cannot be exact: refused
    assert dyadic_scale(np.array([[2.0**50, 0.25]]), np.array([1]), 1.0, 4) is None


def test_squares_knapsack_is_the_least_cost_per_exact_square_sum():
    rng = np.random.default_rng(3)
    ks = np.arange(-2, 3)
    costs = rng.normal(size=(3, len(ks)))
    cap = 9
    h = squares_knapsack(costs, ks, cap)
    expected = np.full(cap + 1, math.inf)
    for k in itertools.product(range(len(ks)), repeat=3):
        q = int(sum(ks[i] ** 2 for i in k))
        if q <= cap:
            expected[q] = min(expected[q], sum(costs[j, i] for j, i in enumerate(k)))
    np.testing.assert_allclose(h, expected)
    assert np.isinf(h[7])  # 7 is not a sum of three squares of -2..2


@pytest.mark.parametrize("norm_coef", [-1.5, 0.0, 1.5])
def test_the_separable_bound_is_below_f_for_every_combination(norm_coef):
    problem = _mixed_problem(norm_coef=norm_coef, norm_radius_sq=6.0 if norm_coef else None)
    shape = decompose(problem)
    base, floor = separable_bounds(shape)
    assert floor == float(np.minimum(shape.pos, shape.neg).sum())
    W = np.vstack(list(grid_points(problem.domain)))
    F = problem.objective(W)
    for i, kP in enumerate(shape.combos):
        mine = np.all(np.round(W[:, shape.cont_cols]) == kP, axis=1)
        assert base[i] + floor <= F[mine].min() + 1e-9


def test_cell_reach_is_the_largest_cell_score_within_the_norm_budget():
    """max |sum_{j in c} k_j| over |k_j| <= B, ||k||^2 <= q: min(B s, floor(sqrt(s q)))."""
    problem = Problem(
        np.array([[1, 0, 0, 0.5], [0, 1, 1, 0.5], [1, 1, 1, 0.25]]),
        [1.0, 1.0, 1.0],
        [0.0, 0.0, 0.0],
        IntegerGrid(4, 2),
    )
    shape = decompose(problem)
    sizes = shape.cell_size
    for q in range(0, 13):
        reach = shape.cell_reach(q)
        for cell, s in enumerate(sizes):
            best = max(
                abs(sum(k))
                for k in itertools.product(range(-2, 3), repeat=int(s))
                if sum(v * v for v in k) <= q
            )
            assert reach[cell] == best, (q, s)
