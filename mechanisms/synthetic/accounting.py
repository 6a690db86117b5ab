"""The privacy of T adaptive rounds of the exponential mechanism (docs/synthetic.md, section 2).

Each round's selection is the exponential mechanism with parameter eps0 over a candidate set
fixed in advance, its utility of sensitivity Delta = 1/n under replacing one record, sampled with
probability proportional to exp(eps0 u / (2 Delta)). It is eps0-DP and, being eps0-bounded
range, (eps0^2 / 8)-zCDP (docs/synthetic.md 2.1). T rounds compose adaptively:

    basic:  (T eps0, 0)-DP;
    zCDP:   rho = T eps0^2 / 8, hence (rho + 2 sqrt(rho ln(1/delta)), delta)-DP for every delta.

The release records the smaller of the two at the target's delta. ``round_epsilon`` inverts it:
the largest eps0 whose guarantee over T rounds is the target (epsilon, delta).
"""

from __future__ import annotations

import math

from mechanisms.privacy import check_epsilon, check_epsilon_delta
from oracles.checks import check_int, check_result


def zcdp_rho(round_epsilon: float, rounds: int) -> float:
    """rho of T rounds of the eps0-exponential mechanism: T eps0^2 / 8 (docs/synthetic.md 2.1)."""
    check_epsilon(round_epsilon)
    check_int("rounds", rounds)
    return rounds * round_epsilon**2 / 8.0


def zcdp_epsilon(rho: float, delta: float) -> float:
    """The epsilon of rho-zCDP at delta: rho + 2 sqrt(rho ln(1/delta)) (docs/synthetic.md 2.2)."""
    check_epsilon_delta(max(rho, 1e-300), delta, allow_zero_delta=False)
    return rho + 2.0 * math.sqrt(rho * math.log(1.0 / delta))


def total_epsilon(round_epsilon: float, rounds: int, delta: float) -> float:
    """The epsilon proven for T rounds at ``delta``: min(basic, zCDP) (module docstring)."""
    check_epsilon_delta(round_epsilon, delta, allow_zero_delta=True)
    check_int("rounds", rounds)
    basic = rounds * round_epsilon
    if delta == 0:
        return basic
    return min(basic, zcdp_epsilon(zcdp_rho(round_epsilon, rounds), delta))


def round_epsilon(epsilon: float, delta: float, rounds: int) -> float:
    """The largest eps0 with ``total_epsilon(eps0, rounds, delta) <= epsilon``.

    zCDP: sqrt(rho) = sqrt(ln(1/delta) + epsilon) - sqrt(ln(1/delta)) solves
    rho + 2 sqrt(rho ln(1/delta)) = epsilon, and eps0 = sqrt(8 rho / T); basic: epsilon / T. The
    larger of the two meets the target by the bound that gives it.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=True)
    check_int("rounds", rounds)
    basic = epsilon / rounds
    if delta == 0:
        return check_result("eps0", basic, epsilon=epsilon, rounds=rounds)
    log_term = math.log(1.0 / delta)
    root = epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))  # stable difference
    zcdp = math.sqrt(8.0 * root * root / rounds)
    eps0 = max(basic, zcdp)
    # the inverse in floating point may overshoot by an ulp: step down until the bound holds
    while total_epsilon(eps0, rounds, delta) > epsilon:
        eps0 = math.nextafter(eps0, 0.0)
    return check_result("eps0", eps0, epsilon=epsilon, delta=delta, rounds=rounds)


__all__ = ["round_epsilon", "total_epsilon", "zcdp_epsilon", "zcdp_rho"]
