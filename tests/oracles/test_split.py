"""The split solve in one process: the brute-force minimum, certified, the
window oracle's answer; a part searched below the minimum finds nothing and proves its bound; a
failed or unfinished part leaves the whole uncertified."""

from __future__ import annotations

import functools
import math
import pickle

import numpy as np
import pytest

from oracles.base import OBJECTIVE_TOL, Status
from oracles.branch import SearchStopped
from oracles.budget import Budget
from oracles.split import (
    PartResult,
    combine,
    plan_split,
    sequential_parts,
    solve_part_below,
)
from oracles.window import WindowOracle
from tests.oracles.fuzz import brute_force, fuzz_instance, parallel_instance
from tests.oracles.limited import limited, on_limits

#: OPDisc, exact ERM, RSPM and near-margin OPDisc (kinds cycle with period 4), both families.
CASES = [(family, seed) for family in (fuzz_instance, parallel_instance) for seed in range(12)]


@pytest.mark.parametrize(
    "family, seed", CASES, ids=[f"{f.__name__.split('_')[0]}-{s}" for f, s in CASES]
)
def test_the_split_solve_is_the_brute_force_minimum_and_the_window_oracles(family, seed):
    problem = family(seed)
    truth = brute_force(problem)
    split = _split(problem)
    cert = split.certificate
    assert cert.certified, cert.message
    assert float(truth.value_at(split.w) - truth.minimum) <= OBJECTIVE_TOL
    assert abs(cert.objective - float(truth.value_at(split.w))) <= 1e-9
    assert cert.extra["parts"] >= 1 and cert.extra["parts_unfinished"] == 0
    whole = on_limits(limited(WindowOracle(search_seconds=0.02), 20.0), problem)
    if whole.certificate.certified:
        assert abs(whole.certificate.objective - cert.objective) <= 1e-9


@pytest.mark.parametrize("seed", [0, 3, 4, 7])
def test_a_part_below_the_minimum_finds_nothing_and_its_bound_holds(seed):
    problem = fuzz_instance(seed)
    minimum = float(brute_force(problem).minimum)
    plan = plan_split(problem, Budget.unlimited(), parts=3, search_seconds=0.02)
    tables = pickle.loads(pickle.dumps(plan.tables))  # what Ray would ship
    tasks = [pickle.loads(pickle.dumps(task)) for task in plan.tasks]
    for task in tasks:
        below = solve_part_below(tables, task, minimum - 0.5)
        assert below.finished and below.w is None and below.value == math.inf
        assert below.bound == minimum - 0.5
        at = solve_part_below(tables, task, minimum)
        assert at.bound <= at.value and (at.w is None or at.value >= minimum - 1e-9)
    answers = [solve_part_below(tables, task, plan.incumbent) for task in tasks]
    assert min(r.value for r in answers) == pytest.approx(minimum, abs=1e-9)


def _fails_on(index, err, tables, task, best):
    if task.index == index:
        raise err
    return solve_part_below(tables, task, best)


@pytest.mark.parametrize(
    "err, status",
    [(RuntimeError("boom"), Status.ERROR), (SearchStopped("too many"), Status.TIME_LIMIT)],
)
def test_a_part_that_fails_leaves_the_whole_uncertified(err, status):
    problem = parallel_instance(3)  # its frontier holds three parts
    plan = plan_split(problem, Budget.unlimited(), parts=3, search_seconds=0.02)
    assert len(plan.tasks) > 1
    for index in (0, len(plan.tasks) - 1):
        results = sequential_parts(
            plan.tables, plan.tasks, plan.incumbent, solve=functools.partial(_fails_on, index, err)
        )
        assert [r.finished for r in results].count(False) == 1
        solution = combine(plan, results, seconds=0.0)
        assert not solution.certificate.certified
        assert solution.certificate.status is status
        assert solution.certificate.bound <= solution.certificate.objective
    # and all parts finished: certified (the same plan)
    assert combine(
        plan, sequential_parts(plan.tables, plan.tasks, plan.incumbent), seconds=0.0
    ).certificate.certified


def test_combine_wants_one_result_per_part():
    plan = plan_split(fuzz_instance(0), Budget.unlimited(), parts=3, search_seconds=0.02)
    results = sequential_parts(plan.tables, plan.tasks, plan.incumbent)
    with pytest.raises(ValueError, match="one result per part"):
        combine(plan, results[1:], seconds=0.0)


def test_a_failed_part_proves_nothing():
    result = PartResult.failed(3, RuntimeError("lost"))
    assert not result.finished and result.bound == -math.inf and result.w is None
    assert "RuntimeError: lost" in result.message


def test_the_order_of_the_parts_does_not_change_the_minimum():
    problem = parallel_instance(5)
    plan = plan_split(problem, Budget.unlimited(), parts=3, search_seconds=0.02)
    forward = combine(plan, sequential_parts(plan.tables, plan.tasks, plan.incumbent), seconds=0.0)
    backward = combine(
        plan, sequential_parts(plan.tables, plan.tasks[::-1], plan.incumbent), seconds=0.0
    )
    assert forward.certificate.certified and backward.certificate.certified
    assert forward.certificate.objective == backward.certificate.objective
    if _unique(problem):
        np.testing.assert_array_equal(forward.w, backward.w)


def _split(problem, map_parts=None, parts=3):
    """The split solve alone (no fallback), its parts run by ``map_parts``."""
    return on_limits(
        limited(WindowOracle(search_seconds=0.02, parts=parts, map_parts=map_parts), 60.0), problem
    )


def _unique(problem) -> bool:
    truth = brute_force(problem)
    return sum(v == truth.minimum for v in truth.values) == 1
