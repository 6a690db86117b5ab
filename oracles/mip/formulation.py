"""The reference MILP formulation of a Problem, built once and consumed by every MIP backend.

``build_milp(problem)`` turns min_{w in W} F(w) (``core.problem``; SPEC sections 2 to 5) into

    min  cost @ x + offset   s.t.  row_lower <= A x <= row_upper,  col_lower <= x <= col_upper,
                                   x_i integer where ``integer[i]``,

a plain, solver-independent record (``Milp``): HiGHS and Gurobi only copy it into their own API.

Columns
-------
* ``w_j`` (continuous, d of them): the weights. On an IntegerGrid they are tied to one-hot
  binaries ``b_jk``, k = -B..B: ``sum_k b_jk = 1`` and ``w_j = tau * sum_k k b_jk``. On a Box
  they are the free continuous variables in [lower, upper].
* ``z_u`` (binary, one per active row): z_u = 1 iff the row is predicted +1 (SPEC section 2,
  h_w(x) = +1 iff <w, x> >= mu). Row u contributes ``pos_u (1 - z_u) + neg_u z_u``: cost
  ``neg_u - pos_u`` on z_u and ``pos_u`` to the offset. Weights are reals and may be negative
  (RSPM's separator rows, SPEC section 4).
* ``t_m`` (binary): the exact norm encoding of SPEC section 3 (below).

Rows
----
* Indicator rows by a big-M PER ROW, from the domain. With a_u = <w, x_u> in [L_u, U_u] on W:

      a_u - (mu + g - L_u) z_u >= L_u              (z_u = 1  =>  a_u >= mu + g)
      a_u - (U_u - mu + eps_u) z_u <= mu - eps_u   (z_u = 0  =>  a_u <= mu - eps_u)

  On an IntegerGrid U_u = -L_u = min(tau B ||x_u||_1, sqrt(N) ||x_u||_2), N the largest
  attainable ||w||^2 within the norm bound (when there is one); on a Box
  U_u = sum_j max(lower x_uj, upper x_uj) and L_u = sum_j min(lower x_uj, upper x_uj). Both
  are widened by a relative 1e-9 so that rounding cannot make them cut off a grid point.
* Rows decided by the domain get no z and no row, only an offset: U_u < mu (always -1, e.g.
  x_u = 0 since mu > 0) adds pos_u, L_u >= mu (always +1) adds neg_u (decided with the widened
  bounds, so a row that rounding could put on either side keeps its z). Rows with pos_u = neg_u
  (in particular pos = neg = 0) cost the same either way and add pos_u. No other merging: the
  Problem's rows are already merged (SPEC section 2).
* Exact norm (SPEC section 3, not the paper's lambda relaxation, which is exact only for
  eta_{d+1} >= 0): on the grid ||w||^2 = tau^2 q with the integer q = sum_jk k^2 b_jk, LINEAR in
  b. q takes finitely many values m (the sums of d squares of 0..B, up to the norm bound). One
  binary t_m per value, ``sum_m t_m = 1`` and ``sum_m m t_m = q``, and the objective term
  ``norm_coef * sum_m sqrt(D^2 - tau^2 m) t_m`` is exact for either sign of norm_coef. The
  norm bound ||w||^2 <= norm_sq_max is the range of m; with norm_coef = 0 it is the single row
  ``q <= max m`` instead (and no row when it cannot bind).

The strict side (``strict_eps``, SPEC section 8)
------------------------------------------------
A MIP cannot express the strict inequality a_u < mu of a row predicted -1, so z_u = 0 requires
a_u <= mu - eps_u. On an IntegerGrid eps_u = min(strict_eps, G_u / 2) with G_u a PROVEN lower
bound on the distance from mu down to the row's largest grid score below mu, and 0 where none
is proven: no grid point loses its feasible assignment, the formulation is a relaxation of the
exact problem, and rows the solver mislabels at its answer get exact lazy cuts
(``oracles.mip.margin_band``, which explains why this never certifies a point that is not the
argmin). ``band_cuts`` are those cuts. ``strict_eps`` is only a cap (default 1e-6): a larger
eps_u keeps the solver's z_u faithful against its tolerances, it never excludes a grid point.

On a Box eps_u = strict_eps for every row, and the positive side has a band [mu, mu + g) with
``positive_guard`` g = ``BOX_POSITIVE_GUARD`` (0 on a grid). Why the Box needs it: its optimum
lies at a vertex, where the LP makes a_u = mu hold only up to the solver's feasibility
tolerance; the exact rule of SPEC section 2 would then read a_u = mu - 1e-12 as -1 and the
certificate would be refused. A w of the Box with a score in the bands is excluded (a known
limitation: OPSamp needs an alpha-approximate minimizer, SPEC section 5, not an exact argmin).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Callable

import numpy as np
import scipy.sparse

from core.objective import exact_positive
from core.problem import Box, IntegerGrid, Problem
from oracles.contract.certificate import OracleError, Status
from oracles.contract.budget import Budget
from oracles.mip.margin_band import (
    MAX_BAND_ROUNDS,
    BandCut,
    band_cut,
    mislabelled_rows,
    strict_eps_per_row,
)
from oracles.contract.stats import MipStats

#: Default eps of ``z_u = 0 => <w, x_u> <= mu - eps``: on a Box the eps of every row, on an
#: IntegerGrid the cap of each row's proven eps_u (module docstring, the strict side).
DEFAULT_STRICT_EPS = 1e-6
#: Relative widening of the score ranges (L_u, U_u) against rounding (module docstring).
RANGE_REL_SLACK = 1e-9
#: Default g of ``z_u = 1 => <w, x_u> >= mu + g`` on a Box (module docstring). It is larger than
#: BOX_FEASIBILITY_TOL times any big-M of a unit-scale instance, so the exact rule agrees.
BOX_POSITIVE_GUARD = 1e-7
#: Feasibility and integrality tolerances the MIP backends set, by domain
#: (``feasibility_tol_for``). On an IntegerGrid a solution is exact once its binaries are
#: rounded, so the tolerances only steer the search, and both directions fail:
#: * too tight breaks the search: with 1e-9, HiGHS 1.15 CERTIFIED FALSE OPTIMA of this
#:   formulation (measured on Adult, balanced n = 4,000, OPDisc eps = 0.5, seeds 0 and 1:
#:   "optimal" -4012.65 and -2680.19 where feasible points of -4016.31 and -2716.95 exist;
#:   ``tests/oracles/structured/test_oracle.py``). ``certify`` cannot see that: the point it is
#:   given is evaluated correctly, the claim that nothing is better is the solver's.
#: * as loose as ``strict_eps`` lets a row with a score in [mu - eps, mu] take either label:
#:   with 1e-6 the MIP returned such a point, which ``certify`` refused (INCONSISTENT: safe, but
#:   no certificate; ``tests/oracles/structured/test_oracle.py``, scores at the margin).
#: 1e-7 (HiGHS's default primal tolerance) passes both, and on the Adult benchmark grid every
#: answer agreed with the structured oracle's (docs/results/oracles.md).
GRID_FEASIBILITY_TOL = 1e-7
#: On a Box the positive guard above needs tolerances well below it.
BOX_FEASIBILITY_TOL = 1e-9
DEFAULT_MIP_ABS_GAP = 1e-9
#: ||w||^2 <= norm_sq_max is checked with this slack, as ``IntegerGrid.contains`` does.
NORM_TOL = 1e-9


class FormulationError(ValueError):
    """The formulation cannot be built for this problem with these options."""


class SolverUnavailableError(OracleError):
    """A backend cannot run in this process: not installed, no licence, or over a size limit.

    The ``auto`` route (``oracles.routing.routes``) falls back to its next backend on this error (and
    only on it); its message is the reason recorded in the certificate's ``fallback``.
    """


def feasibility_tol_for(problem: Problem, override: float | None = None) -> float:
    """The feasibility and integrality tolerance for ``problem`` (``GRID_FEASIBILITY_TOL``,
    ``BOX_FEASIBILITY_TOL``), unless the caller chose one."""
    if override is not None:
        return float(override)
    return BOX_FEASIBILITY_TOL if isinstance(problem.domain, Box) else GRID_FEASIBILITY_TOL


def attainable_square_sums(d: int, bound: int, cap: int) -> np.ndarray:
    """The sorted values m <= cap of sum_{j<d} k_j^2 over integers |k_j| <= bound."""
    squares = np.arange(bound + 1) ** 2
    reach = np.zeros(cap + 1, dtype=bool)
    reach[0] = True
    for _ in range(d):
        nxt = np.zeros_like(reach)
        for s in squares[squares <= cap]:
            nxt[s:] |= reach[: cap + 1 - s]
        reach = nxt
    return np.flatnonzero(reach)


def row_score_range(problem: Problem) -> tuple[np.ndarray, np.ndarray]:
    """(L_u, U_u): the range of a_u = <w, x_u> over the domain (module docstring, big-M)."""
    X, domain = problem.points, problem.domain
    if isinstance(domain, Box):
        high = np.maximum(domain.lower * X, domain.upper * X).sum(axis=1)
        low = np.minimum(domain.lower * X, domain.upper * X).sum(axis=1)
        slack = RANGE_REL_SLACK * np.maximum(np.abs(low), np.abs(high)) + 1e-300
        return low - slack, high + slack
    high = domain.step * domain.bound * np.abs(X).sum(axis=1)
    cap = norm_cap(domain)
    if cap is not None:
        largest = int(attainable_square_sums(domain.d, domain.bound, cap)[-1])
        norm_max = domain.step * math.sqrt(largest)
        high = np.minimum(high, norm_max * np.sqrt((X * X).sum(axis=1)))
    high = high * (1.0 + RANGE_REL_SLACK) + 1e-300
    return -high, high


def norm_cap(domain: IntegerGrid) -> int | None:
    """The largest integer q with tau^2 q <= norm_sq_max (+ NORM_TOL), or None without a bound."""
    if domain.norm_sq_max is None:
        return None
    limit = domain.norm_sq_max + NORM_TOL
    cap = math.floor(limit / domain.step**2)
    cap += domain.step**2 * (cap + 1) <= limit  # undo a floor of a quotient rounded down
    cap -= cap > 0 and domain.step**2 * cap > limit  # or rounded up
    return int(min(cap, domain.d * domain.bound**2))


@dataclass(frozen=True, eq=False)
class Milp:
    """A MILP in plain arrays (module docstring), with the column maps needed to read w back.

    Attributes:
        cost, offset: objective ``cost @ x + offset``.
        col_lower, col_upper, integer: column bounds and integrality.
        matrix: the constraint matrix, ``scipy.sparse.csr_array`` (rows x cols).
        row_lower, row_upper: row bounds (+-inf where one-sided).
        w_cols: column of w_j, for every j.
        onehot_cols: (d, 2B+1) columns of b_jk (IntegerGrid), k = -B..B along axis 1; else None.
        z_cols: column of z_u for each row of the Problem, -1 where the row has no z.
        z_fixed: for each Problem row, 1 or 0 when the domain decides its label, -1 where it
            has a z, and -2 where its cost does not depend on the label (pos_u = neg_u).
        norm_cols, norm_values: columns t_m and their values m (exact norm encoding), or empty.
        strict_eps, positive_guard: the eps cap and g of the indicator rows.
        row_eps: eps_u of each Problem row's z_u = 0 row (0 where the row has no z).
        band_cuts: the lazy cuts of ``oracles.mip.margin_band`` in this model.
    """

    problem: Problem
    cost: np.ndarray
    offset: float
    col_lower: np.ndarray
    col_upper: np.ndarray
    integer: np.ndarray
    matrix: scipy.sparse.csr_array
    row_lower: np.ndarray
    row_upper: np.ndarray
    w_cols: np.ndarray
    onehot_cols: np.ndarray | None
    z_cols: np.ndarray
    z_fixed: np.ndarray
    norm_cols: np.ndarray
    norm_values: np.ndarray
    strict_eps: float
    positive_guard: float
    row_eps: np.ndarray
    band_cuts: tuple[BandCut, ...] = ()

    @property
    def n_cols(self) -> int:
        return int(self.cost.shape[0])

    @property
    def n_rows(self) -> int:
        return int(self.matrix.shape[0])

    def stats(self) -> dict[str, int]:
        """Sizes for certificates and logs."""
        return {
            "n_cols": self.n_cols,
            "n_rows": self.n_rows,
            "n_integer": int(self.integer.sum()),
            "n_nonzeros": int(self.matrix.nnz),
            "n_active_rows": int((self.z_cols >= 0).sum()),
            "n_problem_rows": self.problem.n_rows,
            "n_band_cuts": len(self.band_cuts),
        }

    def decode_w(self, x: np.ndarray) -> np.ndarray:
        """w from a solver's column values: the chosen k of each one-hot block, or the Box's w."""
        x = np.asarray(x, dtype=float)
        domain = self.problem.domain
        if isinstance(domain, IntegerGrid):
            k = np.argmax(x[self.onehot_cols], axis=1) - domain.bound
            return domain.step * k.astype(float)
        return np.clip(x[self.w_cols], domain.lower, domain.upper)

    def objective_value(self, x: np.ndarray) -> float:
        """cost @ x + offset: the formulation's objective at an assignment."""
        return float(self.cost @ np.asarray(x, dtype=float) + self.offset)

    def encode(self, w: np.ndarray) -> np.ndarray:
        """The canonical assignment of a domain point w (z_u = h_w(x_u) by the exact rule).

        On an IntegerGrid it is feasible (``max_violation`` 0, band cuts included) and has
        ``objective_value`` F(w) for every grid point (module docstring, the strict side); on a
        Box unless some a_u falls in a band. Tests use it to check the formulation point by
        point, and a backend may pass it as a MIP start.
        """
        problem = self.problem
        w = np.asarray(w, dtype=float)
        x = np.zeros(self.n_cols)
        x[self.w_cols] = w
        if self.onehot_cols is not None:
            k = np.round(w / problem.domain.step).astype(int)
            x[self.onehot_cols[np.arange(problem.d), k + problem.domain.bound]] = 1.0
            if len(self.norm_cols):
                q = int((k * k).sum())
                x[self.norm_cols[self.norm_values == q]] = 1.0
        active = self.z_cols >= 0
        labels = exact_positive(problem.points[active], w, problem.margin)
        x[self.z_cols[active]] = labels.astype(float)
        for cut, col in zip(self.band_cuts, self.cut_cols):
            k = np.round(w[list(cut.fine_cols)] / problem.domain.step).astype(int)
            x[col] = float(np.array_equal(k, cut.fine_k))
        return x

    @property
    def cut_cols(self) -> np.ndarray:
        """The pattern column s of each band cut (the last columns of the model)."""
        return np.arange(self.n_cols - len(self.band_cuts), self.n_cols)

    def max_violation(self, x: np.ndarray) -> float:
        """The largest violation of a row, a column bound or integrality at ``x``."""
        x = np.asarray(x, dtype=float)
        activity = self.matrix @ x
        parts = [
            np.maximum(self.row_lower - activity, 0.0),
            np.maximum(activity - self.row_upper, 0.0),
            np.maximum(self.col_lower - x, 0.0),
            np.maximum(x - self.col_upper, 0.0),
            np.abs(x - np.round(x)) * self.integer,
        ]
        return float(max((p.max(initial=0.0) for p in parts)))


