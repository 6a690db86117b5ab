"""One exact scoring rule (SPEC sections 2 and 8; issue 11): exact labels, batch = single."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest

from oracles.base import IntegerGrid, Problem
from oracles.enumerate import grid_points
from oracles.objective import MIN_MARGIN, MergedRows, exact_positive, predict
from tests.oracles.fuzz import fuzz_instance

MU = 1e-4


def test_a_score_rounded_up_to_mu_is_still_below_it():
    """fl(mu - 1e-30) = mu, but the exact score is below mu: the row is -1."""
    X = np.array([[MU, -1e-30], [MU, 0.0], [MU, 1e-30]])
    assert (X @ np.ones(2)).tolist() == [MU, MU, MU]
    assert predict(X, np.ones(2), MU).tolist() == [-1, 1, 1]


def test_labels_are_the_exact_rational_rule_on_the_fuzz_instances():
    for seed in range(0, 60, 3):
        problem = fuzz_instance(seed)
        W = np.vstack(list(grid_points(problem.domain)))[:200]
        positive = exact_positive(problem.points, W, problem.margin)
        mu = Fraction(problem.margin)
        for u, x in enumerate(problem.points):
            for k, w in enumerate(W):
                exact = sum(Fraction(a) * Fraction(b) for a, b in zip(x, w)) >= mu
                assert positive[u, k] == exact, (seed, u, w)


def test_one_w_and_a_batch_agree_even_at_the_margin():
    for seed in range(40):
        problem = fuzz_instance(seed)
        W = np.vstack(list(grid_points(problem.domain)))
        batch = problem.objective(W)
        single = np.array([problem.objective(w) for w in W])
        np.testing.assert_allclose(batch, single, rtol=0, atol=1e-9)
        labels = predict(problem.points, W, problem.margin)
        for k in range(0, len(W), 7):
            assert (labels[:, k] == predict(problem.points, W[k], problem.margin)).all()


def test_merged_and_full_losses_use_the_same_exact_rule():
    X = np.array([[MU, -1e-30], [MU, -1e-30], [1.0, 0.5]])
    y = np.array([-1, 1, 1])
    rows = MergedRows.from_xy(X, y)
    w = np.ones(2)
    assert rows.loss(w, MU) == int(np.count_nonzero(predict(X, w, MU) != y)) == 1


def test_a_problem_refuses_margins_below_the_minimum():
    with pytest.raises(ValueError, match="margin must be >= 1e-06.*1e-07"):
        Problem(np.ones((1, 2)), [1.0], [0.0], IntegerGrid(2, 1), margin=1e-7)
    Problem(np.ones((1, 2)), [1.0], [0.0], IntegerGrid(2, 1), margin=MIN_MARGIN)
