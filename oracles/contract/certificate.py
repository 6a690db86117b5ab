"""The oracle contract: what is minimized, over what, and the certificate that comes back.

Every oracle minimizes one family of objectives (SPEC sections 3 to 5) over a domain W:

    F(w) = sum_u pos_u 1[<w, x_u> < mu] + neg_u 1[<w, x_u> >= mu]      (weighted 0/1 loss)
           + <linear, w>                                                (linear perturbation)
           + norm_coef * sqrt(D^2 - ||w||^2)                            (OPDisc's last coordinate)

* OPDisc: pos/neg are the merged label counts, linear = -eta[:d] / D, norm_coef = -eta[d] / D
  (L(D, w) - <eta, pi(w)>, SPEC section 3).
* RSPM: the separator examples are extra rows whose weights are the Gaussian or Laplace noise
  (negative weights allowed, SPEC section 4); no linear or norm term.
* OPSamp with the 0/1 loss: linear = -sigma, over the continuous box (SPEC section 5).

The weights are real numbers, so one problem record serves all three. A solver's answer is never
trusted as is: ``certify`` re-evaluates F at the returned w with the exact rule of SPEC section 2
(``core.objective``: exact rational labels) and refuses the certificate when the two disagree
or when the exact value exceeds the proven bound by more than ``OBJECTIVE_TOL``.
"""

from __future__ import annotations

import dataclasses
import enum
import functools
import math
import time
from dataclasses import dataclass, replace
from typing import Any, Callable, Protocol, TypeVar, runtime_checkable

import numpy as np

from core.problem import IntegerGrid, Problem, frozen_array
from oracles.contract.budget import Budget
from oracles.contract.stats import Stats, WindowStats, find, flat, merged

#: The certificate's tolerance: a solve is certified when the EXACT objective at its answer is at
#: most its proven lower bound plus OBJECTIVE_TOL (the MIP backends stop at a gap of 1e-9,
#: ``oracles.mip.formulation.DEFAULT_MIP_ABS_GAP``; the slack covers the floating-point sums of weights and
#: of the solvers' bounds). What it means for an argmin:
#: * label counts are integers, so on exact 0/1 ERM (eta = 0) and any integer-weighted objective
#:   two distinct values differ by at least 1: certified = exact argmin;
#: * with continuous noise (OPDisc's eta, RSPM's weights) a certified w could differ from the
#:   argmin only if another w' had F(w') in [F(w) - 1e-6, F(w)). For a fixed pair,
#:   F(w') - F(w) = (integer) + a Gaussian of standard deviation sigma ||pi(w) - pi(w')|| (OPDisc)
#:   or sigma times the root of the number of separators on which they differ (RSPM), so that
#:   event has probability at most 0.8e-6 / (that standard deviation): about 1e-8 per competing
#:   point at the sweeps' noise (sigma >= 100) and below the resolution of the solver's own
#:   bound. It is a per-pair bound, not a proof over the whole grid; the fuzz suite
#:   (tests/oracles/test_fuzz.py) counts such near ties separately and has measured none.
OBJECTIVE_TOL = 1e-6

StatsT = TypeVar("StatsT", bound=Stats)


# --- the certificate ---------------------------------------------------------------------------


class Status(str, enum.Enum):
    """How a solve ended. Only OPTIMAL certifies an exact argmin."""

    OPTIMAL = "optimal"
    TIME_LIMIT = "time_limit"  # stopped with a feasible w and a bound that does not meet it
    NO_SOLUTION = "no_solution"  # stopped without any feasible w
    INCONSISTENT = "inconsistent"  # the solver claimed optimality but the exact check disagreed
    ERROR = "error"


