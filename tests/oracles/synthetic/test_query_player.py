"""oracles.synthetic.query_player: the query player's best (conjunction, sign), against a brute force
written here on random small domains (fixed seeds), with integer noise (ties on purpose: the
enumeration's class order decides, the MILP must reach the optimal value) and continuous noise."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np
import pytest

from core.problem import SelectionProblem, conjunction_index
from oracles.contract.certificate import Status, budget_of
from oracles.contract.budget import Budget
from oracles.synthetic.query_player import (
    EnumerationSelectionOracle,
    HighsSelectionOracle,
    SearchSelectionOracle,
)
from tests.oracles.limited import limited, on_limits


def _class(levels, k):
    """Every conjunction in the class order: by size, attributes by combinations, levels in
    row-major order."""
    for size in range(1, k + 1):
        for attrs in itertools.combinations(range(len(levels)), size):
            for cell in itertools.product(*(range(levels[a]) for a in attrs)):
                yield tuple(zip(attrs, cell))


def _brute(problem: SelectionProblem):
    """The best value and the first candidate reaching it: (q, +1) for every q, then (q, -1)."""
    best, first = -math.inf, None
    for sign in (+1, -1):
        for q in _class(problem.levels, problem.max_literals):
            total = sum(
                c for x, c in zip(problem.records, problem.coefs) if all(x[a] == v for a, v in q)
            )
            value = sign * total + sum(problem.literal_noise[a][v] for a, v in q)
            value += problem.sign_noise if sign > 0 else 0.0
            if value > best:
                best, first = value, (q, sign)
    return best, first


def _random_problem(rng, integer_noise: bool) -> SelectionProblem:
    attributes = int(rng.integers(3, 6))
    levels = tuple(int(k) for k in rng.integers(2, 5, size=attributes))
    k = int(rng.integers(1, 4))
    n = int(rng.integers(1, 25))
    records = np.unique(rng.integers(0, levels, size=(n, attributes)), axis=0)
    if integer_noise:  # integer everything: ties on purpose
        coefs = rng.integers(-3, 4, size=len(records)).astype(float)
        noise = tuple(rng.integers(-1, 2, size=lv).astype(float) for lv in levels)
        sign_noise = float(rng.integers(-1, 2))
    else:  # the game's kind: counts minus a fraction, Laplace noise
        coefs = rng.integers(0, 4, size=len(records)) - rng.random(len(records)) * 3
        noise = tuple(rng.laplace(0, 2.0, size=lv) for lv in levels)
        sign_noise = float(rng.laplace(0, 2.0))
    return SelectionProblem(levels, k, records, coefs, noise, sign_noise)


@pytest.mark.parametrize("integer_noise", [False, True], ids=["laplace", "ties"])
def test_both_oracles_find_the_brute_force_optimum_on_random_domains(integer_noise):
    rng = np.random.default_rng(20261125 + integer_noise)
    highs, enum, search = (
        HighsSelectionOracle(),
        EnumerationSelectionOracle(),
        SearchSelectionOracle(),
    )
    for _ in range(200):
        problem = _random_problem(rng, integer_noise)
        best, (q, sign) = _brute(problem)
        e, h = enum.solve(problem, Budget.unlimited()), highs.solve(problem, budget_of(highs))
        for exact in (e, search.solve(problem, Budget.unlimited())):  # the first in the class order
            assert (exact.conjunction, exact.sign) == (q, sign)
            assert exact.certificate.certified
            assert exact.certificate.objective == pytest.approx(-best)
        assert h.certificate.certified, h.certificate
        assert problem.value(h.conjunction, h.sign) == pytest.approx(best, abs=1e-9)
        assert 1 <= len(h.conjunction) <= problem.max_literals
        if not integer_noise:  # no ties: the one maximizer
            assert (h.conjunction, h.sign) == (q, sign)


def test_a_search_that_skips_ties_finds_the_same_value_and_stops_on_zero_weights():
    rng = np.random.default_rng(20261126)
    search = SearchSelectionOracle()
    for _ in range(80):
        problem = dataclasses.replace(_random_problem(rng, integer_noise=True), first_on_ties=False)
        best, _ = _brute(problem)
        found = search.solve(problem, Budget.unlimited())
        assert problem.value(found.conjunction, found.sign) == best  # integers: exact
        assert found.certificate.certified and found.certificate.objective == -best
    # every weight 0: each conjunction ties; the tie-visiting search reaches the whole class
    levels = (3, 3, 3, 3, 3)
    zero = SelectionProblem(levels, 3, np.zeros((4, 5), dtype=int), np.zeros(4))
    nodes = [
        int(
            search.solve(
                dataclasses.replace(zero, first_on_ties=ties), Budget.unlimited()
            ).certificate.message.split()[0]
        )
        for ties in (False, True)
    ]
    assert nodes[0] == 2 * len(levels) < nodes[1]


def test_the_class_index_is_the_class_order():
    levels, k = (2, 3, 2, 4), 3
    for i, q in enumerate(_class(levels, k)):
        assert conjunction_index(levels, k, q) == i
    problem = SelectionProblem(levels, k, np.zeros((0, 4)), np.zeros(0))
    assert problem.candidates == 2 * (i + 1)


def test_the_milp_keeps_within_max_literals_and_one_literal_per_attribute():
    # every literal pays: unconstrained, the best answer would take them all
    levels = (3, 3, 3, 3)
    noise = tuple(np.full(3, 5.0) for _ in levels)
    problem = SelectionProblem(levels, 2, np.zeros((1, 4)), np.zeros(1), noise, 0.0)
    for oracle in (EnumerationSelectionOracle(), HighsSelectionOracle(), SearchSelectionOracle()):
        solution = oracle.solve(problem, Budget.unlimited())
        assert len(solution.conjunction) == 2 and solution.certificate.certified
        assert problem.value(solution.conjunction, solution.sign) == 10.0


def test_a_negative_sign_finds_the_most_overcounted_conjunction():
    # record (1, 1) has weight -10 (the synthetic data over-counts it), the rest +1
    records = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    problem = SelectionProblem((2, 2), 2, records, np.array([1.0, 1.0, 1.0, -10.0]))
    for oracle in (EnumerationSelectionOracle(), HighsSelectionOracle(), SearchSelectionOracle()):
        solution = oracle.solve(problem, Budget.unlimited())
        assert (solution.conjunction, solution.sign) == (((0, 1), (1, 1)), -1)


def test_a_limit_reached_is_not_certified():
    rng = np.random.default_rng(3)
    problem = _random_problem(rng, integer_noise=False)
    solution = on_limits(limited(HighsSelectionOracle(), 1e-9), problem)
    if solution.certificate.status is not Status.OPTIMAL:
        assert not solution.certificate.certified


@pytest.mark.parametrize(
    "kwargs, message",
    [
        (dict(levels=(), max_literals=1, records=[], coefs=[]), "at least one attribute"),
        (dict(levels=(2, 2), max_literals=3, records=[], coefs=[]), "max_literals must be <="),
        (dict(levels=(2, 2), max_literals=0, records=[], coefs=[]), "max_literals must be >= 1"),
        (dict(levels=(2, 2), max_literals=1, records=[[0, 2]], coefs=[1]), "within the levels"),
        (dict(levels=(2, 2), max_literals=1, records=[[0, 1]], coefs=[1, 2]), "1 finite"),
        (
            dict(levels=(2,), max_literals=1, records=[], coefs=[], literal_noise=(np.ones(3),)),
            "one finite weight",
        ),
    ],
)
def test_a_malformed_problem_is_refused(kwargs, message):
    with pytest.raises((ValueError, TypeError), match=message):
        SelectionProblem(**kwargs)


def test_enumeration_refuses_a_class_beyond_its_limit():
    problem = SelectionProblem((10, 10, 10), 2, np.zeros((0, 3)), np.zeros(0))
    with pytest.raises(ValueError, match="660 candidates, more than max_candidates=659"):
        EnumerationSelectionOracle(max_candidates=659).solve(problem, Budget.unlimited())
