"""oracles.synthetic.data_player: the data player's best record, against a brute force written here on
random small universes (fixed seeds), with both signs of coefficient and the perturbation."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.problem import ConjunctionProblem
from oracles.contract.certificate import Status, budget_of
from oracles.contract.budget import Budget
from oracles.synthetic.data_player import EnumerationConjunctionOracle, HighsConjunctionOracle
from tests.oracles.limited import limited, on_limits


def _brute(problem: ConjunctionProblem) -> tuple[float, tuple[int, ...]]:
    """The best value and the first record reaching it, by a plain loop over the universe."""
    best, first = -math.inf, None
    for record in itertools.product(*(range(k) for k in problem.levels)):
        value = sum(problem.noise[a][v] for a, v in enumerate(record))
        for conj, coef in zip(problem.conjunctions, problem.coefs):
            value += coef * all(record[a] == v for a, v in conj)
        if value > best + 1e-12:
            best, first = value, record
    return best, first


def _random_problem(rng, integer_noise: bool = False) -> ConjunctionProblem:
    m = int(rng.integers(1, 5))
    levels = tuple(int(k) for k in rng.integers(2, 5, size=m))
    conjunctions = []
    for _ in range(int(rng.integers(1, 9))):
        attrs = rng.choice(m, size=int(rng.integers(1, m + 1)), replace=False)
        conjunctions.append(tuple((int(a), int(rng.integers(levels[a]))) for a in attrs))
    coefs = rng.integers(-3, 4, size=len(conjunctions)).astype(float)
    if integer_noise:  # ties on purpose: the tie rule decides
        noise = tuple(rng.integers(0, 2, size=k).astype(float) for k in levels)
    else:
        noise = tuple(rng.exponential(0.5, size=k) for k in levels)
    return ConjunctionProblem(levels, conjunctions, coefs, noise)


@pytest.mark.parametrize("integer_noise", [False, True], ids=["exponential", "ties"])
def test_both_oracles_find_the_brute_force_optimum_on_random_universes(integer_noise):
    rng = np.random.default_rng(20261124 + integer_noise)
    highs, enum = HighsConjunctionOracle(), EnumerationConjunctionOracle()
    for _ in range(120):
        problem = _random_problem(rng, integer_noise)
        best, first = _brute(problem)
        e, h = enum.solve(problem, Budget.unlimited()), highs.solve(problem, budget_of(highs))
        assert tuple(e.record) == first  # enumeration: the first record in lexicographic order
        assert e.certificate.certified and e.certificate.objective == pytest.approx(-best)
        assert h.certificate.certified, h.certificate
        assert problem.values(h.record)[0] == pytest.approx(best, abs=1e-9)  # any optimum


def test_a_negative_coefficient_avoids_the_conjunction():
    problem = ConjunctionProblem((2, 2), [((0, 1), (1, 1))], [-5.0], (np.array([0.0, 1.0]),) * 2)
    for oracle in (EnumerationConjunctionOracle(), HighsConjunctionOracle()):
        solution = oracle.solve(problem, Budget.unlimited())
        assert problem.values(solution.record)[0] == 1.0  # (1, 0) or (0, 1), never (1, 1)
        assert tuple(solution.record) != (1, 1)


def test_a_limit_reached_is_not_certified():
    rng = np.random.default_rng(3)
    problem = _random_problem(rng)
    solution = on_limits(limited(HighsConjunctionOracle(), 1e-9), problem)
    assert solution.certificate.status in (Status.OPTIMAL, Status.TIME_LIMIT, Status.NO_SOLUTION)
    if solution.certificate.status is not Status.OPTIMAL:
        assert not solution.certificate.certified


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(levels=(), conjunctions=[], coefs=[]), "at least one attribute"),
        (dict(levels=(2, 0), conjunctions=[], coefs=[]), "levels\\[1\\] must be >= 1"),
        (dict(levels=(2, 2), conjunctions=[((0, 1), (0, 0))], coefs=[1]), "distinct attributes"),
        (dict(levels=(2, 2), conjunctions=[((0, 2),)], coefs=[1]), "outside the levels"),
        (dict(levels=(2, 2), conjunctions=[((0, 1),)], coefs=[1, 2]), "coefs must be 1 finite"),
        (dict(levels=(2,), conjunctions=[], coefs=[], noise=(np.ones(3),)), "one finite weight"),
    ],
)
def test_a_malformed_problem_is_refused(kwargs, message):
    with pytest.raises(ValueError, match=message):
        ConjunctionProblem(**kwargs)


def test_enumeration_refuses_a_universe_beyond_its_limit():
    problem = ConjunctionProblem((10, 10, 10), [((0, 1),)], [1.0])
    with pytest.raises(ValueError, match="1000 records, more than max_records=999"):
        EnumerationConjunctionOracle(max_records=999).solve(problem, Budget.unlimited())
