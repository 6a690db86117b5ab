"""Noise calibrations whose proofs hold, and the (epsilon, delta) any noise level proves.

The papers' constants are kept to reproduce them, but their proofs fall short (SPEC section 10),
so every mechanism here has three functions:

* ``*_delta(epsilon, noise, shape)``: the delta that SPEC section 10's argument proves at
  ``epsilon`` for the noise actually used (a one-dimensional integral);
* ``*_sigma`` / ``*_lambda``: the smallest noise whose proven delta is at most the target
  (a root search on the integral above), i.e. the ``proven`` calibration;
* ``*_epsilon(noise, delta, shape)``: the smallest epsilon proven at ``delta`` for a given
  noise level, which is what a release made with the paper's constant records.

The privacy-loss arguments (SPEC 10.1, 10.2). For an output w, a shift s_w of the noise keeps
w the argmin on every neighbour, and for Gaussian noise the privacy loss of that shift is
(2 <eta, s_w> + ||s_w||^2) / (2 sigma^2), bounded by a function of ||eta|| (OPDisc: l2, since
s_w = c pi(w) with ||pi(w)|| = 1) or of ||eta||_1 (RSPM: s_w has entries +-2). With L the
bound, delta(epsilon) = E[(1 - exp(epsilon - L))_+] (the hockey-stick divergence of a shift
whose loss is at most L).

Every function here is pure: the same inputs give the same float, so a calibration can be
recomputed from a release's recorded parameters. The integrals are computed as logarithms
(``*_log_delta``), so a target delta anywhere down to the smallest positive float is met: the
root searches run on log delta against log target over the whole float range, and return the
side of the root on which the guarantee holds (sigma and epsilon rounded up, never down, to
within ``ROOT_RTOL`` of the root). Every argument is checked by ``core.validation``: a wrong type
is a TypeError, a wrong value (or a result out of the float range) a ValueError naming it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np
from scipy import fft, integrate, optimize, special

from core.validation import (
    check_choice,
    check_int,
    check_not_both,
    check_real,
    check_result,
    check_shape,
)
from mechanisms.privacy import check_delta, check_epsilon_delta

Calibration = Literal["proven", "paper", "paper_code"]
CALIBRATIONS: tuple[str, ...] = ("proven", "paper", "paper_code")

#: Relative precision of every root search (sigma, lambda, epsilon). Roots are then moved to the
#: safe side by this much, so a proven sigma or epsilon is never below the exact root.
ROOT_RTOL = 1e-7

#: A log delta below this is below every positive float (log 5e-324 = -744.4) by a margin: no
#: target can be met more closely, so bounds that fall below it need no further precision.
LOG_NEGLIGIBLE = -800.0

_LOG_MAX = math.log(np.finfo(float).max)  # 709.78: exp of more overflows
_LOG_MIN = math.log(np.finfo(float).tiny)  # -708.40: the smallest normal float
_LOG_STEP = math.log(4.0)  # bracket expansion factor of the root searches


def check_calibration(calibration: str, *, allowed: tuple[str, ...] = CALIBRATIONS) -> str:
    return check_choice("calibration", calibration, allowed)


# --- root searches on log delta ----------------------------------------------------------------


def _meets(log_value: float, target: float) -> bool:
    """log_value <= log target, and its float exp <= target too (so ``*_delta`` agrees)."""
    return log_value <= math.log(target) and math.exp(min(log_value, 0.0)) <= target


def _root(log_f: Callable[[float], float], log_target: float, x0: float, what: str) -> float:
    """The smallest x > 0 with log_f(x) <= log_target, to ROOT_RTOL / 4; log_f non-increasing.

    Brackets the root by factors of 4 from the first guess ``x0`` over the whole float range,
    then solves on log x (the quantities span hundreds of orders of magnitude).
    """

    @functools.lru_cache(maxsize=None)
    def g(t: float) -> float:
        value = log_f(math.exp(t)) - log_target
        return min(max(value, -1e300), 1e300)  # -inf (delta 0) keeps its sign

    t_hi = min(max(math.log(x0), _LOG_MIN), _LOG_MAX - _LOG_STEP) if x0 > 0 else 0.0
    if g(t_hi) > 0:
        while True:
            t_lo, t_hi = t_hi, t_hi + _LOG_STEP
            if t_hi > _LOG_MAX:
                raise ValueError(
                    f"no finite {what} meets the target: it would exceed {np.finfo(float).max:.3g}"
                )
            if g(t_hi) <= 0:
                break
    else:
        while True:
            t_lo = t_hi - _LOG_STEP
            if t_lo < _LOG_MIN:  # every x down to the smallest normal float meets the target
                return math.exp(t_hi)
            if g(t_lo) > 0:
                break
            t_hi = t_lo
    return math.exp(optimize.brentq(g, t_lo, t_hi, xtol=ROOT_RTOL / 4))


def _smallest_safe(log_f: Callable[[float], float], target: float, x0: float, what: str) -> float:
    """The root of ``_root``, moved up by ROOT_RTOL steps until log_f(x) meets ``target``."""
    x = _root(log_f, math.log(target), x0, what) * (1 + ROOT_RTOL)
    for _ in range(10_000):  # the root's tolerance must never land on the unsafe side
        if _meets(log_f(x), target):
            return x
        x *= 1 + ROOT_RTOL
    raise RuntimeError(f"the {what} search did not converge near {x!r}")  # a bug, not an input


def _epsilon_for(
    log_delta_of_eps: Callable[[float], float], delta: float, eps0: float, **inputs: float
) -> float:
    """Smallest epsilon >= 0 with delta(epsilon) <= delta (delta(epsilon) decreasing).

    0.0 when even epsilon = 0 is proven at ``delta`` (a noise level so large that the loss
    barely matters); ``eps0`` is a first guess.
    """
    if _meets(log_delta_of_eps(0.0), delta):
        return 0.0
    eps = _smallest_safe(log_delta_of_eps, delta, eps0, "epsilon")
    return check_result("epsilon", eps, delta=delta, **inputs)


# --- OPDisc (SPEC section 10.1) ----------------------------------------------------------------


def opdisc_shift_norm(D: float, tau: float) -> float:
    """c = 4 G D^2 / tau with G = 1/tau for the 0/1 loss over W_tau (SPEC 3 and 10.1)."""
    check_real("D", D)
    check_real("tau", tau)
    D, tau = float(D), float(tau)  # numpy scalars would warn where a float overflows quietly
    G = 1.0 / tau  # Lipschitz constant of the 0/1 loss over W_tau (SPEC section 3)
    return check_result("c = 4 D^2 / tau^2", 4.0 * G * (D * D) / tau, D=D, tau=tau)


def opdisc_sigma_paper(epsilon: float, delta: float, tau: float, D: float) -> float:
    """sigma_paper = 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon), G = 1/tau (SPEC section 3).

    Algorithm 1's value. Its proof does not establish (epsilon, delta) (SPEC 10.1): a release
    made with it records ``opdisc_epsilon(sigma_paper, delta, ...)`` instead. Adult, epsilon = 1,
    delta = 1/n^2, tau = 1, D^2 = 23: about 708.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    check_real("tau", tau)
    check_real("D", D)
    epsilon, delta, tau, D = float(epsilon), float(delta), float(tau), float(D)
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


