"""The strict side of the rule resolved exactly (``oracles.mip.margin_band``; SPEC section 8): proven
gaps below mu against a hand computation and against exact enumeration of the grid's scores,
the per-row eps they give, and the lazy cuts, each valid for every grid point with its exact
labels. (test_mip.py checks the cuts inside the reference MILP on the fuzz instances.)"""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from core.objective import exact_positive
from core.problem import Box, IntegerGrid, Problem
from oracles.enumerate import grid_points
from oracles.mip.margin_band import (
    MAX_GAP_COMBOS,
    BandCut,
    band_cut,
    exact_grid_values,
    margin_gaps,
    mislabelled_rows,
    strict_eps_per_row,
)
from oracles.mip.formulation import build_milp

MU = 0.5


def _row_problem(X, grid=None, margin=MU) -> Problem:
    X = np.asarray(X, dtype=float)
    return Problem(
        X, np.ones(len(X)), np.zeros(len(X)), grid or IntegerGrid(X.shape[1], 2), margin=margin
    )


def _exact_gaps(problem: Problem) -> list[Fraction | None]:
    """mu - (largest grid score below mu) per row, exactly, by enumerating the grid."""
    W = np.vstack(list(grid_points(problem.domain)))
    mu = Fraction(problem.margin)
    gaps = []
    for x in problem.points:
        scores = [sum((Fraction(a) * Fraction(b) for a, b in zip(x, w)), Fraction(0)) for w in W]
        below = [mu - s for s in scores if s < mu]
        gaps.append(min(below) if below else None)
    return gaps


@pytest.mark.parametrize(
    "step, exact",
    [
        (1.0, True),
        (0.5, True),
        (0.25, True),
        (3.0, True),
        (0.1, False),
        (0.2, False),
        (1 / 3, False),
    ],
)
def test_exact_grid_values_only_where_every_tau_k_is_a_float_exactly(step, exact):
    # 3 * fl(0.1) is not fl(0.3): on such a grid no column counts as coarse
    assert exact_grid_values(IntegerGrid(2, 3, step)) is exact


def test_a_gap_computed_by_hand():
    """Row (1, 0.3) on k in [-2, 2]^2: scores C + r, r in {-0.6, -0.3, 0, 0.3, 0.6}; the largest
    below 0.5 is 0.4 (C = 1, r = -0.6): gap 0.1. Row (0, 2): scores 2k, largest below 0.5 is 0:
    gap 0.5. Row (1, 1): integer scores, largest below 0.5 is 0: gap 0.5."""
    problem = _row_problem([[1.0, 0.3], [0.0, 2.0], [1.0, 1.0]])
    gaps = margin_gaps(problem, np.arange(3))
    assert gaps.tolist() == pytest.approx([0.1, 0.5, 0.5], abs=1e-12)  # less a rounding slack
    exact = _exact_gaps(problem)
    assert all(Fraction(g) <= e for g, e in zip(gaps, exact))  # lower bounds, proven
    assert margin_gaps(problem, np.array([2, 0])).tolist() == [gaps[2], gaps[0]]  # by row


@pytest.mark.parametrize("seed", range(6))
def test_gaps_are_positive_lower_bounds_on_random_mixed_rows(seed):
    """One-hot and two-decimal columns, margins 1e-4 and 0.25, steps 1 and 0.5 (seeded)."""
    rng = np.random.default_rng(seed)
    d = 3
    X = np.zeros((8, d))
    X[np.arange(8), rng.integers(0, 2, 8)] = 1.0  # one-hot columns 0 and 1
    X[:, 2] = np.round(rng.uniform(-1, 1, 8), 2)
    step = 1.0 if seed % 2 else 0.5
    problem = _row_problem(X, IntegerGrid(d, 2, step), margin=(1e-4, 0.25)[seed % 3 == 0])
    gaps = margin_gaps(problem, np.arange(len(X)))
    for g, e in zip(gaps, _exact_gaps(problem)):
        assert g > 0 and (e is None or Fraction(g) <= e)


