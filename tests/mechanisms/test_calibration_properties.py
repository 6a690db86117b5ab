"""Calibration inputs (issue 18, part 3): the calibration functions over their whole input space.

For arbitrary arguments (bool, nan, inf, negative, zero, huge, subnormal, non-integral where an
integer is expected, strings, None) only TypeError / ValueError are raised, and the message
names an argument (or the result that left the float range); where a function is defined its
result is finite and > 0 (a proven epsilon may be 0.0: (0, delta) proven); results are
monotone where SPEC says so (sections 3 to 6 and 10); a proven sigma is the safe root at any
delta down to the smallest positive float. Then one test per input the issue lists, each of
which the code before it failed.

Deterministic (hypothesis derandomized); the root searches get few examples, the closed forms
many.
"""

from __future__ import annotations

import math
import re
import tracemalloc

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mechanisms import calibration as cal
from mechanisms.dpsgd import accounting
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.rspm import RSPM, RSPMParams
from oracles.checks import MAX_EXACT_INT

DELTA_ADULT = 1 / 15_682**2
#: The root searches' promise: sigma within a few ROOT_RTOL above the exact root.
SLACK = 4 * cal.ROOT_RTOL


def _settings(n: int):
    return settings(max_examples=n, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])


# --- strategies: any value, and values in range -----------------------------------------------

EXTREME_FLOATS = [0.0, -0.0, -1.0, 5e-324, 1e-300, 1e-12, 0.5, 1.0, 1.5, 2.5, 1e12, 1e300,
                  1.7976931348623157e308, math.inf, -math.inf, math.nan]  # fmt: skip
ODD = st.one_of(st.booleans(), st.none(), st.text(max_size=2), st.just([1.0]),
                st.just(np.bool_(True)), st.just(1 + 1j))  # fmt: skip
#: Any value where a real number is expected.
ANY_REAL = st.one_of(st.floats(), st.sampled_from(EXTREME_FLOATS), st.integers(-3, 3),
                     st.just(np.float64(0.25)), ODD)  # fmt: skip
#: Any value where an integer (a dimension, a count) is expected: bounded so that a valid one
#: stays cheap (RSPM's lattice grows with m), plus huge and non-integral ones.
ANY_INT = st.one_of(st.integers(-3, 6), st.sampled_from([MAX_EXACT_INT + 1, 10**20, -10**20,
                                                         10**400]),
                    st.sampled_from([2.0, 2.5, math.nan, math.inf]), st.just(np.int64(3)), ODD)


def _log_uniform(low: float, high: float):
    return st.floats(math.log(low), math.log(high)).map(math.exp)


EPSILON = st.one_of(_log_uniform(1e-3, 1e3), st.sampled_from([5e-324, 1e-300, 1e300]))
DELTA = st.one_of(_log_uniform(1e-320, 0.9), st.sampled_from([5e-324, DELTA_ADULT]))


def _either(valid, anything=ANY_REAL):
    """Mostly in range (so the valid branch is exercised), sometimes anything."""
    return st.one_of(valid, valid, anything)


def _names(*names: str) -> re.Pattern:
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")


def _call(names: re.Pattern, function, *args, **kwargs):
    """function(*args, **kwargs), or None if it raised TypeError / ValueError naming one of
    ``names``; any other exception fails the test."""
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError) as error:
        assert names.search(str(error)), f"the message names no argument: {error}"
        return None


def _finite_positive(value: float, *, zero_ok: bool = False) -> None:
    assert isinstance(value, float) and math.isfinite(value), value
    assert value > 0 or (zero_ok and value == 0.0), value


# --- only typed errors; finite and positive where defined --------------------------------------

OPDISC_NAMES = _names("epsilon", "delta", "d", "D", "tau", "sigma", "c")


@_settings(150)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), d=_either(st.integers(1, 10**6), ANY_INT),
       D=_either(_log_uniform(1e-3, 1e3)), tau=_either(_log_uniform(1e-2, 10)))  # fmt: skip
