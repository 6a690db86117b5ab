"""DP-SGD's algorithm (``mechanisms.dpsgd.algorithm``; SPEC section 6): its parameters and their
validation, its steps (per-example gradients, clipping), training, the release with its
accounting, and the Adult figure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.dpsgd.algorithm import (
    DPSGDParams,
    clip_and_sum,
    per_example_gradients,
    run_dpsgd,
    train_dpsgd,
)
from mechanisms.dpsgd.sgd_accounting import accounted_epsilon, calibrate_noise_multiplier
from mechanisms.privacy import ApproximateTarget
from mechanisms.release import Release
from tests.mechanisms.dpsgd_helpers import toy

# --- parameters ----------------------------------------------------------------------------------


def test_params_defaults_and_steps():
    p = DPSGDParams(1.0, 1e-5)
    assert p.epochs == 5.0 and p.steps is None
    assert p.num_steps(1000) == math.ceil(5 * 1000 / 64)
    assert p.sampling_rate(1000) == 64 / 1000
    q = DPSGDParams(1.0, 1e-5, steps=7)
    assert q.epochs is None and q.num_steps(1000) == 7


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"delta": 0.0}, ValueError, r"delta must be in \(0, 1\), found 0.0"),
        ({"epsilon": -1.0}, ValueError, "epsilon must be finite and > 0, found -1.0"),
        ({"clip_norm": 0.0}, ValueError, "clip_norm must be finite and > 0, found 0.0"),
        ({"clip_norm": "1"}, TypeError, "clip_norm must be a real number, found '1'"),
        ({"batch_size": 0}, ValueError, "batch_size must be >= 1, found 0"),
        ({"batch_size": 64.0}, TypeError, "batch_size must be an integer, found 64.0"),
        ({"batch_size": True}, TypeError, "batch_size must be an integer, found True"),
        ({"learning_rate": math.inf}, ValueError, "learning_rate must be finite .* inf"),
        ({"epochs": -2.0}, ValueError, "epochs must be finite and > 0, found -2.0"),
        ({"steps": 0}, ValueError, "steps must be >= 1, found 0"),
        (
            {"epochs": 2.0, "steps": 10},
            ValueError,
            "give epochs or steps, not both \\(found epochs=2.0, steps=10\\)",
        ),
    ],
)
def test_params_reject_bad_values(kwargs, error, match):
    base = {"epsilon": 1.0, "delta": 1e-5}
    with pytest.raises(error, match=match):
        DPSGDParams(**(base | kwargs))


def test_batch_larger_than_n_is_refused():
    X, y = toy(n=50)
    with pytest.raises(
        ValueError, match=r"batch_size: must be <= n = 50 \(the training rows\), found 64"
    ):
        run_dpsgd(X, y, DPSGDParams(1.0, 1e-5), np.random.default_rng(0))


def test_run_rejects_global_rng_and_wrong_params():
    X, y = toy()
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        run_dpsgd(X, y, DPSGDParams(1.0, 1e-5), None)
    with pytest.raises(TypeError, match="params must be DPSGDParams, found dict"):
        run_dpsgd(X, y, {"epsilon": 1.0}, np.random.default_rng(0))


# --- the algorithm's steps -----------------------------------------------------------------------


def test_per_example_gradients_match_finite_differences():
    X, y = toy(n=6)
    w = np.array([0.3, -0.2, 0.1, 0.5, -0.4])
    G = per_example_gradients(X, y.astype(float), w)
    h = 1e-6
    for i in range(len(y)):
        for j in range(X.shape[1]):
            e = np.zeros_like(w)
            e[j] = h
            loss = lambda v: np.logaddexp(0.0, -y[i] * (X[i] @ v))  # noqa: E731
            assert G[i, j] == pytest.approx((loss(w + e) - loss(w - e)) / (2 * h), abs=1e-7)


def test_clipping_bounds_each_contribution():
    rng = np.random.default_rng(0)
    G = rng.normal(size=(50, 4)) * rng.exponential(3.0, size=(50, 1))
    C = 1.0
    for i in range(len(G)):  # sensitivity: one example's contribution has norm <= C
        single = clip_and_sum(G[i : i + 1], C)
        assert np.linalg.norm(single) <= C + 1e-12
        if np.linalg.norm(G[i]) <= C:
            np.testing.assert_allclose(single, G[i])
    assert np.allclose(clip_and_sum(np.zeros((3, 4)), C), 0.0)


def test_noiseless_training_learns_and_is_reproducible():
    X, y = toy()
    kw = dict(noise_multiplier=1e-12, clip_norm=10.0, batch_size=100, learning_rate=1.0, steps=400)
    w1 = train_dpsgd(X, y, rng=np.random.default_rng(3), **kw)
    w2 = train_dpsgd(X, y, rng=np.random.default_rng(3), **kw)
    np.testing.assert_array_equal(w1, w2)
    acc = np.mean(np.where(X @ w1 >= 1e-4, 1, -1) == y)
    assert acc >= 0.85  # deterministic given the seed; measured 0.9125


def test_release_records_the_accounting():
    X, y = toy()
    params = DPSGDParams(2.0, 1e-5, batch_size=40, steps=50)
    r = run_dpsgd(X, y, params, np.random.default_rng(0))
    assert isinstance(r, Release) and r.mechanism == "dpsgd_lr"
    assert r.privacy.holds and r.privacy.epsilon == 2.0 and r.privacy.delta == 1e-5
    assert 0.99 * 2.0 <= r.privacy.accounted_epsilon <= 2.0
    assert r.noise["steps"] == 50 and r.noise["sampling_rate"] == pytest.approx(0.1)
    z = calibrate_noise_multiplier(ApproximateTarget(2.0, 1e-5), 0.1, 50)
    assert r.noise["noise_multiplier"] == z
    # which accountant, at which discretization, and the epsilon it gives for the z used
    assert r.noise["accountant"] == "pld_replace_one" and r.noise["pld_discretization"] == 2e-3
    assert "PLDAccountant, REPLACE_ONE" in r.privacy.reason
    assert r.privacy.accounted_epsilon == accounted_epsilon(
        z, 0.1, 50, 1e-5, value_discretization_interval=2e-3
    )
    assert r.to_params()["noise.accountant"] == "pld_replace_one"
    assert {"calibrate", "train", "total"} <= set(r.timings)
    assert r.to_params()["noise.noise_multiplier"] == r.noise["noise_multiplier"]
    again = run_dpsgd(X, y, params, np.random.default_rng(0))
    np.testing.assert_array_equal(r.w, again.w)


# --- Adult ---------------------------------------------------------------------------------------


def test_adult_epsilon_1_reaches_a_sensible_accuracy(adult):
    X, y = adult.train.features, adult.train.labels
    delta = 1 / adult.train.n**2
    params = DPSGDParams(1.0, delta, clip_norm=2.0, batch_size=64, learning_rate=2.0, epochs=5)
    accuracies = [
        run_dpsgd(X, y, params, np.random.default_rng(seed)).accuracy(X, y) for seed in range(3)
    ]
    print(f"DP-SGD on Adult, eps=1, delta=1/n^2: training accuracies {accuracies}")
    # measured 0.771, 0.772, 0.772 (seeds 0-2, PLD z = 1.533; 0.770, 0.772, 0.772 with the
    # RDP + group z = 2.01); 0.761 is the "married" one-feature rule.
    assert min(accuracies) >= 0.72
