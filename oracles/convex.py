"""Convex oracle for OPSamp with a convex surrogate loss (SPEC section 5).

OPSamp's k-th oracle call minimizes, over the box W = [lower, upper]^d,

    f(w) = (1/n) sum_i l(y_i <w, x_i>) - <sigma, w> / n

where l is a convex surrogate scaled into [0, 1] on W:

* ``logistic``: l(t) = log(1 + exp(-t)) / S, S = log(1 + exp(R));
* ``hinge``:    l(t) = max(0, 1 - t) / S,    S = 1 + R;

with R >= max_i max_{w in W} |<w, x_i>|, so that |t| <= R on W and l takes values in [0, 1].
S is ``scale``: OPSamp passes one computed from public bounds (the box and a declared feature
bound). Left out, it is computed from the data (``core.problem.box_radius``): then the loss, and hence the
privacy analysis, depends on the data, and the certificate says so (``scale_source``).

The answer comes with a certified bound, which OPSamp uses as its alpha (SPEC section 5: "alpha
must be a bound the oracle certifies"). For any subgradient s of the convex f at w and any
weights a in [0, 1] of the dual below, weak duality gives a lower bound on min_W f:

* logistic (smooth): the Frank-Wolfe gap g(w) = max_{v in W} <grad f(w), w - v>
  = <grad f(w), w> - sum_j min(lower grad_j, upper grad_j) satisfies f(w) - min_W f <= g(w)
  (convexity), so bound = f(w) - g(w);
* hinge (an LP, solved by HiGHS): max(0, u) = max_{a in [0,1]} a u gives, for every a in
  [0, 1]^rows, min_W f >= c sum_k m_k a_k - sum_j max(lower g_j, upper g_j) with
  c = 1 / (n S), g = c sum_k m_k a_k y_k x_k + sigma / n; a is read off the LP's dual values
  (clipped into [0, 1], so the bound is valid whatever the solver's accuracy).

Both bounds are evaluated here in floating point from the returned w, never taken from the
solver. Identical (x, y) rows are merged with their counts m_k: the objective is the same
function of w (SPEC section 2), and the solve is faster (Adult: 2,909 rows instead of 15,682).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from scipy.optimize import minimize

from core.problem import ConvexProblem, check_loss
from core.validation import check_int, check_real
from oracles.contract.certificate import (
    Certificate,
    OracleError,
    Solution,
    Status,
    counts_cpu,
)
from oracles.contract.budget import Budget
from oracles.contract.stats import ConvexStats

#: Default certified gap (normalized objective) below which a solve is OPTIMAL.
DEFAULT_TOL = 1e-6


# --- the oracle --------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConvexOracle:
    """Solves a ConvexProblem and certifies a duality gap (module docstring).

    Status OPTIMAL when the certified gap is <= ``tol``; otherwise TIME_LIMIT (iteration or time
    budget spent) with the honest gap, or ERROR. The gap is in units of f (normalized by n),
    the units of OPSamp's alpha. The solve runs on one thread whatever its budget's.
    """

    loss: str = "logistic"
    tol: float = DEFAULT_TOL
    max_iter: int = 20_000
    name: str = "convex"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (ConvexProblem,)

    def __post_init__(self) -> None:
        check_loss(self.loss)
        check_real("tol", self.tol)
        check_int("max_iter", self.max_iter)

    @counts_cpu
    def solve(self, problem: ConvexProblem, budget: Budget) -> Solution:
        if not isinstance(problem, ConvexProblem):
            raise OracleError(
                f"the convex oracle takes a ConvexProblem (the surrogate objective), found "
                f"{type(problem).__name__}; the 0/1 Problem needs a MIP oracle"
            )
        start = time.perf_counter()
        if problem.loss == "logistic":
            w, info = self._solve_logistic(problem, budget)
            bound_kind = "frank_wolfe"
        else:
            w, info = self._solve_hinge(problem, budget)
            bound_kind = "lagrangian_dual"
        objective = problem.objective(w)
        # round the bound down so that the certificate's gap (objective - bound, recomputed in
        # floating point) is never below the certified one: that gap is OPSamp's alpha
        bound = float(np.nextafter(objective - info.pop("gap"), -math.inf))
        alpha = objective - bound
        status, message = info.pop("status"), info.pop("message", "")
        if status is None:
            status = Status.OPTIMAL if alpha <= self.tol else Status.TIME_LIMIT
            if status is Status.TIME_LIMIT:
                message = f"certified gap {alpha:.3g} > tol {self.tol:.3g} when the budget ran out"
        certificate = Certificate(
            status=status,
            objective=objective,
            bound=bound,
            seconds=time.perf_counter() - start,
            backend=self.name,
            threads=1,
            message=message,
            stats=(
                ConvexStats(
                    loss=problem.loss,
                    alpha=alpha,
                    bound_kind=bound_kind,
                    scale=problem.scale,
                    scale_source=problem.scale_source,
                    lipschitz_l1=problem.lipschitz_l1,
                    rows=int(len(problem.labels)),
                    **info,
                ),
            ),
        )
        return Solution(w, certificate)

    def _solve_logistic(self, problem: ConvexProblem, budget: Budget) -> tuple[np.ndarray, dict]:
        lo, hi = problem.box.lower, problem.box.upper
        w = np.full(problem.d, np.clip(0.0, lo, hi))
        gap, iterations, rounds = problem.frank_wolfe_gap(w), 0, 0
        # L-BFGS-B may stop on its own tests before the certified gap meets tol: restart it from
        # where it stopped while it makes progress and the iteration and time budgets last.
        while gap > self.tol and iterations < self.max_iter:
            if budget.expired():
                break
            result = minimize(
                problem.value_and_gradient,
                w,
                jac=True,
                method="L-BFGS-B",
                bounds=[(lo, hi)] * problem.d,
                options={"maxiter": self.max_iter - iterations, "ftol": 1e-15, "gtol": 1e-13},
            )
            iterations += max(int(result.nit), 1)
            rounds += 1
            candidate = np.clip(result.x, lo, hi)
            candidate_gap = problem.frank_wolfe_gap(candidate)
            if not candidate_gap < gap:
                break  # no progress: report the honest gap of the best point so far
            w, gap = candidate, candidate_gap
        return w, {"gap": gap, "status": None, "iterations": iterations, "rounds": rounds}

    def _solve_hinge(self, problem: ConvexProblem, budget: Budget) -> tuple[np.ndarray, dict]:
        from scipy.optimize import linprog
        from scipy.sparse import csr_matrix, hstack, identity

        u, d, n = len(problem.labels), problem.d, problem.n
        # variables (w, xi); min c sum m_k xi_k - <sigma, w>/n; -y_k <x_k, w> - xi_k <= -1
        c = np.concatenate([-problem.sigma / n, problem.weights / (n * problem.scale)])
        A = hstack(
            [csr_matrix(-problem.labels[:, None] * problem.points), -identity(u, format="csr")],
            format="csr",
        )
        bounds = [(problem.box.lower, problem.box.upper)] * d + [(0.0, None)] * u
        result = linprog(
            c,
            A_ub=A,
            b_ub=-np.ones(u),
            bounds=bounds,
            method="highs",
            options={"time_limit": budget.solver_seconds()},
        )
        if result.x is None:
            w = np.full(d, np.clip(0.0, problem.box.lower, problem.box.upper))
            return w, {
                "gap": math.inf,
                "status": Status.ERROR,
                "message": f"HiGHS (linprog) failed: {result.message}",
            }
        w = np.clip(result.x[:d], problem.box.lower, problem.box.upper)
        multipliers = -np.asarray(result.ineqlin.marginals)  # >= 0 for <= constraints
        a = multipliers * (n * problem.scale) / problem.weights
        gap = max(problem.objective(w) - problem.dual_bound(a), 0.0)
        status = None if result.status == 0 else Status.TIME_LIMIT
        return w, {
            "gap": gap,
            "status": status,
            "message": "" if status is None else f"HiGHS (linprog) stopped: {result.message}",
            "iterations": int(getattr(result, "nit", 0)),
        }


__all__ = ["DEFAULT_TOL", "ConvexOracle"]
