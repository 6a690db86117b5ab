"""The papers' noise calibrations against SPEC's formulas, with figures worked out by hand.

These are the constants a ``calibration: paper`` release uses; the proven calibrations of SPEC
section 10 are tested in test_calibration_proven.py.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanisms.calibration import opdisc_sigma_paper as opdisc_sigma
from mechanisms.calibration import rspm_gaussian_sigma_paper as rspm_gaussian_sigma
from mechanisms.calibration import rspm_laplace_scale
from mechanisms.opdisc import opdisc_domain
from mechanisms.opsamp import OPSamp, OPSampParams, opsamp_calibration, surrogate_scale

N_ADULT, D_ADULT = 15_682, 23
DELTA_ADULT = 1 / N_ADULT**2


def test_opdisc_sigma_on_adult_is_about_708():
    # SPEC section 3: 7 * G * D^2 * sqrt(ln(1/delta)) / (tau * eps), G = 1, D^2 = 23, ln(n^2)
    sigma = opdisc_sigma(1.0, DELTA_ADULT, 1.0, math.sqrt(23))
    assert sigma == pytest.approx(707.6777, abs=1e-3)
    assert opdisc_sigma(0.1, DELTA_ADULT, 1.0, math.sqrt(23)) == pytest.approx(7076.777, abs=1e-2)


def test_opdisc_paper_domain():
    domain, D = opdisc_domain(23)
    assert (domain.bound, domain.step, domain.norm_sq_max) == (4, 1.0, pytest.approx(23.0))
    assert D == pytest.approx(math.sqrt(23))


@given(eps=st.floats(0.01, 10), delta=st.floats(1e-12, 0.5), tau=st.floats(0.1, 2),
       D=st.floats(0.5, 10))  # fmt: skip
def test_opdisc_sigma_scaling(eps, delta, tau, D):
    sigma = opdisc_sigma(eps, delta, tau, D)
    assert opdisc_sigma(2 * eps, delta, tau, D) == pytest.approx(sigma / 2)
    assert opdisc_sigma(eps, delta, tau, 2 * D) == pytest.approx(4 * sigma)
    assert opdisc_sigma(eps, delta, 2 * tau, D) == pytest.approx(sigma / 4)  # G = 1/tau too


def test_rspm_calibration_on_adult():
    m = 2 * D_ADULT  # SPEC section 4: m = |U| = 2d
    assert rspm_gaussian_sigma(1.0, DELTA_ADULT, m) == pytest.approx(208.6828, abs=1e-3)
    assert rspm_laplace_scale(1.0, m) == 92.0
    assert rspm_laplace_scale(0.5, m) == 184.0


@pytest.mark.parametrize(
    "eps, gamma_raw, gamma, m, eta, lam",
    [
        (1.0, 1.2456787, 1.0, 12, 9.405917e-4, 29.633840),
        (0.1, 0.3939182, 0.3939182, 77, 2.974412e-4, 9.992724),
    ],
)
def test_opsamp_paper_calibration_on_adult(eps, gamma_raw, gamma, m, eta, lam):
    # Box [-1, 1]^23, scaled logistic loss: R = 23, S = log(1 + e^23), G = 1/S; beta = 0.05,
    # alpha = 1e-4 (SPEC section 5); lambda's first term the paper's 4 D_inf gamma
    R, S = surrogate_scale(D_ADULT, -1.0, 1.0, 1.0)
    assert R == 23.0 and S == pytest.approx(23.0, abs=1e-9)
    cal = OPSamp(OPSampParams(eps, DELTA_ADULT, calibration="paper")).calibrate(N_ADULT, D_ADULT)
    assert cal["gamma_raw"] == pytest.approx(gamma_raw, rel=1e-6)
    assert cal["gamma"] == pytest.approx(gamma, rel=1e-6)
    assert cal["m"] == m
    assert cal["eta"] == pytest.approx(eta, rel=1e-5)
    assert cal["lambda"] == pytest.approx(lam, rel=1e-6)


def test_opsamp_m_uses_ln_4d_over_delta():
    # gamma = 1, d = 10, delta = 30 e^-18: ln(4d/delta) = 18 + ln(4/3) gives m = ceil(9.14) = 10,
    # whereas Algorithm 2's ln(2d/delta) = 18 - ln(1.5) would give ceil(8.80) = 9
    delta = 30 * math.exp(-18)
    cal = opsamp_calibration(1.0, delta, 10, 10, G=1.0, beta=0.05, alpha=0.0, D_inf=2.0)
    assert cal["gamma"] == 1.0
    assert cal["m"] == 10


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_epsilon_is_a_value_error(bad):
    with pytest.raises(ValueError, match="epsilon must be"):
        opdisc_sigma(bad, 1e-6, 1.0, 1.0)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_bad_delta_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        rspm_gaussian_sigma(1.0, bad, 4)


def test_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="epsilon must be a real number, found '1'"):
        opdisc_sigma("1", 1e-6, 1.0, 1.0)