class _Builder:
    """Accumulates columns and rows (COO triplets) for ``build_milp``."""

    def __init__(self) -> None:
        self.lower: list[float] = []
        self.upper: list[float] = []
        self.integer: list[bool] = []
        self.cost: list[float] = []
        self.rows: list[int] = []
        self.cols: list[int] = []
        self.vals: list[float] = []
        self.row_lower: list[float] = []
        self.row_upper: list[float] = []

    def columns(self, n: int, lower, upper, integer: bool, cost=0.0) -> np.ndarray:
        start = len(self.cost)
        self.lower.extend(np.broadcast_to(np.asarray(lower, dtype=float), (n,)).tolist())
        self.upper.extend(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).tolist())
        self.cost.extend(np.broadcast_to(np.asarray(cost, dtype=float), (n,)).tolist())
        self.integer.extend([integer] * n)
        return np.arange(start, start + n)

    def row(self, cols, vals, lower: float, upper: float) -> None:
        """One row; zero coefficients are left out of the sparse matrix."""
        vals = np.asarray(vals, dtype=float)
        keep = vals != 0.0
        self.rows.extend([len(self.row_lower)] * int(keep.sum()))
        self.cols.extend(np.asarray(cols)[keep].tolist())
        self.vals.extend(vals[keep].tolist())
        self.row_lower.append(lower)
        self.row_upper.append(upper)

    def rows_block(self, row_cols: np.ndarray, row_vals: np.ndarray, lower, upper) -> None:
        """Many rows at once: row i has the entries (row_cols[i], row_vals[i]) that are nonzero."""
        first = len(self.row_lower)
        r, c = np.nonzero(row_vals)
        self.rows.extend((first + r).tolist())
        self.cols.extend(row_cols[r, c].tolist())
        self.vals.extend(row_vals[r, c].tolist())
        n = row_vals.shape[0]
        self.row_lower.extend(np.broadcast_to(np.asarray(lower, dtype=float), (n,)).tolist())
        self.row_upper.extend(np.broadcast_to(np.asarray(upper, dtype=float), (n,)).tolist())


