"""The proven calibrations of SPEC section 10: reference tables, monotonicity, Monte Carlo.

Tables: SPEC 10.1 (OPDisc), 10.2 (Gaussian RSPM), 10.3 (OPSamp), each to 1%. Monte Carlo
checks of the delta integrals use fixed seeds and a 5-standard-error band (a false failure
rate of about 6e-7 per check under the normal approximation of the sample mean).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.calibration import (
    half_normal_sum, opdisc_delta, opdisc_epsilon, opdisc_sigma, opdisc_sigma_paper,
    opsamp_gamma_m, opsamp_lambda, rspm_gaussian_delta, rspm_gaussian_epsilon,
    rspm_gaussian_sigma, rspm_gaussian_sigma_paper,
)  # fmt: skip
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.rspm import RSPM, RSPMParams

N_ADULT, D_ADULT = 15_682, 23
DELTA_ADULT = 1 / N_ADULT**2
D_RADIUS = math.sqrt(23)


# --- OPDisc, SPEC 10.1 -------------------------------------------------------------------------


@pytest.mark.parametrize("eps, sigma, paper, eps_paper",
                         [(0.1, 7712, 7077, 0.109), (0.3, 2628, 2359, 0.335),
                          (0.5, 1593, 1415, 0.564), (1.0, 809, 708, 1.146)])  # fmt: skip
def test_opdisc_table_of_spec_10_1(eps, sigma, paper, eps_paper):
    proven = opdisc_sigma(eps, DELTA_ADULT, d=D_ADULT, D=D_RADIUS)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert opdisc_delta(eps, proven, d=D_ADULT, D=D_RADIUS) <= DELTA_ADULT
    assert opdisc_delta(eps, proven * 0.999, d=D_ADULT, D=D_RADIUS) > DELTA_ADULT  # smallest
    sigma_paper = opdisc_sigma_paper(eps, DELTA_ADULT, 1.0, D_RADIUS)
    assert sigma_paper == pytest.approx(paper, rel=0.01)
    assert opdisc_epsilon(sigma_paper, DELTA_ADULT, d=D_ADULT, D=D_RADIUS) == pytest.approx(
        eps_paper, rel=0.01)


def test_opdisc_paper_sigma_proves_only_delta_2_9e_6_at_epsilon_1():
    # SPEC 10.1 / issue 10: the paper's sigma at epsilon = 1 proves (1, 2.9e-6), not (1, 4.1e-9)
    sigma_paper = opdisc_sigma_paper(1.0, DELTA_ADULT, 1.0, D_RADIUS)
    assert opdisc_delta(1.0, sigma_paper, d=D_ADULT, D=D_RADIUS) == pytest.approx(2.9e-6, rel=0.05)


def test_opdisc_proven_sigma_is_monotone():
    base = dict(d=10, D=math.sqrt(10))
    s = opdisc_sigma(0.5, 1e-6, **base)
    assert opdisc_sigma(1.0, 1e-6, **base) < s            # more epsilon, less noise
    assert opdisc_sigma(0.5, 1e-4, **base) < s            # more delta, less noise
    assert opdisc_sigma(0.5, 1e-6, d=40, D=math.sqrt(10)) > s  # larger d: ||eta|| grows
    sigmas = [opdisc_sigma(0.5, 1e-6, d=d, D=math.sqrt(10)) for d in (2, 5, 23, 100, 400)]
    assert sigmas == sorted(sigmas)


def test_opdisc_paper_sigma_falls_further_short_as_d_grows():
    # sigma_paper has no factor for d (SPEC 10.1): the epsilon it proves grows with d
    proven = [opdisc_epsilon(opdisc_sigma_paper(1.0, 1e-6, 1.0, 3.0), 1e-6, d=d, D=3.0)
              for d in (5, 23, 100, 400)]  # fmt: skip
    assert proven == sorted(proven) and proven[-1] > 2.0


@pytest.mark.parametrize("eps, sigma_scale", [(0.5, 0.5), (1.0, 0.7), (0.2, 1.5)])
def test_opdisc_delta_against_monte_carlo(eps, sigma_scale):
    d, D = 5, math.sqrt(5)
    c = 4 * D**2  # SPEC 10.1, tau = 1
    sigma = sigma_scale * c
    exact = opdisc_delta(eps, sigma, d=d, D=D)
    assert exact >= 1e-3  # large enough to estimate
    rng = np.random.default_rng(20261123)
    R = np.linalg.norm(rng.standard_normal((400_000, d + 1)), axis=1)
    vals = np.clip(1 - np.exp(eps - (2 * c * sigma * R + c * c) / (2 * sigma**2)), 0, None)
    se = vals.std(ddof=1) / math.sqrt(len(vals))
    assert abs(vals.mean() - exact) <= 5 * se


# --- Gaussian RSPM, SPEC 10.2 ------------------------------------------------------------------


@pytest.mark.parametrize("eps, sigma, paper", [(0.1, 1146, 2087), (0.3, 390, 696),
                                               (0.5, 236, 417), (1.0, 119.6, 209)])  # fmt: skip
def test_rspm_table_of_spec_10_2(eps, sigma, paper):
    m = 2 * D_ADULT
    proven = rspm_gaussian_sigma(eps, DELTA_ADULT, m)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert rspm_gaussian_delta(eps, proven, m=m) <= DELTA_ADULT
    assert rspm_gaussian_sigma_paper(eps, DELTA_ADULT, m) == pytest.approx(paper, rel=0.01)
    # at m = 46 the paper's sigma is more than enough: it proves a smaller epsilon
    assert rspm_gaussian_epsilon(rspm_gaussian_sigma_paper(eps, DELTA_ADULT, m), DELTA_ADULT,
                                 m=m) < eps  # fmt: skip


def test_rspm_paper_constant_is_not_enough_beyond_m_250():
    # SPEC 10.2: at epsilon = 1, m = 400 needs 761 where the paper gives 615
    assert rspm_gaussian_sigma(1.0, DELTA_ADULT, 400) == pytest.approx(761, rel=0.01)
    assert rspm_gaussian_sigma_paper(1.0, DELTA_ADULT, 400) == pytest.approx(615, rel=0.01)
    assert rspm_gaussian_epsilon(615.37, DELTA_ADULT, m=400) > 1.0
    assert rspm_gaussian_sigma(1.0, DELTA_ADULT, 200) < rspm_gaussian_sigma_paper(
        1.0, DELTA_ADULT, 200)


def test_rspm_proven_sigma_is_monotone():
    s = rspm_gaussian_sigma(0.5, 1e-6, 10)
    assert rspm_gaussian_sigma(1.0, 1e-6, 10) < s
    assert rspm_gaussian_sigma(0.5, 1e-4, 10) < s
    sigmas = [rspm_gaussian_sigma(0.5, 1e-6, m) for m in (2, 4, 10, 46, 100)]
    assert sigmas == sorted(sigmas)


@pytest.mark.parametrize("m", [1, 2, 46, 400])
def test_half_normal_sum_has_unit_mass_and_the_right_mean(m):
    law = half_normal_sum(m)
    assert law.mass == pytest.approx(1.0, abs=1e-9)
    lattice_mean = float(np.dot(law.pmf, np.arange(len(law.pmf)) * law.step))
    exact_mean = m * math.sqrt(2 / math.pi)
    # rounded up by at most one cell per term, never down
    assert exact_mean <= lattice_mean <= exact_mean + m * law.step + 1e-9


@pytest.mark.parametrize("m, eps, sigma", [(4, 0.5, 4.0), (10, 1.0, 6.0), (46, 0.3, 40.0)])
def test_rspm_delta_against_monte_carlo(m, eps, sigma):
    exact = rspm_gaussian_delta(eps, sigma, m=m)
    assert exact >= 1e-3
    rng = np.random.default_rng(7)
    S = np.abs(rng.standard_normal((400_000, m))).sum(axis=1)
    vals = np.clip(1 - np.exp(eps - (4 * sigma * S + 4 * m) / (2 * sigma**2)), 0, None)
    se = vals.std(ddof=1) / math.sqrt(len(vals))
    # the lattice rounds S up, so its delta is an upper bound that is close to exact
    assert vals.mean() - 5 * se <= exact <= vals.mean() + 5 * se + 0.02 * exact


# --- OPSamp, SPEC 10.3 -------------------------------------------------------------------------


@pytest.mark.parametrize("eps, ratio_low, ratio_high", [(0.1, 4.2, 4.4), (1.0, 3.7, 3.9)])
def test_opsamp_paper_calibration_proves_several_times_the_epsilon(eps, ratio_low, ratio_high):
    # SPEC 10.3: on Adult the corrected lambda is about 3.8 to 4.3 times the paper's
    paper = OPSamp(OPSampParams(eps, DELTA_ADULT, calibration="paper")).calibrate(N_ADULT, 23)
    proven = OPSamp(OPSampParams(eps, DELTA_ADULT)).calibrate(N_ADULT, 23)
    assert ratio_low < proven["lambda"] / paper["lambda"] < ratio_high
    assert ratio_low * eps < paper["proven_epsilon"] < ratio_high * eps
    assert proven["proven_epsilon"] == eps
    assert proven["lambda_sampling"] == pytest.approx(2 * 23 * 2 * proven["gamma"])
    assert paper["lambda_sampling"] == pytest.approx(4 * 2 * paper["gamma"])
    assert proven["lambda"] == pytest.approx(proven["lambda_sampling"]
                                             + proven["lambda_stability"]
                                             + proven["lambda_oracle"])  # fmt: skip


def test_opsamp_gamma_buys_lambda_with_calls():
    # SPEC 10.3: near gamma = 0.02 the first term (92 gamma) stops mattering; m ~ 30,000
    _, gamma, m = opsamp_gamma_m(1.0, DELTA_ADULT, N_ADULT, 23, 2.0, gamma=0.02)
    assert gamma == 0.02 and m == pytest.approx(30_000, rel=0.05)
    cal = OPSamp(OPSampParams(1.0, DELTA_ADULT, gamma=0.02)).calibrate(N_ADULT, 23)
    assert cal["lambda_sampling"] == pytest.approx(92 * 0.02)
    assert cal["lambda_stability"] == pytest.approx(21.6, rel=0.01)
    # m given instead of gamma: the smallest gamma m calls support, and back
    by_m = OPSamp(OPSampParams(1.0, DELTA_ADULT, m=cal["m"])).calibrate(N_ADULT, 23)
    assert by_m["m"] == cal["m"] and by_m["gamma"] <= 0.02


def test_opsamp_lambda_terms_are_monotone_in_gamma():
    lams = [opsamp_lambda(23, gamma=g, eta=1e-3, G=0.05, D_inf=2.0, alpha=1e-4).total
            for g in (0.01, 0.1, 0.5, 1.0)]  # fmt: skip
    assert lams == sorted(lams)


@pytest.mark.parametrize("kwargs, match", [
    (dict(gamma=0.0), "gamma must be in"), (dict(gamma=1.5), "gamma must be in"),
    (dict(m=0), "m must be"), (dict(gamma=0.5, m=10), "not both"),
    (dict(calibration="paper_code"), "calibration must be one of"),
])  # fmt: skip
def test_opsamp_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OPSampParams(1.0, 1e-6, **kwargs)


# --- releases record the proven guarantee ------------------------------------------------------


def _tiny():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 3)).astype(float)
    y = np.where(X[:, 0] > 0, 1, -1)
    return X, y


@pytest.mark.parametrize("calibration, factor", [("proven", None), ("paper", 1.0),
                                                 ("paper_code", 0.5)])  # fmt: skip
def test_opdisc_release_records_the_proven_epsilon(calibration, factor):
    from mechanisms.runner import run
    from oracles.registry import make_oracle

    X, y = _tiny()
    mech = OPDisc(OPDiscParams(1.0, 1e-5, calibration=calibration))
    release = run(mech, X, y, make_oracle("enumerate"), np.random.default_rng(1))
    claim = release.privacy
    assert claim.holds and claim.calibration == calibration
    assert (claim.requested_epsilon, claim.requested_delta) == (1.0, 1e-5)
    sigma = release.noise["sigma"]
    if factor is None:
        assert claim.epsilon == 1.0
        assert opdisc_delta(1.0, sigma, d=3, D=math.sqrt(3)) <= 1e-5
    else:
        assert sigma == pytest.approx(factor * opdisc_sigma_paper(1.0, 1e-5, 1.0, math.sqrt(3)))
        assert claim.epsilon == pytest.approx(opdisc_epsilon(sigma, 1e-5, d=3, D=math.sqrt(3)))
        assert opdisc_delta(claim.epsilon, sigma, d=3, D=math.sqrt(3)) <= 1e-5
    params = release.to_params()
    assert params["privacy_epsilon"] == claim.epsilon
    assert params["requested_epsilon"] == 1.0 and params["calibration"] == calibration


def test_paper_code_opdisc_proves_more_than_requested():
    cal = OPDisc(OPDiscParams(1.0, DELTA_ADULT, calibration="paper_code")).calibrate(N_ADULT, 23)
    assert cal["proven_epsilon"] > 2.0  # half of sigma_paper: roughly twice the loss


def test_rspm_paper_release_records_the_proven_epsilon():
    cal = RSPM(RSPMParams(1.0, DELTA_ADULT, calibration="paper")).calibrate(N_ADULT, 23)
    assert cal["proven_epsilon"] == pytest.approx(0.567, rel=0.01)
    lap = RSPM(RSPMParams(1.0, noise="laplace")).calibrate(N_ADULT, 23)
    assert lap["proven_epsilon"] == 1.0 and lap["laplace_scale"] == 92.0