def test_no_gap_without_a_grid_or_with_too_many_fine_combinations():
    X = np.full((2, 5), 0.37)  # five fine columns on 9 values: 9^5 > MAX_GAP_COMBOS
    assert 9**5 > MAX_GAP_COMBOS
    assert margin_gaps(_row_problem(X, IntegerGrid(5, 4)), np.arange(2)).tolist() == [0.0, 0.0]
    box = Problem(X, [1.0, 1.0], [0.0, 0.0], Box(5), margin=MU)
    assert margin_gaps(box, np.arange(2)).tolist() == [0.0, 0.0]
    assert margin_gaps(_row_problem([[1.0, 0.3]]), np.zeros(0, dtype=int)).tolist() == []


def test_strict_eps_is_half_the_gap_capped():
    problem = _row_problem([[1.0, 0.3], [0.0, 2.0], [0.37] * 2])
    gaps = margin_gaps(problem, np.arange(3))
    np.testing.assert_allclose(strict_eps_per_row(problem, np.arange(3), 1.0), gaps / 2)
    assert strict_eps_per_row(problem, np.arange(3), 1e-6).tolist() == [1e-6, 1e-6, 1e-6]
    none = _row_problem(np.full((1, 5), 0.37), IntegerGrid(5, 4))  # no proven gap: eps 0
    assert strict_eps_per_row(none, np.arange(1), 1e-6).tolist() == [0.0]


def test_a_cut_computed_by_hand():
    """Row (1, 0.3) at w = (1, -2): with k_1 = -2 (r = -0.6) the row is +1 iff
    k_0 >= T = ceil((0.5 + 0.6) / 1) = 2, threshold 1.5."""
    cut = band_cut(_row_problem([[1.0, 0.3]]), 0, np.array([1.0, -2.0]))
    assert cut == BandCut(row=0, fine_cols=(1,), fine_k=(-2,), coarse_cols=(0,), threshold=1.5)


@pytest.mark.parametrize("seed", range(4))
def test_every_cut_is_valid_for_every_grid_point_with_its_exact_labels(seed):
    """For every row and every grid point w0 the cut at w0 holds at every grid point w that
    agrees with w0 on the row's fine columns: exact label +1 iff the coarse sum >= threshold;
    a row without coarse columns has one label (its exact label at w0) for all of them."""
    rng = np.random.default_rng(100 + seed)
    d = 3
    X = np.zeros((6, d))
    X[np.arange(6), rng.integers(0, 2, 6)] = 1.0
    X[:, 2] = np.round(rng.uniform(-1, 1, 6), 2)
    X[0] = [0.0, 0.0, 0.35]  # a row with fine columns only
    problem = _row_problem(
        X, IntegerGrid(d, 2, 1.0 if seed % 2 else 0.5), margin=(0.25, 1e-4)[seed % 2]
    )
    W = np.vstack(list(grid_points(problem.domain)))
    K = np.round(W / problem.domain.step).astype(int)
    labels = exact_positive(problem.points, W, problem.margin)  # (rows, points)
    for u in range(problem.n_rows):
        for w0 in W:
            cut = band_cut(problem, u, w0)
            agree = np.all(K[:, list(cut.fine_cols)] == np.array(cut.fine_k), axis=1)
            assert agree.any()
            if cut.coarse_cols:
                coarse = W[agree][:, list(cut.coarse_cols)] @ X[u, list(cut.coarse_cols)]
                np.testing.assert_array_equal(labels[u, agree], coarse >= cut.threshold)
            else:
                assert len(set(labels[u, agree])) == 1


def test_mislabelled_rows_are_the_rows_whose_z_is_not_the_exact_label():
    problem = Problem(
        [[1.0, 0.3], [0.5, -1.0], [1.0, 1.0]],
        [1.0, 2.0, 1.0],
        [3.0, 1.0, 2.0],
        IntegerGrid(2, 2),
        margin=MU,
    )
    milp = build_milp(problem)
    active = np.flatnonzero(milp.z_cols >= 0)
    assert len(active) == 3
    w = np.array([1.0, -2.0])
    x = milp.encode(w)  # the canonical assignment: every z is its exact label
    assert mislabelled_rows(milp, x).tolist() == []
    flipped = x.copy()
    flipped[milp.z_cols[1]] = 1.0 - flipped[milp.z_cols[1]]
    assert mislabelled_rows(milp, flipped).tolist() == [1]
