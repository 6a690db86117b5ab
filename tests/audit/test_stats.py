"""The audit's statistics: Clopper-Pearson bounds, eps_lb, event choice, and an end-to-end check
on randomized response, whose epsilon is known exactly."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from mechanisms.audit.core import NeighbouringPair
from mechanisms.audit.stats import (
    choose_event,
    cp_lower,
    cp_upper,
    epsilon_lower_bound,
    per_bound_alpha,
)
from tests.audit.audit_checks import audit_one


def test_per_bound_alpha_is_bonferroni_over_four_bounds():
    assert per_bound_alpha(0.95) == pytest.approx(0.0125)
    with pytest.raises(ValueError, match="confidence must be in"):
        per_bound_alpha(1.0)
    with pytest.raises(TypeError, match="confidence must be a real number"):
        per_bound_alpha("0.95")


@pytest.mark.parametrize("count,total", [(1, 10), (37, 200), (500, 1000), (9, 10)])
def test_one_sided_bounds_are_the_ends_of_the_two_sided_exact_interval(count, total):
    alpha = 0.0125
    ci = stats.binomtest(count, total).proportion_ci(confidence_level=1 - 2 * alpha, method="exact")
    assert float(cp_lower(count, total, alpha)) == pytest.approx(ci.low, rel=1e-9)
    assert float(cp_upper(count, total, alpha)) == pytest.approx(ci.high, rel=1e-9)


def test_bounds_at_the_edges():
    assert float(cp_lower(0, 100, 0.05)) == 0.0
    assert float(cp_upper(100, 100, 0.05)) == 1.0
    # no event seen: the upper bound is 1 - alpha^(1/N) (the "rule of three" at alpha = 0.05)
    assert float(cp_upper(0, 1000, 0.05)) == pytest.approx(1 - 0.05 ** (1 / 1000))


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5000), st.floats(0.0, 1.0), st.floats(1e-4, 0.2))
def test_bounds_bracket_the_estimate(total, fraction, alpha):
    count = int(round(fraction * total))
    low, high = float(cp_lower(count, total, alpha)), float(cp_upper(count, total, alpha))
    assert 0.0 <= low <= count / total <= high <= 1.0


def test_lower_bound_error_rate_is_at_most_alpha():
    # 4,000 binomial experiments with p = 0.03: P[cp_lower > p] <= alpha (CP is conservative)
    rng = np.random.default_rng(0)
    p, total, alpha = 0.03, 800, 0.05
    counts = rng.binomial(total, p, size=4000)
    misses = np.mean(cp_lower(counts, total, alpha) > p)
    assert misses <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 4000)
    misses_high = np.mean(cp_upper(counts, total, alpha) < p)
    assert misses_high <= alpha + 3 * math.sqrt(alpha * (1 - alpha) / 4000)


def test_epsilon_lower_bound_formula():
    total, alpha, delta = 10_000, 0.0125, 1e-3
    low = float(cp_lower(3000, total, alpha))
    high = float(cp_upper(1000, total, alpha))
    expected = math.log((low - delta) / high)
    assert float(epsilon_lower_bound(3000, 1000, total, delta, alpha)) == pytest.approx(expected)
    # p1_low <= delta gives 0; a ratio below 1 gives 0 (a lower bound of epsilon is >= 0)
    assert float(epsilon_lower_bound(5, 0, total, 0.01, alpha)) == 0.0
    assert float(epsilon_lower_bound(1000, 3000, total, 0.0, alpha)) == 0.0


def test_choose_event_discrete_takes_the_cells_with_the_largest_ratio():
    rng = np.random.default_rng(1)
    num = rng.choice(4, size=20_000, p=[0.1, 0.2, 0.3, 0.4])
    den = rng.choice(4, size=20_000, p=[0.01, 0.2, 0.39, 0.4])
    event = choose_event(num, den, kind="discrete", delta=0.0, alpha=0.0125, n_cells=4)
    assert event.cells == (0,)
    assert event.contains(np.array([0, 1, 0])).tolist() == [True, False, True]


def test_choose_event_continuous_takes_the_tail_towards_the_shift():
    rng = np.random.default_rng(2)
    num = rng.normal(1.0, 1.0, size=50_000)
    den = rng.normal(0.0, 1.0, size=50_000)
    event = choose_event(num, den, kind="continuous", delta=0.0, alpha=0.0125)
    assert event.upper and event.threshold > 1.0
    lower = choose_event(den, num, kind="continuous", delta=0.0, alpha=0.0125)
    assert not lower.upper and lower.threshold < 0.0


# --- end to end on randomized response: epsilon known exactly ------------------------------------


@dataclass(frozen=True)
class RandomizedResponse:
    """Reports the first label with probability e^eps / (1 + e^eps): exactly eps-DP."""

    epsilon: float
    kind: str = field(default="discrete", init=False)

    def sample(self, X, y, size, rng):
        keep = rng.random(size) < math.exp(self.epsilon) / (1 + math.exp(self.epsilon))
        bit = int(y[0] > 0)
        return np.where(keep, bit, 1 - bit)

    def grid(self, d):
        return np.array([[0.0], [1.0]])


PAIR = NeighbouringPair("flip", np.zeros((1, 1)), np.array([1]), np.zeros((1, 1)), np.array([-1]))


@pytest.mark.parametrize("true_epsilon", [0.5, 1.0, 2.0])
def test_audit_is_below_and_close_to_the_exact_epsilon_of_randomized_response(true_epsilon):
    report = audit_one(
        RandomizedResponse(true_epsilon),
        PAIR,
        200_000,
        mechanism="rr",
        variant="correct",
        epsilon=true_epsilon,
    )
    print(report.line())
    assert report.eps_lb <= true_epsilon
    assert report.eps_lb >= 0.9 * true_epsilon  # the audit has power where the truth is known


def test_a_plain_function_plugs_in_as_a_sampler():
    from mechanisms.audit.samplers import FunctionSampler

    def laplace_count(X, y, size, rng):  # sum of labels + Lap(2 / eps): eps-DP under replacement
        return float(np.sum(y)) + rng.laplace(0.0, 2.0 / 1.0, size=size)

    report = audit_one(
        FunctionSampler(laplace_count), PAIR, 200_000, mechanism="laplace", variant="correct"
    )
    print(report.line())
    assert 0.8 <= report.eps_lb <= 1.0
    with pytest.raises(ValueError, match="needs grid_function"):
        FunctionSampler(laplace_count, kind="discrete")


def test_audit_catches_randomized_response_claiming_half_its_epsilon():
    report = audit_one(RandomizedResponse(2.0), PAIR, 100_000, mechanism="rr", variant="mutant")
    print(report.line())
    assert report.exceeds_claim, report.line()
