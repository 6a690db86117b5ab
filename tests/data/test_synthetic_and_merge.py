"""The synthetic generator and the merged-row loss (SPEC section 2)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles.objective import MergedRows, predict, zero_one_loss
from pipeline.data.synthetic import make_linear_threshold


def test_synthetic_is_seeded_and_shaped():
    a = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=7)
    b = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=7)
    c = make_linear_threshold(300, 2, groups=(3, 4), levels=4, seed=8)
    assert a.d == 9 and a.n == 300
    np.testing.assert_array_equal(a.features, b.features)
    np.testing.assert_array_equal(a.labels, b.labels)
    assert not np.array_equal(a.features, c.features)
    assert (a.features[:, :3].sum(axis=1) == 1).all() and (a.features[:, 3:7].sum(axis=1) == 1).all()
    assert a.merged().n_distinct < a.n  # rounding to levels makes duplicate rows


def test_synthetic_label_noise_is_near_its_rate():
    clean = make_linear_threshold(4000, 3, label_noise=0.0, seed=1)
    noisy = make_linear_threshold(4000, 3, label_noise=0.2, seed=1)
    flipped = (clean.labels != noisy.labels).mean()
    # Binomial(4000, 0.2): sd 0.0063, so +-0.03 is over 4.5 sd (error rate < 1e-5)
    assert abs(flipped - 0.2) < 0.03


@pytest.mark.parametrize(
    "kwargs", [dict(n=1, n_continuous=2), dict(n=10, n_continuous=2, label_noise=0.7),
               dict(n=10, n_continuous=0), dict(n=10, n_continuous=1, groups=(1,))]
)  # fmt: skip
def test_synthetic_rejects_bad_arguments(kwargs):
    with pytest.raises(ValueError):
        make_linear_threshold(**kwargs)


def test_merged_loss_equals_full_loss_on_adult(adult):
    X, y = adult.train.features, adult.train.labels
    merged = adult.train.merged()
    assert merged.n == adult.train.n
    rng = np.random.default_rng(0)
    W = np.vstack([rng.integers(-4, 5, size=(200, 23)), rng.standard_normal((200, 23))])
    np.testing.assert_array_equal(merged.loss(W), zero_one_loss(X, y, W))
    for w in W[:20]:
        assert merged.loss(w) == zero_one_loss(X, y, w)


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