def test_opdisc_sigma_over_its_input_space(epsilon, delta, d, D, tau):
    sigma = _call(OPDISC_NAMES, cal.opdisc_sigma, epsilon, delta, d=d, D=D, tau=tau)
    if sigma is not None:
        _finite_positive(sigma)
        # the safe root: proven at sigma, not at sigma (1 - 1e-6) (in logs: any delta)
        assert cal.opdisc_delta(epsilon, sigma, d=d, D=D, tau=tau) <= delta
        assert cal.opdisc_log_delta(epsilon, sigma, d=d, D=D, tau=tau) <= math.log(delta)
        below = cal.opdisc_log_delta(epsilon, sigma * (1 - 1e-6), d=d, D=D, tau=tau)
        assert below > math.log(delta)
    paper = _call(OPDISC_NAMES, cal.opdisc_sigma_paper, epsilon, delta, tau, D)
    if paper is not None:
        _finite_positive(paper)


@_settings(60)
@given(sigma=_either(_log_uniform(1e-3, 1e6)), delta=_either(DELTA),
       d=_either(st.integers(1, 1000), ANY_INT), D=_either(_log_uniform(0.1, 10)),
       epsilon=_either(st.floats(0, 50)))  # fmt: skip
def test_opdisc_epsilon_and_delta_over_their_input_space(sigma, delta, d, D, epsilon):
    eps = _call(OPDISC_NAMES, cal.opdisc_epsilon, sigma, delta, d=d, D=D)
    if eps is not None:
        _finite_positive(eps, zero_ok=True)
        assert cal.opdisc_delta(eps, sigma, d=d, D=D) <= delta
    value = _call(OPDISC_NAMES, cal.opdisc_delta, epsilon, sigma, d=d, D=D)
    if value is not None:
        assert 0.0 <= value <= 1.0


RSPM_NAMES = _names("epsilon", "delta", "m", "sigma", "laplace_scale")


@_settings(14)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), m=_either(st.integers(1, 8), ANY_INT))
def test_rspm_sigma_over_its_input_space(epsilon, delta, m):
    sigma = _call(RSPM_NAMES, cal.rspm_gaussian_sigma, epsilon, delta, m)
    if sigma is not None:
        _finite_positive(sigma)
        assert cal.rspm_gaussian_delta(epsilon, sigma, m=m) <= delta
        below = cal.rspm_gaussian_log_delta(epsilon, sigma * (1 - 1e-6), m=m)
        assert below > math.log(delta)


@_settings(100)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), m=_either(st.integers(1, 10**6), ANY_INT))
def test_rspm_closed_forms_over_their_input_space(epsilon, delta, m):
    for value in (_call(RSPM_NAMES, cal.rspm_gaussian_sigma_paper, epsilon, delta, m),
                  _call(RSPM_NAMES, cal.rspm_laplace_scale, epsilon, m)):  # fmt: skip
        if value is not None:
            _finite_positive(value)


@_settings(14)
@given(sigma=_either(_log_uniform(1e-2, 1e5)), delta=_either(DELTA),
       m=_either(st.integers(1, 8), ANY_INT), epsilon=_either(st.floats(0, 20)))  # fmt: skip
def test_rspm_epsilon_and_delta_over_their_input_space(sigma, delta, m, epsilon):
    eps = _call(RSPM_NAMES, cal.rspm_gaussian_epsilon, sigma, delta, m=m)
    if eps is not None:
        _finite_positive(eps, zero_ok=True)
        assert cal.rspm_gaussian_delta(eps, sigma, m=m) <= delta
    value = _call(RSPM_NAMES, cal.rspm_gaussian_delta, epsilon, sigma, m=m)
    if value is not None:
        assert 0.0 <= value <= 1.0


OPSAMP_NAMES = _names("epsilon", "delta", "n", "d", "D_inf", "gamma", "m", "G", "beta", "eta",
                      "alpha", "laplace_scale", "proven_lambda", "calibration", "lambda")


@_settings(300)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), n=_either(st.integers(1, 10**7), ANY_INT),
       d=_either(st.integers(1, 10**4), ANY_INT), D_inf=_either(_log_uniform(1e-2, 1e2)),
       gamma=st.one_of(st.none(), _either(st.floats(1e-3, 1.0))),
       m=st.one_of(st.none(), _either(st.integers(1, 10**6), ANY_INT)),
       G=_either(_log_uniform(1e-3, 10)), beta=_either(st.floats(1e-3, 0.999)),
       alpha=_either(st.floats(0, 1)))  # fmt: skip
