"""The data player's oracle of private synthetic data: the best record for a set of conjunctions.

A record x takes one level of each attribute (attribute a has ``levels[a]`` levels, coded
0..levels[a]-1). A conjunction is a tuple of literals (a, v), "attribute a has level v", on
distinct attributes; q(x) = 1 when every literal holds. Given weighted conjunctions and a linear
perturbation of the one-hot encoding b(x) (b_{a,v} = 1 iff x_a = v), the oracle finds

    argmax_x  sum_c  coef_c q_c(x)  +  sum_{a,v} noise_{a,v} b_{a,v}(x)

over the whole universe (mechanisms.synthetic: follow the perturbed leader, SPEC-style in
docs/synthetic.md). A ``ConjunctionBatch`` asks the same for many noise vectors at once (one
round of the game). Two backends behind the one contract ``solve(problem, budget) -> Solution``
(``oracles.contract.certificate``; the record's level codes are ``Solution.record``, a batch's records
``Solution.records``):

* ``EnumerationConjunctionOracle``: every record (tests and small universes), ties to the first
  record in lexicographic order;
* ``HighsConjunctionOracle``: a MILP. b one-hot per attribute (binary), one continuous z_c in
  [0, 1] per conjunction with coef_c != 0: z_c <= b_lit for each literal when coef_c > 0 (the
  maximization then sets z_c = min b = q_c), z_c >= sum b_lit - (k_c - 1) when coef_c < 0 (then
  z_c = max(0, sum b - k + 1) = q_c), solved by ``oracles.mip.highs.run_highs`` within the solve's
  budget (``oracles.contract.budget``).

Every answer carries a ``Certificate`` (minimization form: objective = -value at x, evaluated
exactly; bound = -(the solver's proven upper bound)). The data player's privacy does not rest on
it (it sees only the private selections), but its accuracy does, and the record says which.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import ClassVar, Sequence

import numpy as np
import scipy.sparse

from core.problem import ConjunctionBatch, ConjunctionProblem
from oracles.contract.certificate import OBJECTIVE_TOL, Certificate, Solution, Status, counts_cpu
from oracles.contract.budget import Budget
from oracles.mip.highs import PRESOLVE_RULES_OFF, LinearModel, map_status, run_highs, threads_for
from oracles.contract.stats import ConjunctionStats

#: Records an enumeration oracle may visit.
MAX_RECORDS = 2_000_000


def each_row(solve, batch: ConjunctionBatch, budget: Budget, backend: str) -> Solution:
    """A batch solved a row at a time by ``solve(problem, budget)`` (one budget for all): one
    record a row, and one certificate (``ConjunctionBatch``): OPTIMAL when every row's is, else
    the first other status, with its ``ConjunctionStats.unfinished`` rows."""
    start = time.perf_counter()
    answers = [solve(batch.row(i), budget) for i in range(len(batch.noises))]
    certs = [a.certificate for a in answers]
    unfinished = [c for c in certs if c.status is not Status.OPTIMAL]
    status = unfinished[0].status if unfinished else Status.OPTIMAL
    message = "; ".join(dict.fromkeys(c.message for c in certs if c.message))
    cert = Certificate(
        status,
        float(sum(c.objective for c in certs)),
        float(sum(c.bound for c in certs)),
        time.perf_counter() - start,
        backend,
        max(c.threads for c in certs),
        None,
        message,
        stats=(ConjunctionStats(records=len(certs), unfinished=len(unfinished)),),
    )
    return Solution(np.array([a.record for a in answers], dtype=np.int64), cert)


def max_certificate(value, status, upper, seconds, backend, threads=1, message=""):
    """The Certificate of a maximization in minimization form (oracles.contract.certificate): objective -value
    (the exact value at the answer), bound -upper (a proven upper bound on the maximum); a
    solver's OPTIMAL whose bound the exact value misses is INCONSISTENT."""
    value = float(value)
    objective, bound = -value, -float(upper)
    if status is Status.OPTIMAL and objective - bound > OBJECTIVE_TOL * max(1.0, abs(value)):
        status, message = Status.INCONSISTENT, f"value {value!r} below the proven {upper!r}"
    return Certificate(
        status, objective, min(bound, objective), seconds, backend, threads, None, message
    )


@dataclass(frozen=True)
class EnumerationConjunctionOracle:
    """Every record of the universe (ties: the first in lexicographic order)."""

    max_records: int = MAX_RECORDS
    name: str = "enumerate"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (
        ConjunctionProblem,
        ConjunctionBatch,
    )

    @counts_cpu
    def solve(self, problem: ConjunctionProblem | ConjunctionBatch, budget: Budget) -> Solution:
        """The best record (ties: the first), or each row's for a batch (``each_row``); the
        universe is listed whatever the budget."""
        if isinstance(problem, ConjunctionBatch):
            return each_row(self.solve, problem, budget, self.name)
        if problem.size > self.max_records:
            raise ValueError(
                f"the universe has {problem.size} records, more than max_records="
                f"{self.max_records}: enumeration cannot cover it"
            )
        start = time.perf_counter()
        records = np.array(list(itertools.product(*(range(k) for k in problem.levels))))
        values = problem.values(records)
        best = int(np.argmax(values))
        seconds = time.perf_counter() - start
        record = records[best]
        cert = max_certificate(values[best], Status.OPTIMAL, values[best], seconds, self.name)
        return Solution(record, cert)


