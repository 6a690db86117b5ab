"""What every noise calibration shares: the contract, the calibration names and the root searches.

The papers' constants are kept to reproduce them, but their proofs fall short (SPEC section 10),
so every mechanism has three functions, each in its own module (``opdisc_calibration``,
``rspm_calibration``, ``opsamp_calibration``):

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

Every calibration function is pure: the same inputs give the same float, so a calibration can be
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
from typing import Callable

import numpy as np
from scipy import optimize

from core.validation import check_choice, check_result

CALIBRATIONS: tuple[str, ...] = ("proven", "paper", "paper_code")

#: Relative precision of every root search (sigma, lambda, epsilon). Roots are then moved to the
#: safe side by this much, so a proven sigma or epsilon is never below the exact root.
ROOT_RTOL = 1e-7

#: A log delta below this is below every positive float (log 5e-324 = -744.4) by a margin: no
#: target can be met more closely, so bounds that fall below it need no further precision.
LOG_NEGLIGIBLE = -800.0

LOG_MAX = math.log(np.finfo(float).max)  # 709.78: exp of more overflows
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

    t_hi = min(max(math.log(x0), _LOG_MIN), LOG_MAX - _LOG_STEP) if x0 > 0 else 0.0
    if g(t_hi) > 0:
        while True:
            t_lo, t_hi = t_hi, t_hi + _LOG_STEP
            if t_hi > LOG_MAX:
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


def smallest_safe(log_f: Callable[[float], float], target: float, x0: float, what: str) -> float:
    """The root of ``_root``, moved up by ROOT_RTOL steps until log_f(x) meets ``target``."""
    x = _root(log_f, math.log(target), x0, what) * (1 + ROOT_RTOL)
    for _ in range(10_000):  # the root's tolerance must never land on the unsafe side
        if _meets(log_f(x), target):
            return x
        x *= 1 + ROOT_RTOL
    raise RuntimeError(f"the {what} search did not converge near {x!r}")  # a bug, not an input


def epsilon_for(
    log_delta_of_eps: Callable[[float], float], delta: float, eps0: float, **inputs: float
) -> float:
    """Smallest epsilon >= 0 with delta(epsilon) <= delta (delta(epsilon) decreasing).

    0.0 when even epsilon = 0 is proven at ``delta`` (a noise level so large that the loss
    barely matters); ``eps0`` is a first guess.
    """
    if _meets(log_delta_of_eps(0.0), delta):
        return 0.0
    eps = smallest_safe(log_delta_of_eps, delta, eps0, "epsilon")
    return check_result("epsilon", eps, delta=delta, **inputs)


def first_guess_tail(delta: float) -> float:
    """About how far (in standard deviations) a tail holding mass delta reaches."""
    return math.sqrt(2.0 * max(-math.log(delta), 1.0))
