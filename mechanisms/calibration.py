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
recomputed from a release's recorded parameters. Root searches return the side of the root on
which the guarantee holds (sigma and epsilon rounded up, never down).
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from scipy import integrate, optimize, special

from oracles.checks import check_epsilon_delta

Calibration = Literal["proven", "paper", "paper_code"]
CALIBRATIONS: tuple[str, ...] = ("proven", "paper", "paper_code")

#: Relative precision of every root search (sigma, lambda, epsilon). Roots are then moved to the
#: safe side by this much, so a proven sigma or epsilon is never below the exact root.
ROOT_RTOL = 1e-7


def check_calibration(calibration: str, *, allowed: tuple[str, ...] = CALIBRATIONS) -> str:
    if calibration not in allowed:
        raise ValueError(f"calibration must be one of {list(allowed)}, found {calibration!r}")
    return calibration


def _check_sigma(sigma: float) -> None:
    if not (isinstance(sigma, (int, float, np.floating)) and math.isfinite(sigma) and sigma > 0):
        raise ValueError(f"sigma must be finite and > 0, found {sigma!r}")


def _smallest_above(f, target: float, lo: float, hi: float) -> float:
    """Smallest x in [lo, hi] with f(x) <= target, f decreasing; returned on the safe side."""
    if f(hi) > target:
        raise ValueError(f"no value up to {hi:.6g} meets {target:.3g}")
    if f(lo) <= target:
        return lo
    # search on log x: the quantities here span many orders of magnitude
    g = lambda t: math.log(max(f(math.exp(t)), 1e-300)) - math.log(target)  # noqa: E731
    t = optimize.brentq(g, math.log(lo), math.log(hi), xtol=ROOT_RTOL / 4, rtol=ROOT_RTOL / 4)
    x = math.exp(t) * (1 + ROOT_RTOL)
    while f(x) > target:  # the root search's tolerance must never land on the unsafe side
        x *= 1 + ROOT_RTOL
    return x


def _epsilon_for(delta_of_eps, delta: float) -> float:
    """Smallest epsilon >= 0 with delta_of_eps(epsilon) <= delta (delta_of_eps decreasing)."""
    if delta_of_eps(0.0) <= delta:
        return 0.0
    hi = 1.0
    while delta_of_eps(hi) > delta:
        hi *= 2.0
        if hi > 1e12:
            raise ValueError("no finite epsilon is proven at this delta")
    eps = optimize.brentq(lambda e: delta_of_eps(e) - delta, 0.0, hi, xtol=1e-12, rtol=1e-10)
    eps = eps * (1 + ROOT_RTOL) + 1e-12
    while delta_of_eps(eps) > delta:
        eps = eps * (1 + ROOT_RTOL) + 1e-12
    return eps


def _search_interval_sigma(delta_of_sigma, delta: float) -> tuple[float, float]:
    lo, hi = 1e-3, 1.0
    while delta_of_sigma(hi) > delta:
        lo, hi = hi, hi * 4.0
        if hi > 1e15:
            raise ValueError("no finite sigma meets this (epsilon, delta)")
    return min(lo, hi / 4.0), hi


# --- OPDisc (SPEC section 10.1) ----------------------------------------------------------------


def opdisc_shift_norm(D: float, tau: float) -> float:
    """c = 4 G D^2 / tau with G = 1/tau for the 0/1 loss over W_tau (SPEC 3 and 10.1)."""
    G = 1.0 / tau  # Lipschitz constant of the 0/1 loss over W_tau (SPEC section 3)
    return 4.0 * G * D**2 / tau


