"""HiGHS (``oracles.mip.highs``): the oracle contract, and HiGHS-specific behaviour: status map,
thread quirk, time limit (SPEC section 8)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import oracles.mip.highs as highs_module
from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import Status, certify
from oracles.contract.budget import Budget
from oracles.mip.highs import HighsOracle, map_status
from oracles.routing.registry import make_oracle
from tests.oracles.oracle_contract import OracleContract, hard_instance, make_instance
from tests.oracles.limited import limited, on_limits


class TestHighs(OracleContract):
    @classmethod
    def make_oracle(cls, **options):
        return make_oracle("highs", **options)


@pytest.mark.parametrize(
    "model_status, has_solution, expected",
    [
        ("kOptimal", True, Status.OPTIMAL),
        ("kOptimal", False, Status.ERROR),
        ("kTimeLimit", True, Status.TIME_LIMIT),
        ("kTimeLimit", False, Status.NO_SOLUTION),
        ("kInterrupt", True, Status.TIME_LIMIT),
        ("kMemoryLimit", False, Status.NO_SOLUTION),
        ("kInfeasible", False, Status.ERROR),
        ("kUnboundedOrInfeasible", False, Status.ERROR),
        ("kSolveError", True, Status.ERROR),
    ],
)
def test_status_map(model_status, has_solution, expected):
    status, message = map_status(model_status, has_solution)
    assert status is expected
    assert (message == "") == (expected is Status.OPTIMAL)
    if expected is not Status.OPTIMAL:
        assert model_status in message


def test_tiny_time_limit_is_neither_optimal_nor_certified():
    problem = hard_instance()
    solution = on_limits(limited(HighsOracle(), 0.01), problem)
    cert = solution.certificate
    assert cert.status in (Status.NO_SOLUTION, Status.TIME_LIMIT), cert
    assert not cert.certified and "kTimeLimit" in cert.message
    assert problem.domain.contains(solution.w)
    if cert.status is Status.NO_SOLUTION:
        assert cert.solver_objective is None and cert.bound == -np.inf


def test_threads_are_fixed_by_the_first_solve_and_recorded():
    on_limits(limited(HighsOracle(), None, 1), make_instance(0))
    in_force = highs_module._THREADS_IN_FORCE
    assert in_force is not None
    same = on_limits(limited(HighsOracle(), None, in_force), make_instance(0)).certificate
    assert same.threads == in_force and "threads" not in same.message
    other = on_limits(limited(HighsOracle(), None, in_force + 1), make_instance(0)).certificate
    assert other.threads == in_force
    assert f"asked for threads={in_force + 1}" in other.message
    assert other.certified  # the note does not change the certificate


def test_a_false_optimum_becomes_inconsistent():
    """certify refuses a solver objective that disagrees with the exact F (SPEC section 8)."""
    problem = make_instance(0)
    honest = HighsOracle().solve(problem, Budget.unlimited())
    cert = honest.certificate
    lying = certify(
        problem,
        honest.w,
        status=Status.OPTIMAL,
        bound=cert.bound - 1.0,
        seconds=0.0,
        backend="highs",
        solver_objective=cert.objective - 1.0,
    )
    assert lying.certificate.status is Status.INCONSISTENT
    assert not lying.certificate.certified
    assert "solver objective" in lying.certificate.message


def test_a_w_that_misses_its_bound_becomes_inconsistent():
    problem = Problem(np.array([[1.0]]), [1.0], [0.0], IntegerGrid(1, 1))
    # w = -1 predicts -1 and pays 1; claiming a bound of 0 is false
    solution = certify(
        problem,
        np.array([-1.0]),
        status=Status.OPTIMAL,
        bound=0.0,
        seconds=0.0,
        backend="highs",
        solver_objective=1.0,
    )
    assert solution.certificate.status is Status.INCONSISTENT
    assert "exceeds the proven bound" in solution.certificate.message


@pytest.mark.parametrize("field, value", [("mip_abs_gap", 0.0), ("feasibility_tol", -1e-9)])
def test_bad_tolerances_are_refused(field, value):
    with pytest.raises(ValueError, match=field):
        HighsOracle(**{field: value})


def test_highs_is_a_release_without_the_1_14_presolve_false_optima():
    """HiGHS 1.14.0's MIP presolve certified min 2x + 3z, x + z >= 4.5, z integer, as 15 (the
    optimum is 9; ERGO-Code/HiGHS#2957, fixed in 1.15.0): pyproject requires highspy >= 1.15."""
    import highspy

    version = (highspy.HIGHS_VERSION_MAJOR, highspy.HIGHS_VERSION_MINOR)
    assert version >= (1, 15), version
    h = highspy.Highs()
    h.setOptionValue("output_flag", False)
    x = h.addVariable(lb=0.0, ub=10.0)
    z = h.addVariable(lb=0.0, ub=10.0, type=highspy.HighsVarType.kInteger)
    h.addConstr(x + z >= 4.5)
    h.setObjective(2 * x + 3 * z, sense=highspy.ObjSense.kMinimize)
    h.run()
    assert h.getInfo().objective_function_value == pytest.approx(9.0)


def test_the_first_highs_of_a_process_prints_its_banner_to_nowhere(capfd):
    """HiGHS writes its banner to file descriptor 1 (not sys.stdout) when the first Highs of a
    process is made; ``_without_banner`` makes that one with descriptor 1 on /dev/null, once."""
    made = []

    def make_highs():  # the banner as HiGHS writes it: to the descriptor, past sys.stdout
        os.write(1, b"Running HiGHS 1.16.0 (git hash: f3f113d)\n")
        made.append(1)

    highs_module._without_banner(make_highs)
    highs_module._without_banner(make_highs)  # once per process
    os.write(1, b"after\n")  # and the descriptor is back
    assert capfd.readouterr().out == "after\n"
    assert made == [1]


@pytest.mark.integration
def test_a_fresh_process_solving_with_highs_prints_nothing():
    """The real banner: a new process (HiGHS prints it once per process) solves one problem."""
    code = (
        "from oracles.routing.registry import make_oracle\n"
        "from oracles.contract.budget import Budget\n"
        "from tests.oracles.oracle_contract import make_instance\n"
        "make_oracle('highs', time_limit=30).solve(make_instance(0), Budget.from_limit(30))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    assert done.stdout == ""
