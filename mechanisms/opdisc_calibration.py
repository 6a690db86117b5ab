"""OPDisc's noise calibration (SPEC sections 3 and 10.1): the paper's sigma, the delta a sigma
proves, the proven sigma and the epsilon a sigma proves.

The privacy loss of the shift s_w = c pi(w) (||pi(w)|| = 1, c = 4 D^2 / tau^2) under Gaussian
noise of scale sigma is bounded by a R + a^2 / 2, a = c / sigma, R = ||eta|| / sigma ~ chi with
d + 1 degrees of freedom; delta(epsilon) = E[(1 - exp(epsilon - a R - a^2 / 2))_+], computed as
a logarithm. The root searches and the contract are ``mechanisms.calibration``'s.
"""

from __future__ import annotations

import functools
import math

from scipy import integrate, special

from core.validation import check_real, check_result, check_shape
from mechanisms.calibration import epsilon_for, first_guess_tail, smallest_safe
from mechanisms.privacy import ApproximateTarget


def opdisc_shift_norm(D: float, tau: float) -> float:
    """c = 4 G D^2 / tau with G = 1/tau for the 0/1 loss over W_tau (SPEC 3 and 10.1)."""
    check_real("D", D)
    check_real("tau", tau)
    D, tau = float(D), float(tau)  # numpy scalars would warn where a float overflows quietly
    G = 1.0 / tau  # Lipschitz constant of the 0/1 loss over W_tau (SPEC section 3)
    return check_result("c = 4 D^2 / tau^2", 4.0 * G * (D * D) / tau, D=D, tau=tau)


def opdisc_sigma_paper(target: ApproximateTarget, tau: float, D: float) -> float:
    """sigma_paper = 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon), G = 1/tau (SPEC section 3), at the
    ``target`` (epsilon, delta).

    Algorithm 1's value. Its proof does not establish (epsilon, delta) (SPEC 10.1): a release
    made with it records ``opdisc_epsilon(sigma_paper, delta, ...)`` instead. Adult, epsilon = 1,
    delta = 1/n^2, tau = 1, D^2 = 23: about 708.
    """
    check_real("tau", tau)
    check_real("D", D)
    epsilon, delta, tau, D = target.epsilon, target.delta, float(tau), float(D)
    G = 1.0 / tau
    # divided one factor at a time: tau * epsilon can underflow to 0 where neither is 0
    sigma = 7.0 * G * (D * D) * math.sqrt(-math.log(delta)) / tau / epsilon
    return check_result("sigma_paper", sigma, epsilon=epsilon, delta=delta, tau=tau, D=D)


def _log_chi_pdf_at_mode(nu: int) -> float:
    """log density of the chi law with nu + 1 degrees of freedom at its mode sqrt(nu), nu >= 1.

    Written so that nothing cancels at large nu: with z = (nu + 1) / 2 and Stirling's
    gammaln(z) = (z - 1/2) ln z - z + ln(2 pi) / 2 + R(z), it is
    1/2 - (nu/2) ln(1 + 1/nu) - ln(pi) / 2 - R(z) (-> -ln(pi)/2, the normal N(., 1/2) peak).
    """
    z = 0.5 * (nu + 1)
    if z >= 100.0:  # R(z)'s asymptotic series; the next term is below 1e-17
        R = 1 / (12 * z) - 1 / (360 * z**3) + 1 / (1260 * z**5)
    else:
        R = special.gammaln(z) - ((z - 0.5) * math.log(z) - z + 0.5 * math.log(2 * math.pi))
    return 0.5 - 0.5 * nu * math.log1p(1.0 / nu) - 0.5 * math.log(math.pi) - R


def _log_chi_ratio(r: float, ref: float, nu: int) -> float:
    """log chi(r) - log chi(ref) for the chi law with nu + 1 degrees of freedom, r, ref > 0."""
    return nu * math.log1p((r - ref) / ref) - 0.5 * (r - ref) * (r + ref)