def opdisc_sigma_paper(epsilon: float, delta: float, tau: float, D: float) -> float:
    """sigma_paper = 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon), G = 1/tau (SPEC section 3).

    Algorithm 1's value. Its proof does not establish (epsilon, delta) (SPEC 10.1): a release
    made with it records ``opdisc_epsilon(sigma_paper, delta, ...)`` instead. Adult, epsilon = 1,
    delta = 1/n^2, tau = 1, D^2 = 23: about 708.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    if not (tau > 0 and D > 0):
        raise ValueError(f"tau and D must be > 0, found tau={tau!r}, D={D!r}")
    G = 1.0 / tau
    return 7.0 * G * D**2 * math.sqrt(math.log(1.0 / delta)) / (tau * epsilon)


def _log_chi_pdf(r: np.ndarray | float, k: int):
    """log density of the chi distribution with k degrees of freedom (the norm of N(0, I_k))."""
    return ((k - 1) * np.log(r) - 0.5 * np.square(r) - (0.5 * k - 1) * math.log(2.0)
            - special.gammaln(0.5 * k))  # fmt: skip


def opdisc_delta(epsilon: float, sigma: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """delta(epsilon; sigma) = E[(1 - exp(epsilon - (2 c sigma R + c^2) / (2 sigma^2)))_+].

    R ~ chi with d + 1 degrees of freedom, c = 4 D^2 / tau^2 (SPEC 10.1). With a = c / sigma the
    loss is a R + a^2 / 2, so the integrand is 1 - exp(-a (R - r0)) beyond r0 = (epsilon -
    a^2/2) / a: a one-dimensional integral of a smooth function against the chi density.
    """
    _check_sigma(sigma)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and >= 0, found {epsilon!r}")
    k = d + 1
    a = opdisc_shift_norm(D, tau) / sigma
    r0 = (epsilon - 0.5 * a * a) / a
    lo = max(r0, 0.0)
    mode = math.sqrt(k - 1)
    hi = max(lo, mode) + 40.0  # chi tail beyond mode + 40 is below 1e-300

    def integrand(r: float) -> float:
        if r <= 0:
            return 0.0
        return -math.expm1(-a * (r - r0)) * math.exp(_log_chi_pdf(r, k))

    points = [p for p in (mode, lo + 1.0 / a) if lo < p < hi]
    value, _ = integrate.quad(integrand, lo, hi, points=points or None, epsabs=0.0,
                              epsrel=1e-10, limit=500)  # fmt: skip
    return min(max(value, 0.0), 1.0)


def opdisc_sigma(epsilon: float, delta: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """The smallest sigma with opdisc_delta(epsilon; sigma) <= delta (SPEC 10.1, 'proven').

    d = 23, D^2 = 23, tau = 1, delta = 1/15682^2: 7712 / 2628 / 1593 / 809 at epsilon = 0.1 /
    0.3 / 0.5 / 1 (SPEC 10.1's table).
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    return _opdisc_sigma_cached(float(epsilon), float(delta), int(d), float(D), float(tau))


@functools.lru_cache(maxsize=256)
def _opdisc_sigma_cached(epsilon: float, delta: float, d: int, D: float, tau: float) -> float:
    f = lambda s: opdisc_delta(epsilon, s, d=d, D=D, tau=tau)  # noqa: E731
    lo, hi = _search_interval_sigma(f, delta)
    return _smallest_above(f, delta, lo, hi)


def opdisc_epsilon(sigma: float, delta: float, *, d: int, D: float, tau: float = 1.0) -> float:
    """The epsilon that SPEC 10.1 proves at ``delta`` for OPDisc run with noise ``sigma``."""
    check_epsilon_delta(1.0, delta, allow_zero_delta=False)
    _check_sigma(sigma)
    return _epsilon_for(lambda e: opdisc_delta(e, sigma, d=d, D=D, tau=tau), delta)


# --- Gaussian RSPM (SPEC section 10.2) ---------------------------------------------------------


def rspm_gaussian_sigma_paper(epsilon: float, delta: float, m: int) -> float:
    """The paper's sigma = 7 sqrt(m ln(1/delta)) / epsilon (SPEC section 4).

    Its proof has OPDisc's gap (SPEC 10.2): a release made with it records
    ``rspm_gaussian_epsilon(sigma, delta, m)``.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    _check_m(m)
    return 7.0 * math.sqrt(m * math.log(1.0 / delta)) / epsilon


def _check_m(m: int) -> None:
    if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or m < 1:
        raise ValueError(f"m must be an integer >= 1, found {m!r}")


@dataclass(frozen=True)
class HalfNormalSum:
    """The law of S = |Z_1| + ... + |Z_m| on the lattice h Z, rounded up (S stochastically larger).

    Each |Z_k| is put on the upper end of its cell [j h, (j + 1) h), so the lattice variable
    dominates S; delta is increasing in S, so the delta computed from it is an upper bound on
    the exact one. The m-fold convolution is an FFT power; cells are small enough that the
    rounding moves S by at most m h <= 0.01 (m <= 200; beyond, the lattice is capped at
    MAX_LATTICE cells and S moves by at most m top / MAX_LATTICE, still an upper bound).
    """

    m: int
    step: float
    pmf: np.ndarray  # pmf[j] = P(S_lattice = j * step)

    @property
    def mass(self) -> float:
        return float(self.pmf.sum())


MAX_LATTICE = 1 << 22


@functools.lru_cache(maxsize=16)
def half_normal_sum(m: int) -> HalfNormalSum:
    _check_m(m)
    mean, sd = m * math.sqrt(2 / math.pi), math.sqrt(m * (1 - 2 / math.pi))
    top = mean + 40.0 * sd + 20.0  # mass beyond is far below 1e-300
    # cells: S moves by at most m h <= 0.01, unless that needs more than 2^22 of them
    step = max(min(1e-3, 0.01 / m), top / MAX_LATTICE)
    size = int(math.ceil(top / step)) + 1
    size = 1 << (size - 1).bit_length()  # a power of two for the FFT
    # one |Z|: mass of [j h, (j+1) h) put at (j+1) h; |Z| <= 12 carries all but 4e-33 of it
    edges = np.arange(0, min(size, int(12.0 / step) + 2)) * step
    cdf = special.erf(edges / math.sqrt(2.0))
    one = np.zeros(size)
    one[1 : len(edges)] = np.diff(cdf)
    one[len(edges) - 1] += 1.0 - cdf[-1]  # the tail beyond 12, at the last cell (rounded down
    # from +inf, but it is 4e-33: below every delta this module is asked about)
    spectrum = np.fft.rfft(one)
    pmf = np.fft.irfft(spectrum**m, n=size)
    pmf = np.clip(pmf, 0.0, None)
    pmf.setflags(write=False)
    return HalfNormalSum(m=m, step=step, pmf=pmf)


def rspm_gaussian_delta(epsilon: float, sigma: float, *, m: int) -> float:
    """delta(epsilon; sigma) = E[(1 - exp(epsilon - (4 sigma S + 4 m) / (2 sigma^2)))_+].

    S = |Z_1| + ... + |Z_m| (SPEC 10.2). The loss is b (S - s0) + epsilon with b = 2 / sigma
    and s0 = (epsilon - 2 m / sigma^2) / b, so delta = E[(1 - exp(-b (S - s0)))_+].
    """
    _check_sigma(sigma)
    if not (math.isfinite(epsilon) and epsilon >= 0):
        raise ValueError(f"epsilon must be finite and >= 0, found {epsilon!r}")
    law = half_normal_sum(int(m))
    b = 2.0 / sigma
    s0 = (epsilon - 2.0 * m / sigma**2) / b
    start = max(int(math.floor(s0 / law.step)) + 1, 0)
    if start >= len(law.pmf):
        return 0.0
    s = np.arange(start, len(law.pmf)) * law.step
    weights = -np.expm1(-b * (s - s0))
    return float(min(max(np.dot(law.pmf[start:], np.clip(weights, 0.0, 1.0)), 0.0), 1.0))


def rspm_gaussian_sigma(epsilon: float, delta: float, m: int) -> float:
    """The smallest sigma with rspm_gaussian_delta(epsilon; sigma) <= delta (SPEC 10.2).

    m = 46, delta = 1/15682^2: 1146 / 390 / 236 / 119.6 at epsilon = 0.1 / 0.3 / 0.5 / 1.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    _check_m(m)
    return _rspm_sigma_cached(float(epsilon), float(delta), int(m))


@functools.lru_cache(maxsize=256)
def _rspm_sigma_cached(epsilon: float, delta: float, m: int) -> float:
    f = lambda s: rspm_gaussian_delta(epsilon, s, m=m)  # noqa: E731
    lo, hi = _search_interval_sigma(f, delta)
    return _smallest_above(f, delta, lo, hi)


def rspm_gaussian_epsilon(sigma: float, delta: float, *, m: int) -> float:
    """The epsilon that SPEC 10.2 proves at ``delta`` for Gaussian RSPM with noise ``sigma``."""
    check_epsilon_delta(1.0, delta, allow_zero_delta=False)
    _check_sigma(sigma)
    _check_m(m)
    return _epsilon_for(lambda e: rspm_gaussian_delta(e, sigma, m=m), delta)


def rspm_laplace_scale(epsilon: float, m: int) -> float:
    """Laplace scale 2m / epsilon: pure epsilon-DP, unaffected by SPEC 10.2.

    The density ratio of a shift with l1 norm 2m is bounded pointwise by exp(2m / scale).
    """
    check_epsilon_delta(epsilon, 0.0)
    _check_m(m)
    return 2.0 * m / epsilon


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


def opsamp_gamma_m(
    epsilon: float, delta: float, n: int, d: int, D_inf: float, *,
    gamma: float | None = None, m: int | None = None,
) -> tuple[float, float, int]:  # fmt: skip
    """(gamma_raw, gamma, m): the paper's gamma capped at 1, or the one a user chose.

    m = ceil(ln(4d / delta) / (2 gamma^2)) (SPEC section 5). A user may give gamma (m follows)
    or m (gamma = sqrt(ln(4d / delta) / (2 m)), the smallest gamma that m calls support): a
    smaller gamma buys a smaller lambda with more oracle calls (SPEC 10.3).
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, found n={n!r}, d={d!r}")
    if gamma is not None and m is not None:
        raise ValueError("give gamma or m, not both")
    D_2 = D_inf * math.sqrt(d)
    gamma_raw = math.sqrt(epsilon / n) * d**1.25 * math.sqrt(D_2)
    log_term = math.log(4 * d / delta)
    if m is not None:
        _check_m(m)
        return gamma_raw, math.sqrt(log_term / (2 * m)), int(m)
    if gamma is None:
        gamma = min(gamma_raw, 1.0)  # Lemma 9 needs gamma <= 1
    if not (math.isfinite(gamma) and 0 < gamma <= 1):
        raise ValueError(f"gamma must be in (0, 1], found {gamma!r}")
    return gamma_raw, gamma, math.ceil(log_term / (2 * gamma**2))


def opsamp_eta(epsilon: float, n: int, d: int, *, G: float, beta: float, D_inf: float) -> float:
    """eta = sqrt(D_2 sqrt(2d) epsilon / (250 G^2 d^2 D_inf^2 (1 + ln(2/beta)) n)) (SPEC 5)."""
    D_2 = D_inf * math.sqrt(d)
    return math.sqrt(D_2 * math.sqrt(2 * d) * epsilon
                     / (250 * G**2 * d**2 * D_inf**2 * (1 + math.log(2 / beta)) * n))  # fmt: skip


def opsamp_lambda(
    d: int, *, gamma: float, eta: float, G: float, D_inf: float, alpha: float,
    calibration: str = "proven",
) -> OPSampLambda:  # fmt: skip
    """lambda's three terms. 'proven': sampling = 2 d D_inf gamma (SPEC 10.3). 'paper': the
    paper's 4 D_inf gamma, which bounds ||v||_inf, not the ||v||_1 the Laplace step needs."""
    check_calibration(calibration, allowed=("proven", "paper"))
    sampling = 2 * d * D_inf * gamma if calibration == "proven" else 4 * D_inf * gamma
    return OPSampLambda(sampling=sampling, stability=250 * eta * G * d**2 * D_inf**2,
                        oracle=alpha / (10 * G))  # fmt: skip


def opsamp_epsilon(laplace_scale: float, proven_lambda: float) -> float:
    """The epsilon a Laplace scale proves for an l1 sensitivity bound: lambda / scale (SPEC 10.3).

    The delta is unchanged: it is the probability that the bound fails (SPEC section 5).
    """
    if not (laplace_scale > 0 and proven_lambda > 0):
        raise ValueError(f"need positive scale and lambda, found {laplace_scale!r}, "
                         f"{proven_lambda!r}")  # fmt: skip
    return proven_lambda / laplace_scale
