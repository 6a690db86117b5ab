"""RSPM's noise calibrations (``mechanisms.rspm_calibration``) against SPEC's formulas.

* The paper's constant (a ``calibration: paper`` release) and the Laplace scale, with figures
  worked out by hand.
* The proven calibration of SPEC 10.2: its reference table (to 1%), monotonicity, the lattice
  law of S = |Z_1| + ... + |Z_m|, and a Monte Carlo check of the delta integral with a fixed
  seed and a 5-standard-error band (a false failure rate of about 6e-7 per check).
* The whole input space (``input_space.py``): only TypeError / ValueError naming an argument;
  finite and > 0 results where defined; monotone where SPEC says so; a proven sigma is the safe
  root at any delta down to the smallest positive float; an exact integral far in the tail. Then
  one test per bad input that the code once accepted. Deterministic (hypothesis derandomized).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import integrate, optimize, special

from mechanisms import rspm_calibration as cal
from mechanisms.privacy import ApproximateTarget, PrivacyTarget
from mechanisms.rspm_calibration import (
    half_normal_sum,
    rspm_gaussian_delta,
    rspm_gaussian_epsilon,
    rspm_gaussian_sigma,
    rspm_gaussian_sigma_paper,
    rspm_laplace_scale,
)
from tests.mechanisms.input_space import (
    ANY_INT,
    D_ADULT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    FACTOR,
    SLACK,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
    log_uniform,
    names_pattern,
)


def test_rspm_calibration_on_adult():
    m = 2 * D_ADULT  # SPEC section 4: m = |U| = 2d
    assert rspm_gaussian_sigma_paper(ApproximateTarget(1.0, DELTA_ADULT), m) == pytest.approx(
        208.6828, abs=1e-3
    )
    assert rspm_laplace_scale(PrivacyTarget(1.0), m) == 92.0
    assert rspm_laplace_scale(PrivacyTarget(0.5), m) == 184.0


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1])
def test_bad_delta_is_a_value_error(bad):
    with pytest.raises(ValueError, match=r"delta must be in \(0, 1\)"):
        rspm_gaussian_sigma_paper(ApproximateTarget(1.0, bad), 4)


# --- Gaussian RSPM, SPEC 10.2 ----------------------------------------------------------------


@pytest.mark.parametrize(
    "eps, sigma, paper", [(0.1, 1146, 2087), (0.3, 390, 696), (0.5, 236, 417), (1.0, 119.6, 209)]
)
def test_rspm_table_of_spec_10_2(eps, sigma, paper):
    m = 2 * D_ADULT
    proven = rspm_gaussian_sigma(ApproximateTarget(eps, DELTA_ADULT), m)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert rspm_gaussian_delta(eps, proven, m=m) <= DELTA_ADULT
    assert rspm_gaussian_sigma_paper(ApproximateTarget(eps, DELTA_ADULT), m) == pytest.approx(
        paper, rel=0.01
    )
    # at m = 46 the paper's sigma is more than enough: it proves a smaller epsilon
    assert (
        rspm_gaussian_epsilon(
            rspm_gaussian_sigma_paper(ApproximateTarget(eps, DELTA_ADULT), m), DELTA_ADULT, m=m
        )
        < eps
    )


def test_rspm_paper_constant_is_not_enough_beyond_m_250():
    """SPEC 10.2: at epsilon = 1, m = 400 needs 761 where the paper gives 615; at m = 200 the
    paper's sigma is enough. Whether a sigma proves (1, delta) is read off its delta directly
    (delta is decreasing in epsilon and in sigma): the same statement as comparing epsilon(sigma)
    with 1 or sigma with the proven root, without those root searches (each a few lattices of
    4 million cells); test_rspm_table_of_spec_10_2 checks both root searches at m = 46."""
    assert rspm_gaussian_sigma(ApproximateTarget(1.0, DELTA_ADULT), 400) == pytest.approx(
        761, rel=0.01
    )
    assert rspm_gaussian_sigma_paper(ApproximateTarget(1.0, DELTA_ADULT), 400) == pytest.approx(
        615, rel=0.01
    )
    assert rspm_gaussian_delta(1.0, 615.37, m=400) > DELTA_ADULT  # epsilon(615.37) > 1
    paper_200 = rspm_gaussian_sigma_paper(ApproximateTarget(1.0, DELTA_ADULT), 200)
    assert rspm_gaussian_delta(1.0, paper_200, m=200) < DELTA_ADULT  # sigma(200) < paper's


def test_rspm_proven_sigma_is_monotone():
    s = rspm_gaussian_sigma(ApproximateTarget(0.5, 1e-6), 10)
    assert rspm_gaussian_sigma(ApproximateTarget(1.0, 1e-6), 10) < s
    assert rspm_gaussian_sigma(ApproximateTarget(0.5, 1e-4), 10) < s
    sigmas = [rspm_gaussian_sigma(ApproximateTarget(0.5, 1e-6), m) for m in (2, 4, 10, 46, 100)]
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


# --- only typed errors; finite and positive where defined ------------------------------------


RSPM_NAMES = names_pattern("epsilon", "delta", "m", "sigma", "laplace_scale")


@derandomized(14)
@given(epsilon=either(EPSILON), delta=either(DELTA), m=either(st.integers(1, 8), ANY_INT))
def test_rspm_sigma_over_its_input_space(epsilon, delta, m):
    sigma = call_or_none(
        RSPM_NAMES, lambda: cal.rspm_gaussian_sigma(ApproximateTarget(epsilon, delta), m)
    )
    if sigma is not None:
        assert_finite_positive(sigma)
        assert cal.rspm_gaussian_delta(epsilon, sigma, m=m) <= delta
        below = cal.rspm_gaussian_log_delta(epsilon, sigma * (1 - 1e-6), m=m)
        assert below > math.log(delta)


@derandomized(100)
@given(epsilon=either(EPSILON), delta=either(DELTA), m=either(st.integers(1, 10**6), ANY_INT))
def test_rspm_closed_forms_over_their_input_space(epsilon, delta, m):
    for value in (
        call_or_none(
            RSPM_NAMES, lambda: cal.rspm_gaussian_sigma_paper(ApproximateTarget(epsilon, delta), m)
        ),
        call_or_none(RSPM_NAMES, lambda: cal.rspm_laplace_scale(PrivacyTarget(epsilon), m)),
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


# --- monotone where SPEC says so -------------------------------------------------------------


@derandomized(6)
@given(
    epsilon=log_uniform(0.1, 3),
    delta=log_uniform(1e-300, 1e-3),
    m=st.integers(1, 6),
    f=st.floats(1.2, 4),
)
def test_rspm_sigma_is_monotone(epsilon, delta, m, f):
    # SPEC 10.2: decreasing in epsilon and delta, increasing in m (S is a sum of m terms)
    sigma = cal.rspm_gaussian_sigma(ApproximateTarget(epsilon, delta), m)
    assert cal.rspm_gaussian_sigma(ApproximateTarget(epsilon * f, delta), m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(ApproximateTarget(epsilon, delta * f), m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(ApproximateTarget(epsilon, delta), m + 1) >= sigma * (1 - SLACK)
    eps_here = cal.rspm_gaussian_epsilon(sigma * f, delta, m=m)
    assert eps_here <= epsilon


@derandomized(200)
@given(epsilon=EPSILON, delta=DELTA, m=st.integers(1, 10**6), f=FACTOR)
def test_the_papers_closed_forms_are_monotone(epsilon, delta, m, f):
    # SPEC section 4: sigma_paper ~ sqrt(m ln(1/delta)) / epsilon; the Laplace scale 2m / epsilon
    names = names_pattern("sigma_paper", "epsilon", "laplace_scale")
    paper = call_or_none(
        names, lambda: cal.rspm_gaussian_sigma_paper(ApproximateTarget(epsilon, delta), m)
    )
    if paper is not None:
        larger_eps = call_or_none(
            names, lambda: cal.rspm_gaussian_sigma_paper(ApproximateTarget(epsilon * f, delta), m)
        )
        assert larger_eps is None or larger_eps < paper
        assert (
            cal.rspm_gaussian_sigma_paper(ApproximateTarget(epsilon, delta ** (1 / f)), m) <= paper
        )
    scale = call_or_none(names, lambda: cal.rspm_laplace_scale(PrivacyTarget(epsilon), m))
    if scale is not None:
        assert cal.rspm_laplace_scale(PrivacyTarget(epsilon), m + 1) > scale


# --- the safe root at any delta (1e-300 once gave the bracket's end) -------------------------


@pytest.mark.parametrize("delta", [1e-300, 1e-200, 1e-100, 1e-10])
def test_rspm_sigma_is_the_safe_root_at_tiny_delta(delta):
    sigma = cal.rspm_gaussian_sigma(ApproximateTarget(1.0, delta), 10)
    assert cal.rspm_gaussian_delta(1.0, sigma, m=10) <= delta
    assert cal.rspm_gaussian_delta(1.0, sigma * (1 - 1e-6), m=10) > delta


@pytest.mark.parametrize("delta", [1e-10, 1e-30, 1e-100, 1e-200, 1e-300])
def test_proven_sigma_is_no_more_than_a_tail_bound_needs(delta):
    # An independent check that the root is not a bracket's end or a noise floor's: a cruder
    # upper bound on delta, delta <= P(loss > epsilon), already proves some sigma; the smallest
    # sigma cannot be larger. SPEC 10.2: the lattice S is at most S + m h, and P(S > t) <=
    # (2 Phi(u))^m e^(m u^2 / 2 - u t) at u = t / m (Chernoff with E e^(u |Z|) = 2 Phi(u)
    # e^(u^2 / 2))
    eps, m = 1.0, 10
    h = cal.half_normal_sum(m).step

    def log_tail(sigma: float) -> float:
        t = eps * sigma / 2 - m / sigma - m * h
        return m * (math.log(2) + special.log_ndtr(t / m)) - t * t / (2 * m)

    bound = optimize.brentq(lambda s: log_tail(s) - math.log(delta), 2 * m, 1e6)
    assert cal.rspm_gaussian_sigma(ApproximateTarget(eps, delta), m) <= bound * (1 + 1e-9)


def test_the_smallest_positive_delta_is_met_too():
    tiny = 5e-324
    sigma = cal.rspm_gaussian_sigma(ApproximateTarget(1.0, tiny), 3)
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


# --- each bad input, one by one --------------------------------------------------------------


def test_rspm_refuses_a_non_integral_m():
    for call in (
        lambda: cal.rspm_gaussian_delta(1.0, 10.0, m=2.5),  # used m = 2
        lambda: cal.rspm_gaussian_sigma(ApproximateTarget(1.0, 1e-6), 2.5),
        lambda: cal.rspm_gaussian_epsilon(10.0, 1e-6, m=2.5),
        lambda: cal.rspm_laplace_scale(PrivacyTarget(1.0), 2.5),
    ):
        with pytest.raises(TypeError, match="m must be an integer, found 2.5"):
            call()
    with pytest.raises(TypeError, match="m must be an integer, found True"):
        cal.rspm_gaussian_sigma_paper(ApproximateTarget(1.0, 1e-6), True)


def test_rspm_gaussian_epsilon_is_computed_once_per_sigma_and_checks_every_call():
    # calibrate asks for it on every release at the same sigma: the root search runs once
    first = cal.rspm_gaussian_epsilon(80.0, 1e-6, m=4)
    hits = cal._rspm_epsilon_cached.cache_info().hits
    assert cal.rspm_gaussian_epsilon(np.float64(80.0), 1e-6, m=np.int64(4)) == first
    assert cal._rspm_epsilon_cached.cache_info().hits == hits + 1
    assert cal.rspm_gaussian_delta(first, 80.0, m=4) <= 1e-6
    with pytest.raises(ValueError, match="m"):
        cal.rspm_gaussian_epsilon(80.0, 1e-6, m=0)  # checked before the cache is asked


@pytest.mark.parametrize(
    "values",
    [
        np.array([0.5]),
        np.array([1.0, 1.0, -3.0]),  # a tied maximum
        np.array([-np.inf, -np.inf]),
        np.array([-np.inf, 2.0, 700.0, 710.0]),
        np.array([np.inf, 1.0]),
        np.array([np.nan, 1.0]),
        np.random.default_rng(3).normal(size=10_001) * 300.0,
    ],
)
def test_the_log_sum_exp_is_scipys(values):
    """The calibrations' own log-sum-exp (a single pass of exp) gives scipy's value."""
    ours, theirs = cal._log_sum_exp(values), float(special.logsumexp(values))
    assert (math.isnan(ours) and math.isnan(theirs)) or ours == pytest.approx(theirs, rel=1e-15)
    assert cal._log_sum_exp(np.array([])) == -math.inf