@dataclass(frozen=True)
class HighsConjunctionOracle:
    """The MILP of the module docstring, solved by HiGHS on the budget's time and threads."""

    name: str = "highs"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (
        ConjunctionProblem,
        ConjunctionBatch,
    )

    @counts_cpu
    def solve(self, problem: ConjunctionProblem | ConjunctionBatch, budget: Budget) -> Solution:
        """The best record, or each row's for a batch (``each_row``), on ``budget``."""
        if isinstance(problem, ConjunctionBatch):
            return each_row(self.solve, problem, budget, self.name)
        start = time.perf_counter()
        model, onehot = _milp(problem)
        answer = solve_max_milp(model, budget)
        seconds = time.perf_counter() - start
        if answer.x is None:
            record = np.zeros(len(problem.levels), dtype=np.int64)
            cert = Certificate(
                answer.status,
                math.inf,
                -math.inf,
                seconds,
                self.name,
                answer.threads,
                None,
                answer.message,
            )
            return Solution(record, cert)
        record = np.array([int(np.argmax(answer.x[cols])) for cols in onehot])
        cert = max_certificate(
            problem.values(record)[0],
            answer.status,
            answer.upper,
            seconds,
            self.name,
            answer.threads,
            answer.note or answer.message,
        )
        return Solution(record, cert)


@dataclass(frozen=True)
class MilpAnswer:
    """What HiGHS proved of a model that minimizes -value (``solve_max_milp``)."""

    #: The column values, None without a feasible point.
    x: np.ndarray | None
    status: Status
    #: A proven upper bound on the maximum value (inf unless OPTIMAL).
    upper: float
    threads: int
    message: str
    #: Set when the thread count in force is not the one asked for.
    note: str


def solve_max_milp(model: LinearModel, budget: Budget) -> MilpAnswer:
    """Solve ``model`` (minimizing -value) on what ``budget`` has left with the options every
    conjunction MILP uses: exact gap, one thread count per process, and ``PRESOLVE_RULES_OFF``
    always (HiGHS 1.16's parallel rows and columns reduction can call a worse point optimal,
    oracles.mip.highs)."""
    threads, note = threads_for(budget.threads)
    options = {"mip_abs_gap": 1e-9, "presolve_rule_off": PRESOLVE_RULES_OFF}
    answer = run_highs(model, budget, options)
    status, message = map_status(answer.status_name, answer.has_solution)
    if not answer.has_solution:
        return MilpAnswer(None, status, math.inf, threads, message, note)
    # HiGHS minimizes -value: its dual bound is a lower bound on -value, so -bound is an upper
    # bound on the best value (its own objective at an optimum)
    dual = answer.dual_bound if status is Status.OPTIMAL else -math.inf
    upper = -dual if math.isfinite(dual) else math.inf
    if status is Status.OPTIMAL:
        upper = max(upper, -answer.objective)
    return MilpAnswer(answer.x, status, upper, threads, message, note)


def _milp(problem: ConjunctionProblem) -> tuple[LinearModel, list[np.ndarray]]:
    """(the model minimizing -value, the one-hot columns of each attribute)."""
    starts = np.concatenate([[0], np.cumsum(problem.levels)])
    onehot = [np.arange(starts[a], starts[a + 1]) for a in range(len(problem.levels))]
    n_b = int(starts[-1])
    active = [i for i, c in enumerate(problem.coefs) if c != 0]
    n_cols = n_b + len(active)
    cost = np.concatenate([-np.concatenate(problem.noise), -problem.coefs[active]])
    rows, cols, vals, lower, upper = [], [], [], [], []

    def row(entries: Sequence[tuple[int, float]], lo: float, hi: float) -> None:
        r = len(lower)
        for col, val in entries:
            rows.append(r), cols.append(col), vals.append(val)
        lower.append(lo), upper.append(hi)

    for cols_a in onehot:  # one level per attribute
        row([(int(c), 1.0) for c in cols_a], 1.0, 1.0)
    for j, i in enumerate(active):
        z = n_b + j
        lits = [int(starts[a] + v) for a, v in problem.conjunctions[i]]
        if problem.coefs[i] > 0:  # z <= b for each literal
            for b in lits:
                row([(z, 1.0), (b, -1.0)], -math.inf, 0.0)
        else:  # z >= sum b - (k - 1)
            row([(z, 1.0)] + [(b, -1.0) for b in lits], 1.0 - len(lits), math.inf)
    matrix = scipy.sparse.csr_array((vals, (rows, cols)), shape=(len(lower), n_cols))
    model = LinearModel(
        cost=cost,
        matrix=matrix,
        row_lower=np.array(lower),
        row_upper=np.array(upper),
        col_lower=np.zeros(n_cols),
        col_upper=np.ones(n_cols),
        integer=np.arange(n_cols) < n_b,  # the one-hot b; the z are continuous
    )
    return model, onehot


__all__ = [
    "EnumerationConjunctionOracle",
    "HighsConjunctionOracle",
    "MilpAnswer",
    "each_row",
    "max_certificate",
    "solve_max_milp",
]
