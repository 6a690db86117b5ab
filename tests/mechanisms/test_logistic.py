"""Non-private logistic regression without intercept (SPEC section 7)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import expit

from core.objective import predict
from mechanisms.logistic import LogisticParams, fit_logistic, logistic_loss, run_logistic


def _toy(n=300, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, d))
    y = np.where(X @ np.array([1.0, -2.0, 0.5, 0.0]) + rng.normal(size=n) >= 0, 1, -1)
    return X, y


def test_adult_training_accuracy_is_about_0788(adult):
    X, y = adult.train.features, adult.train.labels
    r = fit_logistic(X, y)
    accuracy = float(np.mean(predict(X, r.w, 1e-4) == y))
    print(f"non-private LR on Adult: training accuracy {accuracy:.4f}")  # measured 0.7879
    assert accuracy == pytest.approx(0.788, abs=0.005)
    assert r.accuracy(X, y) == accuracy
    assert r.params["converged"]


def test_the_solution_is_stationary_and_matches_a_reference():
    X, y = _toy()
    r = fit_logistic(X, y, l2=0.01)
    w = r.w
    gradient = -(X.T @ (y * expit(-y * (X @ w)))) / len(y) + 0.01 * w
    assert np.abs(gradient).max() < 1e-8
    # sklearn's C is 1 / (n * l2) for the mean loss; no intercept
    from sklearn.linear_model import LogisticRegression

    ref = LogisticRegression(
        C=1 / (len(y) * 0.01), fit_intercept=False, tol=1e-12, max_iter=10_000
    ).fit(X, y)
    np.testing.assert_allclose(w, ref.coef_[0], atol=1e-5)
    assert logistic_loss(w, X, y, 0.01) <= logistic_loss(ref.coef_[0], X, y, 0.01) + 1e-12


def test_the_claim_says_not_private():
    X, y = _toy()
    r = run_logistic(X, y, LogisticParams(), np.random.default_rng(0))
    assert r.mechanism == "logistic_regression"
    assert not r.privacy.holds and r.privacy.reason.startswith("non-private reference")
    assert r.privacy.epsilon == math.inf and r.privacy.delta == 0.0
    assert r.to_params()["privacy_holds"] is False
    assert "fit" in r.timings
    np.testing.assert_array_equal(r.w, fit_logistic(X, y).w)  # deterministic, rng unused


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"l2": -1.0}, ValueError, "l2 must be finite and >= 0, found -1.0"),
        ({"l2": "0"}, TypeError, "l2 must be a real number, found '0'"),
        ({"tol": 0.0}, ValueError, "tol must be finite and > 0, found 0.0"),
        ({"max_iter": 0}, ValueError, "max_iter must be >= 1, found 0"),
        ({"max_iter": 5.0}, TypeError, "max_iter must be an integer, found 5.0"),
    ],
)
def test_bad_params(kwargs, error, match):
    with pytest.raises(error, match=match):
        LogisticParams(**kwargs)


def test_bad_data_and_rng():
    X, y = _toy()
    with pytest.raises(ValueError, match="labels must be -1 or \\+1, found \\[0\\]"):
        fit_logistic(X, np.where(y > 0, 1, 0))
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        run_logistic(X, y, LogisticParams(), rng=0)
    with pytest.raises(TypeError, match="params must be LogisticParams, found dict"):
        run_logistic(X, y, {"l2": 0.0})
