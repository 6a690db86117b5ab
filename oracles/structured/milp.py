"""One combination of continuous weights solved exactly: a small MILP over the binary columns.

With v fixed (``oracles.structured.shape``), what is left is

    min over k_C   sum_{j in C} U_j(k_j) + N(q_P + ||k_C||^2) + sum_c f_c(K_c),
                   K_c = sum_{j in c} k_j,  ||k_C||^2 <= Q = cap - q_P,

with step functions f_c. The MILP (all columns binary):

* ``b_jk``: one-hot value of k_j, only for |k| <= r = min(B, floor(sqrt(Q))); cost U_j(k);
  ``sum_k b_jk = 1``.
* the exact norm of SPEC section 3: ``t_m`` over the attainable m = ||k_C||^2 <= Q, cost
  N(q_P + m), ``sum_m t_m = 1`` and ``sum_jk k^2 b_jk = sum_m m t_m``; without a norm term the
  single row ``sum_jk k^2 b_jk <= Q`` when it can bind.
* one ``y`` per breakpoint beta of f_c inside the cell's reach [-R_c, R_c], with
  delta = f_c(beta) - f_c(beta - 1) as its cost, so that
  f_c(K) = f_c(-R_c) + sum_beta delta 1[K >= beta].
  One row per y suffices, in the direction the cost pushes: delta > 0 needs
  K >= beta => y = 1, i.e. ``K - (R_c - beta + 1) y <= beta - 1``; delta < 0 needs
  y = 1 => K >= beta, i.e. ``K - (beta + R_c) y >= -R_c``. At an optimum y = 1[K >= beta].

Every coefficient is a small integer, so a solution is exact once b is rounded; the oracle
re-evaluates it with its own tables and then with ``Problem.objective``. ``solve`` passes the
incumbent as HiGHS's ``objective_bound``: HiGHS then prunes every node whose bound exceeds it,
so a subproblem that returns nothing below the cutoff is proven to be no better than it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np
import scipy.sparse

from oracles.contract.budget import Budget
from oracles.mip.highs import STOPPED_STATUSES, HighsModelRefused, LinearModel, run_highs
from oracles.mip.formulation import attainable_square_sums
from oracles.structured.shape import Shape

#: Breakpoints whose step is smaller than this (relative to the table's scale) are rounding.
STEP_REL_TOL = 1e-12

_CUTOFF_STATUSES = frozenset({"kInfeasible", "kObjectiveBound"})


@dataclass(frozen=True, eq=False)
class SubMilp:
    """The MILP of one combination k_P (module docstring), in plain arrays."""

    kP: np.ndarray
    cost: np.ndarray
    offset: float
    matrix: scipy.sparse.csr_array
    row_lower: np.ndarray
    row_upper: np.ndarray
    values: np.ndarray  # the k of each b column block (|k| <= r)
    n_binary_cols: int  # |C|; b_jk is column j * len(values) + i
    n_breakpoints: int
    #: the cell of each breakpoint; their rows are the model's last ``n_breakpoints`` rows
    breakpoint_cells: np.ndarray
    n_cells: int

    @property
    def n_cols(self) -> int:
        return int(self.cost.shape[0])

    def model(self, integer: bool) -> LinearModel:
        """The model HiGHS solves: every column binary (``integer``) or its LP relaxation, every
        column in [0, 1]."""
        return LinearModel(
            cost=self.cost,
            matrix=self.matrix,
            row_lower=self.row_lower,
            row_upper=self.row_upper,
            col_lower=np.zeros(self.n_cols),
            col_upper=np.ones(self.n_cols),
            integer=np.full(self.n_cols, integer, dtype=bool),
            offset=self.offset,
        )

    def decode(self, x: np.ndarray) -> np.ndarray:
        nk = len(self.values)
        b = np.asarray(x[: self.n_binary_cols * nk]).reshape(self.n_binary_cols, nk)
        return self.values[np.argmax(b, axis=1)]


def table_value(shape: Shape, kP: np.ndarray, kC: np.ndarray, f_v: np.ndarray) -> float:
    """F(v, k_C) from the tables (``oracles.structured.shape``); +inf outside the norm bound."""
    q = shape.combo_norm(kP) + int(np.dot(kC, kC))
    if q > shape.cap:
        return math.inf
    value = shape.const + shape.combo_unary(kP) + float(shape.norm[q])
    if len(shape.binary_cols):
        value += float(shape.unary[shape.binary_cols, kC + shape.bound].sum())
    if shape.n_cells:
        K = shape.cells @ kC
        value += float(f_v[np.arange(shape.n_cells), K + shape.score_offset].sum())
    return value


def build_subproblem(shape: Shape, kP: np.ndarray, f_v: np.ndarray) -> SubMilp:
    """The MILP of the module docstring for the combination ``kP`` with tables ``f_v``."""
    B, off = shape.bound, shape.score_offset
    nC = len(shape.binary_cols)
    qP = shape.combo_norm(kP)
    Q = shape.cap - qP
    r = shape.reach(Q)
    values = np.arange(-r, r + 1)
    nk = len(values)
    offset = shape.const + shape.combo_unary(kP)

    cost = [shape.unary[shape.binary_cols][:, B - r : B + r + 1].ravel()]
    n_cols = nC * nk
    rows_i: list[np.ndarray] = []
    rows_j: list[np.ndarray] = []
    rows_v: list[np.ndarray] = []
    lower: list[np.ndarray] = []
    upper: list[np.ndarray] = []
    n_rows = 0

    def add_rows(i, j, v, lo, hi):
        nonlocal n_rows
        rows_i.append(n_rows + np.asarray(i))
        rows_j.append(np.asarray(j))
        rows_v.append(np.asarray(v, dtype=float))
        lower.append(np.atleast_1d(np.asarray(lo, dtype=float)))
        upper.append(np.atleast_1d(np.asarray(hi, dtype=float)))
        n_rows += len(lower[-1])

    # one-hot rows
    add_rows(
        np.repeat(np.arange(nC), nk), np.arange(nC * nk), np.ones(nC * nk), np.ones(nC), np.ones(nC)
    )

    # the norm (exact table) or its bound
    sq_cols = np.arange(nC * nk)
    sq_vals = np.tile(values.astype(float) ** 2, nC)
    if shape.problem.norm_coef != 0.0:
        m = attainable_square_sums(nC, r, Q) if nC else np.zeros(1, dtype=np.int64)
        t_cols = n_cols + np.arange(len(m))
        cost.append(shape.norm[qP + m])
        n_cols += len(m)
        add_rows(np.zeros(len(m), dtype=np.int64), t_cols, np.ones(len(m)), 1.0, 1.0)
        add_rows(
            np.zeros(len(sq_cols) + len(m), dtype=np.int64),
            np.r_[sq_cols, t_cols],
            np.r_[sq_vals, -m.astype(float)],
            0.0,
            0.0,
        )
    else:
        offset += float(shape.norm[qP])
        if Q < nC * r * r:
            add_rows(np.zeros(len(sq_cols), dtype=np.int64), sq_cols, sq_vals, -np.inf, Q)

    # the cells' step functions
    n_breakpoints = 0
    bp_cell = np.zeros(0, dtype=np.int64)
    if shape.n_cells:
        R = shape.cell_reach(Q)  # (nc,)
        cells = np.arange(shape.n_cells)
        offset += float(f_v[cells, off - R].sum())
        K_hi = np.arange(-off + 1, off + 1)  # the K of each difference f(K) - f(K - 1)
        delta = f_v[:, 1:] - f_v[:, :-1]
        scale = STEP_REL_TOL * max(1.0, float(np.abs(f_v).max(initial=0.0)))
        inside = (K_hi[None, :] > -R[:, None]) & (K_hi[None, :] <= R[:, None])
        bp_cell, bp_idx = np.nonzero(inside & (np.abs(delta) > scale))
        n_breakpoints = len(bp_cell)
        if n_breakpoints:
            beta = K_hi[bp_idx]
            dlt = delta[bp_cell, bp_idx]
            Rb = R[bp_cell]
            y_cols = n_cols + np.arange(n_breakpoints)
            cost.append(dlt)
            n_cols += n_breakpoints
            # the b entries of K_c = sum_{j in c} sum_k k b_jk, k != 0
            nz = np.flatnonzero(values != 0)
            pair_cell, pair_j = np.nonzero(shape.cells)
            entry_cols = (pair_j[:, None] * nk + nz[None, :]).ravel()
            entry_vals = np.tile(values[nz].astype(float), len(pair_cell))
            per_cell = np.bincount(pair_cell, minlength=shape.n_cells) * len(nz)
            start = np.r_[0, np.cumsum(per_cell)[:-1]]
            length = per_cell[bp_cell]
            row_of_entry = np.repeat(np.arange(n_breakpoints), length)
            first = np.repeat(start[bp_cell] - np.r_[0, np.cumsum(length)[:-1]], length)
            take = first + np.arange(int(length.sum()))
            y_coef = np.where(dlt > 0, -(Rb - beta + 1), -(beta + Rb)).astype(float)
            lo = np.where(dlt > 0, -np.inf, -Rb.astype(float))
            hi = np.where(dlt > 0, (beta - 1).astype(float), np.inf)
            add_rows(
                np.r_[row_of_entry, np.arange(n_breakpoints)],
                np.r_[entry_cols[take], y_cols],
                np.r_[entry_vals[take], y_coef],
                lo,
                hi,
            )

    matrix = scipy.sparse.csr_array(
        (np.concatenate(rows_v), (np.concatenate(rows_i), np.concatenate(rows_j))),
        shape=(n_rows, n_cols),
    )
    matrix.sum_duplicates()
    return SubMilp(
        kP=np.asarray(kP),
        cost=np.concatenate(cost).astype(float),
        offset=float(offset),
        matrix=matrix,
        row_lower=np.concatenate(lower),
        row_upper=np.concatenate(upper),
        values=values,
        n_binary_cols=nC,
        n_breakpoints=n_breakpoints,
        breakpoint_cells=bp_cell,
        n_cells=shape.n_cells,
    )


def lp_multipliers(sub: SubMilp, budget: Budget) -> np.ndarray | None:
    """Multipliers for the compiled search's Lagrangian shift (``oracles.structured.search``),
    one per cell, from the LP relaxation of ``sub``: the sum of the duals of the cell's
    breakpoint rows, each of which holds K_c with coefficient 1. They are the LP's own prices
    of K_c, so the shifted bound at them is at least the LP's bound (every part of the shifted
    relaxation is then solved exactly, the LP solves them relaxed), where subgradient steps
    from zero stop far below it (docs/results/structured_speed.md). None when HiGHS gives no
    dual solution. Any multipliers give a valid bound: these only make it tight."""
    if sub.n_breakpoints == 0:
        return np.zeros(sub.n_cells)
    try:
        answer = run_highs(sub.model(integer=False), budget, {"presolve": "off"})
    except HighsModelRefused:
        return None
    if answer.status_name != "kOptimal" or answer.row_dual is None:
        return None
    duals = answer.row_dual[-sub.n_breakpoints :]
    return np.bincount(sub.breakpoint_cells, weights=duals, minlength=sub.n_cells)


@dataclass(frozen=True)
class SubResult:
    """How one subproblem ended.

    ``outcome``: "solved" (``kC`` optimal, ``bound`` HiGHS's dual bound), "cutoff" (nothing
    below ``cutoff``: ``bound`` = cutoff), "time_limit" or "error". ``value`` is HiGHS's
    objective of ``kC`` when there is one.
    """

    outcome: str
    bound: float
    kC: np.ndarray | None
    value: float | None
    seconds: float
    status_name: str
    nodes: int


def solve_subproblem(sub: SubMilp, *, cutoff: float | None, budget: Budget) -> SubResult:
    """Solve ``sub`` with HiGHS (``oracles.mip.highs.run_highs``: on what ``budget`` has left, one
    thread count per process)."""
    options = {
        "presolve": "off",  # measured: these models are tiny, presolve only costs time
        "mip_abs_gap": 1e-9,
        # feasibility tolerances stay at HiGHS's defaults: every coefficient is a small
        # integer, so a solution is exact once rounded; and tight tolerances (1e-9) made
        # HiGHS certify false optima of the reference formulation (``oracles.mip.formulation``,
        # GRID_FEASIBILITY_TOL)
    }
    if cutoff is not None:
        options["objective_bound"] = float(cutoff)
    start = time.perf_counter()
    try:
        answer = run_highs(sub.model(integer=True), budget, options)
    except HighsModelRefused:
        return SubResult("error", -math.inf, None, None, 0.0, "passModel failed", 0)
    seconds = time.perf_counter() - start
    status, nodes = answer.status_name, answer.nodes
    kC = value = None
    if answer.has_solution:
        kC = sub.decode(answer.x)
        value = answer.objective
    below = answer.has_solution and (cutoff is None or value < cutoff)
    if status == "kOptimal" and below:
        bound = answer.dual_bound
        return SubResult("solved", min(bound, value), kC, value, seconds, status, nodes)
    if cutoff is not None and (status in _CUTOFF_STATUSES or status == "kOptimal"):
        # the whole tree was searched with every node above the cutoff pruned
        return SubResult("cutoff", float(cutoff), kC, value, seconds, status, nodes)
    if status in STOPPED_STATUSES:
        bound = answer.dual_bound
        bound = bound if math.isfinite(bound) else -math.inf
        if cutoff is not None:
            bound = min(bound, float(cutoff))
        return SubResult("time_limit", bound, kC if below else None, value, seconds, status, nodes)
    return SubResult("error", -math.inf, None, None, seconds, status, nodes)


__all__ = [
    "SubMilp",
    "SubResult",
    "build_subproblem",
    "lp_multipliers",
    "solve_subproblem",
    "table_value",
]
