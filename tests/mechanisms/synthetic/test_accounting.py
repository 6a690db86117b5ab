"""mechanisms.synthetic.accounting: T rounds of the exponential mechanism, composed (docs/
synthetic.md, section 2), and the per-round epsilon calibrated to a target."""

from __future__ import annotations

import math

import pytest

from mechanisms.synthetic.accounting import round_epsilon, total_epsilon, zcdp_epsilon, zcdp_rho


def test_the_zcdp_formulas_are_bun_and_steinkes():
    assert zcdp_rho(0.2, 50) == pytest.approx(50 * 0.04 / 8)
    rho, delta = 0.25, 1e-5
    assert zcdp_epsilon(rho, delta) == pytest.approx(rho + 2 * math.sqrt(rho * math.log(1e5)))


@pytest.mark.parametrize("epsilon", [0.1, 0.3, 1.0, 3.0, 10.0])
@pytest.mark.parametrize("rounds", [1, 2, 10, 50, 400])
@pytest.mark.parametrize("delta", [0.0, 1e-9, 1e-5])
def test_the_calibrated_round_epsilon_meets_the_target_and_no_more(epsilon, rounds, delta):
    eps0 = round_epsilon(epsilon, delta, rounds)
    assert total_epsilon(eps0, rounds, delta) <= epsilon
    assert total_epsilon(eps0 * (1 + 1e-9), rounds, delta) > epsilon * (1 - 1e-12)  # tight
    assert eps0 >= epsilon / rounds  # never worse than basic composition


def test_many_rounds_gain_from_zcdp_over_basic_composition():
    eps0 = round_epsilon(1.0, 1e-5, 400)
    assert eps0 > 4 * (1.0 / 400)  # sqrt(T) against T
    assert total_epsilon(eps0, 400, 1e-5) == pytest.approx(1.0)
    assert 400 * eps0 > 1.0  # basic composition would not prove it


def test_pure_dp_without_delta_is_basic_composition():
    assert round_epsilon(1.0, 0.0, 10) == pytest.approx(0.1)
    assert total_epsilon(0.1, 10, 0.0) == pytest.approx(1.0)


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: round_epsilon(0.0, 1e-5, 10), "epsilon must be finite and > 0"),
        (lambda: round_epsilon(1.0, 1.0, 10), "delta must be in"),
        (lambda: round_epsilon(1.0, 1e-5, 0), "rounds must be >= 1"),
        (lambda: total_epsilon(1.0, 2.5, 1e-5), "rounds must be an integer"),
    ],
)
def test_bad_values_are_refused_by_name(call, message):
    with pytest.raises((ValueError, TypeError), match=message):
        call()
