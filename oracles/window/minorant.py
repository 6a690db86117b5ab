"""Exact argmin by enumerating the noise window: every grid point whose noise part alone could
still beat the incumbent (OPDisc and RSPM, SPEC sections 3 and 4).

Decompose F (``core.problem``) over an IntegerGrid w = tau k into

    F(w) = N(k) + L(k),
    N(k) = const + sum_j a_j(k_j) + nu(||k||^2)       (separable, plus a function of the norm)
    L(k) = sum over the other rows u of pos_u 1[<w, x_u> < mu] + neg_u 1[<w, x_u> >= mu]

where a_j(v) = tau linear_j v plus the cost of every row whose only nonzero feature is x_uj
(RSPM's separator rows, SPEC section 4: a function of w_j alone, labelled by the exact rule),
nu(q) = norm_coef sqrt(D^2 - tau^2 q) (SPEC section 3's exact norm, either sign), and const the
rows with x_u = 0 (always -1 since mu > 0). Each remaining row costs pos_u or neg_u, so
L(k) >= L_min = sum_u min(pos_u, neg_u) (0 for distinct rows of positive counts; RSPM's
negative weights only ever sit on separator rows, which are in N).

Given any grid point with exact value UB (an incumbent, ``oracles.window.incumbent``), every
minimizer k* has N(k*) <= F(k*) - L_min <= UB - L_min: it lies in the noise WINDOW
{k : N(k) <= UB - L_min}. A dynamic programme over coordinates gives, for every prefix
(k_0..k_{j-1}) with partial cost C and partial square sum p, the exact minimum of N over its
completions, Comp_j(p) = min_r (R_j(r) + nu(p + r)) with R_j(r) the least sum_{i >= j} a_i(k_i)
over sum_{i >= j} k_i^2 = r (``completion_tables``): a prefix with C + Comp_j(p) above the
threshold has no point in the window. ``oracles.window.tree`` searches the window this way, with the
Lagrangian minorant N_lam of ``tighten`` in place of N and the rows a prefix forces
(``RowPrune``) on top. Thresholds carry a slack far above the floating-point error of the sums
(``threshold_slack``), so rounding can only keep a point, never drop one.

What bounds it: the window's size. With OPDisc's noise the noise part dominates, and the window
holds the points whose noise is within (N(k*) - min N) + L(k*) of the noise's minimum: small
at large noise (small epsilon), larger as epsilon grows. Exact 0/1 ERM has N = 0: its window
is the whole grid, and only the forced rows prune.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.objective import exact_positive
from core.problem import IntegerGrid, Problem
from oracles.mip.formulation import norm_cap, row_score_range

#: Relative slack of the window's threshold against floating-point error (``threshold_slack``).
WINDOW_REL_SLACK = 1e-9


@dataclass(frozen=True, eq=False)
class Decomposition:
    """F = N + L as in the module docstring, on integer coordinates k (w = tau k).

    Attributes:
        unary: (d, 2B + 1) table a_j(v), v = -B..B.
        norm: (cap + 1,) table nu(q), +inf where q is not allowed.
        const: the constant part of N.
        rows: indices of the Problem rows in L.
        loss_floor: L_min.
    """

    unary: np.ndarray
    norm: np.ndarray
    const: float
    rows: np.ndarray
    loss_floor: float

    @property
    def cap(self) -> int:
        return len(self.norm) - 1

    def noise(self, K: np.ndarray) -> np.ndarray:
        """N at integer points K (m, d), in floating point."""
        K = np.atleast_2d(K)
        B = (self.unary.shape[1] - 1) // 2
        d = self.unary.shape[0]
        q = np.einsum("md,md->m", K, K)
        return self.const + self.unary[np.arange(d), K + B].sum(axis=1) + self.norm[q]


@dataclass(frozen=True, eq=False)
class RowPrune:
    """What a prefix of k already decides about the rows of L (``oracles.window.tree``).

    F(k) = N_lam(k) + sum_u [w_u e_u(k) - M_u m_u(k)] over the rows u of L, where e_u is the
    row's error (cost_u = min(pos_u, neg_u) + w_u e_u, w_u = |pos_u - neg_u|), m_u its linear
    minorant (``row_minorants``: m_u = Y_u / span_u with Y_u the row's signed distance to mu on
    its costly side) and M_u = w_u lam_u its weight in N_lam. Each bracket is >= 0 (e_u >= m_u
    and M_u <= w_u). When the prefix FORCES the row to one side (its score's range over the
    completions, ``branch.reach_tables``, lies on that side of mu), with Ymax the largest Y_u any
    completion reaches:
    * forced to its costly label (e_u = 1): the bracket is >= w_u - M_u min(1, Ymax / span_u)
      (at least ``extra_u`` = w_u - M_u);
    * forced to its right label (e_u = 0, Ymax < 0): the bracket is >= -M_u Ymax / span_u > 0:
      the minorant's negative part, which the Lagrangian bound spent, is given back.
    Summed over the forced rows this is what a node owes above N_lam (``branch.owed``).

    Attributes:
        X: (u, d) the rows' coefficients on k (tau x_u).
        extra: (u,) w_u - M_u: the least a row forced to its costly label owes.
        costly_negative: (u,) True when the costly label is -1 (pos_u > neg_u).
        margin: mu.
        weight: (u,) w_u.
        minorant: (u,) M_u (0 for a row whose range does not straddle mu).
        span: (u,) the minorant's span (m_u = Y_u / span_u; 1 where M_u is 0).
    """

    X: np.ndarray
    extra: np.ndarray
    costly_negative: np.ndarray
    margin: float
    weight: np.ndarray
    minorant: np.ndarray
    span: np.ndarray


def grid_cap(domain: IntegerGrid) -> int:
    """The largest ||k||^2 on the grid: the norm ball's cap, else the box's d B^2."""
    cap = norm_cap(domain)
    return domain.d * domain.bound**2 if cap is None else cap


def norm_table(problem: Problem) -> np.ndarray:
    """nu(q) = norm_coef sqrt(D^2 - tau^2 q) for q = 0..``grid_cap`` (0 without a norm term)."""
    domain = problem.domain
    q = np.arange(grid_cap(domain) + 1, dtype=float)
    if problem.norm_coef == 0.0:
        return np.zeros(len(q))
    slack = np.maximum(problem.norm_radius_sq - domain.step**2 * q, 0.0)
    return problem.norm_coef * np.sqrt(slack)


def decompose_objective(problem: Problem) -> Decomposition:
    """N and L of ``problem`` (module docstring)."""
    domain = problem.domain
    if not isinstance(domain, IntegerGrid):
        raise TypeError("the noise window needs an IntegerGrid domain")
    d, B, tau = domain.d, domain.bound, domain.step
    ks = np.arange(-B, B + 1)
    unary = tau * problem.linear[:, None] * ks[None, :].astype(float)
    X = problem.points
    nonzero = (X != 0).sum(axis=1)
    const = float(problem.pos[nonzero == 0].sum())
    for u in np.flatnonzero(nonzero == 1):
        j = int(np.flatnonzero(X[u])[0])
        # exact labels of the one-feature row at every value of w_j
        W = np.zeros((len(ks), d))
        W[:, j] = tau * ks
        positive = exact_positive(X[u : u + 1], W, problem.margin)[0]
        unary[j] += np.where(positive, problem.neg[u], problem.pos[u])
    norm = norm_table(problem)
    rows = np.flatnonzero(nonzero >= 2)
    floor = float(np.minimum(problem.pos[rows], problem.neg[rows]).sum())
    return Decomposition(unary, norm, const, rows, floor)


def threshold_slack(dec: Decomposition, threshold: float) -> float:
    """A bound far above the rounding error of any N computed here: d + 2 terms, each at most
    ``scale`` in magnitude (the finite table entries; +inf marks excluded values)."""
    unary = np.where(np.isfinite(dec.unary), np.abs(dec.unary), 0.0)
    norm = np.abs(dec.norm[np.isfinite(dec.norm)])
    scale = unary.max(axis=1).sum() + norm.max(initial=0.0) + abs(dec.const) + abs(threshold)
    return WINDOW_REL_SLACK * (1.0 + float(scale))


def completion_tables(dec: Decomposition, order: np.ndarray) -> np.ndarray:
    """Comp[j][p]: the least N-part of any completion of coordinates order[j:], given the prefix's
    square sum p (includes nu; +inf where no completion fits). Shape (d + 1, cap + 1)."""
    d, cap = len(order), dec.cap
    B = (dec.unary.shape[1] - 1) // 2
    ks = np.arange(-B, B + 1)
    R = np.full(cap + 1, np.inf)  # R_j(r), exact square sum r of the suffix
    R[0] = 0.0
    comp = np.full((d + 1, cap + 1), np.inf)
    for j in range(d, -1, -1):
        if j < d:
            nxt = np.full(cap + 1, np.inf)
            a = dec.unary[order[j]]
            for i, v in enumerate(ks):
                s = int(v * v)
                if s > cap:
                    continue
                cand = R[: cap + 1 - s] + a[i]
                nxt[s:] = np.minimum(nxt[s:], cand)
            R = nxt
        # comp[j][p] = min_r R[r] + norm[p + r]
        for p in range(cap + 1):
            r = np.arange(cap + 1 - p)
            comp[j, p] = np.min(R[r] + dec.norm[p + r])
    return comp


def coordinate_order(dec: Decomposition) -> np.ndarray:
    """Coordinates by decreasing spread of their finite unary costs (costly first: a prefix of
    them prunes early); ties by index, so the order is a pure function of the Decomposition."""
    finite = np.where(np.isfinite(dec.unary), dec.unary, np.nan)
    spread = np.nanmax(finite, axis=1) - np.nanmin(finite, axis=1)
    return np.argsort(-spread, kind="stable")


# --- Lagrangian tightening ---------------------------------------------------------------------


def row_minorants(
    problem: Problem, dec: Decomposition
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """For each row u of L: G (u, d), h (u,), weight (u,) with

        cost_u(k) >= min(pos_u, neg_u) + weight_u * lam * (G_u . k + h_u)   for every lam in [0, 1]

    on the whole grid (module docstring of ``tighten``)."""
    rows = dec.rows
    X = problem.points[rows] * problem.domain.step
    low, high = row_score_range(problem)
    low, high = low[rows], high[rows]
    mu = problem.margin
    pos, neg = problem.pos[rows], problem.neg[rows]
    weight = np.abs(pos - neg)
    wants_positive = pos > neg  # the costly label is -1: 1[s < mu] >= (mu - s) / (mu - low)
    G = np.where(wants_positive[:, None], -X / (mu - low)[:, None], X / (high - mu)[:, None])
    h = np.where(wants_positive, mu / (mu - low), -mu / (high - mu))
    # rows whose range does not straddle mu keep a zero minorant (their label is fixed)
    straddle = (low < mu) & (high > mu)
    G[~straddle] = 0.0
    h[~straddle] = 0.0
    return G, h, np.where(straddle, weight, 0.0)


def separable_argmin(unary: np.ndarray, norm: np.ndarray) -> tuple[float, np.ndarray]:
    """min over integer k (|k_j| <= B, ||k||^2 <= cap) of sum_j unary[j, k_j + B] + norm[||k||^2],
    and a minimizer, by dynamic programming over coordinates (exact up to rounding)."""
    d, V = unary.shape
    B = (V - 1) // 2
    cap = len(norm) - 1
    ks = np.arange(-B, B + 1)
    best = np.full(cap + 1, np.inf)
    best[0] = 0.0
    choice = np.zeros((d, cap + 1), dtype=np.int64)
    for j in range(d):
        nxt = np.full(cap + 1, np.inf)
        arg = np.zeros(cap + 1, dtype=np.int64)
        for i, v in enumerate(ks):
            s = int(v * v)
            if s > cap:
                continue
            cand = np.full(cap + 1, np.inf)
            cand[s:] = best[: cap + 1 - s] + unary[j, i]
            better = cand < nxt
            nxt[better], arg[better] = cand[better], v
        best, choice[j] = nxt, arg
    total = best + norm
    q = int(np.argmin(total))
    value = float(total[q])
    k = np.zeros(d, dtype=np.int64)
    for j in range(d - 1, -1, -1):
        k[j] = choice[j, q]
        q -= int(k[j] ** 2)
    return value, k


def tighten(
    problem: Problem, dec: Decomposition, upper: float, *, iterations: int = 300, rng_seed: int = 0
) -> tuple[Decomposition, float]:
    """A Decomposition whose N is a tighter minorant of F: N_lam = N + L_min + sum_u w_u lam_u m_u(k),
    with lam in [0, 1]^rows chosen by projected subgradient ascent on the Lagrangian dual
    max_lam min_k N_lam(k) (Polyak steps towards ``upper``). Returns the Decomposition (its rows'
    floor already folded into ``const``, ``loss_floor`` 0) and its proven lower bound
    min_k N_lam(k) on min F.

    Validity: for every grid point and every lam in [0, 1], cost_u(k) >= min(pos_u, neg_u)
    + w_u lam_u m_u(k) (``row_minorants``), so F >= N_lam everywhere: the window of N_lam below
    the incumbent still holds every minimizer.
    """
    G, h, weight = row_minorants(problem, dec)
    B = (dec.unary.shape[1] - 1) // 2
    ks = np.arange(-B, B + 1, dtype=float)

    def build(lam):
        c = (weight * lam) @ G
        unary = dec.unary + c[:, None] * ks[None, :]
        const = dec.const + dec.loss_floor + float((weight * lam) @ h)
        return unary, const

    lam = np.zeros(len(h))
    best_lam, best_val = lam.copy(), -np.inf
    theta = 1.0
    stall = 0
    for _ in range(iterations):
        unary, const = build(lam)
        val, k = separable_argmin(unary, dec.norm)
        val += const
        if val > best_val + 1e-9:
            best_val, best_lam, stall = val, lam.copy(), 0
        else:
            stall += 1
            if stall >= 10:
                theta, stall = theta / 2, 0
        g = weight * (G @ k + h)
        # projected direction: components that cannot move are dropped
        g = np.where(((lam <= 0) & (g < 0)) | ((lam >= 1) & (g > 0)), 0.0, g)
        norm2 = float(g @ g)
        if norm2 <= 0 or theta < 1e-4:
            break
        lam = np.clip(lam + theta * (upper - val) / norm2 * g, 0.0, 1.0)
    unary, const = build(best_lam)
    tightened = Decomposition(unary, dec.norm, const, dec.rows, 0.0)
    val, _ = separable_argmin(unary, dec.norm)
    return tightened, val + const, row_prune(problem, dec, weight * best_lam)


def tightened_decomposition(
    problem: Problem, upper: float, iterations: int
) -> tuple[Decomposition, float, RowPrune]:
    """The minorant N_lam tightened below ``upper`` (``tighten``; the plain N with the rows'
    floor when ``iterations`` is 0), its proven lower bound, and its ``RowPrune``."""
    dec = decompose_objective(problem)
    if iterations <= 0:
        plain = Decomposition(dec.unary, dec.norm, dec.const + dec.loss_floor, dec.rows, 0.0)
        return plain, -math.inf, row_prune(problem, dec)
    return tighten(problem, dec, upper, iterations=iterations)


def row_prune(
    problem: Problem, dec: Decomposition, lam_weight: np.ndarray | None = None
) -> RowPrune:
    """The ``RowPrune`` of ``dec``'s rows, given the weight w_u lam_u already in the minorant."""
    rows = dec.rows
    pos, neg = problem.pos[rows], problem.neg[rows]
    weight = np.abs(pos - neg)
    minorant = np.zeros(len(rows)) if lam_weight is None else np.minimum(lam_weight, weight)
    extra = np.maximum(weight - minorant, 0.0)
    low, high = row_score_range(problem)
    mu = problem.margin
    span = np.where(pos > neg, mu - low[rows], high[rows] - mu)  # row_minorants' denominators
    straddle = (low[rows] < mu) & (high[rows] > mu)
    minorant = np.where(straddle, minorant, 0.0)
    span = np.where(straddle, span, 1.0)
    X = problem.points[rows] * problem.domain.step
    return RowPrune(X, extra, pos > neg, mu, weight, minorant, span)


__all__ = [
    "WINDOW_REL_SLACK",
    "Decomposition",
    "RowPrune",
    "completion_tables",
    "coordinate_order",
    "decompose_objective",
    "grid_cap",
    "norm_table",
    "row_minorants",
    "row_prune",
    "separable_argmin",
    "threshold_slack",
    "tighten",
    "tightened_decomposition",
]
