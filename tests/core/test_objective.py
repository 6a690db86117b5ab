"""The 0/1 loss and its one exact scoring rule (``core.objective``; SPEC sections 2 and 8):
+1 iff <w, x> >= mu in exact arithmetic, one w and a batch agree, merged rows with
their label counts, the data check."""

from __future__ import annotations

from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.objective import (
    MergedRows,
    check_data,
    exact_positive,
    exact_score,
    predict,
    score_error_bound,
    zero_one_loss,
)
from oracles.enumerate import grid_points
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


def test_merged_rows_validation():
    with pytest.raises(ValueError):
        MergedRows(np.ones((2, 2)), [1, -1], [0, 0])


# --- the tie rule at the margin, exactly ---------------------------------------------------------


def test_a_score_exactly_at_mu_is_positive_even_when_the_float_sum_falls_below():
    """1 + mu - 1 is mu exactly, but fl(fl(1 + mu) - 1) < mu: the exact rule says +1."""
    X = np.array([[1.0, MU, -1.0], [1.0, MU, -1.0]])
    w = np.ones(3)
    assert (X @ w)[0] < MU  # floating point alone would say -1
    assert exact_score(X[0], w) == Fraction(MU)
    assert predict(X, w, MU).tolist() == [1, 1]
    below = np.array([[1.0, MU, -1.0, -1e-30]])  # exactly 1e-30 below mu
    assert predict(below, np.ones(4), MU).tolist() == [-1]


def test_the_rule_is_greater_or_equal_on_either_side_of_mu_by_one_ulp():
    up, down = np.nextafter(MU, 1.0), np.nextafter(MU, 0.0)
    X = np.array([[down], [MU], [up], [-MU]])
    assert predict(X, np.array([1.0]), MU).tolist() == [-1, 1, 1, -1]
    assert predict(X, np.array([0.0]), MU).tolist() == [-1, -1, -1, -1]  # 0 < mu: always -1
    # a negative weight flips the sign of the score, not the rule
    assert predict(-X, np.array([-1.0]), MU).tolist() == [-1, 1, 1, -1]


def test_predict_matches_exact_rational_scores_on_cancelling_rows():
    """Random rows built so that the exact score sits on mu, 1e-30 above or below it, while
    their float sums scatter around mu (seeded)."""
    rng = np.random.default_rng(11)
    for _ in range(200):
        d = int(rng.integers(2, 6))
        w = rng.integers(-3, 4, d).astype(float)
        w[0] = 1.0
        x = rng.uniform(-1, 1, d)
        x[0] = 0.0
        # x_0 = mu - <w, x>: exact only up to rounding, so compare with the exact score itself
        x[0] = MU - float(x @ w) + float(rng.choice([0.0, 1e-30, -1e-30, 1e-17, -1e-17]))
        exact = exact_score(x, w) >= Fraction(MU)
        assert predict(x[None, :], w, MU)[0] == (1 if exact else -1)
        batch = predict(x[None, :], np.vstack([w, -w, w]), MU)[0]
        assert batch[0] == batch[2] == (1 if exact else -1)


def test_predict_refuses_a_non_finite_margin_and_shapes_its_output():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [0.5, 0.5]])
    for margin in (np.inf, np.nan, -np.inf):
        with pytest.raises(ValueError, match="margin must be finite"):
            predict(X, np.ones(2), margin)
    single = predict(X, np.array([1.0, 0.0]), 0.5)
    assert single.shape == (3,) and single.dtype == np.int8 and single.tolist() == [1, -1, 1]
    assert predict(X, np.eye(2), 0.5).shape == (3, 2)


def test_score_error_bound_covers_the_rounding_of_a_dot_product():
    """|fl(<w, x>) - <w, x>| <= bound for every row, checked against the exact rational value,
    on rows with heavy cancellation (seeded)."""
    rng = np.random.default_rng(5)
    for d in (1, 2, 7, 23):
        X = rng.normal(size=(300, d)) * 10.0 ** rng.integers(-8, 8, (300, d))
        w = rng.integers(-4, 5, d).astype(float)
        X[:, -1] = -(X[:, :-1] @ w[:-1]) / (w[-1] if w[-1] else 1.0)  # scores near 0
        bound = score_error_bound(np.abs(X) @ np.abs(w), d)
        for x, b, s in zip(X, bound, X @ w):
            assert abs(Fraction(float(s)) - exact_score(x, w)) <= Fraction(float(b))


# --- the loss and merged rows --------------------------------------------------------------------


def test_zero_one_loss_counts_disagreements_and_takes_a_batch():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]])
    y = np.array([1, -1, 1, -1])
    W = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [-1.0, -1.0]])
    # labels: w0 -> (+, -, +, -); w1 -> (-, +, +, -); w2 -> all -; w3 -> (-, -, -, +)
    expected = [0, 2, 2, 3]
    assert zero_one_loss(X, y, W, margin=0.5).tolist() == expected
    assert [zero_one_loss(X, y, w, margin=0.5) for w in W] == expected
    assert isinstance(zero_one_loss(X, y, W[0], margin=0.5), int)