def build_milp(
    problem: Problem,
    *,
    strict_eps: float = DEFAULT_STRICT_EPS,
    positive_guard: float | None = None,
    band_cuts: tuple[BandCut, ...] = (),
) -> Milp:
    """The reference formulation of ``problem`` (module docstring; SPEC sections 2, 3, 5).

    ``band_cuts`` (IntegerGrid only) are the exact cuts of ``oracles.mip.margin_band``.
    """
    if not (math.isfinite(strict_eps) and strict_eps > 0):
        raise FormulationError(f"strict_eps must be finite and > 0, found {strict_eps!r}")
    domain = problem.domain
    if positive_guard is None:
        positive_guard = BOX_POSITIVE_GUARD if isinstance(domain, Box) else 0.0
    if not (math.isfinite(positive_guard) and positive_guard >= 0):
        raise FormulationError(f"positive_guard must be finite and >= 0, found {positive_guard!r}")
    mu, d = problem.margin, problem.d
    build = _Builder()
    offset = 0.0

    # --- w, and on a grid its one-hot binaries -----------------------------------------------
    if isinstance(domain, IntegerGrid):
        tau, B = domain.step, domain.bound
        w_cols = build.columns(d, -tau * B, tau * B, False, problem.linear)
        ks = np.arange(-B, B + 1)
        onehot = np.stack([build.columns(len(ks), 0.0, 1.0, True) for _ in range(d)])
        for j in range(d):
            build.row(onehot[j], np.ones(len(ks)), 1.0, 1.0)  # sum_k b_jk = 1
            build.row(np.r_[w_cols[j], onehot[j]], np.r_[1.0, -tau * ks], 0.0, 0.0)  # w_j link
    elif isinstance(domain, Box):
        w_cols = build.columns(d, domain.lower, domain.upper, False, problem.linear)
        onehot = None
    else:  # pragma: no cover - Problem only admits the two domains
        raise FormulationError(f"unsupported domain {domain!r}")

    # --- the norm: exact table (norm_coef != 0) or a plain bound ----------------------------
    norm_cols = np.zeros(0, dtype=int)
    norm_values = np.zeros(0, dtype=int)
    if isinstance(domain, IntegerGrid):
        cap = norm_cap(domain)
        ks = np.arange(-domain.bound, domain.bound + 1)
        q_cols, q_vals = onehot.ravel(), np.tile(ks.astype(float) ** 2, d)
        if problem.norm_coef != 0.0:
            norm_values = attainable_square_sums(d, domain.bound, cap)
            s = domain.step**2 * norm_values
            table = problem.norm_coef * np.sqrt(np.maximum(problem.norm_radius_sq - s, 0.0))
            norm_cols = build.columns(len(norm_values), 0.0, 1.0, True, table)
            build.row(norm_cols, np.ones(len(norm_cols)), 1.0, 1.0)  # sum_m t_m = 1
            build.row(np.r_[q_cols, norm_cols], np.r_[q_vals, -norm_values], 0.0, 0.0)
        elif cap is not None and cap < d * domain.bound**2:
            build.row(q_cols, q_vals, -np.inf, float(cap))  # q <= cap

    # --- one z per row whose label matters and is not decided by the domain ------------------
    low, high = row_score_range(problem)
    pos, neg = problem.pos, problem.neg
    z_fixed = np.full(problem.n_rows, -1, dtype=np.int64)
    z_fixed[pos == neg] = -2
    z_fixed[(z_fixed == -1) & (high < mu)] = 0  # (low, high) are widened: rounding-safe
    z_fixed[(z_fixed == -1) & (low >= mu)] = 1
    offset += float(pos[z_fixed == -2].sum() + pos[z_fixed == 0].sum() + neg[z_fixed == 1].sum())
    active = np.flatnonzero(z_fixed == -1)
    z_cols = np.full(problem.n_rows, -1, dtype=np.int64)
    z_cols[active] = build.columns(len(active), 0.0, 1.0, True, neg[active] - pos[active])
    offset += float(pos[active].sum())

    X = problem.points[active]
    cols = np.hstack([np.broadcast_to(w_cols, X.shape), z_cols[active, None]])
    g = positive_guard
    if isinstance(domain, IntegerGrid):
        eps = strict_eps_per_row(problem, active, strict_eps)
    else:
        eps = np.full(len(active), float(strict_eps))
    row_eps = np.zeros(problem.n_rows)
    row_eps[active] = eps
    L, U = low[active], high[active]
    build.rows_block(cols, np.hstack([X, -(mu + g - L)[:, None]]), L, np.inf)  # z=1 => a >= mu+g
    build.rows_block(cols, np.hstack([X, -(U - mu + eps)[:, None]]), -np.inf, mu - eps)  # z=0

    band_cuts = tuple(band_cuts)
    if band_cuts and not isinstance(domain, IntegerGrid):
        raise FormulationError("band cuts need an IntegerGrid domain")
    for cut in band_cuts:
        _add_band_cut(build, cut, problem, w_cols, onehot, z_cols[cut.row], low, high)

    n_cols, n_rows = len(build.cost), len(build.row_lower)
    matrix = scipy.sparse.csr_array(
        (
            np.asarray(build.vals),
            (np.asarray(build.rows, dtype=np.int64), np.asarray(build.cols, dtype=np.int64)),
        ),
        shape=(n_rows, n_cols),
    )
    matrix.sum_duplicates()
    return Milp(
        problem=problem,
        cost=np.asarray(build.cost),
        offset=offset,
        col_lower=np.asarray(build.lower),
        col_upper=np.asarray(build.upper),
        integer=np.asarray(build.integer, dtype=bool),
        matrix=matrix,
        row_lower=np.asarray(build.row_lower),
        row_upper=np.asarray(build.row_upper),
        w_cols=w_cols,
        onehot_cols=onehot,
        z_cols=z_cols,
        z_fixed=z_fixed,
        norm_cols=norm_cols,
        norm_values=norm_values,
        strict_eps=float(strict_eps),
        positive_guard=float(positive_guard),
        row_eps=row_eps,
        band_cuts=band_cuts,
    )


