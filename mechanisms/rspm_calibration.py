"""RSPM's noise calibrations (SPEC sections 4 and 10.2): Gaussian RSPM's paper sigma, the delta a
sigma proves (on ``HalfNormalSum``'s lattice law of S = |Z_1| + ... + |Z_m|), the proven sigma
and the epsilon a sigma proves; Laplace RSPM's scale.

The privacy loss of a shift with entries +-2 under Gaussian noise of scale sigma is bounded by
(4 sigma S + 4 m) / (2 sigma^2); delta(epsilon) = E[(1 - exp(epsilon - loss))_+], computed as a
logarithm. The root searches and the contract are ``mechanisms.calibration``'s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

import numpy as np
from scipy import fft, optimize, special

from core.validation import check_real, check_result, check_shape
from mechanisms.calibration import LOG_NEGLIGIBLE, epsilon_for, first_guess_tail, smallest_safe
from mechanisms.privacy import ApproximateTarget, PrivacyTarget


def rspm_gaussian_sigma_paper(target: ApproximateTarget, m: int) -> float:
    """The paper's sigma = 7 sqrt(m ln(1/delta)) / epsilon (SPEC section 4) at the ``target``.

    Its proof has OPDisc's gap (SPEC 10.2): a release made with it records
    ``rspm_gaussian_epsilon(sigma, delta, m)``.
    """
    check_shape("m", m)
    epsilon, delta = target.epsilon, target.delta
    sigma = 7.0 * math.sqrt(int(m) * -math.log(delta)) / epsilon
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
    """log(sum(exp(values))) of a 1-d float array, as ``scipy.special.logsumexp`` computes it.

    The same steps in the same order (the maximum's terms set apart, the rest shifted by it and
    summed, then log1p; the direct sum where that is not finite), so the same float; without
    its array-API dispatch and its second pass of exp, which made it a third of the calibrations'
    time on lattices of millions of cells.
    """
    if not len(values):
        return -math.inf
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        top = values.max()
        at_top = values == top
        count = np.float64(np.count_nonzero(at_top))
        rest = np.exp(np.where(at_top, -np.inf, values) - top).sum()
        if rest != 0:
            rest = rest / count
        out = np.log1p(rest) + np.log(count) + top
        if not np.isfinite(out):
            out = np.log(np.exp(values).sum())
    return float(out)


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
    return m * _MEAN_HALF_NORMAL + math.sqrt(m) * first_guess_tail(delta)


def rspm_gaussian_sigma(target: ApproximateTarget, m: int) -> float:
    """The smallest sigma with rspm_gaussian_delta(epsilon; sigma) <= delta at the ``target``
    (epsilon, delta) (SPEC 10.2).

    m = 46, delta = 1/15682^2: 1146 / 390 / 236 / 119.6 at epsilon = 0.1 / 0.3 / 0.5 / 1.
    Decreasing in epsilon and in delta, increasing in m.
    """
    check_shape("m", m)
    return _rspm_sigma_cached(target.epsilon, target.delta, int(m))


@functools.lru_cache(maxsize=256)
def _rspm_sigma_cached(epsilon: float, delta: float, m: int) -> float:
    # first guess: the loss 2 S / sigma + 2 m / sigma^2 reaches epsilon where S's tail holds delta
    tail = _rspm_first_guess_tail(m, delta)
    sigma0 = (tail + math.sqrt(tail * tail + 2.0 * m * epsilon)) / epsilon
    sigma = smallest_safe(lambda s: _rspm_log_delta(epsilon, s, m), delta, sigma0, "sigma")
    return check_result("sigma", sigma, epsilon=epsilon, delta=delta, m=m)


def rspm_gaussian_epsilon(sigma: float, delta: float, *, m: int) -> float:
    """The epsilon that SPEC 10.2 proves at ``delta`` for Gaussian RSPM with noise ``sigma``.

    Decreasing in sigma; 0.0 when sigma is so large that (0, delta) is proven.
    """
    check_real("delta", delta, "(0, 1)")  # the delta an epsilon is proven at (a query)
    check_real("sigma", sigma)
    check_shape("m", m)
    return _rspm_epsilon_cached(float(sigma), float(delta), int(m))


@functools.lru_cache(maxsize=256)
def _rspm_epsilon_cached(sigma: float, delta: float, m: int) -> float:
    # a root search of a second or more, asked again for every release at the same sigma
    eps0 = 2.0 * _rspm_first_guess_tail(m, delta) / sigma + 2.0 * m / sigma / sigma
    return epsilon_for(lambda e: _rspm_log_delta(e, sigma, m), delta, eps0, sigma=sigma, m=m)


def rspm_laplace_scale(target: PrivacyTarget, m: int) -> float:
    """Laplace scale 2m / epsilon at the ``target``'s epsilon: pure epsilon-DP, unaffected by
    SPEC 10.2.

    The density ratio of a shift with l1 norm 2m is bounded pointwise by exp(2m / scale).
    """
    check_shape("m", m)
    epsilon = target.epsilon
    return check_result("laplace_scale", 2.0 * int(m) / epsilon, epsilon=epsilon, m=m)
