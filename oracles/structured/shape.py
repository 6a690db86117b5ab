"""The shape the structured oracle exploits, read off a Problem (SPEC sections 1 to 4).

On an IntegerGrid every coordinate is ``w_j = tau k_j`` with an integer k_j in [-B, B]. The rows
of a Problem fall into three kinds, decided from the data and nothing else:

* all-zero rows: the score is 0 < mu, so the row always pays ``pos_u`` (a constant);
* rows with one nonzero coordinate j (RSPM's separator rows +-e_j, SPEC section 4): the row's
  cost is a function of k_j alone, a **unary** table ``U[j, k]``, into which the linear term
  ``linear_j tau k`` is folded as well;
* the other rows. Among them, a column whose values are all 0 or 1 is **binary** (one-hot
  groups are the case of Adult: 20 such columns, SPEC section 1), every other column is
  **continuous** (Adult: 3). A row's binary part is its **cell**; Adult's 2,611 distinct rows
  have 174 cells.

Fix the continuous weights v = tau k_P (one **combination**; Adult: 461 of the 9^3 lie in the
norm ball). Row u then has the score tau K_c + r_u with the integer cell score
K_c = sum_{j in c} k_j and r_u = <x_u,P, v>, so it is positive iff K_c >= t_u for an integer
threshold t_u, and the rows of a cell add up to a step function f_c(K) of the cell score. What
is left is

    F(v, k_C) = const + sum_{j in P} U_j(k_j) + sum_{j in C} U_j(k_j)
                + sum_c f_c(sum_{j in c} k_j) + N(||k_P||^2 + ||k_C||^2),

N(q) = norm_coef sqrt(D^2 - tau^2 q) read from a table over the integer q (the exact norm
encoding of SPEC section 3, either sign of norm_coef). ``root_bounds`` gives every combination
the lower bound "each cell takes its own best score, and the unary and norm terms their own
minimum" (SPEC section 1's relaxation); ``oracles.structured.milp`` solves one combination
exactly.

Rounding. The exact rule is ``fl(<w, x_u>) >= mu`` (SPEC section 2). A threshold is computed
with a band of ``tol`` around mu that is many orders of magnitude above the rounding error of
the dot product: outside the band the decision is the same for every order of summation. A
(row, K) inside the band is **borderline**: its table entry is min(pos_u, neg_u), a lower
bound, and the oracle re-evaluates any w it returns with ``Problem.objective`` itself. When
the data are dyadic (every continuous feature x 2^a and tau 2^b are integers, and no partial
sum of <w, x_u> needs more than 53 bits: ``dyadic_scale``), every product and partial sum of the
dot product is exact in floating point, so the rule is the rule of the reals; the thresholds
are then computed in integers, ties included, and no pair is borderline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from core.objective import exact_positive
from core.problem import IntegerGrid, Problem
from oracles.mip.formulation import attainable_square_sums, norm_cap

#: Relative width of the band around mu inside which a score counts as borderline.
BORDER_REL_TOL = 1e-9
#: At most this many table entries (combinations x cells x scores) are held at once.
TABLE_CHUNK_ENTRIES = 4_000_000
#: Fixed cost of one combination, in table entries: listing it and its separable bound.
COMBO_OVERHEAD_ENTRIES = 200
#: Never list more combinations than this, whatever the budget (memory of the combos and bounds).
MAX_LISTED_COMBOS = 4_000_000


class ShapeMismatch(ValueError):
    """The problem does not have the shape the structured oracle exploits; says why."""


@dataclass(frozen=True, eq=False)
class Shape:
    """A Problem cut along its shape (module docstring). Integer weights are k, w = tau k.

    Attributes:
        problem: the Problem it was read from.
        step, bound, cap: tau, B and the largest integer q = ||k||^2 allowed (norm bound).
        ks: the integer values -B..B of one coordinate.
        const: cost of the all-zero rows.
        unary: (d, 2B+1) unary table U[j, k + B], linear term included.
        binary_cols, cont_cols: the columns C and P.
        cells: (n_cells, |C|) 0/1 patterns; cell_of: (m,) cell of each remaining row.
        cont_x: (m, |P|) continuous features of the remaining rows; pos, neg: their weights.
        norm: (cap + 1,) N(q), +inf where q is not a sum of d squares <= B^2.
        combos: (n_combos, |P|) the integer k_P inside the norm bound.
        groups: one-hot groups found among the binary columns (reported, not needed).
        dyadic: (a, b) of the exact integer thresholds (module docstring, rounding), or None.
    """

    problem: Problem
    step: float
    bound: int
    cap: int
    ks: np.ndarray
    const: float
    unary: np.ndarray
    binary_cols: np.ndarray
    cont_cols: np.ndarray
    cells: np.ndarray
    cell_of: np.ndarray
    cont_x: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    norm: np.ndarray
    combos: np.ndarray
    groups: tuple[tuple[int, ...], ...]
    dyadic: tuple[int, int] | None = None

    @property
    def n_cells(self) -> int:
        return int(self.cells.shape[0])

    @property
    def cell_size(self) -> np.ndarray:
        return self.cells.sum(axis=1)

    @property
    def max_cell_size(self) -> int:
        return int(self.cell_size.max()) if self.n_cells else 0

    @property
    def score_offset(self) -> int:
        """Table index of the cell score K is ``K + score_offset``."""
        return self.bound * self.max_cell_size

    def describe(self) -> dict[str, object]:
        return {
            "binary_cols": len(self.binary_cols),
            "continuous_cols": len(self.cont_cols),
            "onehot_groups": [len(g) for g in self.groups],
            "cells": self.n_cells,
            "cell_rows": int(self.cell_of.shape[0]),
            "combinations": int(self.combos.shape[0]),
        }

    # --- pieces used by the bounds and the subproblems ------------------------------------

    def combo_norm(self, kP: np.ndarray) -> int:
        return int(np.dot(kP, kP))

    def combo_unary(self, kP: np.ndarray) -> float:
        if not len(self.cont_cols):
            return 0.0
        return float(self.unary[self.cont_cols, np.asarray(kP) + self.bound].sum())

    def reach(self, q_left: int) -> int:
        """The largest |k_j| of a binary column when ||k_C||^2 <= q_left."""
        return min(self.bound, math.isqrt(max(q_left, 0)))

    def cell_reach(self, q_left: int) -> np.ndarray:
        """The largest |K_c| per cell when ||k_C||^2 <= q_left: min(reach s, sqrt(s q_left))
        (Cauchy-Schwarz), s the cell's size."""
        size = self.cell_size
        by_norm = np.floor(np.sqrt(size * max(q_left, 0))).astype(np.int64)  # exact below 2^52
        return np.minimum(self.reach(q_left) * size, by_norm)

    def weights(self, kP: np.ndarray, kC: np.ndarray) -> np.ndarray:
        """w = tau k from the continuous and binary parts (columns of neither are 0)."""
        k = np.zeros(self.problem.d, dtype=np.int64)
        k[self.cont_cols] = kP
        k[self.binary_cols] = kC
        return self.step * k.astype(float)

    def tables(self, kP_block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """f[v, c, K + score_offset] for a block of combinations, and which have borderlines.

        f is the step function of the module docstring over K in [-B s, B s] (s the largest
        cell size); borderline (row, K) pairs count min(pos, neg).
        """
        kP_block = np.atleast_2d(kP_block)
        nv, nc = kP_block.shape[0], self.n_cells
        off = self.score_offset
        nK = 2 * off + 1
        k_pos, k_neg = self._thresholds(kP_block)
        k_pos = np.clip(k_pos, -off, off + 1)
        k_neg = np.clip(k_neg, -off - 1, off)
        k_pos = np.maximum(k_pos, k_neg + 1)
        borderline = (k_pos - k_neg > 1).any(axis=0)
        # difference array over K: pos from the start, (min - pos) from k_neg + 1 (the band,
        # usually empty) and (neg - min) from k_pos
        base = (np.arange(nv)[None, :] * nc + self.cell_of[:, None]) * (nK + 1)
        pos = np.broadcast_to(self.pos[:, None], k_pos.shape)
        neg = np.broadcast_to(self.neg[:, None], k_pos.shape)
        if borderline.any():
            low = np.minimum(pos, neg)
            index = np.concatenate([(base + k_neg + off + 1).ravel(), (base + k_pos + off).ravel()])
            weight = np.concatenate([(low - pos).ravel(), (neg - low).ravel()])
        else:  # k_pos = k_neg + 1 everywhere: one step per row
            index, weight = (base + k_pos + off).ravel(), (neg - pos).ravel()
        diff = np.bincount(index, weights=weight, minlength=nv * nc * (nK + 1))
        diff = diff.reshape(nv, nc, nK + 1)
        diff[:, :, 0] += np.bincount(self.cell_of, weights=self.pos, minlength=nc)[None, :]
        f = np.cumsum(diff, axis=2)[:, :, :nK]
        return f, borderline

    def _thresholds(self, kP_block: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(k_pos, k_neg), each (rows, combinations): the row is positive for K >= k_pos and
        negative for K <= k_neg (module docstring, rounding)."""
        mu, step, m = self.problem.margin, self.step, len(self.cell_of)
        if self.dyadic is not None:
            a, b = self.dyadic
            x_int = np.rint(self.cont_x * 2.0**a).astype(np.int64)
            w_int = kP_block.T * int(round(step * 2**b))  # (|P|, nv), exact integers
            r_int = x_int @ w_int if len(self.cont_cols) else np.zeros((m, len(kP_block)), int)
            unit = int(round(step * 2**b)) << a  # 2^(a+b) tau: one unit of K
            mu_int = math.ceil(Fraction(mu) * 2 ** (a + b))  # positive iff score >= this
            k_pos = -((r_int - mu_int) // unit)  # ceil((mu_int - r_int) / unit)
            return k_pos, k_pos - 1
        V = step * kP_block.astype(float)
        r = self.cont_x @ V.T if len(self.cont_cols) else np.zeros((m, len(kP_block)))
        tol = BORDER_REL_TOL * max(
            1.0, abs(mu), float(np.abs(r).max(initial=0.0)) + step * self.score_offset
        )
        k_pos = np.ceil((mu + tol - r) / step).astype(np.int64)
        k_neg = np.floor((mu - tol - r) / step).astype(np.int64)
        return k_pos, k_neg


def bounding_work(n_combos: int, n_rows: int, n_cells: int, max_cell_size: int, B: int) -> float:
    """Table entries the bounding pass computes when it tables every combination: per
    combination, a threshold per cell row, a cell x score table (``Shape.tables``) and a fixed
    overhead. The search tables combinations lazily (most are usually pruned by the separable
    bound first), so this is an upper estimate of the work, not of the subproblems' time."""
    n_scores = 2 * B * max_cell_size + 1
    return float(n_combos) * (n_rows + n_cells * n_scores + COMBO_OVERHEAD_ENTRIES)


def decompose(
    problem: Problem, *, max_combos: int | None = None, max_work: float | None = None
) -> Shape:
    """The Shape of ``problem`` (module docstring), or ShapeMismatch saying why it does not fit.

    It does not fit when the continuous weights have more combinations than ``max_combos``
    (None: no such cap) or than ``MAX_LISTED_COMBOS``, or when bounding them all would take more
    than ``max_work`` table entries (``bounding_work``; None: no such cap).
    """
    domain = problem.domain
    if not isinstance(domain, IntegerGrid):
        raise ShapeMismatch(f"the domain is not an IntegerGrid ({type(domain).__name__})")
    B, step, d = domain.bound, domain.step, domain.d
    cap = norm_cap(domain)
    cap = d * B * B if cap is None else cap
    ks = np.arange(-B, B + 1)
    X = np.asarray(problem.points)
    pos, neg = np.asarray(problem.pos), np.asarray(problem.neg)
    support = (X != 0).sum(axis=1)

    const = float(pos[support == 0].sum())
    unary = np.outer(problem.linear, step * ks)
    for u in np.flatnonzero(support == 1):
        j = int(np.flatnonzero(X[u])[0])
        # the exact rule on one coordinate (a rounded product could reach mu from below)
        x_uj = X[u : u + 1, j : j + 1]
        positive = exact_positive(x_uj, domain.values[:, None], problem.margin)[0]
        unary[j] += np.where(positive, neg[u], pos[u])

    rest = np.flatnonzero(support >= 2)
    Xr = X[rest]
    is_binary = np.all((Xr == 0.0) | (Xr == 1.0), axis=0)
    binary_cols, cont_cols = np.flatnonzero(is_binary), np.flatnonzero(~is_binary)

    n_combos = _count_combos(len(cont_cols), B, cap)
    what = f"{len(cont_cols)} continuous columns give {n_combos} weight combinations"
    if max_combos is not None and n_combos > max_combos:
        raise ShapeMismatch(f"{what} (max_combos={max_combos})")
    if n_combos > MAX_LISTED_COMBOS:
        raise ShapeMismatch(f"{what}, more than the {MAX_LISTED_COMBOS} that are ever listed")
    cells, cell_of = _cells(Xr[:, binary_cols])
    if max_work is not None:
        size = int(cells.sum(axis=1).max()) if len(cells) else 0
        work = bounding_work(n_combos, len(cell_of), len(cells), size, B)
        if work > max_work:
            raise ShapeMismatch(
                f"{what}: bounding them takes up to {work:.3g} table entries "
                f"({len(cell_of)} rows, {len(cells)} cells), more than max_work={max_work:.3g}"
            )
    combos = _combos(len(cont_cols), B, cap)

    reach = np.zeros(cap + 1, dtype=bool)
    reach[attainable_square_sums(d, B, cap)] = True
    if problem.norm_coef != 0.0:
        q = np.arange(cap + 1)
        slack = np.maximum(problem.norm_radius_sq - step**2 * q, 0.0)
        norm = problem.norm_coef * np.sqrt(slack)
    else:
        norm = np.zeros(cap + 1)
    norm = np.where(reach, norm, np.inf)

    return Shape(
        problem=problem,
        step=float(step),
        bound=int(B),
        cap=int(cap),
        ks=ks,
        const=const,
        unary=unary,
        binary_cols=binary_cols,
        cont_cols=cont_cols,
        cells=cells,
        cell_of=cell_of,
        cont_x=Xr[:, cont_cols],
        pos=pos[rest].astype(float),
        neg=neg[rest].astype(float),
        norm=norm,
        combos=combos,
        groups=onehot_groups(Xr[:, binary_cols], binary_cols),
        dyadic=dyadic_scale(Xr, cont_cols, step, B),
    )


def dyadic_scale(X: np.ndarray, cont_cols: np.ndarray, step: float, B: int):
    """(a, b) with every continuous feature x 2^a and tau 2^b integers, small enough that every
    partial sum of <w, x_u> over a grid point is exact in float64; None when there is none."""
    x = np.abs(X[:, cont_cols])
    a = next((a for a in range(41) if np.all(x * 2.0**a == np.rint(x * 2.0**a))), None)
    b = next((b for b in range(21) if step * 2.0**b == round(step * 2.0**b)), None)
    if a is None or b is None:
        return None
    # |x_j w_j| 2^(a+b) summed over the row (binary columns included) must stay below 2^53
    total = (np.abs(X).sum(axis=1).max(initial=0.0) * 2.0**a) * (round(step * 2.0**b) * B)
    return (a, b) if total < 2.0**52 else None


def _cells(Xb: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The distinct 0/1 patterns of the rows (cells) and each row's cell."""
    m, width = Xb.shape
    if m == 0:
        return np.zeros((0, width), dtype=np.int64), np.zeros(0, dtype=np.int64)
    if width == 0:
        return np.zeros((1, 0), dtype=np.int64), np.zeros(m, dtype=np.int64)
    cells, cell_of = np.unique(Xb.astype(np.int8), axis=0, return_inverse=True)
    return cells.astype(np.int64), np.asarray(cell_of, dtype=np.int64).reshape(-1)


def _count_combos(p: int, B: int, cap: int) -> int:
    """How many k in [-B, B]^p have ||k||^2 <= cap (a DP, without listing them)."""
    count = np.zeros(cap + 1, dtype=object)
    count[0] = 1
    for _ in range(p):
        nxt = np.zeros_like(count)
        for k in range(-B, B + 1):
            s = k * k
            if s <= cap:
                nxt[s:] += count[: cap + 1 - s]
        count = nxt
    return int(count.sum())


def _combos(p: int, B: int, cap: int) -> np.ndarray:
    """The k in [-B, B]^p with ||k||^2 <= cap, in lexicographic order (only those are built)."""
    ks = np.arange(-B, B + 1, dtype=np.int64)
    rows = np.zeros((1, 0), dtype=np.int64)
    norms = np.zeros(1, dtype=np.int64)
    for _ in range(p):  # each row extended by every k, in order: lexicographic
        ext_norms = (norms[:, None] + ks[None, :] ** 2).ravel()
        keep = ext_norms <= cap
        rows = np.hstack([np.repeat(rows, len(ks), axis=0), np.tile(ks, len(norms))[:, None]])[keep]
        norms = ext_norms[keep]
    return rows.reshape(len(rows), p)


def onehot_groups(Xb: np.ndarray, cols: np.ndarray) -> tuple[tuple[int, ...], ...]:
    """Consecutive binary columns that form one-hot groups (every row has exactly one 1).

    Only reported in certificates: the oracle needs cells, not groups. Returns () when the
    binary columns do not split into consecutive one-hot groups.
    """
    groups, current = [], []
    total = np.zeros(Xb.shape[0])
    for i, col in enumerate(cols):
        if current and np.any(total + Xb[:, i] > 1):
            return ()
        current.append(int(col))
        total = total + Xb[:, i]
        if np.all(total == 1):
            groups.append(tuple(current))
            current, total = [], np.zeros(Xb.shape[0])
    return tuple(groups) if not current else ()


# --- the root bound ----------------------------------------------------------------------------


def squares_knapsack(costs: np.ndarray, ks: np.ndarray, cap: int) -> np.ndarray:
    """h[q] = min over k_j (one per row of ``costs``, value ks[i] costing costs[j, i]) with
    sum_j k_j^2 == q of sum_j costs[j, k_j]; +inf where no choice sums to q."""
    h = np.full(cap + 1, np.inf)
    h[0] = 0.0
    sq = ks * ks
    for row in costs:
        nxt = np.full(cap + 1, np.inf)
        for i, s in enumerate(sq):
            if s <= cap:
                np.minimum(nxt[s:], h[: cap + 1 - s] + row[i], out=nxt[s:])
        h = nxt
    return h


def separable_bounds(shape: Shape) -> tuple[np.ndarray, float]:
    """(base, floor): per combination const + U_P(k_P) + min_q [h_C(q) + N(||k_P||^2 + q)],
    h_C the knapsack of the binary columns' unary costs (``squares_knapsack``); and
    floor = sum_u min(pos_u, neg_u) over the cell rows, which no cell score beats.

    base + floor is a lower bound that needs no table: the cheap first filter.
    """
    combos = shape.combos
    qP = (combos * combos).sum(axis=1)
    h = squares_knapsack(shape.unary[shape.binary_cols], shape.ks, shape.cap)
    # the binary and norm part depends on ||k_P||^2 alone: once per value, not per combination
    by_q = np.array([np.min(h[: shape.cap - q + 1] + shape.norm[q:]) for q in range(shape.cap + 1)])
    rest = by_q[qP] if len(qP) else np.zeros(0)
    if len(shape.cont_cols):  # U_P(k_P), each row summed as combo_unary sums it (pairwise)
        unary_P = shape.unary[shape.cont_cols[None, :], combos + shape.bound].sum(axis=1)
    else:
        unary_P = np.zeros(len(combos))
    return shape.const + unary_P + rest, float(np.minimum(shape.pos, shape.neg).sum())


def cell_bounds(shape: Shape, which: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For the combinations ``which``: sum_c min_K f_c(K) over the cell's reachable scores
    (each cell takes its own best score, SPEC section 1's relaxation) and a borderline flag."""
    which = np.asarray(which, dtype=np.int64)
    cell_part = np.zeros(len(which))
    borderline = np.zeros(len(which), dtype=bool)
    if not shape.n_cells:
        return cell_part, borderline
    off = shape.score_offset
    nK = 2 * off + 1
    chunk = max(1, TABLE_CHUNK_ENTRIES // (shape.n_cells * nK))
    K = np.arange(nK) - off
    for start in range(0, len(which), chunk):
        block = slice(start, min(start + chunk, len(which)))
        kP = shape.combos[which[block]]
        f, border = shape.tables(kP)
        reach = np.stack([shape.cell_reach(shape.cap - int(k @ k)) for k in kP])  # (b, nc)
        ok = np.abs(K)[None, None, :] <= reach[:, :, None]
        cell_part[block] = np.where(ok, f, np.inf).min(axis=2).sum(axis=1)
        borderline[block] = border
    return cell_part, borderline


def root_bounds(shape: Shape) -> tuple[np.ndarray, np.ndarray]:
    """Per combination: a lower bound on min over k_C of F(v, k_C), and a borderline flag.

    Bound = const + U_P(k_P) + sum_c min_K f_c(K) over the cell's reachable scores
            + min_q [ h_C(q) + N(||k_P||^2 + q) ]   (``separable_bounds``, ``cell_bounds``).
    """
    base, _ = separable_bounds(shape)
    cell_part, borderline = cell_bounds(shape, np.arange(len(shape.combos)))
    return base + cell_part, borderline


__all__ = [
    "MAX_LISTED_COMBOS",
    "Shape",
    "bounding_work",
    "ShapeMismatch",
    "cell_bounds",
    "decompose",
    "onehot_groups",
    "root_bounds",
    "separable_bounds",
    "squares_knapsack",
]
