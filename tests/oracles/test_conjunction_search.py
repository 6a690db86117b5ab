"""oracles.conjunction_search: the data player's exact search, against a brute force written
here on random small universes (fixed seeds): both signs of coefficient, ties (integer noise),
empty and single-attribute problems, and the batch form a round of the game uses."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oracles.base import Status
from oracles.conjunction_search import SearchConjunctionOracle, compile_problem, search
from oracles.conjunctions import ConjunctionProblem


def _brute_value(problem: ConjunctionProblem) -> float:
    best = -math.inf
    for record in itertools.product(*(range(k) for k in problem.levels)):
        value = sum(problem.noise[a][v] for a, v in enumerate(record))
        for conj, coef in zip(problem.conjunctions, problem.coefs):
            value += coef * all(record[a] == v for a, v in conj)
        best = max(best, value)
    return best


def _random_problem(rng, integer_noise: bool) -> ConjunctionProblem:
    m = int(rng.integers(1, 6))
    levels = tuple(int(k) for k in rng.integers(1, 5, size=m))
    conjunctions = []
    for _ in range(int(rng.integers(0, 12))):
        attrs = rng.choice(m, size=int(rng.integers(1, min(m, 3) + 1)), replace=False)
        conjunctions.append(tuple((int(a), int(rng.integers(levels[a]))) for a in attrs))
    coefs = rng.integers(-3, 4, size=len(conjunctions)).astype(float)
    if integer_noise:  # ties on purpose
        noise = tuple(rng.integers(0, 2, size=k).astype(float) for k in levels)
    else:
        noise = tuple(rng.exponential(1.0, size=k) for k in levels)
    return ConjunctionProblem(levels, tuple(conjunctions), coefs, noise)


@pytest.mark.parametrize("integer_noise", [True, False])
def test_the_search_finds_the_brute_forces_best_value(integer_noise):
    rng = np.random.default_rng(11 if integer_noise else 12)
    oracle = SearchConjunctionOracle()
    for _ in range(150):
        problem = _random_problem(rng, integer_noise)
        solution = oracle.solve(problem)
        best = _brute_value(problem)
        assert solution.certificate.objective == pytest.approx(-best, abs=1e-9)
        assert problem.values(solution.record)[0] == pytest.approx(best, abs=1e-9)
        assert solution.certificate.status is Status.OPTIMAL and solution.certificate.certified


def test_a_positive_conjunction_worth_more_than_the_noise_is_satisfied():
    problem = ConjunctionProblem(
        (3, 4, 2), (((0, 2), (1, 1), (2, 0)), ((1, 3),)), np.array([5.0, -10.0])
    )
    noise = np.array([1.0, 0, 0, 0, 0, 0, 2.0, 0, 0])  # prefers 0 on a, 3 on b: outweighed
    record, value, _ = search(compile_problem(problem), noise)
    assert record.tolist() == [2, 1, 0] and value == pytest.approx(5.0)


def test_the_batch_answers_each_noise_row_as_one_problem_would():
    rng = np.random.default_rng(5)
    oracle = SearchConjunctionOracle()
    problem = _random_problem(rng, integer_noise=False)
    while problem.size < 6:
        problem = _random_problem(rng, integer_noise=False)
    rows = rng.exponential(1.0, size=(8, sum(problem.levels)))
    records, certificate = oracle.solve_batch(problem, rows)
    bounds = np.cumsum((0,) + problem.levels)
    total = 0.0
    for row, record in zip(rows, records):
        noise = tuple(row[bounds[a] : bounds[a + 1]] for a in range(len(problem.levels)))
        one = ConjunctionProblem(problem.levels, problem.conjunctions, problem.coefs, noise)
        best = _brute_value(one)
        assert one.values(record)[0] == pytest.approx(best, abs=1e-9)
        total += best
    assert certificate.certified and -certificate.objective == pytest.approx(total, abs=1e-8)
    assert certificate.extra["records"] == 8 and certificate.extra["nodes"] >= 8
