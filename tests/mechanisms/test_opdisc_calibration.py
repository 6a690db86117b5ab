"""OPDisc's noise calibration (``mechanisms.opdisc_calibration``) against SPEC's formulas.

* The paper's constant (a ``calibration: paper`` release), with figures worked out by hand.
* The proven calibration of SPEC 10.1: its reference table (to 1%), monotonicity, and a Monte
  Carlo check of the delta integral with a fixed seed and a 5-standard-error band (a false
  failure rate of about 6e-7 per check under the normal approximation of the sample mean).
* The whole input space (``input_space.py``): only TypeError / ValueError naming an argument (or
  the result that left the float range); finite and > 0 results where defined (a proven epsilon
  may be 0.0: (0, delta) proven); monotone where SPEC says so; a proven sigma is the safe root at
  any delta down to the smallest positive float. Then one test per bad input that the code once
  accepted. Deterministic (hypothesis derandomized).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mechanisms import opdisc_calibration as cal
from mechanisms.opdisc import opdisc_domain
from mechanisms.opdisc_calibration import (
    opdisc_delta,
    opdisc_epsilon,
    opdisc_sigma,
    opdisc_sigma_paper,
)
from mechanisms.privacy import ApproximateTarget
from tests.mechanisms.input_space import (
    ANY_INT,
    D_ADULT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    FACTOR,
    MODERATE_DELTA,
    MODERATE_EPS,
    SLACK,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
    log_uniform,
    names_pattern,
)

D_RADIUS = math.sqrt(23)


def test_opdisc_sigma_on_adult_is_about_708():
    # SPEC section 3: 7 * G * D^2 * sqrt(ln(1/delta)) / (tau * eps), G = 1, D^2 = 23, ln(n^2)
    sigma = opdisc_sigma_paper(ApproximateTarget(1.0, DELTA_ADULT), 1.0, math.sqrt(23))
    assert sigma == pytest.approx(707.6777, abs=1e-3)
    assert opdisc_sigma_paper(
        ApproximateTarget(0.1, DELTA_ADULT), 1.0, math.sqrt(23)
    ) == pytest.approx(7076.777, abs=1e-2)


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
    sigma = opdisc_sigma_paper(ApproximateTarget(eps, delta), tau, D)
    assert opdisc_sigma_paper(ApproximateTarget(2 * eps, delta), tau, D) == pytest.approx(sigma / 2)
    assert opdisc_sigma_paper(ApproximateTarget(eps, delta), tau, 2 * D) == pytest.approx(4 * sigma)
    assert opdisc_sigma_paper(ApproximateTarget(eps, delta), 2 * tau, D) == pytest.approx(
        sigma / 4
    )  # G = 1/tau too


@pytest.mark.parametrize("bad", [0.0, -1.0, float("inf"), float("nan")])
def test_bad_epsilon_is_a_value_error(bad):
    with pytest.raises(ValueError, match="epsilon must be"):
        opdisc_sigma_paper(ApproximateTarget(bad, 1e-6), 1.0, 1.0)


def test_wrong_type_is_a_type_error():
    with pytest.raises(TypeError, match="epsilon must be a real number, found '1'"):
        opdisc_sigma_paper(ApproximateTarget("1", 1e-6), 1.0, 1.0)


# --- SPEC 10.1 -------------------------------------------------------------------------------


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
    proven = opdisc_sigma(ApproximateTarget(eps, DELTA_ADULT), d=D_ADULT, D=D_RADIUS)
    assert proven == pytest.approx(sigma, rel=0.01)
    assert opdisc_delta(eps, proven, d=D_ADULT, D=D_RADIUS) <= DELTA_ADULT
    assert opdisc_delta(eps, proven * 0.999, d=D_ADULT, D=D_RADIUS) > DELTA_ADULT  # smallest
    sigma_paper = opdisc_sigma_paper(ApproximateTarget(eps, DELTA_ADULT), 1.0, D_RADIUS)
    assert sigma_paper == pytest.approx(paper, rel=0.01)
    assert opdisc_epsilon(sigma_paper, DELTA_ADULT, d=D_ADULT, D=D_RADIUS) == pytest.approx(
        eps_paper, rel=0.01
    )


def test_opdisc_paper_sigma_proves_only_delta_2_9e_6_at_epsilon_1():
    # SPEC 10.1: the paper's sigma at epsilon = 1 proves (1, 2.9e-6), not (1, 4.1e-9)
    sigma_paper = opdisc_sigma_paper(ApproximateTarget(1.0, DELTA_ADULT), 1.0, D_RADIUS)
    assert opdisc_delta(1.0, sigma_paper, d=D_ADULT, D=D_RADIUS) == pytest.approx(2.9e-6, rel=0.05)


def test_opdisc_proven_sigma_is_monotone():
    base = dict(d=10, D=math.sqrt(10))
    s = opdisc_sigma(ApproximateTarget(0.5, 1e-6), **base)
    assert opdisc_sigma(ApproximateTarget(1.0, 1e-6), **base) < s  # more epsilon, less noise
    assert opdisc_sigma(ApproximateTarget(0.5, 1e-4), **base) < s  # more delta, less noise
    assert (
        opdisc_sigma(ApproximateTarget(0.5, 1e-6), d=40, D=math.sqrt(10)) > s
    )  # larger d: ||eta|| grows
    sigmas = [
        opdisc_sigma(ApproximateTarget(0.5, 1e-6), d=d, D=math.sqrt(10))
        for d in (2, 5, 23, 100, 400)
    ]
    assert sigmas == sorted(sigmas)


def test_opdisc_paper_sigma_falls_further_short_as_d_grows():
    # sigma_paper has no factor for d (SPEC 10.1): the epsilon it proves grows with d
    proven = [
        opdisc_epsilon(opdisc_sigma_paper(ApproximateTarget(1.0, 1e-6), 1.0, 3.0), 1e-6, d=d, D=3.0)
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


# --- only typed errors; finite and positive where defined ------------------------------------


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
    sigma = call_or_none(
        OPDISC_NAMES, lambda: cal.opdisc_sigma(ApproximateTarget(epsilon, delta), d=d, D=D, tau=tau)
    )
    if sigma is not None:
        assert_finite_positive(sigma)
        # the safe root: proven at sigma, not at sigma (1 - 1e-6) (in logs: any delta)
        assert cal.opdisc_delta(epsilon, sigma, d=d, D=D, tau=tau) <= delta
        assert cal.opdisc_log_delta(epsilon, sigma, d=d, D=D, tau=tau) <= math.log(delta)
        below = cal.opdisc_log_delta(epsilon, sigma * (1 - 1e-6), d=d, D=D, tau=tau)
        assert below > math.log(delta)
    paper = call_or_none(
        OPDISC_NAMES, lambda: cal.opdisc_sigma_paper(ApproximateTarget(epsilon, delta), tau, D)
    )
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


# --- monotone where SPEC says so -------------------------------------------------------------


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
    sigma = cal.opdisc_sigma(ApproximateTarget(epsilon, delta), d=d, D=D, tau=tau)
    assert cal.opdisc_sigma(ApproximateTarget(epsilon * f, delta), d=d, D=D, tau=tau) <= sigma * (
        1 + SLACK
    )
    assert cal.opdisc_sigma(
        ApproximateTarget(epsilon, min(delta * f, 0.5)), d=d, D=D, tau=tau
    ) <= sigma * (1 + SLACK)
    assert cal.opdisc_sigma(
        ApproximateTarget(epsilon, delta), d=d + extra, D=D, tau=tau
    ) >= sigma * (1 - SLACK)
    # c = 4 D^2 / tau^2 scales sigma exactly (the loss depends on c / sigma only)
    assert cal.opdisc_sigma(
        ApproximateTarget(epsilon, delta), d=d, D=D * f, tau=tau
    ) == pytest.approx(sigma * f * f, rel=2 * SLACK)
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


@derandomized(200)
@given(
    epsilon=EPSILON,
    delta=DELTA,
    D=log_uniform(0.1, 10),
    tau=log_uniform(0.1, 10),
    f=FACTOR,
)
def test_the_papers_sigma_is_monotone(epsilon, delta, D, tau, f):
    # SPEC section 3: sigma_paper ~ D^2 sqrt(ln(1/delta)) / (tau^2 epsilon)
    names = names_pattern("sigma_paper", "epsilon")
    paper = call_or_none(
        names, lambda: cal.opdisc_sigma_paper(ApproximateTarget(epsilon, delta), tau, D)
    )
    if paper is None:
        return
    larger_eps = call_or_none(
        names, lambda: cal.opdisc_sigma_paper(ApproximateTarget(epsilon * f, delta), tau, D)
    )
    assert larger_eps is None or larger_eps < paper
    assert (
        cal.opdisc_sigma_paper(ApproximateTarget(epsilon, delta ** (1 / f)), tau, D) <= paper
    )  # a larger delta
    if paper * f * f < 1e300:
        assert cal.opdisc_sigma_paper(ApproximateTarget(epsilon, delta), tau, D * f) > paper
        assert cal.opdisc_sigma_paper(ApproximateTarget(epsilon, delta), tau * f, D) < paper


# --- the safe root at any delta (1e-300 once gave the bracket's end) -------------------------


@pytest.mark.parametrize("delta", [1e-300, 1e-200, 1e-100, 1e-10])
def test_opdisc_sigma_is_the_safe_root_at_tiny_delta(delta):
    kw = dict(d=23, D=math.sqrt(23))
    sigma = cal.opdisc_sigma(ApproximateTarget(1.0, delta), **kw)
    assert cal.opdisc_delta(1.0, sigma, **kw) <= delta
    assert cal.opdisc_delta(1.0, sigma * (1 - 1e-6), **kw) > delta  # the root, not a bracket end


@pytest.mark.parametrize("delta", [1e-10, 1e-30, 1e-100, 1e-200, 1e-300])
def test_proven_sigma_is_no_more_than_a_tail_bound_needs(delta):
    # An independent check that the root is not a bracket's end or a noise floor's: a cruder
    # upper bound on delta, delta <= P(loss > epsilon), already proves some sigma; the smallest
    # sigma cannot be larger. SPEC 10.1: R is 1-Lipschitz in a standard normal vector with
    # E R <= sqrt(k), so P(R > sqrt(k) + t) <= exp(-t^2 / 2).
    d, D, eps = 23, math.sqrt(23), 1.0
    c = 4 * D * D
    r = math.sqrt(d + 1) + math.sqrt(-2 * math.log(delta))  # the loss a r + a^2/2 = eps there
    a = -r + math.sqrt(r * r + 2 * eps)
    assert cal.opdisc_sigma(ApproximateTarget(eps, delta), d=d, D=D) <= c / a


def test_the_smallest_positive_delta_is_met_too():
    tiny = 5e-324
    sigma = cal.opdisc_sigma(ApproximateTarget(1.0, tiny), d=23, D=math.sqrt(23))
    assert cal.opdisc_delta(1.0, sigma, d=23, D=math.sqrt(23)) <= tiny
    assert cal.opdisc_log_delta(1.0, sigma * (1 - 1e-6), d=23, D=math.sqrt(23)) > math.log(tiny)


# --- each bad input, one by one --------------------------------------------------------------


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
        cal.opdisc_sigma(ApproximateTarget(1.0, 1e-6), **args)
    with pytest.raises(error, match=match):
        cal.opdisc_epsilon(700.0, 1e-6, **args)  # d = 0 returned 0.0194
    with pytest.raises(error, match=match):
        cal.opdisc_delta(1.0, 700.0, **args)


@pytest.mark.parametrize("tau, D", [(math.inf, D23), (1.0, math.inf), (1e-300, D23)])
def test_opdisc_sigma_paper_refuses_what_would_give_zero_or_inf(tau, D):
    with pytest.raises(ValueError, match="(tau|D|sigma_paper)"):
        cal.opdisc_sigma_paper(
            ApproximateTarget(1.0, 1e-6), tau, D
        )  # tau = inf returned sigma = 0.0


def test_opdisc_epsilon_is_computed_once_per_sigma_and_checks_every_call():
    # calibrate asks for it on every release at the same sigma: the root search runs once
    first = cal.opdisc_epsilon(37.5, 1e-6, d=5, D=1.0)
    hits = cal._opdisc_epsilon_cached.cache_info().hits
    assert cal.opdisc_epsilon(np.float64(37.5), 1e-6, d=5, D=1) == first
    assert cal._opdisc_epsilon_cached.cache_info().hits == hits + 1
    assert cal.opdisc_delta(first, 37.5, d=5, D=1.0) <= 1e-6
    with pytest.raises(ValueError, match="sigma"):
        cal.opdisc_epsilon(-1.0, 1e-6, d=5, D=1.0)  # checked before the cache is asked
