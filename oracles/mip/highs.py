"""HiGHS: the one module that drives ``highspy``, and the reference formulation solved by it.

``run_highs`` is the project's only HiGHS call: the reference formulation (``HighsOracle``),
the structured oracle's subproblems (``oracles.structured.milp``), and the synthetic-data MILPs
(``oracles.synthetic.data_player``, ``oracles.synthetic.query_player``) all go through it, so every solve
gets HiGHS's time limit from its budget (``oracles.contract.budget``: only what is left), the thread
count in force, and the options below.

Quirks absorbed here:

* ``highspy`` is imported when a solve runs (``import_highspy``): it cannot share a process
  with OR-Tools, and a module that merely names this oracle (the registry, a config) must not
  load it.
* HiGHS reads its ``threads`` option ONCE per process, when its global task scheduler starts;
  later values are ignored. ``_THREADS_IN_FORCE`` remembers the first value set through this
  module, every certificate records the thread count actually in force, and a solve that asked
  for another count says so in its message. (HiGHS run earlier in the same process by other
  code, not through this module, would go unnoticed; the pipeline runs one oracle per task.)
* Status map (SPEC section 8): kOptimal -> OPTIMAL with bound = mip_dual_bound (the LP
  optimum when the model has no integer column: HiGHS then leaves mip_dual_bound at 0); a limit
  (time, iterations, solutions, interrupt, memory) -> TIME_LIMIT with a feasible point, else
  NO_SOLUTION; infeasible or unbounded -> ERROR (the domain is never empty, so either is a
  formulation or solver failure); anything else -> ERROR. Every answer goes through
  ``certify``, which re-evaluates F exactly and refuses a point whose value is not the
  solver's. (It cannot refute a claim that nothing better exists: that rests on the solver,
  hence the tolerances chosen in ``oracles.mip.formulation.feasibility_tol_for``.)
* HiGHS 1.16.0 certifies points that are NOT the minimum: kOptimal with a dual bound equal to
  a worse point's value (measured by an independent exact brute force,
  ``tests/oracles/fuzz.py``, on small OPDisc, RSPM and ERM instances with duplicate and
  proportional rows: 11 of 4,000 with its default settings). ``certify`` cannot see it: the
  point is evaluated correctly, the claim that nothing is better is the solver's. Most come
  from its presolve's "parallel rows and columns" reduction, which every solve here turns off
  (``PRESOLVE_RULES_OFF``, a bit of ``presolve_rule_off``; a test checks HiGHS's numbering,
  and pyproject pins the versions it was checked on). That is not enough: with it off, and
  with presolve off altogether, a few remain (about 1 in 5,000 each, on different instances:
  probing, and the branch and bound itself). So a certificate also needs a SECOND OPINION
  (``HighsOracle.second_opinion``): the problem is solved again in another configuration
  (presolve off), from the first solve's final model (its margin-band cuts) and started from
  the first answer, resolving the margin band as the first did. The answer is certified only if that solve
  also ends optimal with a bound within ``SECOND_OPINION_MARGIN`` of the first answer's value;
  the certificate's bound is the smaller of the two. A point lower than that refutes the first
  solve (INCONSISTENT, not private); a limit leaves it uncertified. The two configurations fail
  on different instances, and the fuzz suite has found none where both do. The second solve
  is a whole solve with a proven bound, not HiGHS's ``objective_bound`` cutoff: with a cutoff
  below the optimum, 1.16 answers kOptimal at a point above it and reports that point's value
  as its dual bound, so its proof would have to be read from a status, not from a bound.
* Progress (``oracles.contract.progress``): only when a listener is registered, MIP callbacks report the
  incumbent and bound (``watch``); without one no callback is installed.
* The first ``Highs()`` of a process prints HiGHS's banner ("Running HiGHS ...") to the
  process's standard output (file descriptor 1, not ``sys.stdout``), before any option can turn
  output off: ``import_highspy`` makes that first one with descriptor 1 sent to /dev/null
  (``_without_banner``), so that an estimator's first ``fit`` prints nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import sys
import threading
import time
from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

import numpy as np

from core.problem import Problem
from core.validation import check_real
from oracles.contract.certificate import (
    OBJECTIVE_TOL,
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
    BandResolved,
    Milp,
    RawSolve,
    SolverUnavailableError,
    feasibility_tol_for,
    solve_resolving_band,
)
from oracles.contract.progress import Reporter, guarded, reporter
from oracles.contract.stats import MipStats, merged

#: HiGHS's ``presolve_rule_off`` bit mask for every solve (module docstring): bit 13
#: is the reduction "Parallel rows and columns" in HiGHS 1.15 and 1.16. With it off, the fuzz
#: suite's parallel-row instances (``tests/oracles/fuzz.py``) certify only true minima.
PARALLEL_ROWS_AND_COLUMNS = 1 << 13
PRESOLVE_RULES_OFF = PARALLEL_ROWS_AND_COLUMNS

#: The second opinion confirms a first answer of value v when its own bound is at least
#: v - SECOND_OPINION_MARGIN (below ``OBJECTIVE_TOL``, ``oracles.contract.certificate``, so the certificate's
#: gap stays within it).
SECOND_OPINION_MARGIN = 0.5 * OBJECTIVE_TOL
#: The second opinion's configuration (module docstring).
SECOND_OPINION_OPTIONS = {"presolve": "off"}

#: The HiGHS thread count fixed by the first solve in this process (None before it).
_THREADS_IN_FORCE: int | None = None

#: HiGHS model statuses (by name) of a run stopped by a limit of its own or an interrupt.
STOPPED_STATUSES = frozenset(
    {
        "kTimeLimit",
        "kIterationLimit",
        "kSolutionLimit",
        "kInterrupt",
        "kHighsInterrupt",
        "kMemoryLimit",
    }
)
#: HiGHS model statuses (by name) that mean "stopped at a limit", not "failed": those, and a
#: run that stopped at the objective bound or target it was given.
_LIMIT_STATUSES = STOPPED_STATUSES | frozenset(
    {
        "kObjectiveBound",
        "kObjectiveTarget",
    }
)
_INFEASIBLE_STATUSES = frozenset({"kInfeasible", "kUnboundedOrInfeasible", "kUnbounded"})


def map_status(model_status: str, has_solution: bool) -> tuple[Status, str]:
    """(Status, message) for a HiGHS model status name (module docstring)."""
    if model_status == "kOptimal":
        if has_solution:
            return Status.OPTIMAL, ""
        return Status.ERROR, "HiGHS reported kOptimal without a primal solution"
    if model_status in _LIMIT_STATUSES:
        status = Status.TIME_LIMIT if has_solution else Status.NO_SOLUTION
        return status, f"HiGHS stopped at a limit: {model_status}"
    if model_status in _INFEASIBLE_STATUSES:
        return Status.ERROR, (
            f"HiGHS reported {model_status} although the domain is never empty: "
            "a formulation or numerical failure"
        )
    return Status.ERROR, f"HiGHS ended with model status {model_status}"


def threads_for(requested: int) -> tuple[int, str]:
    """The thread count in force after this call, and a note when it is not ``requested``."""
    global _THREADS_IN_FORCE
    if _THREADS_IN_FORCE is None:
        _THREADS_IN_FORCE = requested
    if _THREADS_IN_FORCE != requested:
        return _THREADS_IN_FORCE, (
            f"asked for threads={requested} but HiGHS fixed threads={_THREADS_IN_FORCE} "
            "at its first solve in this process"
        )
    return requested, ""


@dataclass(frozen=True, eq=False)
class LinearModel:
    """min ``cost @ x + offset`` subject to ``row_lower <= matrix @ x <= row_upper`` (``matrix``:
    scipy CSR, rows x columns) and ``col_lower <= x <= col_upper``, ``integer`` flagging the
    integer columns: what ``run_highs`` solves. ``oracles.mip.formulation.Milp`` has these fields too."""

    cost: np.ndarray
    matrix: Any
    row_lower: np.ndarray
    row_upper: np.ndarray
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    offset: float = 0.0


@dataclass(frozen=True, eq=False)
class HighsAnswer:
    """What one HiGHS run returned, as plain values (``run_highs``).

    Attributes:
        status_name: HiGHS's model status by name (``kOptimal``, ``kTimeLimit``, ...).
        status_text: its description (``modelStatusToString``).
        x: the column values, None without a feasible point.
        objective: ``objective_function_value`` (HiGHS's value of x; the LP optimum of a model
            without integer columns).
        dual_bound: ``mip_dual_bound`` as HiGHS reports it (0 for a model without integer
            columns: ``_proven_bound``).
        nodes: ``mip_node_count``.
        seconds: the run's wall seconds.
        options: the options it ran with.
        row_dual: the rows' dual values when HiGHS has a valid dual solution (an LP: a model
            without integer columns), else None.
    """

    status_name: str
    status_text: str
    x: np.ndarray | None
    objective: float
    dual_bound: float
    nodes: int
    seconds: float
    options: dict
    row_dual: np.ndarray | None = None

    @property
    def has_solution(self) -> bool:
        return self.x is not None


class HighsModelRefused(OracleError):
    """HiGHS refused the model (``passModel`` returned an error)."""


def import_highspy():
    """highspy, imported when a solve runs (module docstring: it cannot share a process with
    OR-Tools), its banner already printed to nowhere, or SolverUnavailableError."""
    try:
        import highspy
    except ImportError as err:  # pragma: no cover - highspy is a dependency
        raise SolverUnavailableError(f"highspy is not importable ({err})") from err
    _without_banner(highspy.Highs)
    return highspy


_STDOUT_LOCK = threading.Lock()


@functools.cache
def _without_banner(make_highs: Any) -> None:
    """Make one ``make_highs()`` (HiGHS prints its banner at the first of a process) with file
    descriptor 1 on /dev/null, then put it back; once per process (``functools.cache``)."""
    with _STDOUT_LOCK:
        sys.stdout.flush()
        saved = os.dup(1)
        try:
            with open(os.devnull, "wb") as null:
                os.dup2(null.fileno(), 1)
                make_highs()
        finally:
            os.dup2(saved, 1)
            os.close(saved)


def run_highs(
    model: Any,
    budget: Budget,
    options: Mapping[str, object] = (),
    *,
    start_x: np.ndarray | None = None,
    progress: Reporter | None = None,
) -> HighsAnswer:
    """One HiGHS solve of ``model`` (a ``LinearModel`` or an ``oracles.mip.formulation.Milp``): THE place
    the project drives HiGHS (the reference formulation, the structured oracle's subproblems, the
    data player's and the selection's MILPs).

    HiGHS gets the time ``budget`` has left now (``Budget.solver_seconds``), never more, and the
    thread count in force (``threads_for``); ``options`` add to (or replace) output off and a
    relative gap of 0. ``start_x``: a feasible assignment to start from (HiGHS checks it, an
    infeasible start is only ignored); ``progress``: reported to from HiGHS's callbacks when
    it is active (``watch``). A refused option is an OracleError, a refused model
    ``HighsModelRefused``.
    """
    highspy = import_highspy()
    threads, _ = threads_for(budget.threads)
    h = highspy.Highs()
    settings = {
        "output_flag": False,
        "mip_rel_gap": 0.0,
        **dict(options),
        "threads": threads,
        "time_limit": budget.solver_seconds(),
    }
    for option, value in settings.items():
        if h.setOptionValue(option, value) != highspy.HighsStatus.kOk:
            raise OracleError(f"HiGHS refused option {option}={value!r}")
    if h.passModel(highs_lp(highspy, model)) == highspy.HighsStatus.kError:
        raise HighsModelRefused("HiGHS refused the model")
    if start_x is not None:
        solution = highspy.HighsSolution()
        solution.col_value = [float(v) for v in start_x]
        solution.value_valid = True
        h.setSolution(solution)
    if progress is not None and progress.active:
        watch(h, progress)
    start = time.perf_counter()
    h.run()
    seconds = time.perf_counter() - start
    info = h.getInfo()
    x = None
    if info.primal_solution_status == highspy.kSolutionStatusFeasible:
        x = np.asarray(h.getSolution().col_value, dtype=float)
    row_dual = None
    if info.dual_solution_status == highspy.kSolutionStatusFeasible:
        row_dual = np.asarray(h.getSolution().row_dual, dtype=float)
    return HighsAnswer(
        status_name=h.getModelStatus().name,
        status_text=h.modelStatusToString(h.getModelStatus()),
        x=x,
        objective=float(info.objective_function_value),
        dual_bound=float(info.mip_dual_bound),
        nodes=int(getattr(info, "mip_node_count", 0)),
        seconds=seconds,
        options=settings,
        row_dual=row_dual,
    )


@dataclass(frozen=True)
class HighsOracle:
    """Exact minimization of F over W by HiGHS on the reference MILP (``oracles.mip.formulation``).

    Args:
        strict_eps: the cap of each row's eps in ``z_u = 0 => <w, x_u> <= mu - eps_u``
            (``oracles.mip.formulation``, the strict side; on an IntegerGrid it never excludes a point).
        mip_abs_gap: HiGHS's absolute gap (the relative gap is 0).
        feasibility_tol: HiGHS's mip and primal feasibility tolerances; None (the default)
            picks them by domain (``oracles.mip.formulation.feasibility_tol_for``: tighter is not safer).
    """

    strict_eps: float = DEFAULT_STRICT_EPS
    mip_abs_gap: float = DEFAULT_MIP_ABS_GAP
    feasibility_tol: float | None = None
    name: str = "highs"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (Problem,)

    def __post_init__(self) -> None:
        check_real("strict_eps", self.strict_eps)
        check_real("mip_abs_gap", self.mip_abs_gap)
        if self.feasibility_tol is not None:
            check_real("feasibility_tol", self.feasibility_tol)

    @counts_cpu
    def solve(self, problem: Problem, budget: Budget) -> Solution:
        """The first solve and, when it certifies, the second opinion, both on ``budget``."""
        start = time.perf_counter()
        import_highspy()  # unavailable: before anything ran (oracles.routing.routes may fall back)
        threads, thread_note = threads_for(budget.threads)
        tol = feasibility_tol_for(problem, self.feasibility_tol)

        progress = reporter(problem.label, self.name)

        def run(milp: Milp, left: Budget) -> RawSolve:
            return self._run(milp, threads, tol, left, progress=progress)

        result = solve_resolving_band(problem, run, strict_eps=self.strict_eps, budget=budget)
        first = certify(
            problem,
            result.w,
            status=result.status,
            bound=result.bound,
            seconds=time.perf_counter() - start,
            backend=self.name,
            threads=threads,
            solver_objective=result.solver_objective,
            message=" | ".join(m for m in (result.message, thread_note) if m),
            stats=(dataclasses.replace(result.stats, feasibility_tol=tol),),
        )
        if not (self.asks_twice and first.certificate.certified and result.milp.integer.any()):
            return first  # nothing claimed, or an LP (no branch and bound to doubt)

        def run_again(milp: Milp, left: Budget) -> RawSolve:
            return self._run(
                milp, threads, tol, left, SECOND_OPINION_OPTIONS, milp.encode(first.w), progress
            )

        second = solve_resolving_band(
            problem,
            run_again,
            strict_eps=self.strict_eps,
            budget=budget,
            cuts=result.milp.band_cuts,
        )
        return self.second_opinion(problem, first, second, start)

    @property
    def asks_twice(self) -> bool:
        """Whether a certificate needs the second opinion: always (module docstring). A subclass
        that answers False serves only to measure what the second opinion costs or catches
        (tests/oracles/mip/test_highs_presolve.py; docs/results/oracles.md)."""
        return True

    def second_opinion(
        self, problem: Problem, first: Solution, second: BandResolved, start: float
    ) -> Solution:
        """``first`` (certified by the first solve) judged by ``second``, a solve of the same
        problem in another configuration started from ``first`` (module docstring)."""
        c = first.certificate
        w, bound, status = first.w, -math.inf, second.status
        value = float(problem.objective(second.w))
        if value < c.objective - SECOND_OPINION_MARGIN:
            w, status = second.w, Status.INCONSISTENT
            note = (
                f"second opinion (presolve off) refuted the first solve's bound {c.bound!r}: "
                f"F = {value!r} at w = {second.w.tolist()}"
            )
        elif status is Status.OPTIMAL and second.bound >= c.objective - SECOND_OPINION_MARGIN:
            bound = min(c.bound, second.bound)
            note = f"second opinion (presolve off): bound {second.bound!r}"
        else:
            status = status if status is not Status.OPTIMAL else Status.INCONSISTENT
            note = (
                "second opinion (presolve off) did not confirm the bound: "
                f"{second.message or status.value}, bound {second.bound!r}"
            )
        first_stats = c.stat(MipStats)
        assert first_stats is not None  # every HiGHS solve of a Problem records one
        stats = dataclasses.replace(
            first_stats,
            first_bound=c.bound,
            second_opinion_bound=second.bound,
            second_opinion_seconds=second.stats.solver_seconds,
            second_opinion_band_rounds=second.stats.band_rounds,
        )
        return certify(
            problem,
            w,
            status=status,
            bound=bound,
            seconds=time.perf_counter() - start,
            backend=c.backend,
            threads=c.threads,
            solver_objective=c.solver_objective if w is first.w else None,
            message=" | ".join(m for m in (c.message, note) if m),
            stats=merged(c.stats, stats),
        )

    def solver_options(self, threads: int, tol: float, time_limit: float) -> dict[str, object]:
        """The HiGHS options of one solve. ``presolve_rule_off`` is ``PRESOLVE_RULES_OFF``
        always: it is not an option, turning those reductions back on certifies false optima
        (module docstring)."""
        return {
            "output_flag": False,
            "threads": threads,
            "time_limit": float(time_limit),
            "mip_rel_gap": 0.0,
            "mip_abs_gap": float(self.mip_abs_gap),
            "mip_feasibility_tolerance": tol,
            "primal_feasibility_tolerance": tol,
            "presolve_rule_off": PRESOLVE_RULES_OFF,
        }

    def _run(
        self,
        milp: Milp,
        threads: int,
        tol: float,
        budget: Budget,
        override: dict[str, object] | None = None,
        start_x: np.ndarray | None = None,
        progress: Reporter | None = None,
    ) -> RawSolve:
        """One HiGHS solve of ``milp`` on what ``budget`` has left (``override``: options that
        replace the usual ones; ``start_x``: a feasible assignment to start from; reporting to
        ``progress`` when it is active)."""
        options = {
            **self.solver_options(threads, tol, budget.solver_seconds()),
            **(override or {}),
        }
        try:
            answer = run_highs(milp, budget, options, start_x=start_x, progress=progress)
        except HighsModelRefused as err:
            raise OracleError(f"{err} ({milp.stats()})") from err
        status, message = map_status(answer.status_name, answer.has_solution)
        objective = None
        if answer.has_solution:
            objective = answer.objective
        stats = MipStats(
            **milp.stats(),
            solver_status=answer.status_text,
            solver_status_name=answer.status_name,
            solver_seconds=answer.seconds,
            presolve=options.get("presolve", "choose"),
            presolve_rule_off=options["presolve_rule_off"],
            max_violation=milp.max_violation(answer.x) if answer.has_solution else None,
        )
        bound = _proven_bound(milp, status, answer)
        return RawSolve(status, message, answer.x, objective, bound, stats)


def watch(h, progress: Reporter) -> None:
    """Report HiGHS's incumbent and bound (``mip_primal_bound``, ``mip_dual_bound``) to
    ``progress`` from its MIP callbacks (``oracles.contract.progress``). Called only when someone
    listens; the callbacks neither interrupt nor change the search, and never raise (an
    exception in a HiGHS callback ends the solve with kSolveError)."""

    def on_event(event) -> None:
        out = event.data_out
        progress.report(out.mip_primal_bound, out.mip_dual_bound)

    callback = guarded(on_event)
    try:
        # Not cbMipInterrupt: HiGHS calls it at every node, and each call takes the GIL from
        # the solver's thread; in a Ray worker (other Python threads) that slowed a 15 s solve
        # to over 600 s. The MIP log's display lines come every few seconds, and only with
        # output on (kept off the console, and no log file is set).
        h.setOptionValue("output_flag", True)
        h.setOptionValue("log_to_console", False)
        h.cbMipLogging.subscribe(callback)
        h.cbMipImprovingSolution.subscribe(callback)
    except Exception:  # noqa: BLE001 - no callback API: the solve goes on without progress
        pass


def _proven_bound(milp: Milp, status: Status, answer: HighsAnswer) -> float:
    """HiGHS's proven lower bound, or -inf.

    A model without integer columns (a Box whose every row is decided by the domain) is solved
    by HiGHS's LP solver, which leaves ``mip_dual_bound`` at 0: the bound of an LP solved to
    optimality is its optimal value (strong duality), so that is used instead.
    """
    if status is Status.ERROR:
        return -math.inf
    if not milp.integer.any():
        return float(answer.objective) if status is Status.OPTIMAL else -math.inf
    bound = float(answer.dual_bound)
    return bound if math.isfinite(bound) else -math.inf


def highs_lp(highspy, model: Any):
    """``model`` (a ``LinearModel`` or an ``oracles.mip.formulation.Milp``) as a highspy.HighsLp."""
    matrix = model.matrix
    n_rows, n_cols = matrix.shape
    lp = highspy.HighsLp()
    lp.num_col_, lp.num_row_ = n_cols, n_rows
    lp.col_cost_ = model.cost
    lp.offset_ = float(model.offset)
    lp.col_lower_, lp.col_upper_ = model.col_lower, model.col_upper
    lp.row_lower_, lp.row_upper_ = model.row_lower, model.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kRowwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n_cols, n_rows
    lp.a_matrix_.start_ = matrix.indptr.astype(np.int32)
    lp.a_matrix_.index_ = matrix.indices.astype(np.int32)
    lp.a_matrix_.value_ = matrix.data.astype(float)
    kinds = (highspy.HighsVarType.kContinuous, highspy.HighsVarType.kInteger)
    lp.integrality_ = [kinds[int(flag)] for flag in model.integer]
    return lp


__all__ = [
    "PRESOLVE_RULES_OFF",
    "SECOND_OPINION_MARGIN",
    "HighsAnswer",
    "HighsModelRefused",
    "HighsOracle",
    "LinearModel",
    "highs_lp",
    "import_highspy",
    "map_status",
    "run_highs",
    "threads_for",
]
