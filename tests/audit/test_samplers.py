"""The discrete samplers against the real mechanisms (mechanisms.audit.samplers): the audit must
test the mechanisms' code.

For OPDisc, RSPM, ExpMech and their mutants the batched sampler reproduces the real ``run``
release for release from the same seed. The continuous samplers (DP-SGD, OPSamp) are checked in
test_continuous_samplers.py, ``BatchedGenerator`` in test_sampler_base.py.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanisms.audit.mutants import (
    OPDiscPlainEta,
    OPDiscSigmaThird,
    RSPMDropSeparators,
    RSPMLaplaceQuarter,
    RSPMSigmaThird,
    expmech_without_half,
)
from mechanisms.audit.samplers import AuditError, ExpMechSampler, GridArgminSampler
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.runner import run
from oracles.enumerate import EnumerationOracle

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
    OPDisc(OPDISC),
    OPDiscPlainEta(OPDISC),
    OPDiscSigmaThird(OPDISC),
    RSPM(RSPM_G),
    RSPMSigmaThird(RSPM_G),
    RSPMDropSeparators(RSPM_G),
    RSPM(RSPM_L),
    RSPMLaplaceQuarter(RSPM_L),
    RSPMDropSeparators(RSPM_L),
]


@pytest.mark.parametrize(
    "mechanism",
    GRID_MECHANISMS,
    ids=lambda m: f"{type(m).__name__}-{getattr(m.params, 'noise', '')}",
)
@pytest.mark.parametrize("d", [1, 2])
def test_grid_sampler_reproduces_run_release_for_release(mechanism, d):
    X, y = _data(d, 12, seed=d)
    expected = np.array(
        [
            run(mechanism, X, y, EnumerationOracle(), rng).w
            for rng in [np.random.default_rng(7)]
            for _ in range(RELEASES)
        ]
    )
    sampler = GridArgminSampler(mechanism)
    cells = sampler.sample(X, y, RELEASES, np.random.default_rng(7))
    np.testing.assert_array_equal(sampler.grid(d)[cells], expected)


@dataclasses.dataclass(frozen=True)
class _SquaredNoise(OPDisc):
    def problems(self, rows, noise):
        (problem,) = super().problems(rows, noise)
        eta = np.asarray(noise.eta.value)
        return [dataclasses.replace(problem, linear=-(eta[: rows.d] ** 2))]


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
    np.testing.assert_allclose(
        mutant.probabilities(X, y), ExpMechSampler(ExpMechParams(2.0)).probabilities(X, y)
    )
