"""The oracle contract's certificate (``oracles.contract.certificate``), which believes a solver's OPTIMAL only when
the exact objective at its answer agrees (SPEC section 8)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oracles.contract.certificate import (
    OBJECTIVE_TOL,
    Certificate,
    Oracle,
    Solution,
    Status,
    certify,
)
from oracles.contract.budget import Budget
from oracles.enumerate import EnumerationOracle
from tests.core.problems import small_problem


def _cert(status=Status.OPTIMAL, objective=1.0, bound=1.0):
    return Certificate(status, objective, bound, 0.5, "x")


def test_certified_means_optimal_with_a_gap_within_the_tolerance():
    assert _cert(objective=OBJECTIVE_TOL, bound=0.0).certified  # the edge
    assert not _cert(objective=2 * OBJECTIVE_TOL, bound=0.0).certified
    assert _cert(objective=1.0, bound=5.0).certified  # a negative gap is no obstacle here
    for status in (Status.TIME_LIMIT, Status.NO_SOLUTION, Status.INCONSISTENT, Status.ERROR):
        assert not _cert(status).certified
    params = _cert(objective=3.0, bound=2.5).to_params()
    assert params["gap"] == 0.5 and params["status"] == "optimal" and params["certified"] is False


def test_certify_believes_a_consistent_optimum_and_evaluates_it_exactly():
    problem = small_problem()
    w = np.array([1.0, 1.0])
    truth = problem.objective(w)  # 2.0, the minimum over the grid
    assert truth == EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    solution = certify(
        problem,
        w + 1e-12,
        status=Status.OPTIMAL,
        bound=truth,
        seconds=0.1,
        backend="b",
        solver_objective=truth + 1e-9,
        message="note",
    )
    cert = solution.certificate
    assert cert.certified and cert.objective == truth and cert.message == "note"
    assert solution.w.tolist() == [1.0, 1.0] and not solution.w.flags.writeable  # snapped


@pytest.mark.parametrize(
    "w, bound, solver_objective, why",
    [
        ([3.0, 0.0], 6.5, None, "w is outside the domain"),
        ([0.0, 0.0], 6.5, 5.0, "exact objective 6.5 != solver objective 5.0"),
        ([0.0, 0.0], 2.0, None, "exact objective 6.5 exceeds the proven bound 2.0"),
        ([1.0, 1.0], 3.0, None, "the proven bound 3.0 exceeds the exact objective 2.0"),
    ],
)
def test_certify_downgrades_an_optimum_it_cannot_confirm(w, bound, solver_objective, why):
    cert = certify(
        small_problem(),
        np.array(w),
        status=Status.OPTIMAL,
        bound=bound,
        seconds=0.0,
        backend="b",
        solver_objective=solver_objective,
        message="m",
    ).certificate
    assert cert.status is Status.INCONSISTENT and not cert.certified
    assert cert.message.startswith("m | ") and why in cert.message


def test_certify_leaves_any_other_status_as_the_solver_said():
    cert = certify(
        small_problem(),
        np.array([0.0, 0.0]),
        status=Status.TIME_LIMIT,
        bound=-50.0,
        seconds=1.0,
        backend="b",
    ).certificate
    assert cert.status is Status.TIME_LIMIT and cert.objective == 6.5 and cert.gap == 56.5
    assert cert.message == ""


def test_a_solution_freezes_its_weights_and_an_oracle_is_recognised_by_its_shape():
    solution = Solution([1, 2], _cert())
    assert solution.w.dtype == float and not solution.w.flags.writeable
    with pytest.raises(dataclasses.FrozenInstanceError):
        solution.w = np.zeros(2)
    assert isinstance(EnumerationOracle(), Oracle)
    assert not isinstance(object(), Oracle)
