"""The privacy of T adaptive rounds of a private selection (docs/synthetic.md, sections 2 and 4).

Each round's selection is eps0-DP, and its zCDP is rho_0 = eps0^2 / c with c by its ``rule``:

* ``"bounded_range"`` (c = 8): the exponential mechanism, eps0-bounded range (docs/synthetic.md
  2.1; Cesar and Rogers 2021, Lemma 3.2);
* ``"pure"`` (c = 2): any eps0-DP mechanism (Bun and Steinke 2016, Proposition 1.4), e.g. the
  Laplace RSPM selection (docs/synthetic.md 4.3).

T rounds compose adaptively:

    basic:  (T eps0, 0)-DP;
    zCDP:   rho = T eps0^2 / c, hence (rho + 2 sqrt(rho ln(1/delta)), delta)-DP for every delta.

The release records the smaller of the two at the target's delta. ``round_epsilon`` inverts it:
the largest eps0 whose guarantee over T rounds is the target (epsilon, delta).
"""

from __future__ import annotations

import math

from mechanisms.privacy import check_epsilon, check_epsilon_delta
from oracles.checks import check_choice, check_int, check_result

#: c of each per-round rule: an eps0 round is (eps0^2 / c)-zCDP (module docstring).
ZCDP_DIVISOR = {"bounded_range": 8.0, "pure": 2.0}


def zcdp_rho(round_epsilon: float, rounds: int, rule: str = "bounded_range") -> float:
    """rho of T eps0 rounds: T eps0^2 / c, c = 8 for the exponential mechanism (bounded range,
    docs/synthetic.md 2.1), 2 for a pure eps0-DP round (4.3)."""
    check_epsilon(round_epsilon)
    check_int("rounds", rounds)
    divisor = ZCDP_DIVISOR[check_choice("rule", rule, tuple(ZCDP_DIVISOR))]
    return rounds * round_epsilon**2 / divisor


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon of rho-zCDP at delta: rho + 2 sqrt(rho ln(1/delta)) (docs/synthetic.md 2.2)."""
    check_epsilon_delta(max(rho, 1e-300), delta, allow_zero_delta=False)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def zcdp_root(epsilon: float, delta: float) -> float:
    """sqrt(rho) of the rho with rho + 2 sqrt(rho ln(1/delta)) = epsilon: sqrt(ln(1/delta) +
    epsilon) - sqrt(ln(1/delta)), in the stable form epsilon / (sqrt(L + epsilon) + sqrt(L))."""
    log_term = math.log(1.0 / delta)
    return epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))


def zcdp_target(epsilon: float, delta: float) -> float:
    """The largest rho with rho + 2 sqrt(rho ln(1/delta)) <= epsilon (docs/synthetic.md 2.3)."""
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    rho = zcdp_root(epsilon, delta) ** 2
    while zcdp_epsilon(rho, delta) > epsilon:  # an ulp over, in floating point
        rho = math.nextafter(rho, 0.0)
    return rho


def total_epsilon(
    round_epsilon: float, rounds: int, delta: float, rule: str = "bounded_range"
) -> float:
    """The epsilon proven for T rounds at ``delta``: min(basic, zCDP) (module docstring)."""
    check_epsilon_delta(round_epsilon, delta, allow_zero_delta=True)
    check_int("rounds", rounds)
    basic = rounds * round_epsilon
    if delta == 0:
        return basic
    return min(basic, zcdp_epsilon(zcdp_rho(round_epsilon, rounds, rule), delta))


def round_epsilon(epsilon: float, delta: float, rounds: int, rule: str = "bounded_range") -> float:
    """The largest eps0 with ``total_epsilon(eps0, rounds, delta, rule) <= epsilon``.

    zCDP: sqrt(rho) = sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)) solves
    rho + 2 sqrt(rho ln(1/delta)) = epsilon, and eps0 = sqrt(c rho / T); basic: epsilon / T. The
    larger of the two meets the target by the bound that gives it.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=True)
    check_int("rounds", rounds)
    divisor = ZCDP_DIVISOR[check_choice("rule", rule, tuple(ZCDP_DIVISOR))]
    basic = epsilon / rounds
    if delta == 0:
        return check_result("eps0", basic, epsilon=epsilon, rounds=rounds)
    root = zcdp_root(epsilon, delta)
    zcdp = math.sqrt(divisor * root * root / rounds)
    eps0 = max(basic, zcdp)
    # the inverse in floating point may overshoot by an ulp: step down until the bound holds
    while total_epsilon(eps0, rounds, delta, rule) > epsilon:
        eps0 = math.nextafter(eps0, 0.0)
    return check_result("eps0", eps0, epsilon=epsilon, delta=delta, rounds=rounds)


__all__ = [
    "ZCDP_DIVISOR",
    "round_epsilon",
    "total_epsilon",
    "zcdp_epsilon",
    "zcdp_rho",
    "zcdp_root",
    "zcdp_target",
]