@dataclass(frozen=True)
class Certificate:
    """What an oracle can prove about its answer (SPEC section 8).

    ``objective`` is F at the returned w, evaluated exactly; ``bound`` is a proven lower bound on
    min F over the domain; ``gap`` = objective - bound (absolute). ``fallback`` says why another
    backend than the one asked for solved it (for example Gurobi's licence limit). ``seconds``
    is the solve's wall time, ``cpu_seconds`` the CPU it got (``counts_cpu``: the process's
    CPU time while it ran, every thread, plus its parts' in other processes): far below
    ``seconds`` x ``threads``, the solve shared its CPUs with other work; nan when not measured.
    ``stats`` is what the solve spent and did, one typed record per strategy family
    (``oracles.contract.stats``), read as fields through ``stat``.
    """

    status: Status
    objective: float
    bound: float
    seconds: float
    backend: str
    threads: int = 1
    fallback: str | None = None
    message: str = ""
    solver_objective: float | None = None
    stats: tuple[Stats, ...] = ()
    cpu_seconds: float = math.nan

    def stat(self, kind: type[StatsT]) -> StatsT | None:
        """The record of type ``kind`` (``oracles.contract.stats``), None when the solve made none."""
        return find(self.stats, kind)

    def with_stats(self, *records: Stats | None) -> Certificate:
        """This certificate with ``records`` added, each replacing one of its own type."""
        return replace(self, stats=merged(self.stats, *records))

    def stats_dict(self) -> dict[str, Any]:
        """The records flat, under the keys release.json and MLflow have always shown."""
        return flat(self.stats)

    @property
    def gap(self) -> float:
        return float(self.objective - self.bound)

    @property
    def certified(self) -> bool:
        """True only for a proven exact minimizer: the privacy of OPDisc and RSPM rests on it."""
        return self.status is Status.OPTIMAL and self.gap <= OBJECTIVE_TOL

    def to_params(self) -> dict[str, Any]:
        return {
            "status": self.status.value,
            "objective": self.objective,
            "bound": self.bound,
            "gap": self.gap,
            "seconds": self.seconds,
            "cpu_seconds": self.cpu_seconds,
            "backend": self.backend,
            "threads": self.threads,
            "fallback": self.fallback,
            "certified": self.certified,
            "message": self.message,
        }


@dataclass(frozen=True)
class Selected:
    """The answer of a selection problem (``oracles.synthetic.query_player``): a conjunction of
    literals (attribute, level) and its sign, +1 or -1."""

    conjunction: tuple[tuple[int, int], ...]
    sign: int


@dataclass(frozen=True, eq=False)
class Solution:
    """What every oracle returns: the answer and its certificate.

    ``w`` is the answer in the problem's own coordinates: the weight vector of a mechanism's
    problem (a grid or a box) or of OPSamp's surrogate, a record's level codes (the data
    player's ``ConjunctionProblem``), one record a row (a ``ConjunctionBatch``), the literals'
    indicator and the sign (a ``SelectionProblem``). ``selected`` is a selection's answer in
    its own terms (None for every other problem)."""

    w: np.ndarray
    certificate: Certificate
    selected: Selected | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "w", frozen_array(self.w))

    @property
    def record(self) -> np.ndarray:
        """A data player's record: its level codes (``w`` as integers)."""
        return self.w.astype(np.int64)

    records = record  # a batch's records, one a row

    @property
    def conjunction(self) -> tuple[tuple[int, int], ...]:
        return self._selected().conjunction

    @property
    def sign(self) -> int:
        return self._selected().sign

    def _selected(self) -> Selected:
        if self.selected is None:
            raise TypeError("this solution is not a selection's (it has no conjunction)")
        return self.selected


@runtime_checkable
class Oracle(Protocol):
    """Minimizes a problem on a budget: the one contract of every strategy and every route
    (``oracles.routing.routes``). One module per backend absorbs that solver's quirks."""

    name: str

    def solve(self, problem: Any, budget: Budget) -> Solution: ...


@runtime_checkable
class Configured(Oracle, Protocol):
    """An oracle as a caller holds it, with the limits its config gave (``oracles.routing.routes.Route``:
    a sweep's ``oracle.time_limit`` and ``oracle.threads``, an estimator's ``time_limit`` and
    ``threads``): ``budget()`` is one solve's budget on those limits from now, which the caller
    passes, ``oracle.solve(problem, oracle.budget())``. The budget is made when the solve starts
    (on the Ray worker for a task), never when the oracle was built."""

    def budget(self) -> Budget: ...


