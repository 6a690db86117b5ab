"""The privacy of T adaptive rounds of a private selection (docs/synthetic.md, sections 2 and 4).

Each round's selection is eps0-DP, and its zCDP is rho_0 = eps0^2 / c with c by its ``rule``:

* ``"bounded_range"`` (c = 8): the exponential mechanism, eps0-bounded range (docs/synthetic.md
  2.1; Cesar and Rogers 2021, Lemma 3.2);
* ``"pure"`` (c = 2): any eps0-DP mechanism (Bun and Steinke 2016, Proposition 1.4), e.g. the
  Laplace RSPM selection (docs/synthetic.md 4.3).

T rounds compose adaptively:

    basic:  (T eps0, 0)-DP;
    zCDP:   rho = T eps0^2 / c, hence (zcdp_epsilon(rho, delta), delta)-DP for every delta: the
            least over the Renyi order alpha of Canonne, Kamath and Steinke's conversion (2020,
            Proposition 12), at most Bun and Steinke's rho + 2 sqrt(rho ln(1/delta)).

The release records the smaller of the two at the target's delta. ``round_epsilon`` inverts it:
the largest eps0 whose guarantee over T rounds is the target (epsilon, delta).
"""

from __future__ import annotations

import functools
import math

from core.validation import check_choice, check_int, check_result
from mechanisms.privacy import PrivacyTarget

#: A value computed by ``renyi_epsilon`` is raised by this fraction of its terms' size: far
#: above the rounding error of three terms and their sum (a few units of 2^-53 each).
CONVERSION_SLACK = 1e-12
#: The golden-section search looks within e^+-ORDER_SPAN of Bun and Steinke's alpha - 1.
ORDER_SPAN = 12.0
GOLDEN_STEPS = 64

#: c of each per-round rule: an eps0 round is (eps0^2 / c)-zCDP (module docstring).
ZCDP_DIVISOR = {"bounded_range": 8.0, "pure": 2.0}


def zcdp_rho(round_epsilon: float, rounds: int, rule: str = "bounded_range") -> float:
    """rho of T eps0 rounds: T eps0^2 / c, c = 8 for the exponential mechanism (bounded range,
    docs/synthetic.md 2.1), 2 for a pure eps0-DP round (4.3)."""
    check_int("rounds", rounds)
    divisor = ZCDP_DIVISOR[check_choice("rule", rule, tuple(ZCDP_DIVISOR))]
    return rounds * round_epsilon**2 / divisor


def classic_epsilon(rho: float, delta: float) -> float:
    """Bun and Steinke's conversion of rho-zCDP at delta: rho + 2 sqrt(rho ln(1/delta))
    (Proposition 1.3; docs/synthetic.md 2.2). An upper bound on ``zcdp_epsilon``."""
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def renyi_epsilon(rho: float, delta: float, log_order: float) -> float:
    """The epsilon that rho-zCDP proves at delta through the Renyi order alpha = 1 + e^t,
    t = ``log_order`` (Canonne, Kamath and Steinke 2020, Proposition 12; docs/synthetic.md 2.2):

        alpha rho + (ln(1/delta) + (alpha - 1) ln(1 - 1/alpha) - ln(alpha)) / (alpha - 1),

    rounded up by a relative ``CONVERSION_SLACK`` of its terms' size. Valid at every alpha > 1."""
    gap = math.exp(log_order)  # alpha - 1
    alpha = 1.0 + gap
    log_alpha = math.log1p(gap)
    a = alpha * rho
    b = (math.log(1.0 / delta) - log_alpha) / gap
    c = math.log1p(-1.0 / alpha)
    return a + b + c + CONVERSION_SLACK * (abs(a) + abs(b) + abs(c))


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon of rho-zCDP at delta (docs/synthetic.md 2.2): the least ``renyi_epsilon``
    over the Renyi order, found by a golden-section search on ln(alpha - 1), and never more than
    Bun and Steinke's ``classic_epsilon`` (whose order is tried too). Any order gives a valid
    epsilon, so the search's accuracy changes how tight it is, never whether it holds.
    rho >= 0 and delta in (0, 1) come from a checked target (``PrivacyTarget``)."""
    if rho == 0.0:
        return 0.0
    log_term = math.log(1.0 / delta)

    def at(t: float) -> float:
        return renyi_epsilon(rho, delta, t)

    classic_order = 0.5 * math.log(log_term / rho) if log_term > 0 else 0.0  # alpha* - 1
    low, high = classic_order - ORDER_SPAN, classic_order + ORDER_SPAN
    ratio = (math.sqrt(5.0) - 1.0) / 2.0
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = at(a), at(b)
    for _ in range(GOLDEN_STEPS):
        if fa <= fb:
            high, b, fb = b, a, fa
            a = high - ratio * (high - low)
            fa = at(a)
        else:
            low, a, fa = a, b, fb
            b = low + ratio * (high - low)
            fb = at(b)
    # a negative value (a large delta) proves epsilon = 0 a fortiori
    return max(0.0, min(fa, fb, at(classic_order), classic_epsilon(rho, delta)))


@functools.lru_cache(maxsize=1024)
def zcdp_target(target: PrivacyTarget) -> float:
    """The largest rho (to a relative 1e-13) with ``zcdp_epsilon(rho, delta) <= epsilon`` at the
    ``target`` (epsilon, delta), delta > 0 (docs/synthetic.md 2.3): bisection from Bun and
    Steinke's root, which meets it already."""
    epsilon, delta = target.epsilon, target.delta
    log_term = math.log(1.0 / delta)
    low = (epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))) ** 2
    while low > 0 and zcdp_epsilon(low, delta) > epsilon:  # an ulp over, in floating point
        low = math.nextafter(low, 0.0)
    high = 2.0 * low + epsilon
    while zcdp_epsilon(high, delta) <= epsilon:
        low, high = high, 2.0 * high
    while high - low > 1e-13 * high:
        middle = 0.5 * (low + high)
        if zcdp_epsilon(middle, delta) <= epsilon:
            low = middle
        else:
            high = middle
    return low


