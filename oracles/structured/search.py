"""One combination of continuous weights solved exactly by a compiled depth-first search over the
binary columns: what ``oracles.structured.milp`` asks HiGHS, without a MILP.

With v fixed (``oracles.structured.shape``), what is left is

    min over k_C   sum_{j in C} U_j(k_j) + N(q_P + ||k_C||^2) + sum_c f_c(K_c),
                   K_c = sum_{j in c} k_j,  ||k_C||^2 <= Q = cap - q_P,  |k_j| <= r.

Why: on Adult (20 binary columns, 174 cells of 4 columns each) HiGHS proves most of these
subproblems no better than the incumbent at its root node, but a call costs 20 to 60 ms of
setup, LP and cuts (docs/results/structured_speed.md); a compiled search does most of them in
well under a millisecond.

How: the columns are fixed one at a time (most cells first, ``column_order``); a node with the
first t columns fixed has, per cell, the partial score S_c and m_c columns left, and per child
(the next column at each value k with the norm still inside Q) the lower bound

    sum_{j fixed} U_j(k_j) + T_t(q_fixed) + sum_c min { f_c(K) : |K - S_c| <= R_c },

where T_t(q) = min over the free columns' squares q' <= Q - q of h_t(q') + N(q_P + q + q')
(h_t the knapsack of their unary costs, ``structured_shape.squares_knapsack``'s recursion) and
R_c = min(r m_c, floor(sqrt(m_c (Q - q_fixed)))) bounds what the free columns can add to a cell
(Cauchy-Schwarz). Every term is a minimum over a superset of what the subtree can reach, so the
bound is a lower bound on every point below the node; at depth |C| it is the point's value
itself (every R_c = 0, T the norm term alone). Children are visited by increasing bound and
dropped once their bound reaches the threshold (the incumbent, then the best point found), so
the search ends with the exact minimum below the threshold, or the proof that there is none.

The Lagrangian shift. The bound treats every cell as free to take its own best score; where
that is weak (a search past ``PLAIN_NODES`` nodes) the tables are shifted first: for any
multipliers lambda_c, f_c(K) + lambda_c K and U_j(k) - mu_j k with mu_j = sum of lambda_c over
the cells holding column j add up, over any point, to the point's own value (the shifts
cancel, as K_c = sum_{j in c} k_j), so the search and its bounds run on them unchanged, and the
leaves' values are the same. The multipliers start from the prices the LP relaxation of the
combination's MILP puts on each K_c (``oracles.structured.milp.lp_multipliers``, handed in by
the oracle: a few milliseconds of HiGHS), then subgradient steps on the root bound improve on
them (``_lagrange``: the relaxation's cell scores against its columns' sums); all on a dyadic
grid so that integral tables stay exact. From zero, subgradient steps alone stopped far below
the LP's bound on Adult's hard combinations (a root gap of hundreds where the LP's was tens) and
the search took up to millions of nodes; from the LP's prices it takes thousands
(docs/results/structured_speed.md). Any multipliers give a valid bound: they only change how
tight it is. A root bound at or above the threshold closes the combination with no node at all.

The search is capped at ``max_nodes``: a combination that needs more goes to HiGHS, as before
(``oracles.structured.oracle``). The bound uses the tables' own floating-point sums (shifted: within
a rounding of them); the point it returns is re-evaluated by the caller with ``table_value``
and ``Problem.objective``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from numba import njit

from oracles.contract.budget import Budget
from oracles.structured.shape import Shape

#: ``_run`` finished: the minimum below the threshold, or none.
DONE = 0
#: ``_run`` made its nodes without finishing (the state is kept to go on from).
NODE_LIMIT = 1
#: Nodes between two looks at the budget (a few milliseconds of search).
CHUNK = 20_000
#: Nodes the search makes on the tables as they are before it shifts them (a millisecond or
#: two: most of Adult's combinations finish well within it).
PLAIN_NODES = 2_000
#: Subgradient steps for the multipliers of the shift.
LAGRANGE_ITERATIONS = 100
#: The multipliers are multiples of 1 / LAMBDA_GRID (a power of two: a shifted table of
#: integers is a table of exact dyadic numbers, and ties stay ties).
LAMBDA_GRID = 2.0**20


@dataclass(frozen=True, eq=False)
class ColumnPlan:
    """What the search needs of a shape that is the same for every combination: the visiting
    order of the binary columns and, per position in it, the cells holding that column (CSR)."""

    order: np.ndarray  # positions in shape.binary_cols, in visiting order
    cell_ptr: np.ndarray  # (|C| + 1,)
    cell_idx: np.ndarray  # cells of the column at each position
    cell_size: np.ndarray  # (n_cells,)


@dataclass(frozen=True)
class SearchResult:
    """How one search ended: ``outcome`` "solved" (``kC`` the minimum, of tables' value
    ``value``), "cutoff" (nothing below the threshold), or unfinished, "node_limit" or
    "time_limit" (``kC`` the best point found below the threshold, if any)."""

    outcome: str
    value: float | None
    kC: np.ndarray | None
    nodes: int


def column_order(shape: Shape) -> ColumnPlan:
    """The columns by the number of cells holding them, most first (ties: the shape's order):
    fixing a column of many cells tightens many cell bounds at once."""
    cells = np.asarray(shape.cells, dtype=np.int64)
    order = np.argsort(-cells.sum(axis=0), kind="stable").astype(np.int64)
    held = [np.flatnonzero(cells[:, j]) for j in order]
    ptr = np.zeros(len(order) + 1, dtype=np.int64)
    ptr[1:] = np.cumsum([len(h) for h in held])
    idx = np.concatenate(held).astype(np.int64) if held else np.zeros(0, dtype=np.int64)
    return ColumnPlan(order, ptr, idx, cells.sum(axis=1).astype(np.int64))


def search_combination(
    shape: Shape,
    plan: ColumnPlan,
    kP: np.ndarray,
    f_v: np.ndarray,
    threshold: float,
    *,
    max_nodes: int,
    budget: Budget | None = None,
    multipliers: Callable[[], np.ndarray | None] | None = None,
) -> SearchResult:
    """The exact minimum over k_C of F(v, k_C) (module docstring) if it is below ``threshold``
    (an objective value: offsets included), else "cutoff"; "node_limit" after ``max_nodes``
    nodes, "time_limit" once ``budget`` has expired (checked every ``CHUNK`` nodes).

    The search runs on the tables as they are for its first ``PLAIN_NODES`` nodes; a search
    that needs more starts again on the tables shifted by multipliers (module docstring, the
    Lagrangian shift), below the best point the first found. ``multipliers``: called then, the
    shift's starting multipliers, one per cell (None: start from zero); subgradient steps
    improve on them, and the best seen is kept."""
    qP = shape.combo_norm(kP)
    Q = shape.cap - qP
    r = shape.reach(Q)
    nC = len(shape.binary_cols)
    offset = shape.const + shape.combo_unary(kP)
    cols = shape.binary_cols[plan.order]
    unary = np.ascontiguousarray(shape.unary[cols][:, shape.bound - r : shape.bound + r + 1])
    norm = np.ascontiguousarray(shape.norm[qP : qP + Q + 1])
    f = np.ascontiguousarray(f_v, dtype=np.float64)
    if f.shape[0] == 0:  # no cells: a table the kernel can index
        f = np.zeros((0, 1))
    max_size = int(plan.cell_size.max()) if len(plan.cell_size) else 0
    reach = _reach(max_size, r, Q)
    limit = threshold - offset
    best, nodes, status = limit, 0, NODE_LIMIT
    best_k = np.zeros(nC, dtype=np.int64)
    for shifted in (False, True):
        if shifted:
            if nodes < PLAIN_NODES or nodes >= max_nodes:
                break  # finished plainly, or out of nodes
            if budget is not None and budget.expired():
                break
            lam0 = multipliers() if multipliers is not None else None
            if lam0 is None or len(lam0) != f.shape[0] or not np.all(np.isfinite(lam0)):
                lam0 = np.zeros(f.shape[0])
            lam0 = np.round(np.asarray(lam0, dtype=np.float64) * LAMBDA_GRID) / LAMBDA_GRID
            lam, root = _lagrange(
                f, plan.cell_ptr, plan.cell_idx, plan.cell_size, shape.score_offset, unary,
                norm, reach, r, Q, best, LAGRANGE_ITERATIONS, lam0,
            )  # fmt: skip
            if not root < best:  # the shifted tables' root bound: nothing below best
                status = DONE
                break
            f, unary = _shift(f, unary, lam, plan.cell_ptr, plan.cell_idx, shape.score_offset, r)
        W = _windows(f, r * max_size)
        tail = _tail(unary, norm, r, Q)
        state = _State.empty(nC, len(plan.cell_size), r, plan.cell_size)
        state.best_k[:] = best_k
        cap = max_nodes if shifted else min(max_nodes, PLAIN_NODES)
        status = NODE_LIMIT
        while status == NODE_LIMIT and nodes < cap:
            if budget is not None and budget.expired():
                break
            chunk = min(CHUNK, cap - nodes)
            status, best, made = _run(
                plan.cell_ptr, plan.cell_idx, W, shape.score_offset, unary, tail, reach, r, Q,
                state.S, state.m, state.in_col, state.child_k, state.child_b, state.n_child,
                state.nxt, state.chosen, state.q_fixed, state.u_fixed, state.base_by_sq,
                state.best_k, state.pos, best, chunk,
            )  # fmt: skip
            nodes += made
        best_k = state.best_k.copy()
        if status == DONE:
            break
    found = bool(best < limit) and nC > 0
    kC = None
    if found:
        kC = np.zeros(nC, dtype=np.int64)
        kC[plan.order] = best_k
    value = float(best + offset) if found else None
    if status == NODE_LIMIT:
        outcome = "node_limit" if nodes >= max_nodes else "time_limit"
        return SearchResult(outcome, value, kC, nodes)
    return SearchResult("solved" if found else "cutoff", value, kC, nodes)


@njit(cache=True)
def _columns_min(unary, mu, norm, r, Q, D, choice, k_out):
    """min over k (|k_j| <= r, sum k_j^2 <= Q) of sum_j [unary[j, k_j] - mu_j k_j] + norm[q]:
    a knapsack over the squares; the minimizer goes to ``k_out``."""
    n = unary.shape[0]
    for q in range(Q + 1):
        D[0, q] = np.inf
    D[0, 0] = 0.0
    for j in range(n):
        for q in range(Q + 1):
            D[j + 1, q] = np.inf
        for i in range(2 * r + 1):
            k = i - r
            c = unary[j, i] - mu[j] * k
            for q in range(k * k, Q + 1):
                v = D[j, q - k * k] + c
                if v < D[j + 1, q]:
                    D[j + 1, q] = v
                    choice[j, q] = i
    least, at = np.inf, 0
    for q in range(Q + 1):
        v = D[n, q] + norm[q]
        if v < least:
            least, at = v, q
    q = at
    for j in range(n - 1, -1, -1):
        i = choice[j, q]
        k_out[j] = i - r
        q -= (i - r) * (i - r)
    return least


@njit(cache=True)
def _lagrange(f, cell_ptr, cell_idx, cell_size, off, unary, norm, reach, r, Q, target, iters, lam0):
    """Multipliers lambda_c for the cell scores' tie to the columns (module docstring, the
    Lagrangian shift), by subgradient steps from ``lam0`` (on the dyadic grid) toward
    ``target``, and the best root bound seen:
    sum_c min_{|K| <= R_c} [f_c(K) + lambda_c K] + min over k of sum_j [U_j(k_j) - mu_j k_j]
    + N, mu_j = sum of lambda_c over the cells holding column j."""
    nc = f.shape[0]
    n = cell_ptr.shape[0] - 1
    lam = lam0.copy()
    best_lam = lam0.copy()
    best_bound = -np.inf
    g = np.zeros(nc)
    mu = np.zeros(n)
    k = np.zeros(n, dtype=np.int64)
    D = np.zeros((n + 1, Q + 1))
    choice = np.zeros((n + 1, Q + 1), dtype=np.int64)
    theta = 1.0
    stalled = 0
    for _ in range(iters):
        bound = 0.0
        for c in range(nc):
            R = reach[cell_size[c], Q]
            least, at = np.inf, 0
            for K in range(-R, R + 1):
                v = f[c, K + off] + lam[c] * K
                if v < least:
                    least, at = v, K
            bound += least
            g[c] = at
        for j in range(n):
            s = 0.0
            for p in range(cell_ptr[j], cell_ptr[j + 1]):
                s += lam[cell_idx[p]]
            mu[j] = s
        bound += _columns_min(unary, mu, norm, r, Q, D, choice, k)
        if bound > best_bound:
            best_bound = bound
            best_lam[:] = lam
            stalled = 0
        else:
            stalled += 1
            if stalled >= 5:
                theta *= 0.5
                stalled = 0
        if not bound < target:
            break  # the bound already rules the combination out
        for j in range(n):
            for p in range(cell_ptr[j], cell_ptr[j + 1]):
                g[cell_idx[p]] -= k[j]
        size = 0.0
        for c in range(nc):
            size += g[c] * g[c]
        if size == 0.0:
            break  # the relaxation's minimizer is a point: the bound is its value
        goal = target if target < np.inf else bound + 0.1 * max(1.0, abs(bound))
        step = theta * (goal - bound) / size
        if not step < np.inf:
            break
        for c in range(nc):  # on a dyadic grid: integral tables stay exact once shifted
            lam[c] = np.round((lam[c] + step * g[c]) * LAMBDA_GRID) / LAMBDA_GRID
    return best_lam, best_bound


@njit(cache=True)
def _shift(f, unary, lam, cell_ptr, cell_idx, off, r):
    """The tables shifted by ``lam``: f_c(K) + lambda_c K and U_j(k) - mu_j k. Their sum over
    any point is the point's value (the shifts cancel), and every bound of the search holds for
    them as for the tables themselves."""
    nc, nK = f.shape
    f2 = np.empty_like(f)
    for c in range(nc):
        for i in range(nK):
            f2[c, i] = f[c, i] + lam[c] * (i - off)
    u2 = np.empty_like(unary)
    for j in range(unary.shape[0]):
        mu = 0.0
        for p in range(cell_ptr[j], cell_ptr[j + 1]):
            mu += lam[cell_idx[p]]
        for i in range(unary.shape[1]):
            u2[j, i] = unary[j, i] - mu * (i - r)
    return f2, u2


@dataclass(eq=False)
class _State:
    """The search's stack between two calls of ``_run``: per depth the children still to visit
    (values and bounds, sorted), the value chosen, the norm and unary cost fixed so far; per
    cell the partial score and the free columns; ``pos`` = (depth, expand flag)."""

    S: np.ndarray
    m: np.ndarray
    in_col: np.ndarray
    child_k: np.ndarray
    child_b: np.ndarray
    n_child: np.ndarray
    nxt: np.ndarray
    chosen: np.ndarray
    q_fixed: np.ndarray
    u_fixed: np.ndarray
    base_by_sq: np.ndarray
    best_k: np.ndarray
    pos: np.ndarray

    @classmethod
    def empty(cls, n: int, nc: int, r: int, cell_size: np.ndarray) -> _State:
        nk = 2 * r + 1
        return cls(
            S=np.zeros(nc, dtype=np.int64),
            m=np.asarray(cell_size, dtype=np.int64).copy(),
            in_col=np.zeros(nc, dtype=np.bool_),
            child_k=np.zeros((n + 1, nk), dtype=np.int64),
            child_b=np.zeros((n + 1, nk)),
            n_child=np.zeros(n + 1, dtype=np.int64),
            nxt=np.zeros(n + 1, dtype=np.int64),
            chosen=np.zeros(n + 1, dtype=np.int64),
            q_fixed=np.zeros(n + 1, dtype=np.int64),
            u_fixed=np.zeros(n + 1),
            base_by_sq=np.zeros(r + 1),
            best_k=np.zeros(n, dtype=np.int64),
            pos=np.array([0, 1], dtype=np.int64),
        )


@njit(cache=True)
def _reach(max_size: int, r: int, Q: int) -> np.ndarray:
    """reach[m, ql] = min(r m, floor(sqrt(m ql))): what m free columns can add to a cell score
    with ql of the norm left (Cauchy-Schwarz), in integers."""
    reach = np.zeros((max_size + 1, Q + 1), dtype=np.int64)
    for m in range(max_size + 1):
        for ql in range(Q + 1):
            x = int(math.sqrt(m * ql))  # then corrected: exact in integers
            while (x + 1) * (x + 1) <= m * ql:
                x += 1
            while x * x > m * ql:
                x -= 1
            reach[m, ql] = min(r * m, x)
    return reach


@njit(cache=True)
def _tail(unary: np.ndarray, norm: np.ndarray, r: int, Q: int) -> np.ndarray:
    """T[t, q] = min over q' <= Q - q of h_t(q') + norm[q + q'] (module docstring)."""
    n = unary.shape[0]
    h = np.full(Q + 1, np.inf)
    h[0] = 0.0
    tail = np.full((n + 1, Q + 1), np.inf)
    for t in range(n, -1, -1):
        if t < n:  # h_t from h_{t+1}: column t at every value
            nxt = np.full(Q + 1, np.inf)
            for i in range(2 * r + 1):
                s = (i - r) * (i - r)
                for q in range(s, Q + 1):
                    v = h[q - s] + unary[t, i]
                    nxt[q] = min(nxt[q], v)
            h = nxt
        for q in range(Q + 1):
            best = np.inf
            for q2 in range(Q - q + 1):
                v = h[q2] + norm[q + q2]
                best = min(best, v)
            tail[t, q] = best
    return tail


@njit(cache=True)
def _windows(f: np.ndarray, rmax: int) -> np.ndarray:
    """W[c, R, i] = min of f[c, i - R .. i + R] (clipped to the table)."""
    nc, nK = f.shape
    W = np.empty((nc, rmax + 1, nK))
    for c in range(nc):
        for i in range(nK):
            W[c, 0, i] = f[c, i]
        for R in range(1, rmax + 1):
            for i in range(nK):
                v = W[c, R - 1, i]
                if i > 0 and W[c, R - 1, i - 1] < v:
                    v = W[c, R - 1, i - 1]
                if i + 1 < nK and W[c, R - 1, i + 1] < v:
                    v = W[c, R - 1, i + 1]
                W[c, R, i] = v
    return W


@njit(cache=True)
def _run(
    cell_ptr, cell_idx, W, off, unary, tail, reach, r, Q,
    S, m, in_col, child_k, child_b, n_child, nxt, chosen, q_fixed, u_fixed, base_by_sq,
    best_k, pos, best, max_nodes,
):  # fmt: skip
    """The depth-first search of the module docstring from where ``pos`` says, for at most
    ``max_nodes`` nodes; returns (DONE or NODE_LIMIT, the best value below the threshold or
    the threshold itself, nodes made). ``best_k`` holds the best point, in visiting order."""
    n = cell_ptr.shape[0] - 1
    nc = W.shape[0]
    nk = 2 * r + 1
    nodes = 0
    if n == 0:
        return DONE, best, nodes
    t = pos[0]
    expand = pos[1] == 1
    while True:
        if expand:  # the children of the node at depth t: column t at each value
            if nodes >= max_nodes:
                pos[0] = t
                pos[1] = 1
                return NODE_LIMIT, best, nodes
            nodes += 1
            for p in range(cell_ptr[t], cell_ptr[t + 1]):
                in_col[cell_idx[p]] = True
            # the cells without column t: their share depends on the norm left alone
            for a in range(r + 1):
                ql = Q - q_fixed[t] - a * a
                if ql < 0:
                    base_by_sq[a] = np.inf
                    continue
                s = 0.0
                for c in range(nc):
                    if not in_col[c]:
                        s += W[c, reach[m[c], ql], S[c] + off]
                base_by_sq[a] = s
            cnt = 0
            for i in range(nk):
                k = i - r
                a = abs(k)
                ql = Q - q_fixed[t] - a * a
                if ql < 0:
                    continue
                b = u_fixed[t] + unary[t, i] + tail[t + 1, q_fixed[t] + a * a] + base_by_sq[a]
                for p in range(cell_ptr[t], cell_ptr[t + 1]):
                    c = cell_idx[p]
                    b += W[c, reach[m[c] - 1, ql], S[c] + k + off]
                if not b < best:
                    continue
                j = cnt  # kept sorted by bound; among equal bounds, in the order made
                while j > 0 and child_b[t, j - 1] > b:
                    child_b[t, j] = child_b[t, j - 1]
                    child_k[t, j] = child_k[t, j - 1]
                    j -= 1
                child_b[t, j] = b
                child_k[t, j] = k
                cnt += 1
            for p in range(cell_ptr[t], cell_ptr[t + 1]):
                in_col[cell_idx[p]] = False
            n_child[t] = cnt
            nxt[t] = 0
            expand = False
        if nxt[t] < n_child[t] and child_b[t, nxt[t]] < best:
            k = child_k[t, nxt[t]]
            b = child_b[t, nxt[t]]
            nxt[t] += 1
            if t == n - 1:  # a leaf: its bound is its value
                best = b
                for j in range(n - 1):
                    best_k[j] = chosen[j]
                best_k[n - 1] = k
                continue
            chosen[t] = k
            for p in range(cell_ptr[t], cell_ptr[t + 1]):
                c = cell_idx[p]
                S[c] += k
                m[c] -= 1
            q_fixed[t + 1] = q_fixed[t] + k * k
            u_fixed[t + 1] = u_fixed[t] + unary[t, k + r]
            t += 1
            expand = True
        else:
            if t == 0:
                pos[0] = 0
                pos[1] = 0
                return DONE, best, nodes
            t -= 1
            k = chosen[t]
            for p in range(cell_ptr[t], cell_ptr[t + 1]):
                c = cell_idx[p]
                S[c] -= k
                m[c] += 1


__all__ = [
    "ColumnPlan",
    "SearchResult",
    "column_order",
    "search_combination",
]