def test_opsamp_functions_over_their_input_space(epsilon, delta, n, d, D_inf, gamma, m, G, beta,
                                                 alpha):  # fmt: skip
    out = _call(OPSAMP_NAMES, cal.opsamp_gamma_m, epsilon, delta, n, d, D_inf, gamma=gamma, m=m)
    if out is not None:
        gamma_raw, used_gamma, calls = out
        _finite_positive(gamma_raw)
        assert 0 < used_gamma <= 1  # Lemma 9 (SPEC section 5), whether gamma or m was given
        assert isinstance(calls, int) and 1 <= calls <= MAX_EXACT_INT
    eta = _call(OPSAMP_NAMES, cal.opsamp_eta, epsilon, n, d, G=G, beta=beta, D_inf=D_inf)
    if eta is not None:
        _finite_positive(eta)
    lam = _call(OPSAMP_NAMES, cal.opsamp_lambda, d, gamma=gamma if gamma is not None else 0.5,
                eta=eta if eta is not None else G, G=G, D_inf=D_inf, alpha=alpha)
    if lam is not None:
        _finite_positive(lam.sampling)
        _finite_positive(lam.stability)
        _finite_positive(lam.oracle, zero_ok=True)
        _finite_positive(lam.total)
        scale = _call(OPSAMP_NAMES, cal.opsamp_epsilon, epsilon, lam.total)
        if scale is not None:
            _finite_positive(scale)


PARAMS_NAMES = _names("epsilon", "delta", "n", "d", "m", "gamma", "beta", "alpha", "lower",
                      "upper", "x_max", "margin", "tau", "B", "D", "D_inf", "G", "eta", "sigma",
                      "lambda", "laplace_scale", "calibration", "loss", "noise")  # fmt: skip


@_settings(120)
@given(epsilon=_either(EPSILON), delta=_either(DELTA),
       lower=_either(st.floats(-10, 0)), upper=_either(st.floats(0.01, 10)),
       gamma=st.one_of(st.none(), _either(st.floats(1e-3, 1.0))),
       m=st.one_of(st.none(), _either(st.integers(1, 10**5), ANY_INT)),
       n=_either(st.integers(1, 10**6), ANY_INT), d=_either(st.integers(1, 100), ANY_INT))
def test_opsamp_params_and_calibrate_over_their_input_space(epsilon, delta, lower, upper, gamma,
                                                            m, n, d):  # fmt: skip
    params = _call(PARAMS_NAMES, OPSampParams, epsilon, delta, lower=lower, upper=upper,
                   gamma=gamma, m=m)  # fmt: skip
    if params is None:
        return
    record = _call(PARAMS_NAMES, OPSamp(params).calibrate, n, d)
    if record is not None:
        for key in ("gamma", "eta", "lambda", "lambda_proven", "laplace_scale", "proven_epsilon"):
            _finite_positive(float(record[key]))
        assert 0 < record["gamma"] <= 1 and record["m"] >= 1


@_settings(40)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), tau=_either(st.floats(0.5, 2)),
       B=st.one_of(st.none(), _either(st.floats(1, 5))),
       D=st.one_of(st.none(), _either(st.floats(1, 10))), margin=_either(st.floats(1e-6, 0.5)),
       calibration=st.sampled_from(["proven", "paper", "paper_code", "papers", 1]),
       d=_either(st.integers(1, 50), ANY_INT))  # fmt: skip
def test_opdisc_params_and_calibrate_over_their_input_space(epsilon, delta, tau, B, D, margin,
                                                            calibration, d):  # fmt: skip
    params = _call(PARAMS_NAMES, OPDiscParams, epsilon, delta, tau=tau, B=B, D=D, margin=margin,
                   calibration=calibration)  # fmt: skip
    if params is None:
        return
    record = _call(PARAMS_NAMES, OPDisc(params).calibrate, 100, d)
    if record is not None:
        _finite_positive(record["sigma"])
        _finite_positive(record["proven_epsilon"], zero_ok=True)


