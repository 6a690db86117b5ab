"""The noise calibrations (``mechanisms.calibration``) against SPEC's formulas.

* The papers' constants (a ``calibration: paper`` release), with figures worked out by hand.
* The proven calibrations of SPEC section 10: reference tables (10.1 OPDisc, 10.2 Gaussian RSPM,
  10.3 OPSamp, each to 1%), monotonicity, and Monte Carlo checks of the delta integrals with
  fixed seeds and a 5-standard-error band (a false failure rate of about 6e-7 per check under
  the normal approximation of the sample mean).
* The whole input space (issue 18, part 3; ``input_space.py``): only TypeError / ValueError
  naming an argument (or the result that left the float range); finite and > 0 results where
  defined (a proven epsilon may be 0.0: (0, delta) proven); monotone where SPEC says so
  (sections 3 to 6 and 10); a proven sigma is the safe root at any delta down to the smallest
  positive float. Then one test per input the issue lists, each of which the code before it
  failed. Deterministic (hypothesis derandomized); the root searches get few examples, the
  closed forms many.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, optimize, special

from core.validation import MAX_EXACT_INT
from mechanisms import calibration as cal
from mechanisms.calibration import (
    half_normal_sum,
    opdisc_delta,
    opdisc_epsilon,
    opdisc_sigma,
    opdisc_sigma_paper,
    opsamp_lambda,
    rspm_gaussian_delta,
    rspm_gaussian_epsilon,
    rspm_gaussian_sigma,
    rspm_gaussian_sigma_paper,
    rspm_laplace_scale,
)
from mechanisms.opdisc import opdisc_domain
from mechanisms.opsamp import OPSamp, OPSampParams, opsamp_calibration, surrogate_scale
from tests.mechanisms.input_space import (
    ANY_INT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    N_ADULT,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
    log_uniform,
    names_pattern,
)

D_ADULT = 23
D_RADIUS = math.sqrt(23)
#: The root searches' promise: sigma within a few ROOT_RTOL above the exact root.
SLACK = 4 * cal.ROOT_RTOL


def test_opdisc_sigma_on_adult_is_about_708():
    # SPEC section 3: 7 * G * D^2 * sqrt(ln(1/delta)) / (tau * eps), G = 1, D^2 = 23, ln(n^2)
    sigma = opdisc_sigma_paper(1.0, DELTA_ADULT, 1.0, math.sqrt(23))
    assert sigma == pytest.approx(707.6777, abs=1e-3)
    assert opdisc_sigma_paper(0.1, DELTA_ADULT, 1.0, math.sqrt(23)) == pytest.approx(
        7076.777, abs=1e-2
    )


def test_opdisc_paper_domain():
    domain, D = opdisc_domain(23)
    assert (domain.bound, domain.step, domain.norm_sq_max) == (4, 1.0, pytest.approx(23.0))
    assert D == pytest.approx(math.sqrt(23))


@given(
    eps=st.floats(0.01, 10),
    delta=st.floats(1e-12, 0.5),
    tau=st.floats(0.1, 2),
    D=st.floats(0.5, 10),
)
def test_opdisc_sigma_scaling(eps, delta, tau, D):
    sigma = opdisc_sigma_paper(eps, delta, tau, D)
    assert opdisc_sigma_paper(2 * eps, delta, tau, D) == pytest.approx(sigma / 2)
    assert opdisc_sigma_paper(eps, delta, tau, 2 * D) == pytest.approx(4 * sigma)
    assert opdisc_sigma_paper(eps, delta, 2 * tau, D) == pytest.approx(sigma / 4)  # G = 1/tau too


def test_rspm_calibration_on_adult():
    m = 2 * D_ADULT  # SPEC section 4: m = |U| = 2d
    assert rspm_gaussian_sigma_paper(1.0, DELTA_ADULT, m) == pytest.approx(208.6828, abs=1e-3)
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
    assert cal.gamma_raw == pytest.approx(gamma_raw, rel=1e-6)
    assert cal.gamma == pytest.approx(gamma, rel=1e-6)
    assert cal.m == m
    assert cal.eta == pytest.approx(eta, rel=1e-5)
    assert cal.lambda_ == pytest.approx(lam, rel=1e-6)


def test_opsamp_m_uses_ln_4d_over_delta():
    # gamma = 1, d = 10, delta = 30 e^-18: ln(4d/delta) = 18 + ln(4/3) gives m = ceil(9.14) = 10,
    # whereas Algorithm 2's ln(2d/delta) = 18 - ln(1.5) would give ceil(8.80) = 9
    delta = 30 * math.exp(-18)
    cal = opsamp_calibration(1.0, delta, 10, 10, G=1.0, beta=0.05, alpha=0.0, D_inf=2.0)
    assert cal.gamma == 1.0
    assert cal.m == 10


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_epsilon_is_a_value_error(bad):
    with pytest.raises(ValueError, match="epsilon must be"):
        opdisc_sigma_paper(bad, 1e-6, 1.0, 1.0)


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_bad_delta_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        rspm_gaussian_sigma_paper(1.0, bad, 4)


def test_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="epsilon must be a real number, found '1'"):
        opdisc_sigma_paper("1", 1e-6, 1.0, 1.0)


# --- OPDisc, SPEC 10.1 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, sigma, paper, eps_paper",
    [
        (0.1, 7712, 7077, 0.109),
        (0.3, 2628, 2359, 0.335),
        (0.5, 1593, 1415, 0.564),
        (1.0, 809, 708, 1.146),
    ],
)
def test_opdisc_table_of_spec_10_1(eps, sigma, paper, eps_paper):
    proven = opdisc_sigma(eps, DELTA_ADULT, d=D_ADULT, D=D_RADIUS)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert opdisc_delta(eps, proven, d=D_ADULT, D=D_RADIUS) <= DELTA_ADULT
    assert opdisc_delta(eps, proven * 0.999, d=D_ADULT, D=D_RADIUS) > DELTA_ADULT  # smallest
    sigma_paper = opdisc_sigma_paper(eps, DELTA_ADULT, 1.0, D_RADIUS)
    assert sigma_paper == pytest.approx(paper, rel=0.01)
    assert opdisc_epsilon(sigma_paper, DELTA_ADULT, d=D_ADULT, D=D_RADIUS) == pytest.approx(
        eps_paper, rel=0.01
    )


def test_opdisc_paper_sigma_proves_only_delta_2_9e_6_at_epsilon_1():
    # SPEC 10.1 / issue 10: the paper's sigma at epsilon = 1 proves (1, 2.9e-6), not (1, 4.1e-9)
    sigma_paper = opdisc_sigma_paper(1.0, DELTA_ADULT, 1.0, D_RADIUS)
    assert opdisc_delta(1.0, sigma_paper, d=D_ADULT, D=D_RADIUS) == pytest.approx(2.9e-6, rel=0.05)


def test_opdisc_proven_sigma_is_monotone():
    base = dict(d=10, D=math.sqrt(10))
    s = opdisc_sigma(0.5, 1e-6, **base)
    assert opdisc_sigma(1.0, 1e-6, **base) < s  # more epsilon, less noise
    assert opdisc_sigma(0.5, 1e-4, **base) < s  # more delta, less noise
    assert opdisc_sigma(0.5, 1e-6, d=40, D=math.sqrt(10)) > s  # larger d: ||eta|| grows
    sigmas = [opdisc_sigma(0.5, 1e-6, d=d, D=math.sqrt(10)) for d in (2, 5, 23, 100, 400)]
    assert sigmas == sorted(sigmas)


def test_opdisc_paper_sigma_falls_further_short_as_d_grows():
    # sigma_paper has no factor for d (SPEC 10.1): the epsilon it proves grows with d
    proven = [
        opdisc_epsilon(opdisc_sigma_paper(1.0, 1e-6, 1.0, 3.0), 1e-6, d=d, D=3.0)
        for d in (5, 23, 100, 400)
    ]
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


@pytest.mark.parametrize(
    "eps, sigma, paper", [(0.1, 1146, 2087), (0.3, 390, 696), (0.5, 236, 417), (1.0, 119.6, 209)]
)
def test_rspm_table_of_spec_10_2(eps, sigma, paper):
    m = 2 * D_ADULT
    proven = rspm_gaussian_sigma(eps, DELTA_ADULT, m)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert rspm_gaussian_delta(eps, proven, m=m) <= DELTA_ADULT
    assert rspm_gaussian_sigma_paper(eps, DELTA_ADULT, m) == pytest.approx(paper, rel=0.01)
    # at m = 46 the paper's sigma is more than enough: it proves a smaller epsilon
    assert (
        rspm_gaussian_epsilon(rspm_gaussian_sigma_paper(eps, DELTA_ADULT, m), DELTA_ADULT, m=m)
        < eps
    )


def test_rspm_paper_constant_is_not_enough_beyond_m_250():
    # SPEC 10.2: at epsilon = 1, m = 400 needs 761 where the paper gives 615
    assert rspm_gaussian_sigma(1.0, DELTA_ADULT, 400) == pytest.approx(761, rel=0.01)
    assert rspm_gaussian_sigma_paper(1.0, DELTA_ADULT, 400) == pytest.approx(615, rel=0.01)
    assert rspm_gaussian_epsilon(615.37, DELTA_ADULT, m=400) > 1.0
    assert rspm_gaussian_sigma(1.0, DELTA_ADULT, 200) < rspm_gaussian_sigma_paper(
        1.0, DELTA_ADULT, 200
    )


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


def test_opsamp_lambda_terms_are_monotone_in_gamma():
    lams = [
        opsamp_lambda(23, gamma=g, eta=1e-3, G=0.05, D_inf=2.0, alpha=1e-4).total
        for g in (0.01, 0.1, 0.5, 1.0)
    ]
    assert lams == sorted(lams)


# --- only typed errors; finite and positive where defined --------------------------------------


OPDISC_NAMES = names_pattern("epsilon", "delta", "d", "D", "tau", "sigma", "c")


@derandomized(150)
@given(
    epsilon=either(EPSILON),
    delta=either(DELTA),
    d=either(st.integers(1, 10**6), ANY_INT),
    D=either(log_uniform(1e-3, 1e3)),
    tau=either(log_uniform(1e-2, 10)),
)
def test_opdisc_sigma_over_its_input_space(epsilon, delta, d, D, tau):
    sigma = call_or_none(OPDISC_NAMES, cal.opdisc_sigma, epsilon, delta, d=d, D=D, tau=tau)
    if sigma is not None:
        assert_finite_positive(sigma)
        # the safe root: proven at sigma, not at sigma (1 - 1e-6) (in logs: any delta)
        assert cal.opdisc_delta(epsilon, sigma, d=d, D=D, tau=tau) <= delta
        assert cal.opdisc_log_delta(epsilon, sigma, d=d, D=D, tau=tau) <= math.log(delta)
        below = cal.opdisc_log_delta(epsilon, sigma * (1 - 1e-6), d=d, D=D, tau=tau)
        assert below > math.log(delta)
    paper = call_or_none(OPDISC_NAMES, cal.opdisc_sigma_paper, epsilon, delta, tau, D)
    if paper is not None:
        assert_finite_positive(paper)


@derandomized(60)
@given(
    sigma=either(log_uniform(1e-3, 1e6)),
    delta=either(DELTA),
    d=either(st.integers(1, 1000), ANY_INT),
    D=either(log_uniform(0.1, 10)),
    epsilon=either(st.floats(0, 50)),
)
def test_opdisc_epsilon_and_delta_over_their_input_space(sigma, delta, d, D, epsilon):
    eps = call_or_none(OPDISC_NAMES, cal.opdisc_epsilon, sigma, delta, d=d, D=D)
    if eps is not None:
        assert_finite_positive(eps, zero_ok=True)
        assert cal.opdisc_delta(eps, sigma, d=d, D=D) <= delta
    value = call_or_none(OPDISC_NAMES, cal.opdisc_delta, epsilon, sigma, d=d, D=D)
    if value is not None:
        assert 0.0 <= value <= 1.0


RSPM_NAMES = names_pattern("epsilon", "delta", "m", "sigma", "laplace_scale")


@derandomized(14)
@given(epsilon=either(EPSILON), delta=either(DELTA), m=either(st.integers(1, 8), ANY_INT))
def test_rspm_sigma_over_its_input_space(epsilon, delta, m):
    sigma = call_or_none(RSPM_NAMES, cal.rspm_gaussian_sigma, epsilon, delta, m)
    if sigma is not None:
        assert_finite_positive(sigma)
        assert cal.rspm_gaussian_delta(epsilon, sigma, m=m) <= delta
        below = cal.rspm_gaussian_log_delta(epsilon, sigma * (1 - 1e-6), m=m)
        assert below > math.log(delta)


@derandomized(100)
@given(epsilon=either(EPSILON), delta=either(DELTA), m=either(st.integers(1, 10**6), ANY_INT))
def test_rspm_closed_forms_over_their_input_space(epsilon, delta, m):
    for value in (
        call_or_none(RSPM_NAMES, cal.rspm_gaussian_sigma_paper, epsilon, delta, m),
        call_or_none(RSPM_NAMES, cal.rspm_laplace_scale, epsilon, m),
    ):
        if value is not None:
            assert_finite_positive(value)


@derandomized(14)
@given(
    sigma=either(log_uniform(1e-2, 1e5)),
    delta=either(DELTA),
    m=either(st.integers(1, 8), ANY_INT),
    epsilon=either(st.floats(0, 20)),
)
def test_rspm_epsilon_and_delta_over_their_input_space(sigma, delta, m, epsilon):
    eps = call_or_none(RSPM_NAMES, cal.rspm_gaussian_epsilon, sigma, delta, m=m)
    if eps is not None:
        assert_finite_positive(eps, zero_ok=True)
        assert cal.rspm_gaussian_delta(eps, sigma, m=m) <= delta
    value = call_or_none(RSPM_NAMES, cal.rspm_gaussian_delta, epsilon, sigma, m=m)
    if value is not None:
        assert 0.0 <= value <= 1.0


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
        OPSAMP_NAMES, cal.opsamp_gamma_m, epsilon, delta, n, d, D_inf, gamma=gamma, m=m
    )
    if out is not None:
        gamma_raw, used_gamma, calls = out
        assert_finite_positive(gamma_raw)
        assert 0 < used_gamma <= 1  # Lemma 9 (SPEC section 5), whether gamma or m was given
        assert isinstance(calls, int) and 1 <= calls <= MAX_EXACT_INT
    eta = call_or_none(OPSAMP_NAMES, cal.opsamp_eta, epsilon, n, d, G=G, beta=beta, D_inf=D_inf)
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


# --- monotone where SPEC says so -----------------------------------------------------------------


MODERATE_EPS = log_uniform(0.01, 10)


MODERATE_DELTA = log_uniform(1e-300, 0.1)


FACTOR = st.floats(1.01, 100)


@derandomized(40)
@given(
    epsilon=MODERATE_EPS,
    delta=MODERATE_DELTA,
    d=st.integers(1, 500),
    D=log_uniform(0.5, 5),
    tau=log_uniform(0.25, 2),
    f=FACTOR,
    extra=st.integers(1, 50),
)
def test_opdisc_sigma_is_monotone(epsilon, delta, d, D, tau, f, extra):
    # SPEC 10.1: more epsilon or more delta, less noise; larger d, ||eta|| grows: more noise
    sigma = cal.opdisc_sigma(epsilon, delta, d=d, D=D, tau=tau)
    assert cal.opdisc_sigma(epsilon * f, delta, d=d, D=D, tau=tau) <= sigma * (1 + SLACK)
    assert cal.opdisc_sigma(epsilon, min(delta * f, 0.5), d=d, D=D, tau=tau) <= sigma * (1 + SLACK)
    assert cal.opdisc_sigma(epsilon, delta, d=d + extra, D=D, tau=tau) >= sigma * (1 - SLACK)
    # c = 4 D^2 / tau^2 scales sigma exactly (the loss depends on c / sigma only)
    assert cal.opdisc_sigma(epsilon, delta, d=d, D=D * f, tau=tau) == pytest.approx(
        sigma * f * f, rel=2 * SLACK
    )
    # and the epsilon a sigma proves falls as sigma grows
    eps_here = cal.opdisc_epsilon(sigma, delta, d=d, D=D, tau=tau)
    assert eps_here <= epsilon * (1 + SLACK) + 1e-300
    assert cal.opdisc_epsilon(sigma * f, delta, d=d, D=D, tau=tau) <= eps_here


@derandomized(60)
@given(
    epsilon=MODERATE_EPS,
    sigma=log_uniform(1.0, 1e5),
    d=st.integers(1, 200),
    D=log_uniform(0.5, 5),
    f=FACTOR,
)
def test_opdisc_delta_is_monotone(epsilon, sigma, d, D, f):
    value = cal.opdisc_log_delta(epsilon, sigma, d=d, D=D)
    assert cal.opdisc_log_delta(epsilon * f, sigma, d=d, D=D) <= value + 1e-9
    assert cal.opdisc_log_delta(epsilon, sigma * f, d=d, D=D) <= value + 1e-9


@derandomized(6)
@given(
    epsilon=log_uniform(0.1, 3),
    delta=log_uniform(1e-300, 1e-3),
    m=st.integers(1, 6),
    f=st.floats(1.2, 4),
)
def test_rspm_sigma_is_monotone(epsilon, delta, m, f):
    # SPEC 10.2: decreasing in epsilon and delta, increasing in m (S is a sum of m terms)
    sigma = cal.rspm_gaussian_sigma(epsilon, delta, m)
    assert cal.rspm_gaussian_sigma(epsilon * f, delta, m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(epsilon, delta * f, m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(epsilon, delta, m + 1) >= sigma * (1 - SLACK)
    eps_here = cal.rspm_gaussian_epsilon(sigma * f, delta, m=m)
    assert eps_here <= epsilon


@derandomized(200)
@given(
    epsilon=EPSILON,
    delta=DELTA,
    m=st.integers(1, 10**6),
    D=log_uniform(0.1, 10),
    tau=log_uniform(0.1, 10),
    f=FACTOR,
)
def test_the_papers_closed_forms_are_monotone(epsilon, delta, m, D, tau, f):
    # SPEC sections 3 and 4: sigma_paper ~ D^2 sqrt(ln(1/delta)) / (tau^2 epsilon) and
    # sqrt(m ln(1/delta)) / epsilon; the Laplace scale 2m / epsilon
    names = names_pattern("sigma_paper", "epsilon", "laplace_scale")
    for sigma_of in (
        lambda e, dl: cal.opdisc_sigma_paper(e, dl, tau, D),
        lambda e, dl: cal.rspm_gaussian_sigma_paper(e, dl, m),
    ):
        base = call_or_none(names, sigma_of, epsilon, delta)
        if base is None:
            continue
        larger_eps = call_or_none(names, sigma_of, epsilon * f, delta)
        assert larger_eps is None or larger_eps < base
        assert sigma_of(epsilon, delta ** (1 / f)) <= base  # a larger delta
    paper = call_or_none(names, cal.opdisc_sigma_paper, epsilon, delta, tau, D)
    if paper is not None and paper * f * f < 1e300:
        assert cal.opdisc_sigma_paper(epsilon, delta, tau, D * f) > paper
        assert cal.opdisc_sigma_paper(epsilon, delta, tau * f, D) < paper
    scale = call_or_none(names, cal.rspm_laplace_scale, epsilon, m)
    if scale is not None:
        assert cal.rspm_laplace_scale(epsilon, m + 1) > scale


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
    _, _, m = cal.opsamp_gamma_m(epsilon, delta, n, d, D_inf, gamma=gamma)
    assert cal.opsamp_gamma_m(epsilon, delta, n, d, D_inf, gamma=gamma / f)[2] >= m
    assert cal.opsamp_gamma_m(epsilon, delta, n, d + 1, D_inf, gamma=gamma)[2] >= m
    assert cal.opsamp_gamma_m(epsilon, delta / f, n, d, D_inf, gamma=gamma)[2] >= m
    _, by_m, _ = cal.opsamp_gamma_m(epsilon, delta, n, d, D_inf, m=m)
    assert by_m <= gamma * (1 + 1e-12)
    assert cal.opsamp_gamma_m(epsilon, delta, n, d, D_inf, m=m + 1)[1] < by_m
    # eta grows with epsilon, falls with n and G; lambda grows with gamma, eta and alpha
    eta = cal.opsamp_eta(epsilon, n, d, G=G, beta=beta, D_inf=D_inf)
    assert cal.opsamp_eta(epsilon * f, n, d, G=G, beta=beta, D_inf=D_inf) > eta
    assert cal.opsamp_eta(epsilon, n + 1, d, G=G, beta=beta, D_inf=D_inf) < eta
    assert cal.opsamp_eta(epsilon, n, d, G=G * f, beta=beta, D_inf=D_inf) < eta

    def lam(**kw):
        args = dict(gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha) | kw
        return cal.opsamp_lambda(d, **args).total

    base = lam()
    assert lam(gamma=gamma / f) < base and lam(eta=eta * f) > base
    assert lam(alpha=alpha + 0.5) > base
    # the epsilon a Laplace scale proves falls as the scale grows (SPEC 10.3)
    assert cal.opsamp_epsilon(base / epsilon * f, base) < cal.opsamp_epsilon(base / epsilon, base)


# --- the safe root at any delta (issue 18: 1e-300 gave the bracket's end) ----------------------


@pytest.mark.parametrize("delta", [1e-300, 1e-200, 1e-100, 1e-10])
def test_opdisc_sigma_is_the_safe_root_at_tiny_delta(delta):
    kw = dict(d=23, D=math.sqrt(23))
    sigma = cal.opdisc_sigma(1.0, delta, **kw)
    assert cal.opdisc_delta(1.0, sigma, **kw) <= delta
    assert cal.opdisc_delta(1.0, sigma * (1 - 1e-6), **kw) > delta  # the root, not a bracket end


@pytest.mark.parametrize("delta", [1e-300, 1e-200, 1e-100, 1e-10])
def test_rspm_sigma_is_the_safe_root_at_tiny_delta(delta):
    sigma = cal.rspm_gaussian_sigma(1.0, delta, 10)
    assert cal.rspm_gaussian_delta(1.0, sigma, m=10) <= delta
    assert cal.rspm_gaussian_delta(1.0, sigma * (1 - 1e-6), m=10) > delta


@pytest.mark.parametrize("delta", [1e-10, 1e-30, 1e-100, 1e-200, 1e-300])
def test_proven_sigma_is_no_more_than_a_tail_bound_needs(delta):
    # An independent check that the root is not a bracket's end or a noise floor's: a cruder
    # upper bound on delta, delta <= P(loss > epsilon), already proves some sigma; the smallest
    # sigma cannot be larger. OPDisc (SPEC 10.1): R is 1-Lipschitz in a standard normal vector
    # with E R <= sqrt(k), so P(R > sqrt(k) + t) <= exp(-t^2 / 2).
    d, D, eps = 23, math.sqrt(23), 1.0
    c = 4 * D * D
    r = math.sqrt(d + 1) + math.sqrt(-2 * math.log(delta))  # the loss a r + a^2/2 = eps there
    a = -r + math.sqrt(r * r + 2 * eps)
    assert cal.opdisc_sigma(eps, delta, d=d, D=D) <= c / a
    # RSPM (SPEC 10.2): the lattice S is at most S + m h, and P(S > t) <= (2 Phi(u))^m
    # e^(m u^2 / 2 - u t) at u = t / m (Chernoff with E e^(u |Z|) = 2 Phi(u) e^(u^2 / 2))
    m = 10
    h = cal.half_normal_sum(m).step

    def log_tail(sigma: float) -> float:
        t = eps * sigma / 2 - m / sigma - m * h
        return m * (math.log(2) + special.log_ndtr(t / m)) - t * t / (2 * m)

    bound = optimize.brentq(lambda s: log_tail(s) - math.log(delta), 2 * m, 1e6)
    assert cal.rspm_gaussian_sigma(eps, delta, m) <= bound * (1 + 1e-9)


def test_the_smallest_positive_delta_is_met_too():
    tiny = 5e-324
    sigma = cal.opdisc_sigma(1.0, tiny, d=23, D=math.sqrt(23))
    assert cal.opdisc_delta(1.0, sigma, d=23, D=math.sqrt(23)) <= tiny
    assert cal.opdisc_log_delta(1.0, sigma * (1 - 1e-6), d=23, D=math.sqrt(23)) > math.log(tiny)
    sigma = cal.rspm_gaussian_sigma(1.0, tiny, 3)
    assert cal.rspm_gaussian_delta(1.0, sigma, m=3) <= tiny
    assert cal.rspm_gaussian_log_delta(1.0, sigma * (1 - 1e-6), m=3) > math.log(tiny)


def test_rspm_tail_is_an_upper_bound_on_the_exact_integral_for_one_term():
    # m = 1: S = |Z|, so delta = int_{s0}^inf (1 - e^(-b (z - s0))) 2 phi(z) dz exactly; the
    # lattice rounds |Z| up by at most h, so its delta lies between the exact one at s0 and at
    # s0 - h. Deep in the tail: (1 - e^(-b u)) ~ b u, and the integral is the normal's tail.
    sigma, eps = 60.0, 1.0
    b, s0 = 2 / sigma, eps * sigma / 2 - 1 / sigma

    def exact_log(shift: float) -> float:
        start = s0 - shift
        log_norm = special.log_ndtr(-start) + math.log(2)
        density = lambda u: math.exp(-0.5 * u * (2 * start + u)) / math.sqrt(2 * math.pi)  # noqa
        inner, _ = integrate.quad(
            lambda u: -math.expm1(-b * (u + shift)) * density(u),
            0,
            40 / start,
            epsabs=0,
            epsrel=1e-12,
        )
        return log_norm - special.log_ndtr(-start) - 0.5 * start * start + math.log(inner)

    ours = cal.rspm_gaussian_log_delta(eps, sigma, m=1)
    h = cal.half_normal_sum(1).step
    assert ours < -400  # far below what the FFT could see
    assert exact_log(0.0) <= ours <= exact_log(h) + 1e-9


# --- each input the issue lists, one by one ---------------------------------------------------


D23 = math.sqrt(23)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d=2.5), TypeError, "d must be an integer, found 2.5"),
        (dict(d=True), TypeError, "d must be an integer, found True"),
        (dict(d=0), ValueError, "d must be >= 1, found 0"),
        (dict(D=-D23), ValueError, "D must be finite and > 0"),
        (dict(tau=-1.0), ValueError, "tau must be finite and > 0, found -1.0"),
        (dict(D=0.0), ValueError, "D must be finite and > 0, found 0.0"),
        (dict(tau=0.0), ValueError, "tau must be finite and > 0, found 0.0"),
        (dict(D=math.inf), ValueError, "D must be finite and > 0, found inf"),
        (dict(D=math.nan), ValueError, "D must be finite and > 0, found nan"),
        (dict(tau=math.nan), ValueError, "tau must be finite and > 0, found nan"),
        (dict(D=1e200), ValueError, r"c = 4 D\^2 / tau\^2 is not a finite float > 0 for D=1e\+200"),
    ],
)
def test_opdisc_sigma_refuses_each_bad_shape(kwargs, error, match):
    args = dict(d=23, D=D23, tau=1.0) | kwargs
    with pytest.raises(error, match=match):
        cal.opdisc_sigma(1.0, 1e-6, **args)
    with pytest.raises(error, match=match):
        cal.opdisc_epsilon(700.0, 1e-6, **args)  # d = 0 returned 0.0194
    with pytest.raises(error, match=match):
        cal.opdisc_delta(1.0, 700.0, **args)


@pytest.mark.parametrize("tau, D", [(math.inf, D23), (1.0, math.inf), (1e-300, D23)])
def test_opdisc_sigma_paper_refuses_what_would_give_zero_or_inf(tau, D):
    with pytest.raises(ValueError, match="(tau|D|sigma_paper)"):
        cal.opdisc_sigma_paper(1.0, 1e-6, tau, D)  # tau = inf returned sigma = 0.0


def test_rspm_refuses_a_non_integral_m():
    for call in (
        lambda: cal.rspm_gaussian_delta(1.0, 10.0, m=2.5),  # used m = 2
        lambda: cal.rspm_gaussian_sigma(1.0, 1e-6, 2.5),
        lambda: cal.rspm_gaussian_epsilon(10.0, 1e-6, m=2.5),
        lambda: cal.rspm_laplace_scale(1.0, 2.5),
    ):
        with pytest.raises(TypeError, match="m must be an integer, found 2.5"):
            call()
    with pytest.raises(TypeError, match="m must be an integer, found True"):
        cal.rspm_gaussian_sigma_paper(1.0, 1e-6, True)


def test_opsamp_lambda_and_eta_refuse_bad_values():
    base = dict(gamma=0.5, eta=1e-3, G=1.0, D_inf=2.0, alpha=1e-4)
    with pytest.raises(ValueError, match="alpha must be finite and >= 0, found -5"):
        cal.opsamp_lambda(3, **base | dict(alpha=-5))  # returned a negative term
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], found 1.5"):
        cal.opsamp_lambda(3, **base | dict(gamma=1.5))
    eta = dict(G=1.0, beta=0.05, D_inf=2.0)
    with pytest.raises(ValueError, match="n must be >= 1, found 0"):
        cal.opsamp_eta(1.0, 0, 3, **eta)  # ZeroDivisionError
    with pytest.raises(ValueError, match="G must be finite and > 0, found 0.0"):
        cal.opsamp_eta(1.0, 10, 3, **eta | dict(G=0.0))  # ZeroDivisionError
    with pytest.raises(ValueError, match=r"beta must be in \(0, 1\), found 1.0"):
        cal.opsamp_eta(1.0, 10, 3, **eta | dict(beta=1.0))