def budget_of(oracle: Any) -> Budget:
    """One solve's budget for a caller holding ``oracle`` (a mechanism's loop, a sweep's task):
    a configured oracle's own (``Configured.budget``: a route's limits, from the config); a bare
    strategy handed over by a library caller or a test has no limits and runs on
    ``Budget.unlimited()``, said here, once."""
    return oracle.budget() if isinstance(oracle, Configured) else Budget.unlimited()


SolveMethod = TypeVar("SolveMethod", bound=Callable[..., Any])


def counts_cpu(solve: SolveMethod) -> SolveMethod:
    """A strategy's ``solve(problem, budget)`` (the one contract, ``Oracle``) whose certificate
    records the CPU seconds the solve got (``Certificate.cpu_seconds``): ``time.process_time``
    before and after (every thread of this process, the solver's included), plus
    ``WindowStats.remote_cpu_seconds`` (its workers' in other processes). The answer is otherwise unchanged;
    an outer solve's count replaces an inner one's (it includes it). Keyword options (the window
    search's race ``stop``) pass through. The budget is required:
    a caller that means no limit says so (``Budget.unlimited()``)."""

    @functools.wraps(solve)
    def measured(self, problem, budget: Budget, **options):
        if not isinstance(budget, Budget):
            raise TypeError(f"budget must be an oracles.contract.budget.Budget, found {budget!r}")
        cpu = time.process_time()
        solution = solve(self, problem, budget, **options)
        c = solution.certificate
        window = c.stat(WindowStats)
        remote = window.remote_cpu_seconds if window is not None else 0.0
        spent = time.process_time() - cpu + float(remote)
        return dataclasses.replace(solution, certificate=replace(c, cpu_seconds=spent))

    return measured  # type: ignore[return-value]


class OracleError(RuntimeError):
    """The backend cannot take this problem (wrong domain, too large, solver missing)."""


class HandOff(OracleError):
    """A strategy cannot solve this problem exactly and hands it on; ``str(err)`` says why (the
    certificate's ``fallback`` records it). To whom is the routing table's
    (``oracles.routing.routes``), never the strategy's."""


def certify(
    problem: Problem,
    w: np.ndarray,
    *,
    status: Status,
    bound: float,
    seconds: float,
    backend: str,
    threads: int = 1,
    solver_objective: float | None = None,
    fallback: str | None = None,
    message: str = "",
    stats: tuple[Stats, ...] = (),
) -> Solution:
    """Build a Solution whose objective is re-evaluated exactly at ``w``.

    A solver that claims OPTIMAL is believed only if ``w`` lies in the domain and the exact
    objective matches the solver's to OBJECTIVE_TOL and meets its bound; otherwise the status is
    downgraded to INCONSISTENT and the release it supports is not private.
    """
    w = np.asarray(w, dtype=float)
    if isinstance(problem.domain, IntegerGrid):
        w = problem.domain.step * np.round(w / problem.domain.step)
    exact = float(problem.objective(w))
    notes = [message] if message else []
    if status is Status.OPTIMAL:
        problems = []
        if not problem.domain.contains(w):
            problems.append("w is outside the domain")
        if solver_objective is not None and abs(exact - solver_objective) > OBJECTIVE_TOL:
            problems.append(f"exact objective {exact!r} != solver objective {solver_objective!r}")
        if exact - bound > OBJECTIVE_TOL:
            problems.append(f"exact objective {exact!r} exceeds the proven bound {bound!r}")
        if bound - exact > OBJECTIVE_TOL:  # a feasible point below a "proven" bound refutes it
            problems.append(f"the proven bound {bound!r} exceeds the exact objective {exact!r}")
        if problems:
            status = Status.INCONSISTENT
            notes.append("; ".join(problems))
    return Solution(
        w,
        Certificate(
            status=status,
            objective=exact,
            bound=float(bound),
            seconds=float(seconds),
            backend=backend,
            threads=threads,
            fallback=fallback,
            message=" | ".join(notes),
            solver_objective=solver_objective,
            stats=tuple(stats),
        ),
    )