@_settings(12)
@given(epsilon=_either(EPSILON), delta=_either(DELTA), margin=_either(st.floats(1e-6, 0.99)),
       noise=st.sampled_from(["gaussian", "laplace", "cauchy"]),
       d=_either(st.integers(1, 4), ANY_INT))  # fmt: skip
def test_rspm_params_and_calibrate_over_their_input_space(epsilon, delta, margin, noise, d):
    params = _call(PARAMS_NAMES, RSPMParams, epsilon, delta, noise=noise, margin=margin)
    if params is None:
        return
    record = _call(PARAMS_NAMES, RSPM(params).calibrate, 100, d)
    if record is not None:
        _finite_positive(record["sigma" if noise == "gaussian" else "laplace_scale"])


DPSGD_NAMES = _names("epsilon", "delta", "sampling_rate", "steps", "accountant",
                     "noise_multiplier", "value_discretization_interval")


@_settings(10)
@given(epsilon=_either(st.floats(0.5, 10), ANY_REAL), delta=_either(_log_uniform(1e-10, 1e-3)),
       q=_either(st.floats(0.01, 1.0)), steps=_either(st.integers(1, 50), ANY_INT),
       accountant=st.sampled_from(["pld_replace_one", "rdp_group", "rdp"]))  # fmt: skip
def test_calibrate_noise_multiplier_over_its_input_space(epsilon, delta, q, steps, accountant):
    z = _call(DPSGD_NAMES, accounting.calibrate_noise_multiplier, epsilon, delta, q, steps,
              accountant=accountant)  # fmt: skip
    if z is not None:
        _finite_positive(z)


@_settings(40)
@given(z=_either(_log_uniform(1.0, 1e6)), q=_either(st.floats(1e-4, 1.0)),
       steps=_either(st.integers(1, 30), ANY_INT), delta=_either(_log_uniform(1e-10, 1e-3)),
       interval=_either(_log_uniform(1e-3, 1e-2)), epsilon=ANY_REAL)  # fmt: skip
def test_accounted_epsilon_over_its_input_space(z, q, steps, delta, interval, epsilon):
    eps = _call(DPSGD_NAMES, accounting.accounted_epsilon, z, q, steps, delta,
                value_discretization_interval=interval)  # fmt: skip
    if eps is not None:
        assert math.isfinite(eps) and eps >= 0
    discretization = _call(DPSGD_NAMES, accounting.pld_discretization, epsilon)
    if discretization is not None:
        _finite_positive(discretization)


# --- monotone where SPEC says so -----------------------------------------------------------------


MODERATE_EPS = _log_uniform(0.01, 10)
MODERATE_DELTA = _log_uniform(1e-300, 0.1)
FACTOR = st.floats(1.01, 100)


@_settings(40)
@given(epsilon=MODERATE_EPS, delta=MODERATE_DELTA, d=st.integers(1, 500), D=_log_uniform(0.5, 5),
       tau=_log_uniform(0.25, 2), f=FACTOR, extra=st.integers(1, 50))  # fmt: skip
def test_opdisc_sigma_is_monotone(epsilon, delta, d, D, tau, f, extra):
    # SPEC 10.1: more epsilon or more delta, less noise; larger d, ||eta|| grows: more noise
    sigma = cal.opdisc_sigma(epsilon, delta, d=d, D=D, tau=tau)
    assert cal.opdisc_sigma(epsilon * f, delta, d=d, D=D, tau=tau) <= sigma * (1 + SLACK)
    assert cal.opdisc_sigma(epsilon, min(delta * f, 0.5), d=d, D=D, tau=tau) <= sigma * (1 + SLACK)
    assert cal.opdisc_sigma(epsilon, delta, d=d + extra, D=D, tau=tau) >= sigma * (1 - SLACK)
    # c = 4 D^2 / tau^2 scales sigma exactly (the loss depends on c / sigma only)
    assert cal.opdisc_sigma(epsilon, delta, d=d, D=D * f, tau=tau) == pytest.approx(
        sigma * f * f, rel=2 * SLACK)
    # and the epsilon a sigma proves falls as sigma grows
    eps_here = cal.opdisc_epsilon(sigma, delta, d=d, D=D, tau=tau)
    assert eps_here <= epsilon * (1 + SLACK) + 1e-300
    assert cal.opdisc_epsilon(sigma * f, delta, d=d, D=D, tau=tau) <= eps_here