def _add_band_cut(
    build: _Builder, cut: BandCut, problem: Problem, w_cols, onehot, z_col, low, high
) -> None:
    """s >= sum_j b_{j, c_j} - (|F| - 1) (s = 1 when w agrees with the cut's fine values), and

        s = 1, z = 1  =>  A >= theta:   A - M1 s - M1 z >= theta - 2 M1
        s = 1, z = 0  =>  A <= theta:   A + M2 s - M2 z <= theta + M2

    with A = sum over the coarse columns of x_uj w_j (on tau Z), theta = tau (T - 1/2), and
    M1, M2 from A's range (``oracles.mip.margin_band``, point 3). s is continuous in [0, 1].
    """
    if z_col < 0:
        raise FormulationError(f"band cut on row {cut.row}, which has no z")
    domain = problem.domain
    x = problem.points[cut.row]
    s_col = build.columns(1, 0.0, 1.0, False)[0]
    fine_b = [onehot[j, k + domain.bound] for j, k in zip(cut.fine_cols, cut.fine_k)]
    build.row(np.r_[s_col, fine_b], np.r_[1.0, -np.ones(len(fine_b))], 1.0 - len(fine_b), np.inf)
    coarse = list(cut.coarse_cols)
    reach = domain.step * domain.bound * float(np.abs(x[coarse]).sum()) * (1 + RANGE_REL_SLACK)
    theta = cut.threshold
    m1 = max(theta + reach, 0.0) + 1.0
    m2 = max(reach - theta, 0.0) + 1.0
    cols = np.r_[w_cols[coarse], s_col, z_col]
    build.row(cols, np.r_[x[coarse], -m1, -m1], theta - 2 * m1, np.inf)
    build.row(cols, np.r_[x[coarse], m2, -m2], -np.inf, theta + m2)