def _first_guess_tail(delta: float) -> float:
    """About how far (in standard deviations) a tail holding mass delta reaches."""
    return math.sqrt(2.0 * max(-math.log(delta), 1.0))


def opdisc_sigma(epsilon: float, delta: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """The smallest sigma with opdisc_delta(epsilon; sigma) <= delta (SPEC 10.1, 'proven').

    d = 23, D^2 = 23, tau = 1, delta = 1/15682^2: 7712 / 2628 / 1593 / 809 at epsilon = 0.1 /
    0.3 / 0.5 / 1 (SPEC 10.1's table). Decreasing in epsilon and in delta, increasing in d.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    _check_opdisc_shape(d, D, tau)
    return _opdisc_sigma_cached(float(epsilon), float(delta), int(d), float(D), float(tau))


@functools.lru_cache(maxsize=256)
def _opdisc_sigma_cached(epsilon: float, delta: float, d: int, D: float, tau: float) -> float:
    c, k = opdisc_shift_norm(D, tau), d + 1
    # first guess: the loss a R + a^2/2 reaches epsilon where R's tail holds about delta
    a0 = min(epsilon / (math.sqrt(k) + _first_guess_tail(delta) + 1.0), math.sqrt(epsilon))
    sigma0 = c / a0 if a0 > 0 else math.inf  # _root starts in the float range either way
    sigma = _smallest_safe(lambda s: _opdisc_log_delta(epsilon, c / s, k), delta, sigma0, "sigma")
    return check_result("sigma", sigma, epsilon=epsilon, delta=delta, d=d, D=D, tau=tau)


def opdisc_epsilon(sigma: float, delta: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """The epsilon that SPEC 10.1 proves at ``delta`` for OPDisc run with noise ``sigma``.

    Decreasing in sigma; 0.0 when sigma is so large that (0, delta) is proven.
    """
    check_delta(delta, allow_zero_delta=False)
    check_real("sigma", sigma)
    c = _check_opdisc_shape(d, D, tau)
    a, k = c / sigma, int(d) + 1
    eps0 = a * (math.sqrt(k) + _first_guess_tail(delta)) + 0.5 * a * a
    return _epsilon_for(
        lambda e: _opdisc_log_delta(e, a, k), float(delta), eps0, sigma=sigma, d=d, D=D, tau=tau
    )


# --- Gaussian RSPM (SPEC section 10.2) ---------------------------------------------------------


def rspm_gaussian_sigma_paper(epsilon: float, delta: float, m: int) -> float:
    """The paper's sigma = 7 sqrt(m ln(1/delta)) / epsilon (SPEC section 4).

    Its proof has OPDisc's gap (SPEC 10.2): a release made with it records
    ``rspm_gaussian_epsilon(sigma, delta, m)``.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    check_shape("m", m)
    sigma = 7.0 * math.sqrt(int(m) * -math.log(delta)) / float(epsilon)
    return check_result("sigma_paper", sigma, epsilon=epsilon, delta=delta, m=m)


@dataclass(frozen=True)
class HalfNormalSum:
    """The law of S = |Z_1| + ... + |Z_m| on the lattice h Z, rounded up (S stochastically larger),
    exponentially tilted by theta, on a window of the lattice.

    Each |Z_k| is put on the upper end of its cell [(j - 1) h, j h), so the lattice variable
    dominates S; delta is increasing in S, so the delta computed from it is an upper bound on
    the exact one. Cells are small enough that the rounding moves S by at most m h <= 0.01
    (m <= 40; beyond, the window of 32 sqrt(m) + 20 is capped at MAX_LATTICE cells, and S moves
    by at most m h = m (32 sqrt(m) + 20) / MAX_LATTICE: still an upper bound, 1% of S's mean at
    m = 10^6).

    Tilting (``theta`` > 0) is what makes a tiny delta computable: delta is a sum over S's far
    tail, where the untilted probabilities are below the FFT's rounding (1e-16 of the peak).
    With one term's lattice masses p_j at x_j = j h and M = sum_j p_j e^(theta x_j), the tilted
    term q_j = p_j e^(theta x_j) / M has P(S = s) = M^m e^(-theta s) Q(S = s) exactly, where Q
    is the m-fold convolution of q; theta is chosen so that Q is centred on the part of the tail
    that matters, and Q is computed there to full relative precision.

    ``pmf[i]`` = Q(S = (start + i) h) (the m-fold cyclic convolution read on the window, so mass
    from outside the window only adds to it); ``log_mgf`` = log M (of the term lattice cut at
    theta + 40); ``log_outside`` bounds log Q(S outside the window) (Chernoff, from q's own
    moment generating function) and ``log_cut`` the log of the untilted mass, times
    e^(theta s), of the events where one term exceeds the cut. Both are added to delta, so
    nothing that is left out can make it smaller.
    """

    m: int
    step: float
    pmf: np.ndarray
    theta: float = 0.0
    start: int = 0
    log_mgf: float = 0.0
    log_outside: float = -math.inf
    log_cut: float = -math.inf

    @property
    def mass(self) -> float:
        return float(self.pmf.sum())

    @property
    def values(self) -> np.ndarray:
        """The lattice values s of ``pmf``."""
        return (self.start + np.arange(len(self.pmf))) * self.step


#: The most cells a lattice window takes (a power of two near 4 million: 32 MB of floats).
MAX_LATTICE = 1 << 22
#: One term |Z| is kept on the lattice up to theta + TERM_CUT: beyond, its tilted density is
#: below e^-800 of the peak (and ``HalfNormalSum.log_cut`` bounds what is left out).
TERM_CUT = 40.0
_MEAN_HALF_NORMAL = math.sqrt(2.0 / math.pi)


def _window_half_width(m: int) -> float:
    """16 standard deviations of a tilted S (a tilted term has variance <= 1), plus 10."""
    return 16.0 * math.sqrt(m) + 10.0


def _lattice_step(m: int) -> float:
    return max(min(1e-3, 0.01 / m), 2.0 * _window_half_width(m) / MAX_LATTICE)


def half_normal_sum(m: int) -> HalfNormalSum:
    """The untilted lattice law of S = |Z_1| + ... + |Z_m| (``HalfNormalSum``, theta = 0)."""
    check_shape("m", m)
    return _tilted_half_normal_sum(int(m), 0)


def _tilt_index(s0: float, m: int) -> int:
    """The tilt that centres S on s0: m mu(theta) = s0, mu the mean of N(theta, 1) cut to
    [0, inf); rounded to a grid of step 1 / sqrt(m) (S's mean then misses s0 by at most
    sqrt(m) / 2, under one standard deviation of S), so that the root searches reuse a few
    lattices."""
    if s0 <= m * _MEAN_HALF_NORMAL:
        return 0
    target = s0 / m

    def excess(theta: float) -> float:
        log_phi = -0.5 * theta * theta - 0.5 * math.log(2 * math.pi)
        return theta + math.exp(log_phi - special.log_ndtr(theta)) - target

    theta = optimize.brentq(excess, 0.0, target, xtol=1e-6)
    return int(round(theta * math.sqrt(m)))


def _log_sum_exp(values: np.ndarray) -> float:
    return float(special.logsumexp(values)) if len(values) else -math.inf


@functools.lru_cache(maxsize=8)
def _tilted_half_normal_sum(m: int, tilt: int) -> HalfNormalSum:
    theta = tilt / math.sqrt(m)
    h = _lattice_step(m)
    J = int(math.ceil((theta + TERM_CUT) / h))
    x = np.arange(1, J + 1) * h
    # one term: mass of [(j-1) h, j h) put at j h, from log survival functions (no cancellation)
    log_sf = special.log_ndtr(-np.arange(0, J + 1) * h)
    with np.errstate(divide="ignore"):
        log_p = math.log(2.0) + log_sf[:-1] + np.log(-np.expm1(log_sf[1:] - log_sf[:-1]))
    log_w = log_p + theta * x
    log_mgf = _log_sum_exp(log_w)
    log_q = log_w - log_mgf
    q = np.exp(log_q)
    center = m * float(q @ x)
    half = _window_half_width(m)
    start = max(int(math.floor((center - half) / h)), 0)
    size = fft.next_fast_len(int(math.ceil((center + half) / h)) - start + 1, real=True)
    one = np.bincount(np.arange(1, J + 1) % size, weights=q, minlength=size)
    pmf = np.roll(fft.irfft(fft.rfft(one) ** m, n=size), -(start % size))
    np.maximum(pmf, 0.0, out=pmf)  # the FFT's rounding, +-1e-16 of the peak
    pmf.setflags(write=False)

    # Q(S outside the window), by Chernoff on q's moment generating function, over a few t
    def chernoff(edge: float, sign: float) -> float:
        gap = abs(edge - center)
        return min(
            m * _log_sum_exp(log_q + sign * t * x) - sign * t * edge
            for t in (gap / m * 2.0 ** (i / 2) for i in range(-4, 8))
        )

    log_outside = chernoff((start + size) * h, 1.0)
    if start > 0:
        log_outside = float(np.logaddexp(log_outside, chernoff(start * h, -1.0)))
    # the terms beyond the cut: sum_{x_j > cut} p_j e^(theta x_j) <= 2 e^(theta h + theta^2/2)
    # P(Z > cut - h - theta) (the cell's mass is at most h times the density at its left end);
    # any one of the m terms beyond it: m M^(m-1) times that (a union bound)
    log_tail = (
        math.log(2.0)
        + theta * h
        + 0.5 * theta * theta
        + float(special.log_ndtr(-(J * h - h - theta)))
    )
    log_cut = math.log(m) + (m - 1) * float(np.logaddexp(log_mgf, log_tail)) + log_tail
    return HalfNormalSum(
        m=m,
        step=h,
        pmf=pmf,
        theta=theta,
        start=start,
        log_mgf=log_mgf,
        log_outside=min(log_outside, 0.0),
        log_cut=log_cut,
    )


def _rspm_log_delta(epsilon: float, sigma: float, m: int) -> float:
    """log E[(1 - exp(-b (S - s0)))_+] over the lattice law of S, b = 2 / sigma,
    s0 = epsilon sigma / 2 - m / sigma (SPEC 10.2)."""
    b = 2.0 / sigma
    s0 = 0.5 * epsilon * sigma - m / sigma
    if math.isinf(b) or s0 == -math.inf:
        return 0.0  # an infinite loss: delta = 1
    if s0 == math.inf:
        return -math.inf
    h = _lattice_step(m)
    t = s0 - m * h  # S_lattice <= S + m h
    if t > m * _MEAN_HALF_NORMAL:
        # Chernoff: P(S > t) <= (2 Phi(u) e^(u^2/2))^m e^(-u t) at u = t / m
        chernoff = m * (math.log(2.0) + float(special.log_ndtr(t / m))) - 0.5 * t * (t / m)
        if chernoff < LOG_NEGLIGIBLE:
            return chernoff  # below every float target: no lattice needed
    law = _tilted_half_normal_sum(m, _tilt_index(s0, m))
    theta = law.theta
    first = max(int(math.floor(s0 / h)) + 1 - law.start, 0)
    last = len(law.pmf)
    if theta > 0:  # beyond, e^(-theta (s - s0)) < e^-800
        last = min(last, first + int(math.ceil(-LOG_NEGLIGIBLE / (theta * h))) + 1)
    log_main = -math.inf
    if first < last:
        u = (law.start + np.arange(first, last)) * h - s0
        with np.errstate(divide="ignore"):
            terms = np.log(law.pmf[first:last]) - theta * u + np.log(-np.expm1(-b * u))
        log_main = _log_sum_exp(terms)
    log_delta = m * law.log_mgf - theta * s0 + float(np.logaddexp(log_main, law.log_outside))
    log_delta = float(np.logaddexp(log_delta, law.log_cut - theta * s0))
    return min(log_delta, 0.0)


def rspm_gaussian_log_delta(epsilon: float, sigma: float, *, m: int) -> float:
    """log of ``rspm_gaussian_delta``, finite down to deltas far below the smallest float."""
    check_real("epsilon", epsilon, ">= 0")
    check_real("sigma", sigma)
    check_shape("m", m)
    return _rspm_log_delta(float(epsilon), float(sigma), int(m))


def rspm_gaussian_delta(epsilon: float, sigma: float, *, m: int) -> float:
    """delta(epsilon; sigma) = E[(1 - exp(epsilon - (4 sigma S + 4 m) / (2 sigma^2)))_+].

    S = |Z_1| + ... + |Z_m| (SPEC 10.2). The loss is b (S - s0) + epsilon with b = 2 / sigma
    and s0 = (epsilon - 2 m / sigma^2) / b, so delta = E[(1 - exp(-b (S - s0)))_+], summed over
    ``HalfNormalSum``'s lattice law (an upper bound on the exact integral).
    """
    return math.exp(rspm_gaussian_log_delta(epsilon, sigma, m=m))


def _rspm_first_guess_tail(m: int, delta: float) -> float:
    """About where S's upper tail holds mass delta."""
    return m * _MEAN_HALF_NORMAL + math.sqrt(m) * _first_guess_tail(delta)


def rspm_gaussian_sigma(epsilon: float, delta: float, m: int) -> float:
    """The smallest sigma with rspm_gaussian_delta(epsilon; sigma) <= delta (SPEC 10.2).

    m = 46, delta = 1/15682^2: 1146 / 390 / 236 / 119.6 at epsilon = 0.1 / 0.3 / 0.5 / 1.
    Decreasing in epsilon and in delta, increasing in m.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    check_shape("m", m)
    return _rspm_sigma_cached(float(epsilon), float(delta), int(m))


@functools.lru_cache(maxsize=256)
def _rspm_sigma_cached(epsilon: float, delta: float, m: int) -> float:
    # first guess: the loss 2 S / sigma + 2 m / sigma^2 reaches epsilon where S's tail holds delta
    tail = _rspm_first_guess_tail(m, delta)
    sigma0 = (tail + math.sqrt(tail * tail + 2.0 * m * epsilon)) / epsilon
    sigma = _smallest_safe(lambda s: _rspm_log_delta(epsilon, s, m), delta, sigma0, "sigma")
    return check_result("sigma", sigma, epsilon=epsilon, delta=delta, m=m)


def rspm_gaussian_epsilon(sigma: float, delta: float, *, m: int) -> float:
    """The epsilon that SPEC 10.2 proves at ``delta`` for Gaussian RSPM with noise ``sigma``.

    Decreasing in sigma; 0.0 when sigma is so large that (0, delta) is proven.
    """
    check_delta(delta, allow_zero_delta=False)
    check_real("sigma", sigma)
    check_shape("m", m)
    sigma, m = float(sigma), int(m)
    eps0 = 2.0 * _rspm_first_guess_tail(m, delta) / sigma + 2.0 * m / sigma / sigma
    return _epsilon_for(
        lambda e: _rspm_log_delta(e, sigma, m), float(delta), eps0, sigma=sigma, m=m
    )


def rspm_laplace_scale(epsilon: float, m: int) -> float:
    """Laplace scale 2m / epsilon: pure epsilon-DP, unaffected by SPEC 10.2.

    The density ratio of a shift with l1 norm 2m is bounded pointwise by exp(2m / scale).
    """
    check_epsilon_delta(epsilon, 0.0)
    check_shape("m", m)
    return check_result("laplace_scale", 2.0 * int(m) / float(epsilon), epsilon=epsilon, m=m)


# --- OPSamp (SPEC sections 5 and 10.3) ---------------------------------------------------------


@dataclass(frozen=True)
class OPSampLambda:
    """lambda = sampling + stability + oracle, the l1 sensitivity bound of OPSamp's average.

    ``sampling`` is 2 d D_inf gamma (SPEC 10.3; the paper's 4 D_inf gamma bounds l_inf only),
    ``stability`` 250 eta G d^2 D_inf^2 and ``oracle`` alpha / (10 G) (SPEC section 5).
    """

    sampling: float
    stability: float
    oracle: float

    @property
    def total(self) -> float:
        return self.sampling + self.stability + self.oracle


def opsamp_m_floor(delta: float, d: int = 1) -> int:
    """The fewest oracle calls m with gamma = sqrt(ln(4d / delta) / (2m)) <= 1: ceil(ln(4d /
    delta) / 2). Lemma 9 needs gamma <= 1 (SPEC section 5); d = 1 gives the floor for every d."""
    return max(math.ceil(0.5 * (math.log(4 * d) - math.log(delta))), 1)


def _m_floor_reason(delta: float, d: int | None) -> str:
    where = f"d={d}, delta={delta!r}" if d is not None else f"delta={delta!r} and any d"
    return (
        f"so that gamma = sqrt(ln(4d / delta) / (2m)) <= 1, which Lemma 9 needs (SPEC "
        f"section 5), at {where}"
    )


def check_opsamp_m(m: int, delta: float, d: int | None = None) -> None:
    """m an integer >= ``opsamp_m_floor(delta, d)`` (d None: the floor for every d)."""
    check_shape("m", m)
    check_int("m", m, opsamp_m_floor(delta, 1 if d is None else d), why=_m_floor_reason(delta, d))


def opsamp_gamma_m(
    epsilon: float,
    delta: float,
    n: int,
    d: int,
    D_inf: float,
    *,
    gamma: float | None = None,
    m: int | None = None,
) -> tuple[float, float, int]:
    """(gamma_raw, gamma, m): the paper's gamma capped at 1, or the one a user chose.

    m = ceil(ln(4d / delta) / (2 gamma^2)) (SPEC section 5). A user may give gamma in (0, 1]
    (m follows) or m (gamma = sqrt(ln(4d / delta) / (2 m)), the smallest gamma that m calls
    support): a smaller gamma buys a smaller lambda with more oracle calls (SPEC 10.3). Lemma 9
    needs gamma <= 1, so a given m below ``opsamp_m_floor(delta, d)`` is refused, as gamma > 1
    is. m is decreasing in gamma and increasing in d and in 1 / delta.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    check_shape("n", n)
    check_shape("d", d)
    check_real("D_inf", D_inf)
    check_not_both("gamma", gamma, "m", m)
    D_2 = float(D_inf) * math.sqrt(d)
    # gamma_raw = sqrt(epsilon / n) d^(5/4) sqrt(D_2), as a log so that nothing overflows
    log_gamma_raw = (
        0.5 * (math.log(epsilon) - math.log(n)) + 1.25 * math.log(d) + 0.5 * math.log(D_2)
    )
    gamma_raw = math.exp(log_gamma_raw) if log_gamma_raw < _LOG_MAX else math.inf
    check_result(
        "gamma_raw = sqrt(epsilon / n) d^(5/4) sqrt(D_2)",
        gamma_raw,
        epsilon=epsilon,
        n=n,
        d=d,
        D_inf=D_inf,
    )
    log_term = math.log(4 * d) - math.log(delta)  # ln(4d / delta)
    if m is not None:
        check_opsamp_m(m, delta, d)
        return gamma_raw, math.sqrt(log_term / (2 * m)), int(m)
    if gamma is None:
        gamma = min(gamma_raw, 1.0)  # Lemma 9 needs gamma <= 1
    check_real("gamma", gamma, "(0, 1]")
    calls = log_term / (2 * gamma) / gamma  # gamma^2 can underflow to 0 where gamma is not
    if not calls <= 2**53:
        raise ValueError(
            f"m = ln(4d / delta) / (2 gamma^2) = {calls:.3g} oracle calls at "
            f"gamma={gamma!r}, delta={delta!r}, d={d}: more than 2**53"
        )
    return gamma_raw, gamma, math.ceil(calls)


def opsamp_eta(epsilon: float, n: int, d: int, *, G: float, beta: float, D_inf: float) -> float:
    """eta = sqrt(D_2 sqrt(2d) epsilon / (250 G^2 d^2 D_inf^2 (1 + ln(2/beta)) n)) (SPEC 5).

    Increasing in epsilon, decreasing in n and G.
    """
    check_real("epsilon", epsilon)
    check_shape("n", n)
    check_shape("d", d)
    check_real("G", G)
    check_real("beta", beta, "(0, 1)")
    check_real("D_inf", D_inf)
    epsilon, n, d, G, beta, D_inf = (
        float(epsilon),
        int(n),
        int(d),
        float(G),
        float(beta),
        float(D_inf),
    )
    D_2 = D_inf * math.sqrt(d)
    # divided one factor at a time, G out of the root: no product in a denominator can
    # underflow to 0 (D_inf = 1e-200 squared) where its factors are not
    eta = (
        math.sqrt(
            D_2
            * math.sqrt(2 * d)
            * epsilon
            / 250
            / d**2
            / D_inf
            / D_inf
            / (1 + math.log(2 / beta))
            / n
        )
        / G
    )
    return check_result("eta", eta, epsilon=epsilon, n=n, d=d, G=G, beta=beta, D_inf=D_inf)


def opsamp_lambda(
    d: int,
    *,
    gamma: float,
    eta: float,
    G: float,
    D_inf: float,
    alpha: float,
    calibration: str = "proven",
) -> OPSampLambda:
    """lambda's three terms. 'proven': sampling = 2 d D_inf gamma (SPEC 10.3). 'paper': the
    paper's 4 D_inf gamma, which bounds ||v||_inf, not the ||v||_1 the Laplace step needs.

    Increasing in gamma, eta and alpha.
    """
    check_shape("d", d)
    check_real("gamma", gamma, "(0, 1]")
    check_real("eta", eta)
    check_real("G", G)
    check_real("D_inf", D_inf)
    check_real("alpha", alpha, ">= 0")
    check_calibration(calibration, allowed=("proven", "paper"))
    d, gamma, eta, G, D_inf, alpha = (
        int(d),
        float(gamma),
        float(eta),
        float(G),
        float(D_inf),
        float(alpha),
    )
    sampling = 2 * d * D_inf * gamma if calibration == "proven" else 4 * D_inf * gamma
    terms = OPSampLambda(
        sampling=sampling, stability=250 * eta * G * d**2 * (D_inf * D_inf), oracle=alpha / (10 * G)
    )
    inputs = dict(d=d, gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha)
    check_result("lambda's sampling term", terms.sampling, **inputs)
    check_result("lambda's stability term", terms.stability, **inputs)
    check_result("lambda", terms.total, **inputs)  # the oracle term is finite and >= 0 too
    return terms


def opsamp_epsilon(laplace_scale: float, proven_lambda: float) -> float:
    """The epsilon a Laplace scale proves for an l1 sensitivity bound: lambda / scale (SPEC 10.3).

    The delta is unchanged: it is the probability that the bound fails (SPEC section 5).
    Decreasing in the scale.
    """
    check_real("laplace_scale", laplace_scale)
    check_real("proven_lambda", proven_lambda)
    return check_result(
        "epsilon",
        float(proven_lambda) / float(laplace_scale),
        laplace_scale=laplace_scale,
        proven_lambda=proven_lambda,
    )
