"""Gurobi backend: the reference formulation (``oracles.mip.formulation``) solved by ``gurobipy``.

Quirks absorbed here:

* ``gurobipy`` is imported inside ``solve`` and the environment and model are built there and
  disposed before returning: Gurobi objects cannot be pickled, and the pipeline ships oracles
  to Ray tasks. The oracle itself is a frozen record of options.
* The pip package's licence is size-limited (at most 2,000 variables and 2,000 constraints,
  SPEC section 8): a larger model raises GurobiError errno 10010, and a missing licence errno
  10009. Both become ``LicenceLimitError``, carrying the errno and the model's size, so that
  the ``auto`` route (``oracles.routing.routes``) can fall back to a free solver and say so in the
  certificate. A missing gurobipy is a ``SolverUnavailableError`` too. Only the FIRST model of a solve may raise it:
  when the exact band cuts of a later round (``oracles.mip.formulation.solve_resolving_band``) take the
  model over the limit, Gurobi has already run, so the solve ends uncertified (ERROR, saying
  so) instead of being retried on another backend (SPEC section 8).
* Status map (SPEC section 8): OPTIMAL -> OPTIMAL with bound = ObjBound; a limit (time, nodes,
  iterations, solutions, work, memory, interrupt, objective limit) -> TIME_LIMIT with a
  solution, else NO_SOLUTION; infeasible or unbounded -> ERROR (the domain is never empty);
  NUMERIC, SUBOPTIMAL and the rest -> ERROR. Every answer goes through ``certify``.
* Progress (``oracles.contract.progress``): none from inside a Gurobi solve. Gurobi calls a Python
  callback at every event of every kind (there is no "log line" event to subscribe to alone),
  and each call takes the GIL from the solver's thread: with another Python thread busy, as in
  a Ray worker, a 1.5 s solve took 3.2 s. The sweep still shows the run and its elapsed time.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from core.problem import Problem
from core.validation import check_real
from oracles.contract.certificate import (
    OracleError,
    Solution,
    Status,
    certify,
    counts_cpu,
)
from oracles.contract.budget import Budget
from oracles.mip.formulation import (
    DEFAULT_MIP_ABS_GAP,
    DEFAULT_STRICT_EPS,
    Milp,
    RawSolve,
    SolverUnavailableError,
    feasibility_tol_for,
    solve_resolving_band,
)
from oracles.contract.stats import MipStats

#: GurobiError errno of a model too large for a size-limited licence, and of no licence.
ERRNO_SIZE_LIMIT = 10010
ERRNO_NO_LICENSE = 10009
LICENCE_ERRNOS = {ERRNO_SIZE_LIMIT: "licence limit", ERRNO_NO_LICENSE: "no licence"}

# Gurobi's status codes (gurobipy.GRB.Status), spelled out so that mapping needs no gurobipy.
_OPTIMAL = 2
_LIMIT_CODES = {
    6: "CUTOFF",
    7: "ITERATION_LIMIT",
    8: "NODE_LIMIT",
    9: "TIME_LIMIT",
    10: "SOLUTION_LIMIT",
    11: "INTERRUPTED",
    15: "USER_OBJ_LIMIT",
    16: "WORK_LIMIT",
    17: "MEM_LIMIT",
}
_INFEASIBLE_CODES = {3: "INFEASIBLE", 4: "INF_OR_UNBD", 5: "UNBOUNDED"}


class LicenceLimitError(SolverUnavailableError):
    """Gurobi's licence refused the model (errno 10010: too large; 10009: no licence).

    ``str(err)`` is ``errno 10010 (licence limit: N vars, M constraints)``, the text that
    the ``auto`` route records as the fallback reason; Gurobi's own message is ``detail``.
    """

    def __init__(self, errno: int, n_vars: int, n_constraints: int, detail: str = "") -> None:
        self.errno, self.n_vars, self.n_constraints = int(errno), int(n_vars), int(n_constraints)
        self.detail = detail
        kind = LICENCE_ERRNOS.get(self.errno, "licence error")
        super().__init__(
            f"errno {self.errno} ({kind}: {self.n_vars} vars, {self.n_constraints} constraints)"
        )

    def __reduce__(self):  # keep the fields across pickling (Ray re-raises remote errors)
        return (type(self), (self.errno, self.n_vars, self.n_constraints, self.detail))


def map_status(code: int, sol_count: int) -> tuple[Status, str]:
    """(Status, message) for a Gurobi status code and solution count (module docstring)."""
    if code == _OPTIMAL:
        if sol_count > 0:
            return Status.OPTIMAL, ""
        return Status.ERROR, "Gurobi reported OPTIMAL without a solution"
    if code in _LIMIT_CODES:
        status = Status.TIME_LIMIT if sol_count > 0 else Status.NO_SOLUTION
        return status, f"Gurobi stopped at a limit: {_LIMIT_CODES[code]}"
    if code in _INFEASIBLE_CODES:
        return Status.ERROR, (
            f"Gurobi reported {_INFEASIBLE_CODES[code]} although the domain is never empty: "
            "a formulation or numerical failure"
        )
    return Status.ERROR, f"Gurobi ended with status code {code}"


def _constraint_rows(milp: Milp) -> list[tuple[np.ndarray, str, np.ndarray]]:
    """(row indices, sense, right-hand side) blocks: equalities, then each finite side."""
    lo, hi = milp.row_lower, milp.row_upper
    equal = np.flatnonzero(lo == hi)
    upper = np.flatnonzero((lo != hi) & np.isfinite(hi))
    lower = np.flatnonzero((lo != hi) & np.isfinite(lo))
    return [(equal, "=", hi[equal]), (upper, "<", hi[upper]), (lower, ">", lo[lower])]


@dataclass(frozen=True)
class GurobiOracle:
    """Exact minimization of F over W by Gurobi on the reference MILP (``oracles.mip.formulation``).

    Args:
        strict_eps: the cap of each row's eps in ``z_u = 0 => <w, x_u> <= mu - eps_u``
            (``oracles.mip.formulation``, the strict side; on an IntegerGrid it never excludes a point).
        mip_abs_gap: MIPGapAbs (MIPGap is 0).
        feasibility_tol: FeasibilityTol and IntFeasTol (Gurobi's minimum is 1e-9); None (the
            default) picks them by domain (``oracles.mip.formulation.feasibility_tol_for``).
    """

    strict_eps: float = DEFAULT_STRICT_EPS
    mip_abs_gap: float = DEFAULT_MIP_ABS_GAP
    feasibility_tol: float | None = None
    name: str = "gurobi"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (Problem,)

    def __post_init__(self) -> None:
        check_real("strict_eps", self.strict_eps)
        check_real("mip_abs_gap", self.mip_abs_gap)
        if self.feasibility_tol is not None and not (1e-9 <= self.feasibility_tol <= 1e-2):
            raise ValueError(
                f"feasibility_tol must be in Gurobi's range [1e-9, 1e-2], "
                f"found {self.feasibility_tol!r}"
            )

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget) -> Solution:
        """The reference formulation on Gurobi within ``budget``: Gurobi's TimeLimit is what the
        budget has left at each solve, its Threads the budget's."""
        start = time.perf_counter()
        try:
            import gurobipy as gp
        except ImportError as err:
            raise SolverUnavailableError(f"gurobipy is not importable ({err})") from err

        rounds = 0

        def run(milp: Milp, left: Budget) -> RawSolve:
            nonlocal rounds
            rounds += 1
            try:
                return self._run(gp, milp, left)
            except LicenceLimitError as err:
                if rounds == 1:
                    raise  # the first model's size: the auto route may choose another backend
                return RawSolve(
                    Status.ERROR,
                    (
                        f"the band cuts of solve {rounds} took the model over Gurobi's licence "
                        f"({err}); not retried on another backend (SPEC section 8)"
                    ),
                    None,
                    None,
                    -math.inf,
                    MipStats(**milp.stats()),
                )

        result = solve_resolving_band(problem, run, strict_eps=self.strict_eps, budget=budget)
        return certify(
            problem,
            result.w,
            status=result.status,
            bound=result.bound,
            seconds=time.perf_counter() - start,
            backend=self.name,
            threads=budget.threads,
            solver_objective=result.solver_objective,
            message=result.message,
            stats=(result.stats,),
        )

    def _run(self, gp, milp: Milp, budget: Budget) -> RawSolve:
        """One Gurobi solve of ``milp`` on what ``budget`` has left when it starts optimizing;
        licence errors become ``LicenceLimitError``."""
        blocks = _constraint_rows(milp)
        n_constraints = sum(len(rows) for rows, _, _ in blocks)
        try:
            with gp.Env(empty=True) as env:
                env.setParam("OutputFlag", 0)
                env.start()
                with gp.Model(env=env) as model:
                    result = self._optimize(gp, model, milp, blocks, budget)
        except gp.GurobiError as err:
            if err.errno in LICENCE_ERRNOS:
                raise LicenceLimitError(err.errno, milp.n_cols, n_constraints, str(err)) from err
            raise OracleError(f"Gurobi failed with errno {err.errno}: {err}") from err
        code, sol_count, x, solver_objective, bound, solver_seconds = result
        status, message = map_status(code, sol_count)
        stats = MipStats(
            **milp.stats(),
            n_constraints=n_constraints,
            solver_status=code,
            solver_seconds=solver_seconds,
            max_violation=milp.max_violation(x) if x is not None else None,
        )
        if x is None:
            solver_objective = None
        if status is Status.ERROR or not math.isfinite(bound):
            bound = -math.inf
        return RawSolve(status, message, x, solver_objective, bound, stats)

    def _optimize(self, gp, model, milp: Milp, blocks, budget: Budget):
        """Load the Milp into ``model``, optimize, and read the answer back as plain values."""
        for param, value in (
            ("TimeLimit", budget.solver_seconds()),
            ("Threads", int(budget.threads)),
            ("MIPGap", 0.0),
            ("MIPGapAbs", float(self.mip_abs_gap)),
            ("FeasibilityTol", feasibility_tol_for(milp.problem, self.feasibility_tol)),
            ("IntFeasTol", feasibility_tol_for(milp.problem, self.feasibility_tol)),
        ):
            model.setParam(param, value)
        vtype = np.where(milp.integer, gp.GRB.INTEGER, gp.GRB.CONTINUOUS)
        x = model.addMVar(milp.n_cols, lb=milp.col_lower, ub=milp.col_upper, vtype=vtype)
        for rows, sense, rhs in blocks:
            if len(rows):
                model.addMConstr(milp.matrix[rows], x, sense, rhs)
        model.setMObjective(None, milp.cost, milp.offset, sense=gp.GRB.MINIMIZE)
        model.setParam("TimeLimit", budget.solver_seconds())  # what building the model left
        solve_start = time.perf_counter()
        model.optimize()  # no callback, even with a listener (module docstring)
        solver_seconds = time.perf_counter() - solve_start
        code, sol_count = int(model.Status), int(model.SolCount)
        values = np.asarray(x.X, dtype=float) if sol_count > 0 else None
        objective = float(model.ObjVal) if sol_count > 0 else None
        try:
            bound = float(model.ObjBound)
        except gp.GurobiError:  # no bound available (e.g. stopped before the root)
            bound = -math.inf
        return code, sol_count, values, objective, bound, solver_seconds


__all__ = [
    "ERRNO_NO_LICENSE",
    "ERRNO_SIZE_LIMIT",
    "GurobiOracle",
    "LicenceLimitError",
    "map_status",
]