def _opdisc_log_delta(epsilon: float, a: float, k: int) -> float:
    """log E[(1 - exp(epsilon - a R - a^2 / 2))_+], R ~ chi with k >= 2 degrees of freedom.

    a = c / sigma (SPEC 10.1). The integrand is 1 - exp(-a (R - r0)) beyond r0 = epsilon / a -
    a / 2. It is integrated relative to the chi density at ref = max(r0, mode), whose log is
    exact, so the integral never underflows: deep in the tail (a tiny target delta) r0 is far
    beyond the mode and the integrand lives within 800 / slope of it.
    """
    if a == 0.0:
        return -math.inf  # no loss: (1 - e^epsilon)_+ = 0
    if math.isinf(a):
        return 0.0  # infinite loss: delta = 1
    r0 = epsilon / a - 0.5 * a
    if math.isinf(r0):
        return -math.inf if r0 > 0 else 0.0
    nu = k - 1
    mode = math.sqrt(nu)
    ref = max(r0, mode)
    log_ref = _log_chi_pdf_at_mode(nu) + _log_chi_ratio(ref, mode, nu)
    if log_ref == -math.inf:
        return -math.inf
    # the log density is concave with curvature <= -1, so it falls by more than 800 (a relative
    # e^-800, below LOG_NEGLIGIBLE) within 40 of ref, and within 800 / slope beyond ref. The
    # variable is u = r - ref, so that nothing cancels when r0 is large.
    slope = ref - nu / ref
    span = 800.0 / slope if slope > 20.0 else 40.0
    shift = ref - r0  # >= 0: the weight is 1 - exp(-a (u + shift)) for u > -shift

    def integrand(u: float) -> float:
        if u <= -shift or u <= -ref:
            return 0.0
        log_ratio = nu * math.log1p(u / ref) - 0.5 * u * (2.0 * ref + u)  # log chi(r / ref)
        return -math.expm1(-a * (u + shift)) * math.exp(log_ratio)

    total = 0.0
    kink = 1.0 / a - shift  # where the weight stops growing linearly
    for lo, hi in ((max(-shift, -ref, mode - 40.0 - ref), 0.0), (0.0, span)):
        if hi <= lo:
            continue
        inner = [lo + (hi - lo) * f for f in (1e-4, 1e-3, 1e-2, 0.1)]
        points = sorted({p for p in inner + [kink] if lo < p < hi})
        value, _ = integrate.quad(
            integrand, lo, hi, points=points, epsabs=0.0, epsrel=1e-11, limit=500
        )
        total += value
    if total <= 0.0:
        return -math.inf
    return min(log_ref + math.log(total), 0.0)


def _check_opdisc_shape(d: int, D: float, tau: float) -> float:
    check_shape("d", d)
    return opdisc_shift_norm(D, tau)


def opdisc_log_delta(epsilon: float, sigma: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """log of ``opdisc_delta``, finite down to deltas far below the smallest float."""
    check_real("epsilon", epsilon, ">= 0")
    check_real("sigma", sigma)
    c = _check_opdisc_shape(d, D, tau)
    return _opdisc_log_delta(float(epsilon), c / sigma, int(d) + 1)


def opdisc_delta(epsilon: float, sigma: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """delta(epsilon; sigma) = E[(1 - exp(epsilon - (2 c sigma R + c^2) / (2 sigma^2)))_+].

    R ~ chi with d + 1 degrees of freedom, c = 4 D^2 / tau^2 (SPEC 10.1). With a = c / sigma the
    loss is a R + a^2 / 2, so the integrand is 1 - exp(-a (R - r0)) beyond r0 = (epsilon -
    a^2/2) / a: a one-dimensional integral of a smooth function against the chi density.
    """
    return math.exp(opdisc_log_delta(epsilon, sigma, d=d, D=D, tau=tau))


def opdisc_sigma(target: ApproximateTarget, *, d: int, D: float, tau: float = 1.0) -> float:
    """The smallest sigma with opdisc_delta(epsilon; sigma) <= delta at the ``target`` (epsilon,
    delta) (SPEC 10.1, 'proven').

    d = 23, D^2 = 23, tau = 1, delta = 1/15682^2: 7712 / 2628 / 1593 / 809 at epsilon = 0.1 /
    0.3 / 0.5 / 1 (SPEC 10.1's table). Decreasing in epsilon and in delta, increasing in d.
    """
    _check_opdisc_shape(d, D, tau)
    return _opdisc_sigma_cached(target.epsilon, target.delta, int(d), float(D), float(tau))


@functools.lru_cache(maxsize=256)
def _opdisc_sigma_cached(epsilon: float, delta: float, d: int, D: float, tau: float) -> float:
    c, k = opdisc_shift_norm(D, tau), d + 1
    # first guess: the loss a R + a^2/2 reaches epsilon where R's tail holds about delta
    a0 = min(epsilon / (math.sqrt(k) + first_guess_tail(delta) + 1.0), math.sqrt(epsilon))
    sigma0 = c / a0 if a0 > 0 else math.inf  # _root starts in the float range either way
    sigma = smallest_safe(lambda s: _opdisc_log_delta(epsilon, c / s, k), delta, sigma0, "sigma")
    return check_result("sigma", sigma, epsilon=epsilon, delta=delta, d=d, D=D, tau=tau)


def opdisc_epsilon(sigma: float, delta: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """The epsilon that SPEC 10.1 proves at ``delta`` for OPDisc run with noise ``sigma``.

    Decreasing in sigma; 0.0 when sigma is so large that (0, delta) is proven.
    """
    check_real("delta", delta, "(0, 1)")  # the delta an epsilon is proven at (a query)
    check_real("sigma", sigma)
    _check_opdisc_shape(d, D, tau)
    return _opdisc_epsilon_cached(float(sigma), float(delta), int(d), float(D), float(tau))


@functools.lru_cache(maxsize=256)
def _opdisc_epsilon_cached(sigma: float, delta: float, d: int, D: float, tau: float) -> float:
    # asked again for every release at the same sigma: the root search once
    c = opdisc_shift_norm(D, tau)
    a, k = c / sigma, d + 1
    eps0 = a * (math.sqrt(k) + first_guess_tail(delta)) + 0.5 * a * a
    return epsilon_for(
        lambda e: _opdisc_log_delta(e, a, k), delta, eps0, sigma=sigma, d=d, D=D, tau=tau
    )
