"""mechanisms.synthetic.accounting: T rounds of the exponential mechanism, composed (docs/
synthetic.md, section 2), and the per-round epsilon calibrated to a target."""

from __future__ import annotations

import math

import pytest
from scipy.stats import norm

from mechanisms.privacy import ApproximateTarget, PrivacyTarget
from mechanisms.synthetic.accounting import (
    classic_epsilon,
    renyi_epsilon,
    round_epsilon,
    schedule_rounds,
    total_epsilon,
    zcdp_epsilon,
    zcdp_rho,
    zcdp_target,
)

RHOS = (1e-6, 1e-4, 0.01, 0.1, 1.0, 10.0)
DELTAS = (1e-12, 1.0 / 32561**2, 1e-6, 1e-3, 0.1)


def gaussian_delta(epsilon: float, rho: float) -> float:
    """The exact delta(epsilon) of the Gaussian mechanism that is exactly rho-zCDP (sensitivity
    1, sigma^2 = 1 / (2 rho)): Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu), mu = sqrt(2 rho)
    (Balle and Wang 2018, Theorem 8). A rho-zCDP mechanism, so no conversion of rho-zCDP may
    promise a smaller delta at any epsilon."""
    mu = math.sqrt(2.0 * rho)
    return float(
        norm.cdf(mu / 2 - epsilon / mu) - math.exp(epsilon) * norm.cdf(-mu / 2 - epsilon / mu)
    )


def test_the_zcdp_formulas_are_bun_and_steinkes_and_canonne_kamath_steinkes():
    assert zcdp_rho(0.2, 50) == pytest.approx(50 * 0.04 / 8)
    rho, delta = 0.25, 1e-5
    assert classic_epsilon(rho, delta) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)))
    alpha = 4.0  # Proposition 12 written out at one order
    expected = alpha * rho + (
        math.log(1e5) + (alpha - 1) * math.log(1 - 1 / alpha) - math.log(alpha)
    ) / (alpha - 1)
    assert renyi_epsilon(rho, delta, math.log(alpha - 1)) == pytest.approx(expected, rel=1e-11)
    assert renyi_epsilon(rho, delta, math.log(alpha - 1)) >= expected  # rounded up


@pytest.mark.parametrize("rho", RHOS)
@pytest.mark.parametrize("delta", DELTAS)
def test_the_conversion_never_promises_less_delta_than_a_rho_zcdp_gaussian_has(rho, delta):
    epsilon = zcdp_epsilon(rho, delta)
    assert gaussian_delta(epsilon, rho) <= delta
    # and it is the least over the orders it searched: no order on a fine grid does better
    orders = [math.log(1e-4) + i * 0.05 for i in range(600)]
    best = max(0.0, min(renyi_epsilon(rho, delta, t) for t in orders))
    assert epsilon <= best + 1e-9 * abs(best)
    assert epsilon <= classic_epsilon(rho, delta)


@pytest.mark.parametrize("epsilon", [0.1, 1.0, 3.0])
def test_the_tight_conversion_leaves_the_measured_rho_to_the_release(epsilon):
    # the figures at delta = 1/n^2 on Adult: 1.47x, 1.27x and 1.19x the classic rho
    delta = 1.0 / 32561**2
    log_term = math.log(1 / delta)
    classic = (epsilon / (math.sqrt(log_term + epsilon) + math.sqrt(log_term))) ** 2
    ratio = {0.1: 1.47, 1.0: 1.27, 3.0: 1.19}[epsilon]
    assert zcdp_target(ApproximateTarget(epsilon, delta)) / classic == pytest.approx(
        ratio, abs=0.005
    )
    assert zcdp_epsilon(zcdp_target(ApproximateTarget(epsilon, delta)), delta) <= epsilon


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("rounds", [1, 2, 10, 50, 400])
@pytest.mark.parametrize("delta", [0.0, 1e-9, 1e-5])
def test_the_calibrated_round_epsilon_meets_the_target_and_no_more(epsilon, rounds, delta):
    eps0 = round_epsilon(PrivacyTarget(epsilon, delta), rounds)
    assert total_epsilon(eps0, rounds, delta) <= epsilon
    assert total_epsilon(eps0 * (1 + 1e-9), rounds, delta) > epsilon * (1 - 1e-12)  # tight
    assert eps0 >= epsilon / rounds  # never worse than basic composition


def test_many_rounds_gain_from_zcdp_over_basic_composition():
    eps0 = round_epsilon(PrivacyTarget(1.0, 1e-5), 400)
    assert eps0 > 4 * (1.0 / 400)  # sqrt(T) against T
    assert total_epsilon(eps0, 400, 1e-5) == pytest.approx(1.0)
    assert 400 * eps0 > 1.0  # basic composition would not prove it


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 3.0])
@pytest.mark.parametrize("delta", [0.0, 1.0 / 32561**2, 1e-5])
def test_the_schedule_takes_every_round_the_budget_pays_for_and_no_more(epsilon, delta):
    eps0 = 0.016 * math.sqrt(epsilon)
    rounds = schedule_rounds(PrivacyTarget(epsilon, delta), eps0)
    assert total_epsilon(eps0, rounds, delta) <= epsilon
    assert total_epsilon(eps0, rounds + 1, delta) > epsilon
    assert round_epsilon(PrivacyTarget(epsilon, delta), rounds) >= eps0  # the leftover raises eps0


def test_a_round_worth_more_than_the_budget_gets_one_round():
    assert schedule_rounds(PrivacyTarget(0.1, 1e-5), 5.0) == 1


def test_pure_dp_without_delta_is_basic_composition():
    assert round_epsilon(PrivacyTarget(1.0, 0.0), 10) == pytest.approx(0.1)
    assert total_epsilon(0.1, 10, 0.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: round_epsilon(PrivacyTarget(0.0, 1e-5), 10), "epsilon must be finite and > 0"),
        (lambda: round_epsilon(PrivacyTarget(1.0, 1.0), 10), "delta must be in"),
        (lambda: round_epsilon(PrivacyTarget(1.0, 1e-5), 0), "rounds must be >= 1"),
        (lambda: total_epsilon(1.0, 2.5, 1e-5), "rounds must be an integer"),
    ],
)
def test_bad_values_are_refused_by_name(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
