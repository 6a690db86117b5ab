"""The deliberately broken mechanisms (mechanisms.audit.mutants): each changes one thing of the real
mechanism; the audit at 95% confidence with seed 0 catches every mutant that is not shown within
the claim exactly (``Mutant.undetectable``), and those are within it.

The audit runs are the session's (tests/audit/conftest.py, shared with test_audits.py); the
unit tests below check the one change of each mutant without sampling.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from core.objective import MergedRows
from mechanisms.audit import AUDITS, mechanism_audit
from mechanisms.audit.mutants import (
    MUTANTS,
    DPSGDNoClipping,
    OPDiscPlainEta,
    OPDiscSigmaThird,
    OPSampNoOutputNoise,
    RSPMDropSeparators,
    RSPMLaplaceQuarter,
    RSPMSigmaThird,
    expmech_without_half,
    with_calibration,
)
from mechanisms.audit.sampler_base import with_draws
from mechanisms.audit.samplers import DPSGDSampler
from mechanisms.dpsgd import DPSGDParams
from mechanisms.expmech import ExpMechParams
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.privacy import ApproximateTarget
from mechanisms.rspm import RSPM, RSPMParams
from oracles.enumerate import grid_points
from tests.audit.audit_checks import CAUGHT, NOT_DETECTABLE, check_mutant, report_lines
from tests.audit.exact import all_d1_replacements, exact_epsilon, gaussian_epsilon


@pytest.mark.parametrize("mutant", CAUGHT, ids=lambda m: f"{m.mechanism}-{m.name}")
def test_mutant_is_caught(mutant, reports_of):
    check_mutant(reports_of(mutant.mechanism), mutant)


@pytest.mark.parametrize("mutant", NOT_DETECTABLE, ids=lambda m: f"{m.mechanism}-{m.name}")
def test_undetectable_mutant_is_within_the_claim_exactly(mutant, reports_of):
    """sigma / 3 breaks the proof, not the privacy, on the instances the audit can run."""
    audit = mechanism_audit(mutant.mechanism)
    mechanism = mutant.make(audit.params).mechanism
    worst = max(exact_epsilon(mechanism, pair, audit.delta) for pair in all_d1_replacements())
    own = [r for r in reports_of(mutant.mechanism) if r.variant == mutant.name]
    print(
        f"\n{mutant.mechanism}/{mutant.name}: exact epsilon over every d = 1 replacement "
        f"<= {worst:.3f} at delta {audit.delta:g} (claim {audit.epsilon:g}); "
        f"{mutant.undetectable}\n{report_lines(own)}"
    )
    assert worst < audit.epsilon
    assert not any(r.catches for r in own)


def test_sigma_third_exact_epsilon_figures():
    # mu = |v| / (sigma / 3) with |v| = sqrt(2) (OPDisc) or 2 (RSPM) on d = 1, epsilon = 1,
    # for the papers' sigmas (SPEC sections 3 and 4)
    from mechanisms.opdisc_calibration import opdisc_sigma_paper as opdisc_sigma
    from mechanisms.rspm_calibration import rspm_gaussian_sigma_paper as rspm_gaussian_sigma

    mu_opdisc = np.sqrt(2) / (opdisc_sigma(ApproximateTarget(1.0, 1e-5), 1.0, 1.0) / 3)
    mu_rspm = 2.0 / (rspm_gaussian_sigma(ApproximateTarget(1.0, 1e-5), 2) / 3)
    assert mu_opdisc == pytest.approx(0.1786, abs=1e-4)
    assert mu_rspm == pytest.approx(0.1786, abs=1e-4)
    assert gaussian_epsilon(mu_opdisc, 1e-5) == pytest.approx(0.641, abs=1e-3)


# --- the one change of each mutant ----------------------------------------------------------------

ROWS = MergedRows.from_xy(
    np.array([[1.0, 0.0], [-1.0, 1.0], [0.0, -1.0], [1.0, 1.0]]), np.array([1, -1, 1, -1])
)


def _grid_values(problem) -> np.ndarray:
    return np.array([problem.objective(w) for w in grid_points(problem.domain)])


def test_the_registry_of_mutants_names_audited_mechanisms_once_each():
    keys = [(m.mechanism, m.name) for m in MUTANTS]
    assert len(set(keys)) == len(keys)
    assert {m.mechanism for m in MUTANTS} <= set(AUDITS)
    assert all(m.factor for m in MUTANTS)  # how far off the claim is, said for every mutant
    for m in MUTANTS:  # every mutant builds a sampler from its mechanism's audited parameters
        sampler = m.make(mechanism_audit(m.mechanism).params)
        assert sampler.kind in ("discrete", "continuous") and callable(sampler.sample)


@pytest.mark.parametrize("mutant_cls, real", [(OPDiscSigmaThird, OPDisc), (RSPMSigmaThird, RSPM)])
def test_sigma_third_is_the_papers_sigma_divided_by_three(mutant_cls, real):
    params = OPDiscParams(1.0, 1e-5) if real is OPDisc else RSPMParams(1.0, 1e-5)
    paper = real(dataclasses.replace(params, calibration="paper")).calibrate(2)
    mine = mutant_cls(params).calibrate(2)
    assert mine.sigma == pytest.approx(paper.sigma / 3.0, rel=1e-12)
    assert dataclasses.replace(mine, sigma=paper.sigma) == paper


def test_laplace_quarter_is_a_quarter_of_rspms_scale():
    params = RSPMParams(1.0, 0.0, noise="laplace")
    real = RSPM(params).calibrate(2)
    mine = RSPMLaplaceQuarter(params).calibrate(2)
    assert real.laplace_scale == pytest.approx(2 * real.m / params.epsilon)
    assert mine.laplace_scale == pytest.approx(real.laplace_scale / 4.0, rel=1e-12)


def test_plain_eta_drops_the_normalization_and_the_last_coordinate():
    mechanism = OPDiscPlainEta(OPDiscParams(1.0, 1e-5))
    noise = mechanism.draw_noise(np.random.default_rng(0), ROWS.n, ROWS.d)
    (problem,) = mechanism.problems(ROWS, noise)
    np.testing.assert_array_equal(problem.linear, -noise.eta.value[: ROWS.d])
    assert problem.norm_coef == 0.0
    (real,) = OPDisc(mechanism.params).problems(ROWS, noise)  # the real one has the norm term
    assert real.norm_coef != 0.0


def test_drop_separators_ignores_the_weights_of_the_negative_separators():
    mechanism = RSPMDropSeparators(RSPMParams(1.0, 1e-5))
    noise = mechanism.draw_noise(np.random.default_rng(1), ROWS.n, ROWS.d)
    eta = np.asarray(noise.eta.value, dtype=float)
    moved = eta.copy()
    moved[ROWS.d :] += 5.0  # the weights of (-e_j, +1), the last d separator elements
    (a,) = mechanism.problems(ROWS, noise)
    (b,) = mechanism.problems(ROWS, with_draws(noise, eta=moved))
    np.testing.assert_array_equal(_grid_values(a), _grid_values(b))
    # it is the real RSPM with those weights at zero
    zeroed = eta.copy()
    zeroed[ROWS.d :] = 0.0
    (real,) = RSPM(mechanism.params).problems(ROWS, with_draws(noise, eta=zeroed))
    np.testing.assert_allclose(_grid_values(a), _grid_values(real), rtol=0, atol=1e-12)
    (real_moved,) = RSPM(mechanism.params).problems(ROWS, with_draws(noise, eta=moved))
    assert not np.allclose(_grid_values(real), _grid_values(real_moved))  # RSPM does use them


def test_no_output_noise_zeroes_only_the_output_laplace():
    params = OPSampParams(1.0, 1e-5)
    real = OPSamp(params).draw_noise(np.random.default_rng(2), 4, 1)
    mine = OPSampNoOutputNoise(params).draw_noise(np.random.default_rng(2), 4, 1)
    assert np.any(real.output_laplace.value != 0)
    assert not np.any(mine.output_laplace.value)
    np.testing.assert_array_equal(mine.sigmas.value, real.sigmas.value)  # same draws


def test_no_clipping_keeps_every_gradient_whole():
    norms = np.array([0.0, 0.5, 1.0, 10.0])
    np.testing.assert_array_equal(DPSGDSampler.clip_factors(norms, 1.0), [1.0, 1.0, 1.0, 0.1])
    np.testing.assert_array_equal(DPSGDNoClipping.clip_factors(norms, 1.0), np.ones(4))
    params = DPSGDParams(1.0, 1e-5, clip_norm=1.0, batch_size=2, learning_rate=1.0, steps=1)
    assert isinstance(DPSGDNoClipping(params), DPSGDSampler)  # the rest is the real sampler


def test_without_half_is_expmech_at_twice_epsilon_and_calibrations_are_replaced_only():
    params = ExpMechParams(0.7)
    assert expmech_without_half(params).params == dataclasses.replace(params, epsilon=1.4)
    opdisc = OPDiscParams(1.0, 1e-5, B=1.0)
    paper = with_calibration(opdisc, "paper")
    assert paper.calibration == "paper" and opdisc.calibration == "proven"
    assert dataclasses.replace(paper, calibration="proven") == opdisc