def total_epsilon(
    round_epsilon: float, rounds: int, delta: float, rule: str = "bounded_range"
) -> float:
    """The epsilon proven for T rounds at ``delta``: min(basic, zCDP) (module docstring). eps0
    and delta come from a checked target (``round_epsilon``, ``PrivacyTarget``)."""
    check_int("rounds", rounds)
    basic = rounds * round_epsilon
    if delta == 0:
        return basic
    return min(basic, zcdp_epsilon(zcdp_rho(round_epsilon, rounds, rule), delta))


@functools.lru_cache(maxsize=1024)
def schedule_rounds(
    target: PrivacyTarget, round_epsilon: float, rule: str = "bounded_range"
) -> int:
    """T of a schedule from the budget (docs/synthetic.md 2.6): the most rounds of
    ``round_epsilon`` (> 0) whose ``total_epsilon`` is at most the ``target``, at least 1
    (one round then gets the whole budget: ``round_epsilon`` raises eps0 to it).

    zCDP pays for floor(c rho / eps0^2) rounds, rho = ``zcdp_target``; basic composition for
    floor(epsilon / eps0); the larger, stepped down until ``total_epsilon`` confirms it."""
    epsilon, delta = target.epsilon, target.delta
    divisor = ZCDP_DIVISOR[check_choice("rule", rule, tuple(ZCDP_DIVISOR))]
    rounds = math.floor(epsilon / round_epsilon)
    if delta > 0:
        rounds = max(rounds, math.floor(divisor * zcdp_target(target) / round_epsilon**2))
    while rounds > 1 and total_epsilon(round_epsilon, rounds, delta, rule) > epsilon:
        rounds -= 1
    return max(1, rounds)


@functools.lru_cache(maxsize=1024)
def round_epsilon(target: PrivacyTarget, rounds: int, rule: str = "bounded_range") -> float:
    """The largest eps0 with ``total_epsilon(eps0, rounds, delta, rule) <= epsilon`` at the
    ``target`` (epsilon, delta).

    zCDP: rho = ``zcdp_target(target)`` and eps0 = sqrt(c rho / T); basic: epsilon / T.
    The larger of the two meets the target by the bound that gives it.
    """
    epsilon, delta = target.epsilon, target.delta
    check_int("rounds", rounds)
    divisor = ZCDP_DIVISOR[check_choice("rule", rule, tuple(ZCDP_DIVISOR))]
    basic = epsilon / rounds
    if delta == 0:
        return check_result("eps0", basic, epsilon=epsilon, rounds=rounds)
    zcdp = math.sqrt(divisor * zcdp_target(target) / rounds)
    eps0 = max(basic, zcdp)
    # the inverse in floating point may overshoot by an ulp: step down until the bound holds
    while total_epsilon(eps0, rounds, delta, rule) > epsilon:
        eps0 = math.nextafter(eps0, 0.0)
    return check_result("eps0", eps0, epsilon=epsilon, delta=delta, rounds=rounds)


__all__ = [
    "CONVERSION_SLACK",
    "ZCDP_DIVISOR",
    "classic_epsilon",
    "renyi_epsilon",
    "round_epsilon",
    "schedule_rounds",
    "total_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
    "zcdp_target",
]
