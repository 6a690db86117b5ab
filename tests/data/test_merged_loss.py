"""The merged-row loss and the threshold rule (oracles.objective, SPEC section 2), moved here
from the former tests/data/test_synthetic_and_merge.py. They test oracles/objective.py and belong
in tests/oracles/test_objective.py, which the oracles' test author owns; until they move there
they run with the data tests. (Dataset.merged on Adult: tests/data/test_record.py.)"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from oracles.objective import MergedRows, predict, zero_one_loss


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