def test_merged_rows_count_each_label_per_distinct_vector():
    X = np.array([[1.0, 0.5], [0.0, 1.0], [1.0, 0.5], [1.0, 0.5], [0.0, 1.0], [0.0, 0.0]])
    y = np.array([1, -1, -1, 1, -1, 1])
    rows = MergedRows.from_xy(X, y)
    assert rows.points.tolist() == [[0.0, 0.0], [0.0, 1.0], [1.0, 0.5]]  # lexicographic
    assert rows.pos.tolist() == [1, 0, 2] and rows.neg.tolist() == [0, 2, 1]
    assert (rows.n, rows.n_distinct, rows.d) == (6, 3, 2)
    assert rows.min_possible_loss() == 1  # only [1, 0.5] carries both labels
    for array in (rows.points, rows.pos, rows.neg):
        assert not array.flags.writeable
    # the merged loss is the loss on the rows, for every w of a small grid and a batch
    W = np.array([[a, b] for a in (-1.0, 0.0, 1.0) for b in (-1.0, 0.0, 1.0)])
    assert rows.loss(W).tolist() == zero_one_loss(X, y, W).tolist()
    assert [rows.loss(w) for w in W] == [zero_one_loss(X, y, w) for w in W]


@pytest.mark.parametrize(
    "points, pos, neg, match",
    [
        (np.ones(3), [1, 1, 1], [0, 0, 0], "points must be a 2-D array"),
        (np.ones((2, 2)), [1, 1, 1], [0, 0], r"pos and neg must have shape \(2,\)"),
        (np.ones((2, 2)), [1, -1], [0, 0], "label counts must be non-negative"),
        (np.ones((2, 2)), [1, 1], [0, -2], "label counts must be non-negative"),
    ],
)
def test_merged_rows_refuse_bad_records(points, pos, neg, match):
    with pytest.raises(ValueError, match=match):
        MergedRows(points, pos, neg)


def test_from_xy_refuses_bad_labels_and_shapes():
    with pytest.raises(ValueError, match=r"labels must be -1 or \+1"):
        MergedRows.from_xy(np.ones((2, 2)), np.array([1, 0]))
    with pytest.raises(ValueError, match=r"X must be \(n, d\) and y \(n,\)"):
        MergedRows.from_xy(np.ones((2, 2)), np.array([1, -1, 1]))


# --- the data check -----------------------------------------------------------------------------


def test_check_data_returns_float_features_and_int8_labels():
    X, y = check_data([[1, 2], [3, 4]], [1.0, -1.0])
    assert X.dtype == float and y.dtype == np.int8 and y.tolist() == [1, -1]


@pytest.mark.parametrize(
    "X, y, match",
    [
        (np.ones(3), [1, 1, 1], r"X must be a non-empty 2-D array, found shape \(3,\)"),
        (np.ones((0, 2)), [], r"X must be a non-empty 2-D array, found shape \(0, 2\)"),
        (np.ones((2, 0)), [1, 1], r"X must be a non-empty 2-D array, found shape \(2, 0\)"),
        ([[1.0, np.nan]], [1], "X must hold finite numbers"),
        ([[1.0, np.inf]], [1], "X must hold finite numbers"),
        ([["a", "b"]], [1], "X must hold finite numbers"),
        (np.ones((2, 2)), [1], r"y must have shape \(2,\), found \(1,\)"),
        (np.ones((3, 2)), [1, 0, 2], r"labels must be -1 or \+1, found \[0, 2\]"),
    ],
)
def test_check_data_refuses_with_a_message_that_says_what(X, y, match):
    with pytest.raises(ValueError, match=match):
        check_data(X, y)


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    n=st.integers(2, 60),
    d=st.integers(1, 5),
    margin=st.sampled_from([1e-4, 0.0, 0.5]),
)
def test_merged_loss_equals_full_loss_property(seed, n, d, margin):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 3, size=(n, d)) / 2.0  # few values: many duplicate rows
    y = rng.choice([-1, 1], size=n)
    merged = MergedRows.from_xy(X, y)
    W = rng.integers(-3, 4, size=(30, d)).astype(float)
    np.testing.assert_array_equal(merged.loss(W, margin), zero_one_loss(X, y, W, margin))


def test_threshold_rule_uses_the_margin():
    X = np.array([[1.0], [1.0]])
    assert predict(X, np.array([1e-4]), margin=1e-4).tolist() == [1, 1]  # >= mu is +1
    assert predict(X, np.array([0.5e-4]), margin=1e-4).tolist() == [-1, -1]
    assert predict(X, np.array([0.0]), margin=1e-4).tolist() == [-1, -1]  # w = 0 says -1
