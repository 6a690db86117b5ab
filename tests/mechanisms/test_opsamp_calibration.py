"""OPSamp's calibration (``mechanisms.opsamp_calibration``) against SPEC sections 5 and 10.3.

* The paper's calibration on Adult (a ``calibration: paper`` release), with figures worked out
  by hand; the number of oracle calls from ln(4d / delta).
* The whole input space (``input_space.py``): only TypeError / ValueError naming an argument;
  finite and > 0 results where defined; monotone where SPEC says so. Then one test per bad input
  that the code once accepted. Deterministic (hypothesis derandomized).
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.validation import MAX_EXACT_INT
from mechanisms import opsamp_calibration as cal
from mechanisms.opsamp import OPSamp, OPSampParams, opsamp_calibration, surrogate_scale
from mechanisms.opsamp_calibration import opsamp_lambda
from mechanisms.privacy import ApproximateTarget, PrivacyTarget
from tests.mechanisms.input_space import (
    ANY_INT,
    D_ADULT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    FACTOR,
    MODERATE_DELTA,
    MODERATE_EPS,
    N_ADULT,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
    log_uniform,
    names_pattern,
)


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
    assert cal.gamma_raw == pytest.approx(gamma_raw, rel=1e-6)
    assert cal.gamma == pytest.approx(gamma, rel=1e-6)
    assert cal.m == m
    assert cal.eta == pytest.approx(eta, rel=1e-5)
    assert cal.lambda_ == pytest.approx(lam, rel=1e-6)


def test_opsamp_m_uses_ln_4d_over_delta():
    # gamma = 1, d = 10, delta = 30 e^-18: ln(4d/delta) = 18 + ln(4/3) gives m = ceil(9.14) = 10,
    # whereas Algorithm 2's ln(2d/delta) = 18 - ln(1.5) would give ceil(8.80) = 9
    delta = 30 * math.exp(-18)
    cal = opsamp_calibration(
        ApproximateTarget(1.0, delta), 10, 10, G=1.0, beta=0.05, alpha=0.0, D_inf=2.0
    )
    assert cal.gamma == 1.0
    assert cal.m == 10


def test_opsamp_lambda_terms_are_monotone_in_gamma():
    lams = [
        opsamp_lambda(23, gamma=g, eta=1e-3, G=0.05, D_inf=2.0, alpha=1e-4).total
        for g in (0.01, 0.1, 0.5, 1.0)
    ]
    assert lams == sorted(lams)


# --- only typed errors; finite and positive where defined ------------------------------------


OPSAMP_NAMES = names_pattern(
    "epsilon",
    "delta",
    "n",
    "d",
    "D_inf",
    "gamma",
    "m",
    "G",
    "beta",
    "eta",
    "alpha",
    "laplace_scale",
    "proven_lambda",
    "calibration",
    "lambda",
)


@derandomized(300)
@given(
    epsilon=either(EPSILON),
    delta=either(DELTA),
    n=either(st.integers(1, 10**7), ANY_INT),
    d=either(st.integers(1, 10**4), ANY_INT),
    D_inf=either(log_uniform(1e-2, 1e2)),
    gamma=st.one_of(st.none(), either(st.floats(1e-3, 1.0))),
    m=st.one_of(st.none(), either(st.integers(1, 10**6), ANY_INT)),
    G=either(log_uniform(1e-3, 10)),
    beta=either(st.floats(1e-3, 0.999)),
    alpha=either(st.floats(0, 1)),
)
def test_opsamp_functions_over_their_input_space(
    epsilon, delta, n, d, D_inf, gamma, m, G, beta, alpha
):
    out = call_or_none(
        OPSAMP_NAMES,
        lambda: cal.opsamp_gamma_m(
            ApproximateTarget(epsilon, delta), n, d, D_inf, gamma=gamma, m=m
        ),
    )
    if out is not None:
        gamma_raw, used_gamma, calls = out
        assert_finite_positive(gamma_raw)
        assert 0 < used_gamma <= 1  # Lemma 9 (SPEC section 5), whether gamma or m was given
        assert isinstance(calls, int) and 1 <= calls <= MAX_EXACT_INT
    eta = call_or_none(
        OPSAMP_NAMES,
        lambda: cal.opsamp_eta(PrivacyTarget(epsilon), n, d, G=G, beta=beta, D_inf=D_inf),
    )
    if eta is not None:
        assert_finite_positive(eta)
    lam = call_or_none(
        OPSAMP_NAMES,
        cal.opsamp_lambda,
        d,
        gamma=gamma if gamma is not None else 0.5,
        eta=eta if eta is not None else G,
        G=G,
        D_inf=D_inf,
        alpha=alpha,
    )
    if lam is not None:
        assert_finite_positive(lam.sampling)
        assert_finite_positive(lam.stability)
        assert_finite_positive(lam.oracle, zero_ok=True)
        assert_finite_positive(lam.total)
        scale = call_or_none(OPSAMP_NAMES, cal.opsamp_epsilon, epsilon, lam.total)
        if scale is not None:
            assert_finite_positive(scale)


# --- monotone where SPEC says so -------------------------------------------------------------


@derandomized(300)
@given(
    epsilon=MODERATE_EPS,
    delta=MODERATE_DELTA,
    n=st.integers(1, 10**6),
    d=st.integers(1, 1000),
    D_inf=log_uniform(0.1, 10),
    gamma=st.floats(1e-3, 1.0),
    G=log_uniform(1e-3, 10),
    beta=st.floats(0.01, 0.99),
    alpha=st.floats(0, 1),
    f=FACTOR,
)
def test_opsamp_calibration_is_monotone(epsilon, delta, n, d, D_inf, gamma, G, beta, alpha, f):
    # SPEC 5 and 10.3: m = ceil(ln(4d / delta) / (2 gamma^2)) falls as gamma grows and grows with
    # d and 1/delta; a given m gives gamma = sqrt(ln(4d / delta) / (2m)), falling in m
    _, _, m = cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta), n, d, D_inf, gamma=gamma)
    assert (
        cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta), n, d, D_inf, gamma=gamma / f)[2] >= m
    )
    assert (
        cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta), n, d + 1, D_inf, gamma=gamma)[2] >= m
    )
    assert (
        cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta / f), n, d, D_inf, gamma=gamma)[2] >= m
    )
    _, by_m, _ = cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta), n, d, D_inf, m=m)
    assert by_m <= gamma * (1 + 1e-12)
    assert cal.opsamp_gamma_m(ApproximateTarget(epsilon, delta), n, d, D_inf, m=m + 1)[1] < by_m
    # eta grows with epsilon, falls with n and G; lambda grows with gamma, eta and alpha
    eta = cal.opsamp_eta(PrivacyTarget(epsilon), n, d, G=G, beta=beta, D_inf=D_inf)
    assert cal.opsamp_eta(PrivacyTarget(epsilon * f), n, d, G=G, beta=beta, D_inf=D_inf) > eta
    assert cal.opsamp_eta(PrivacyTarget(epsilon), n + 1, d, G=G, beta=beta, D_inf=D_inf) < eta
    assert cal.opsamp_eta(PrivacyTarget(epsilon), n, d, G=G * f, beta=beta, D_inf=D_inf) < eta

    def lam(**kw):
        args = dict(gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha) | kw
        return cal.opsamp_lambda(d, **args).total

    base = lam()
    assert lam(gamma=gamma / f) < base and lam(eta=eta * f) > base
    assert lam(alpha=alpha + 0.5) > base
    # the epsilon a Laplace scale proves falls as the scale grows (SPEC 10.3)
    assert cal.opsamp_epsilon(base / epsilon * f, base) < cal.opsamp_epsilon(base / epsilon, base)


# --- each bad input, one by one --------------------------------------------------------------


def test_opsamp_lambda_and_eta_refuse_bad_values():
    base = dict(gamma=0.5, eta=1e-3, G=1.0, D_inf=2.0, alpha=1e-4)
    with pytest.raises(ValueError, match="alpha must be finite and >= 0, found -5"):
        cal.opsamp_lambda(3, **base | dict(alpha=-5))  # returned a negative term
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], found 1.5"):
        cal.opsamp_lambda(3, **base | dict(gamma=1.5))
    eta = dict(G=1.0, beta=0.05, D_inf=2.0)
    with pytest.raises(ValueError, match="n must be >= 1, found 0"):
        cal.opsamp_eta(PrivacyTarget(1.0), 0, 3, **eta)  # ZeroDivisionError
    with pytest.raises(ValueError, match="G must be finite and > 0, found 0.0"):
        cal.opsamp_eta(PrivacyTarget(1.0), 10, 3, **eta | dict(G=0.0))  # ZeroDivisionError
    with pytest.raises(ValueError, match=r"beta must be in \(0, 1\), found 1.0"):
        cal.opsamp_eta(PrivacyTarget(1.0), 10, 3, **eta | dict(beta=1.0))
