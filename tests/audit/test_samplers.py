"""The fast samplers against the real mechanisms: the audit must test the mechanisms' code.

For OPDisc, RSPM, ExpMech and their mutants the batched sampler reproduces the real ``run``
release for release from the same seed. DP-SGD's vectorized steps reproduce ``train_dpsgd``
draw for draw. OPSamp's exact one-dimensional minimizers agree with the convex oracle's
certified ones, and its release with ``finish``.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import mechanisms.dpsgd as dpsgd
from mechanisms.base import Secret
from mechanisms.dpsgd import DPSGDParams, run_dpsgd, train_dpsgd
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.runner import run
from oracles.enumerate import EnumerationOracle
from oracles.objective import MergedRows
from pipeline.audit.samplers import (AuditError, BatchedGenerator, DPSGDSampler, ExpMechSampler,
                                     GridArgminSampler, OPSampSampler)  # fmt: skip
from pipeline.audit.mutants import (DPSGDNoClipping, OPDiscPlainEta, OPDiscSigmaThird,
                                 OPSampNoOutputNoise, RSPMDropSeparators, RSPMLaplaceQuarter,
                                 RSPMSigmaThird, expmech_without_half)  # fmt: skip

RELEASES = 60


def _data(d: int, n: int, seed: int):
    rng = np.random.default_rng(seed)
    X = rng.integers(-1, 2, size=(n, d)).astype(float)
    y = rng.choice([-1, 1], size=n)
    return X, y


OPDISC = OPDiscParams(1.0, 1e-5)
RSPM_G = RSPMParams(1.0, 1e-5)
RSPM_L = RSPMParams(1.0, 0.0, noise="laplace")
GRID_MECHANISMS = [
    OPDisc(OPDISC), OPDiscPlainEta(OPDISC), OPDiscSigmaThird(OPDISC),
    RSPM(RSPM_G), RSPMSigmaThird(RSPM_G), RSPMDropSeparators(RSPM_G),
    RSPM(RSPM_L), RSPMLaplaceQuarter(RSPM_L), RSPMDropSeparators(RSPM_L),
]  # fmt: skip


@pytest.mark.parametrize("mechanism", GRID_MECHANISMS,
                         ids=lambda m: f"{type(m).__name__}-{getattr(m.params, 'noise', '')}")
@pytest.mark.parametrize("d", [1, 2])
def test_grid_sampler_reproduces_run_release_for_release(mechanism, d):
    X, y = _data(d, 12, seed=d)
    expected = np.array([run(mechanism, X, y, EnumerationOracle(), rng).w
                         for rng in [np.random.default_rng(7)] for _ in range(RELEASES)])
    sampler = GridArgminSampler(mechanism)
    cells = sampler.sample(X, y, RELEASES, np.random.default_rng(7))
    np.testing.assert_array_equal(sampler.grid(d)[cells], expected)


def test_batched_generator_draws_the_sequential_stream():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    sequential = np.stack([a.normal(0.0, 2.0, size=3) for _ in range(5)])
    np.testing.assert_array_equal(BatchedGenerator(b, 5).normal(0.0, 2.0, size=3), sequential)
    sequential = np.stack([a.laplace(0.0, 1.5, size=(2, 2)) for _ in range(4)])
    np.testing.assert_array_equal(BatchedGenerator(b, 4).laplace(0.0, 1.5, size=(2, 2)),
                                  sequential)  # fmt: skip
    with pytest.raises(AttributeError, match="does not offer 'choice'"):
        BatchedGenerator(b, 2).choice(3)


@dataclasses.dataclass(frozen=True)
class _SquaredNoise(OPDisc):
    def problems(self, rows, noise):
        (problem,) = super().problems(rows, noise)
        eta = np.asarray(noise["eta"].value)
        return [dataclasses.replace(problem, linear=-eta[: rows.d] ** 2)]


def test_grid_sampler_refuses_an_objective_not_affine_in_the_noise():
    X, y = _data(1, 5, seed=0)
    with pytest.raises(AuditError, match="not affine"):
        GridArgminSampler(_SquaredNoise(OPDISC)).sample(X, y, 10, np.random.default_rng(0))


@pytest.mark.parametrize("d", [1, 2])
def test_expmech_sampler_reproduces_run_expmech(d):
    X, y = _data(d, 9, seed=5)
    params = ExpMechParams(1.0)
    rng = np.random.default_rng(11)
    expected = np.array([run_expmech(X, y, params, rng).w for _ in range(RELEASES)])
    sampler = ExpMechSampler(params)
    cells = sampler.sample(X, y, RELEASES, np.random.default_rng(11))
    np.testing.assert_array_equal(sampler.grid(d)[cells], expected)
    # the mutant is run_expmech at 2 epsilon under the claim epsilon
    mutant = expmech_without_half(params)
    np.testing.assert_allclose(mutant.probabilities(X, y),
                               ExpMechSampler(ExpMechParams(2.0)).probabilities(X, y))


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
        real = train_dpsgd(X, y, noise_multiplier=cal["z"], clip_norm=params.clip_norm,
                           batch_size=params.batch_size, learning_rate=params.learning_rate,
                           steps=cal["steps"], rng=np.random.default_rng(seed))  # fmt: skip
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
    m = noise["m"]
    # sigmas spread over the regimes: w = lower, interior, and w = upper (the common case)
    noise["sigmas"] = Secret(np.linspace(0.0, 0.8, m)[:, None])
    oracle = ConvexOracle()
    solutions = [oracle.solve(p) for p in mechanism.problems(rows, noise)]
    batched = {**noise, "sigmas": Secret(noise["sigmas"].value[None]), "output_laplace":
               Secret(noise["output_laplace"].value[None])}  # fmt: skip
    sampler = OPSampSampler(mechanism)
    minimizers = sampler.minimizers(rows, batched)[0]
    certified = np.array([s.w[0] for s in solutions])
    # the oracle certifies a gap <= 1e-6 in the objective, not the argmin: compare to 1e-3
    np.testing.assert_allclose(minimizers, certified, atol=1e-3)
    release = mechanism.finish(rows, noise, solutions, np.random.default_rng(0), {})
    assert sampler.release(minimizers[None], batched)[0] == pytest.approx(release.w[0], abs=1e-3)
    if mechanism_cls is OPSampNoOutputNoise:
        assert not np.any(noise["output_laplace"].value)
