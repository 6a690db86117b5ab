"""The continuous samplers (mechanisms.audit.continuous_samplers) against the real mechanisms:
DP-SGD's vectorized steps reproduce ``train_dpsgd`` draw for draw; OPSamp's exact
one-dimensional minimizers agree with the convex oracle's certified ones, and its release with
``finish``; both refuse what they cannot audit faithfully (d != 1)."""

from __future__ import annotations

import numpy as np
import pytest

import mechanisms.dpsgd as dpsgd
from core.objective import MergedRows
from mechanisms.audit.continuous_samplers import DPSGDSampler, OPSampSampler
from mechanisms.audit.mutants import DPSGDNoClipping, OPSampNoOutputNoise
from mechanisms.audit.sampler_base import AuditError, with_draws
from mechanisms.dpsgd import DPSGDParams, run_dpsgd, train_dpsgd
from mechanisms.opsamp import OPSamp, OPSampParams
from oracles.contract.budget import Budget


def _sequential_draws(seed, n, d, steps):
    """The draws train_dpsgd makes, in its order: per step n uniforms, then d normals."""
    rng = np.random.default_rng(seed)
    uniforms, normals = np.empty((1, steps, n)), np.empty((1, steps, d))
    for t in range(steps):
        uniforms[0, t] = rng.random(n)
        normals[0, t] = rng.standard_normal(d)  # rng.normal(0, s, d) is s * these
    return uniforms, normals


@pytest.mark.parametrize("sampler_cls,clip", [(DPSGDSampler, True), (DPSGDNoClipping, False)])
def test_dpsgd_steps_reproduce_train_dpsgd_draw_for_draw(sampler_cls, clip, monkeypatch):
    X = np.array([[10.0], [0.5], [-2.0], [0.0], [3.0], [0.0]])
    y = np.array([1, -1, 1, 1, -1, -1])
    params = DPSGDParams(1.0, 1e-5, clip_norm=1.0, batch_size=3, learning_rate=0.7, steps=3)
    sampler = sampler_cls(params)
    cal = sampler.calibration(X, y)
    assert cal["z"] == run_dpsgd(X, y, params, np.random.default_rng(0)).noise["noise_multiplier"]
    if not clip:  # the mutant is train_dpsgd with clip_and_sum replaced by the plain sum
        monkeypatch.setattr(dpsgd.algorithm, "clip_and_sum", lambda g, c: g.sum(axis=0))
    for seed in range(5):
        uniforms, normals = _sequential_draws(seed, len(y), 1, cal["steps"])
        mine = sampler.train(X, y, cal, uniforms, normals)[0]
        real = train_dpsgd(
            X,
            y,
            noise_multiplier=cal["z"],
            clip_norm=params.clip_norm,
            batch_size=params.batch_size,
            learning_rate=params.learning_rate,
            steps=cal["steps"],
            rng=np.random.default_rng(seed),
        )
        np.testing.assert_allclose(mine, real, rtol=1e-12, atol=1e-15)
        # rows with x = 0 change nothing: sample() leaves them out
        active = X[:, 0] != 0
        dropped = sampler.train(X[active], y[active], cal, uniforms[:, :, active], normals)[0]
        np.testing.assert_allclose(dropped, mine, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("mechanism_cls", [OPSamp, OPSampNoOutputNoise])
@pytest.mark.parametrize("labels", [[1], [-1], [1, 1, -1]])
def test_opsamp_sampler_agrees_with_the_convex_oracle_and_finish(mechanism_cls, labels):
    from oracles.convex import ConvexOracle

    mechanism = mechanism_cls(OPSampParams(1.0, 1e-5))
    X = np.ones((len(labels), 1))
    X[:-1] = 0.0  # zero-feature padding, the last row carries the label
    rows = MergedRows.from_xy(X, np.array(labels))
    noise = mechanism.draw_noise(np.random.default_rng(0), rows.n, rows.d)
    m = noise.calibration.m
    # sigmas spread over the regimes: w = lower, interior, and w = upper (the common case)
    noise = with_draws(noise, sigmas=np.linspace(0.0, 0.8, m)[:, None])
    oracle = ConvexOracle()
    solutions = [oracle.solve(p, Budget.unlimited()) for p in mechanism.problems(rows, noise)]
    batched = with_draws(
        noise, sigmas=noise.sigmas.value[None], output_laplace=noise.output_laplace.value[None]
    )
    sampler = OPSampSampler(mechanism)
    minimizers = sampler.minimizers(rows, batched)[0]
    certified = np.array([s.w[0] for s in solutions])
    # the oracle certifies a gap <= 1e-6 in the objective, not the argmin: compare to 1e-3
    np.testing.assert_allclose(minimizers, certified, atol=1e-3)
    release = mechanism.finish(rows, noise, solutions, np.random.default_rng(0), {})
    assert sampler.release(minimizers[None], batched)[0] == pytest.approx(release.w[0], abs=1e-3)
    if mechanism_cls is OPSampNoOutputNoise:
        assert not np.any(noise.output_laplace.value)


PARAMS = DPSGDParams(1.0, 1e-5, clip_norm=1.0, batch_size=2, learning_rate=0.5, steps=2)


def test_clip_factors_are_clip_and_sums_rule():
    norms = np.array([0.0, 0.25, 2.0, 8.0])
    np.testing.assert_array_equal(DPSGDSampler.clip_factors(norms, 2.0), [1.0, 1.0, 1.0, 0.25])


def test_dpsgd_sampler_is_seeded_chunked_and_needs_d_1():
    X = np.array([[1.0], [-2.0], [0.0]])
    y = np.array([1, -1, 1])
    whole = DPSGDSampler(PARAMS).sample(X, y, 30, np.random.default_rng(4))
    np.testing.assert_array_equal(
        whole, DPSGDSampler(PARAMS).sample(X, y, 30, np.random.default_rng(4))
    )
    assert whole.shape == (30,) and len(np.unique(whole)) == 30  # Gaussian noise: all distinct
    # chunks of 7: the first chunk is what one batch of 7 draws from the same generator
    chunked = DPSGDSampler(PARAMS, chunk=7).sample(X, y, 30, np.random.default_rng(4))
    first = DPSGDSampler(PARAMS).sample(X, y, 7, np.random.default_rng(4))
    assert chunked.shape == (30,)
    np.testing.assert_array_equal(chunked[:7], first)
    with pytest.raises(AuditError, match="needs d = 1, found d = 2"):
        DPSGDSampler(PARAMS).sample(np.ones((3, 2)), y, 5, np.random.default_rng(0))


def test_opsamp_sampler_releases_one_value_per_draw_and_needs_d_1():
    sampler = OPSampSampler(OPSamp(OPSampParams(1.0, 1e-5)))
    X, y = np.array([[0.0], [1.0]]), np.array([1, -1])
    a = sampler.sample(X, y, 50, np.random.default_rng(9))
    np.testing.assert_array_equal(a, sampler.sample(X, y, 50, np.random.default_rng(9)))
    assert a.shape == (50,) and np.isfinite(a).all()
    rows = MergedRows.from_xy(np.ones((2, 2)), np.array([1, -1]))
    noise = sampler.noise(rows, 3, np.random.default_rng(0))
    with pytest.raises(AuditError, match="needs d = 1"):
        sampler.minimizers(rows, noise)
