"""oracles.synthetic.data_search: the data player's exact search, against a brute force written
here on random small universes (fixed seeds): both signs of coefficient, ties (integer noise),
empty and single-attribute problems, and the batch form a round of the game uses; its budget
(a spent one, a node limit, a deadline in mid-batch on an injected clock) stopping it with
valid records, their exact values and a true bound under an uncertified certificate; and the
search resumed in chunks making the same nodes and record as in one go."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.problem import ConjunctionBatch, ConjunctionProblem
from oracles.contract import budget as budget_module
from oracles.contract.certificate import Status, budget_of
from oracles.contract.budget import DEFAULT_TIME_LIMIT, Budget, now
from oracles.synthetic.data_search import (
    SearchConjunctionOracle,
    SearchState,
    advance,
    compile_problem,
    run_batch,
    search,
)
from oracles.routing.registry import make_oracle
from oracles.contract.stats import ConjunctionStats


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
        solution = oracle.solve(problem, Budget.unlimited())
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


def _batch(oracle, problem, rows, budget=None):
    """(records, certificate) of one round: ``rows`` against ``problem``'s conjunctions."""
    budget = budget_of(oracle) if budget is None else budget
    solution = oracle.solve(ConjunctionBatch(problem, rows), budget)
    return solution.records, solution.certificate


def test_the_batch_answers_each_noise_row_as_one_problem_would():
    rng = np.random.default_rng(5)
    oracle = SearchConjunctionOracle()
    problem = _random_problem(rng, integer_noise=False)
    while problem.size < 6:
        problem = _random_problem(rng, integer_noise=False)
    rows = rng.exponential(1.0, size=(8, sum(problem.levels)))
    records, certificate = _batch(oracle, problem, rows)
    bounds = np.cumsum((0,) + problem.levels)
    total = 0.0
    for row, record in zip(rows, records):
        noise = tuple(row[bounds[a] : bounds[a + 1]] for a in range(len(problem.levels)))
        one = ConjunctionProblem(problem.levels, problem.conjunctions, problem.coefs, noise)
        best = _brute_value(one)
        assert one.values(record)[0] == pytest.approx(best, abs=1e-9)
        total += best
    assert certificate.certified and -certificate.objective == pytest.approx(total, abs=1e-8)
    assert (
        certificate.stat(ConjunctionStats).records == 8
        and certificate.stat(ConjunctionStats).nodes >= 8
    )


def _hard_problem(seed: int = 3) -> tuple[ConjunctionProblem, np.ndarray]:
    """A problem with every attribute of 2 levels or more and 6 noise rows: no search of it
    ends at its first leaf."""
    rng = np.random.default_rng(seed)
    problem = _random_problem(rng, integer_noise=False)
    while min(problem.levels) < 2 or len(problem.levels) < 3:
        problem = _random_problem(rng, integer_noise=False)
    return problem, rng.exponential(1.0, size=(6, sum(problem.levels)))


def _row_best(problem: ConjunctionProblem, row: np.ndarray) -> float:
    bounds = np.cumsum((0,) + problem.levels)
    noise = tuple(row[bounds[a] : bounds[a + 1]] for a in range(len(problem.levels)))
    return _brute_value(
        ConjunctionProblem(problem.levels, problem.conjunctions, problem.coefs, noise)
    )


def _check_stopped(problem, rows, records, certificate, unfinished):
    """A stopped batch: valid records, its exact value, a bound above the true best, uncertified."""
    assert ((records >= 0) & (records < np.array(problem.levels))).all()
    assert certificate.status is Status.TIME_LIMIT and not certificate.certified
    assert (
        certificate.stat(ConjunctionStats).unfinished == unfinished
        and "stopped at the" in certificate.message
    )
    values = [
        ConjunctionProblem(problem.levels, problem.conjunctions, problem.coefs).values(r)[0]
        + row[np.array(r) + np.cumsum((0,) + problem.levels)[:-1]].sum()
        for row, r in zip(rows, records)
    ]
    best = sum(_row_best(problem, row) for row in rows)
    assert -certificate.objective == pytest.approx(sum(values), abs=1e-9)
    assert -certificate.bound >= best - 1e-9 >= -certificate.objective - 1e-9