@_settings(60)
@given(epsilon=MODERATE_EPS, sigma=_log_uniform(1.0, 1e5), d=st.integers(1, 200),
       D=_log_uniform(0.5, 5), f=FACTOR)  # fmt: skip
def test_opdisc_delta_is_monotone(epsilon, sigma, d, D, f):
    value = cal.opdisc_log_delta(epsilon, sigma, d=d, D=D)
    assert cal.opdisc_log_delta(epsilon * f, sigma, d=d, D=D) <= value + 1e-9
    assert cal.opdisc_log_delta(epsilon, sigma * f, d=d, D=D) <= value + 1e-9


@_settings(6)
@given(epsilon=_log_uniform(0.1, 3), delta=_log_uniform(1e-300, 1e-3), m=st.integers(1, 6),
       f=st.floats(1.2, 4))  # fmt: skip
def test_rspm_sigma_is_monotone(epsilon, delta, m, f):
    # SPEC 10.2: decreasing in epsilon and delta, increasing in m (S is a sum of m terms)
    sigma = cal.rspm_gaussian_sigma(epsilon, delta, m)
    assert cal.rspm_gaussian_sigma(epsilon * f, delta, m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(epsilon, delta * f, m) <= sigma * (1 + SLACK)
    assert cal.rspm_gaussian_sigma(epsilon, delta, m + 1) >= sigma * (1 - SLACK)
    eps_here = cal.rspm_gaussian_epsilon(sigma * f, delta, m=m)
    assert eps_here <= epsilon


@_settings(200)
@given(epsilon=EPSILON, delta=DELTA, m=st.integers(1, 10**6), D=_log_uniform(0.1, 10),
       tau=_log_uniform(0.1, 10), f=FACTOR)  # fmt: skip
def test_the_papers_closed_forms_are_monotone(epsilon, delta, m, D, tau, f):
    # SPEC sections 3 and 4: sigma_paper ~ D^2 sqrt(ln(1/delta)) / (tau^2 epsilon) and
    # sqrt(m ln(1/delta)) / epsilon; the Laplace scale 2m / epsilon
    names = _names("sigma_paper", "epsilon", "laplace_scale")
    for sigma_of in (lambda e, dl: cal.opdisc_sigma_paper(e, dl, tau, D),
                     lambda e, dl: cal.rspm_gaussian_sigma_paper(e, dl, m)):  # fmt: skip
        base = _call(names, sigma_of, epsilon, delta)
        if base is None:
            continue
        larger_eps = _call(names, sigma_of, epsilon * f, delta)
        assert larger_eps is None or larger_eps < base
        assert sigma_of(epsilon, delta ** (1 / f)) <= base  # a larger delta
    paper = _call(names, cal.opdisc_sigma_paper, epsilon, delta, tau, D)
    if paper is not None and paper * f * f < 1e300:
        assert cal.opdisc_sigma_paper(epsilon, delta, tau, D * f) > paper
        assert cal.opdisc_sigma_paper(epsilon, delta, tau * f, D) < paper
    scale = _call(names, cal.rspm_laplace_scale, epsilon, m)
    if scale is not None:
        assert cal.rspm_laplace_scale(epsilon, m + 1) > scale


@_settings(300)
@given(epsilon=MODERATE_EPS, delta=MODERATE_DELTA, n=st.integers(1, 10**6),
       d=st.integers(1, 1000), D_inf=_log_uniform(0.1, 10), gamma=st.floats(1e-3, 1.0),
       G=_log_uniform(1e-3, 10), beta=st.floats(0.01, 0.99), alpha=st.floats(0, 1),
       f=FACTOR)  # fmt: skip
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
    from scipy import optimize, special

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
    from scipy import integrate, special

    sigma, eps = 60.0, 1.0
    b, s0 = 2 / sigma, eps * sigma / 2 - 1 / sigma

    def exact_log(shift: float) -> float:
        start = s0 - shift
        log_norm = special.log_ndtr(-start) + math.log(2)
        density = lambda u: math.exp(-0.5 * u * (2 * start + u)) / math.sqrt(2 * math.pi)  # noqa
        inner, _ = integrate.quad(lambda u: -math.expm1(-b * (u + shift)) * density(u), 0,
                                  40 / start, epsabs=0, epsrel=1e-12)  # fmt: skip
        return log_norm - special.log_ndtr(-start) - 0.5 * start * start + math.log(inner)

    ours = cal.rspm_gaussian_log_delta(eps, sigma, m=1)
    h = cal.half_normal_sum(1).step
    assert ours < -400  # far below what the FFT could see
    assert exact_log(0.0) <= ours <= exact_log(h) + 1e-9


# --- each input the issue lists, one by one ---------------------------------------------------


D23 = math.sqrt(23)


@pytest.mark.parametrize("kwargs, error, match", [
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
])  # fmt: skip
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
    for call in (lambda: cal.rspm_gaussian_delta(1.0, 10.0, m=2.5),  # used m = 2
                 lambda: cal.rspm_gaussian_sigma(1.0, 1e-6, 2.5),
                 lambda: cal.rspm_gaussian_epsilon(10.0, 1e-6, m=2.5),
                 lambda: cal.rspm_laplace_scale(1.0, 2.5)):  # fmt: skip
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


def test_opsamp_params_refuse_an_infinite_box():
    for kwargs in (dict(lower=-math.inf), dict(upper=math.inf), dict(lower=math.nan)):
        with pytest.raises(ValueError, match="(lower|upper) must be finite"):
            OPSampParams(1.0, 1e-6, **kwargs)  # lower=-inf divided by zero in calibrate
    with pytest.raises(ValueError, match="D_inf = upper - lower is not a finite float"):
        OPSampParams(1.0, 1e-6, lower=-1e308, upper=1e308)


@pytest.mark.parametrize("m", [1, 3])
def test_opsamp_m_with_gamma_above_one_is_refused_like_gamma_above_one(m):
    # m = 1 or 3 gave gamma 2.96 or 1.71; Lemma 9 needs gamma <= 1 (SPEC section 5), and
    # gamma = sqrt(ln(4d / delta) / (2m)) <= 1 iff m >= ln(4d / delta) / 2
    delta, d = 1e-6, 23
    floor = math.ceil(math.log(4 * d / delta) / 2)
    assert floor == cal.opsamp_m_floor(delta, d) == 10
    with pytest.raises(ValueError, match=r"m must be >= 8 \(so that gamma"):
        OPSampParams(1.0, delta, m=m)  # the floor at d = 1, known before the data
    params = OPSampParams(1.0, delta, m=9)  # enough at d = 1, not at d = 23
    with pytest.raises(ValueError, match=rf"m must be >= {floor} \(so that gamma .* d=23"):
        OPSamp(params).calibrate(15_682, d)
    record = OPSamp(OPSampParams(1.0, delta, m=floor)).calibrate(15_682, d)
    assert record["m"] == floor and record["gamma"] <= 1
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], found 1.5"):
        OPSampParams(1.0, delta, gamma=1.5)


def test_calibrate_noise_multiplier_keeps_its_pld_grid_bounded():
    # epsilon = 1e-6 bracketed from z = 1 at interval 1e-9: about 1e10 buckets, 77 GiB
    n = 15_682
    q, steps = 64 / n, math.ceil(5 * n / 64)
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match="no noise multiplier <= 524288 reaches"):
            accounting.calibrate_noise_multiplier(1e-6, DELTA_ADULT, q, steps)
        z = accounting.calibrate_noise_multiplier(1e-4, DELTA_ADULT, q, steps)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 200 * 2**20
    eps = accounting.accounted_epsilon(z, q, steps, DELTA_ADULT,
                                       value_discretization_interval=1e-7)  # 1e-3 epsilon
    assert 0.99e-4 <= eps <= 1e-4
    with pytest.raises(ValueError, match="needs about .* buckets per step"):
        accounting.calibrate_noise_multiplier(1e-12, DELTA_ADULT, q, steps)
    with pytest.raises(ValueError, match="needs about .* buckets per step"):
        accounting.accounted_epsilon(1.0, q, steps, DELTA_ADULT,
                                     value_discretization_interval=1e-10)