@dataclass(frozen=True, eq=False)
class RawSolve:
    """One backend solve of one Milp, before ``certify``: the solver's own claims.

    ``x`` is the column assignment (None without a solution), ``objective`` the solver's value of
    it, ``bound`` its proven lower bound (-inf when none), ``stats`` what goes in the record.
    """

    status: Status
    message: str
    x: np.ndarray | None
    objective: float | None
    bound: float
    stats: MipStats


@dataclass(frozen=True, eq=False)
class BandResolved:
    """What ``solve_resolving_band`` hands to ``certify``."""

    milp: Milp
    status: Status
    message: str
    w: np.ndarray
    solver_objective: float | None
    bound: float
    stats: MipStats


def solve_resolving_band(
    problem: Problem,
    run: Callable[[Milp, Budget], RawSolve],
    *,
    strict_eps: float,
    budget: Budget,
    max_rounds: int = MAX_BAND_ROUNDS,
    cuts: tuple[BandCut, ...] = (),
) -> BandResolved:
    """Solve the reference formulation with ``run`` (a backend, given what ``budget`` has left
    at each of its solves), adding the exact band cuts of ``oracles.mip.margin_band`` while the
    solver's labels at its answer are not the exact ones (``cuts``: the ones to start with, e.g.
    those an earlier solve of the problem needed). No round starts once the budget has expired.

    Every round's model is a relaxation of the exact problem, so the largest bound of the
    rounds is a lower bound on min F; the answer is the round point with the smallest exact
    objective. Its ``solver_objective`` is passed on only when the solver's labels there were
    the exact ones; otherwise ``certify`` judges the exact value against the bound alone.
    """
    cuts = list(cuts)
    seen: set[BandCut] = set(cuts)
    best: tuple[float, np.ndarray, float | None] | None = None
    bound, notes, rounds = -math.inf, [], 0
    milp = raw = None
    while True:
        milp = build_milp(problem, strict_eps=strict_eps, band_cuts=tuple(cuts))
        raw = run(milp, budget)
        rounds += 1
        if raw.status is Status.ERROR:
            break
        bound = max(bound, raw.bound)
        if raw.x is None:
            break
        w = milp.decode_w(raw.x)
        wrong = mislabelled_rows(milp, raw.x) if isinstance(problem.domain, IntegerGrid) else []
        exact = float(problem.objective(w))
        if best is None or exact < best[0]:
            best = (exact, w, None if len(wrong) else raw.objective)
        if not len(wrong) or raw.status is not Status.OPTIMAL:
            break
        new = [c for c in (band_cut(problem, int(u), w) for u in wrong) if c not in seen]
        if not new:
            notes.append(f"rows {wrong.tolist()} mislabelled again after their band cuts")
            break
        if rounds >= max_rounds or budget.expired():
            notes.append(f"margin band unresolved after {rounds} solves")
            break
        cuts.extend(new)
        seen.update(new)
    stats = dataclasses.replace(raw.stats, band_rounds=rounds, band_cuts=len(cuts))
    message = " | ".join(m for m in (raw.message, *notes) if m)
    if raw.status is Status.ERROR:
        return BandResolved(
            milp, Status.ERROR, message, default_point(problem), None, -math.inf, stats
        )
    if best is None:
        return BandResolved(milp, raw.status, message, default_point(problem), None, bound, stats)
    _, w, solver_objective = best
    return BandResolved(milp, raw.status, message, w, solver_objective, bound, stats)


def default_point(problem: Problem) -> np.ndarray:
    """A point of the domain to report when a solver stopped without one: 0, or its projection."""
    domain = problem.domain
    if isinstance(domain, Box):
        return np.clip(np.zeros(problem.d), domain.lower, domain.upper)
    return np.zeros(problem.d)


__all__ = [
    "BandResolved",
    "RawSolve",
    "solve_resolving_band",
    "BOX_POSITIVE_GUARD",
    "BOX_FEASIBILITY_TOL",
    "GRID_FEASIBILITY_TOL",
    "DEFAULT_MIP_ABS_GAP",
    "feasibility_tol_for",
    "DEFAULT_STRICT_EPS",
    "FormulationError",
    "Milp",
    "SolverUnavailableError",
    "attainable_square_sums",
    "build_milp",
    "default_point",
    "norm_cap",
    "row_score_range",
]
