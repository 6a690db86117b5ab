"""Gurobi (``oracles.mip.gurobi``): the oracle contract, and Gurobi-specific behaviour: the pip
licence's size limit, the status map (SPEC section 8)."""

from __future__ import annotations

import pickle

import numpy as np
import pytest

from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import Status
from oracles.contract.budget import Budget
from oracles.enumerate import EnumerationOracle
from oracles.mip.gurobi import ERRNO_SIZE_LIMIT, GurobiOracle, LicenceLimitError, map_status
from oracles.mip.formulation import SolverUnavailableError, build_milp
from oracles.routing.registry import make_oracle
from tests.oracles.oracle_contract import OracleContract
from tests.oracles.limited import on_limits


class TestGurobi(OracleContract):
    """Every contract instance fits the pip licence (2,000 variables, 2,000 constraints)."""

    @classmethod
    def make_oracle(cls, **options):
        return make_oracle("gurobi", **options)


def over_the_licence() -> Problem:
    """1,100 separable rows over {-1,0,1}^2: 2,204 constraints > 2,000, easy for HiGHS."""
    rng = np.random.default_rng(1)
    X = rng.normal(size=(1100, 2))
    positive = X @ np.array([1.0, -1.0]) >= 1e-4
    return Problem(X, positive.astype(float), (~positive).astype(float), IntegerGrid(2, 1))


@pytest.fixture(scope="module")
def gurobipy():
    import gurobipy  # a dependency: its absence is a failure, not a skip

    return gurobipy


@pytest.fixture(scope="module")
def size_limited(gurobipy) -> None:
    """Skip, saying why, when the installed licence has no size limit; decided by gurobipy
    itself on a bare model of 2,001 variables, not by the code under test (the pip licence,
    which CI installs, is limited: there these tests always run)."""
    env = gurobipy.Env(params={"OutputFlag": 0})
    model = gurobipy.Model(env=env)
    model.addVars(2001)
    try:
        model.optimize()
    except gurobipy.GurobiError as err:
        if err.errno == ERRNO_SIZE_LIMIT:
            return
        raise
    finally:
        model.dispose()
        env.dispose()
    pytest.skip("an unrestricted Gurobi licence is installed: it has no size limit to test")


def test_a_model_above_the_licence_raises_licence_limit(size_limited):
    problem = over_the_licence()
    milp = build_milp(problem)
    try:
        GurobiOracle().solve(problem, Budget.unlimited())
    except LicenceLimitError as err:
        assert err.errno == ERRNO_SIZE_LIMIT
        assert err.n_vars == milp.n_cols and err.n_constraints == milp.n_rows > 2000
        assert str(err) == (
            f"errno 10010 (licence limit: {milp.n_cols} vars, {milp.n_rows} constraints)"
        )
        assert "size-limited" in err.detail
        assert isinstance(err, SolverUnavailableError)
    else:
        pytest.fail("a model above the size-limited licence was solved, not refused")


def test_auto_falls_back_to_highs_and_records_why(size_limited):
    problem = over_the_licence()
    milp = build_milp(problem)
    solution = on_limits(make_oracle("auto", time_limit=60.0), problem)
    cert = solution.certificate
    assert cert.backend == "highs"
    assert cert.fallback == (
        f"gurobi: errno 10010 (licence limit: {milp.n_cols} vars, {milp.n_rows} constraints)"
        " -> highs"
    )
    assert cert.to_params()["fallback"] == cert.fallback
    assert cert.status is Status.OPTIMAL and cert.certified
    assert cert.objective == pytest.approx(
        EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    )


def test_licence_error_survives_pickling():
    """Ray re-raises a task's exception in the driver: the fields must cross the boundary."""
    err = LicenceLimitError(10010, 2105, 4202, "Model too large")
    clone = pickle.loads(pickle.dumps(err))
    assert (clone.errno, clone.n_vars, clone.n_constraints, clone.detail) == (
        10010,
        2105,
        4202,
        "Model too large",
    )
    assert str(clone) == "errno 10010 (licence limit: 2105 vars, 4202 constraints)"
    assert str(LicenceLimitError(10009, 1, 2)) == "errno 10009 (no licence: 1 vars, 2 constraints)"


@pytest.mark.parametrize(
    "code, sol_count, expected",
    [
        (2, 1, Status.OPTIMAL),
        (2, 0, Status.ERROR),
        (9, 3, Status.TIME_LIMIT),
        (9, 0, Status.NO_SOLUTION),
        (8, 1, Status.TIME_LIMIT),
        (11, 0, Status.NO_SOLUTION),
        (3, 0, Status.ERROR),
        (4, 0, Status.ERROR),
        (12, 1, Status.ERROR),
        (13, 1, Status.ERROR),
    ],
)
def test_status_map(code, sol_count, expected):
    status, message = map_status(code, sol_count)
    assert status is expected
    assert (message == "") == (expected is Status.OPTIMAL)


def test_feasibility_tolerance_must_be_in_gurobis_range():
    with pytest.raises(ValueError, match="1e-10"):
        GurobiOracle(feasibility_tol=1e-10)