def test_a_spent_budget_answers_each_row_with_its_greedy_record_uncertified():
    problem, rows = _hard_problem()
    records, certificate = _batch(SearchConjunctionOracle(), problem, rows, Budget(now() - 1))
    _check_stopped(problem, rows, records, certificate, unfinished=len(rows))
    compiled = compile_problem(problem)
    for row, record in zip(rows, records):  # the first leaf: each level the best noise + gain
        state = SearchState.empty(compiled)
        assert not advance(compiled, np.ascontiguousarray(row), state, 0)
        assert state.record(compiled.order).tolist() == record.tolist()
    solution = SearchConjunctionOracle().solve(problem, Budget(now() - 1))  # one record too
    assert solution.certificate.status is Status.TIME_LIMIT and len(solution.record) == len(
        problem.levels
    )


def test_a_node_limit_stops_the_batch_where_it_is():
    problem, rows = _hard_problem(4)
    records, certificate = _batch(
        SearchConjunctionOracle(),
        problem,
        rows,
        Budget(math.inf, node_limit=len(problem.levels) + 1),
    )
    assert "node limit" in certificate.message
    _check_stopped(problem, rows, records, certificate, unfinished=len(rows))


def test_a_deadline_in_mid_batch_stops_the_search_under_way_and_the_rest(monkeypatch):
    # an injected clock: one second a look, the deadline passed at the fourth look (the first
    # is before any search); chunks of one node, so the first row gets its first leaf and two
    # nodes more, every later row its first leaf alone
    problem, rows = _hard_problem(5)
    ticks = iter(range(1000))
    monkeypatch.setattr(budget_module, "now", lambda: float(next(ticks)))
    answer = run_batch(compile_problem(problem), rows, Budget(deadline=2.5), chunk=1)
    assert next(ticks) == 4  # no look after the deadline passed
    assert not answer.done[1:].any()
    compiled = compile_problem(problem)
    for i, row in enumerate(rows):
        best = _row_best(problem, row)
        assert answer.uppers[i] >= best - 1e-9
        state = SearchState.empty(compiled)  # the same stops, replayed without a clock
        advance(compiled, np.ascontiguousarray(row), state, 1 if i == 0 else 0)
        if i == 0:
            for _ in range(2):
                advance(compiled, np.ascontiguousarray(row), state, 1)
        assert state.record(compiled.order).tolist() == answer.records[i].tolist()
        assert state.done == answer.done[i]
    assert (
        answer.nodes
        == sum(  # the first row's first leaf and 2 more, the others' leaves
            [len(problem.levels) + 2] + [len(problem.levels)] * (len(rows) - 1)
        )
        or answer.done[0]
    )


def test_the_search_in_chunks_is_the_search_in_one_go():
    # resuming the kernel after every 1 to 5 nodes makes the same nodes and the same record,
    # and every bound on the way is above the brute force's best
    rng = np.random.default_rng(21)
    for _ in range(60):
        problem = _random_problem(rng, integer_noise=bool(rng.integers(2)))
        compiled = compile_problem(problem)
        noise = np.concatenate(problem.noise)
        record, value, nodes = search(compiled, noise)
        best = _brute_value(problem)
        state = SearchState.empty(compiled)
        while not advance(compiled, noise, state, int(rng.integers(1, 6))):
            assert state.upper() >= best - 1e-9
        assert state.record(compiled.order).tolist() == record.tolist()
        assert (state.nodes, state.upper()) == (nodes, value)
        assert problem.values(record)[0] == pytest.approx(best, abs=1e-9)


def test_the_routes_time_limit_is_the_budget_of_a_call_without_one():
    assert make_oracle("conjunctions_search").time_limit == DEFAULT_TIME_LIMIT
    problem, rows = _hard_problem()
    _, certificate = _batch(make_oracle("conjunctions_search", time_limit=60.0), problem, rows)
    assert certificate.certified and certificate.stat(ConjunctionStats).unfinished == 0
    with pytest.raises(ValueError, match="time_limit"):
        make_oracle("conjunctions_search", time_limit=-1.0)


def test_a_batch_refuses_noise_rows_of_the_wrong_width():
    problem, rows = _hard_problem()
    with pytest.raises(ValueError, match="noises must be rows"):
        ConjunctionBatch(problem, rows[:, :-1])
