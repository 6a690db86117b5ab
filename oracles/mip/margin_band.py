"""The strict side of h_w(x) = -1 iff <w, x> < mu, resolved exactly for the reference MIP.

A MIP cannot write the strict inequality a_u = <w, x_u> < mu of a row predicted -1. The old
formulation wrote a_u <= mu - eps for a fixed eps = 1e-6: every w with some a_u in
(mu - eps, mu) had no feasible assignment, so the solver certified the best w OUTSIDE that band,
which was not the argmin whenever every minimizer had such a score (SPEC section 8: 88 of 700
random HiGHS certificates, 35 of 700 Gurobi ones were false). Re-evaluating the returned point
cannot see that: the claim that nothing is better is the solver's.

The design here keeps the formulation a RELAXATION of the exact problem and lets ``certify``
decide: a solver's dual bound on a relaxation is a lower bound on the true minimum, and a point
whose EXACT objective (``core.objective``) meets that bound is an exact minimizer. Three
pieces (on an IntegerGrid, where w = tau k takes finitely many values):

1. Per-row strict eps from a PROVEN gap (``margin_gaps``). For row u, G_u is a lower bound on
   mu - a over every grid score a < mu of the row; eps_u = min(strict_eps, G_u / 2) then
   removes no grid point: every w keeps a feasible assignment with its exact labels. G_u comes
   from splitting the row's columns: "coarse" columns with integer features (one-hot cells),
   whose part of the score is tau times an integer C when every grid value is exactly tau k,
   and "fine" columns, whose combinations c of grid values (at most ``MAX_GAP_COMBOS``) are
   enumerated with their residual r_c. The scores are then a subset of {tau C + r_c}, and the
   largest one below mu for a given c is tau (ceil((mu - r_c) / tau) - 1) + r_c (or r_c itself
   without coarse columns). That is computed in floating point with a proven error bound
   (``core.objective.score_error_bound``) and in exact rationals where the float is not
   conclusive. Where no bound is available (too many combinations), G_u = 0 and eps_u = 0:
   the row reads a_u <= mu, which lets a score exactly at mu take either label (still a
   relaxation).
2. The solver's tolerances: HiGHS and Gurobi accept a row violated by up to their feasibility
   tolerance (1e-7, times a big-M through the integrality tolerance). That only ENLARGES the
   feasible set, so the bound stays a lower bound; what it can break is the agreement between
   the solver's z_u and the exact label at the returned point.
3. Lazy exact cuts (``band_cut``, ``resolve``): when the returned point has a row whose z_u is
   not its exact label, a cut is added for that row and the fine part c of the returned point:
   "if w agrees with c on the row's fine columns, then z_u = 1 iff C >= T", with the integer
   T = ceil((mu - r_c) / tau) computed exactly. C and T are integers, so the cut is written
   with a margin of tau / 2 that no tolerance reaches; a row without coarse columns gets
   "z_u = its exact label at c". Every cut is valid for every grid point with its exact
   labels, so the formulation stays a relaxation; the MIP is solved again, at most
   ``MAX_BAND_ROUNDS`` times. Each round's bound is a lower bound; the answer is the round
   point with the smallest exact objective.

Soundness therefore rests on: the formulation is a relaxation (1 and 3), the solver's bound is
a bound on it, and ``certify`` compares the EXACT objective of the returned point with that
bound. A band the rounds do not resolve leaves a point whose exact objective exceeds the bound:
``certify`` marks it INCONSISTENT (uncertified), never certified.

A Box (OPSamp, SPEC section 5) keeps a fixed strict_eps: over a continuum the infimum of the
strict problem need not be attained, and OPSamp needs an alpha-approximate minimizer, not an
exact argmin.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from core.objective import exact_positive, score_error_bound
from core.problem import IntegerGrid, Problem

#: The most fine-column combinations ``margin_gaps`` enumerates per instance (rows x combinations
#: floats are computed, so this bounds its cost; beyond it the rows get eps 0 and the cuts).
MAX_GAP_COMBOS = 1 << 15
#: Table entries (rows x combinations) computed at once.
GAP_CHUNK_ENTRIES = 2_000_000
#: At most this many solves per answer (the first one and the rounds with new cuts).
MAX_BAND_ROUNDS = 12


def exact_grid_values(domain: IntegerGrid) -> bool:
    """True when every grid value fl(tau k) equals tau k exactly (tau = 1, 1/2, ...)."""
    step = Fraction(domain.step)
    return all(
        Fraction(float(v)) == k * step
        for v, k in zip(domain.values, range(-domain.bound, domain.bound + 1))
    )


def _coarse_mask(problem: Problem, X: np.ndarray) -> np.ndarray:
    """Entries whose part of the score is tau times an integer for every grid value."""
    if not exact_grid_values(problem.domain):
        return np.zeros(X.shape, dtype=bool)
    return (X != 0) & (X == np.round(X)) & (np.abs(X) < 2.0**40)


def margin_gaps(problem: Problem, rows: np.ndarray) -> np.ndarray:
    """For each row in ``rows``: a proven lower bound G_u > 0 on mu - a over the grid scores
    a < mu of the row (+inf when it has none), or 0 when no bound is available (module
    docstring, point 1)."""
    domain = problem.domain
    rows = np.asarray(rows, dtype=np.int64)
    gaps = np.zeros(len(rows))
    if not isinstance(domain, IntegerGrid) or not len(rows):
        return gaps
    X = problem.points[rows]
    coarse = _coarse_mask(problem, X)
    fine_cols = np.flatnonzero(((X != 0) & ~coarse).any(axis=0))
    n_values = 2 * domain.bound + 1
    if n_values ** len(fine_cols) > MAX_GAP_COMBOS:
        return gaps
    values = domain.values
    grids = np.meshgrid(*([values] * len(fine_cols)), indexing="ij")
    combos = np.stack([g.ravel() for g in grids], axis=1) if len(fine_cols) else np.zeros((1, 0))
    other = np.ones(X.shape[1], dtype=bool)
    other[fine_cols] = False
    has_coarse = (X[:, other] != 0).any(axis=1)  # coarse entries outside the enumerated columns
    mu, tau = problem.margin, domain.step
    chunk = max(1, GAP_CHUNK_ENTRIES // len(combos))
    for start in range(0, len(rows), chunk):
        block = slice(start, min(start + chunk, len(rows)))
        XF = X[block][:, fine_cols]
        r = XF @ combos.T
        err = score_error_bound(np.abs(XF) @ np.abs(combos).T, len(fine_cols) + 1) + 1e-300
        err = err + 4 * 2.0**-53 * (abs(mu) + np.abs(r))  # the subtraction and the division
        gap = np.where(
            has_coarse[block, None], _coarse_gap(mu - r, tau), np.where(r < mu, mu - r, np.inf)
        )
        # not conclusive in floating point: near an integer multiple of tau, or near mu
        t = (mu - r) / tau
        unsure = np.where(
            has_coarse[block, None],
            np.abs(t - np.round(t)) * tau <= 2 * err,
            np.abs(mu - r) <= 2 * err,
        )
        lower = np.where(unsure, np.inf, gap - err)
        for i, c in zip(*np.nonzero(unsure)):
            u = start + int(i)
            lower[i, c] = float(_exact_gap(X[u, fine_cols], combos[c], mu, tau, has_coarse[u]))
        gaps[block] = np.maximum(lower.min(axis=1), 0.0)
    return gaps


def _coarse_gap(t_scaled: np.ndarray, tau: float) -> np.ndarray:
    """(mu - r) - tau (ceil((mu - r) / tau) - 1): the distance from mu down to the largest
    tau C + r below it, C any integer."""
    t = t_scaled / tau
    return (t - (np.ceil(t) - 1.0)) * tau


def _exact_gap(x_fine, c, mu: float, tau: float, has_coarse: bool) -> Fraction | float:
    """The gap of one (row, combination) in exact rationals (``margin_gaps``)."""
    r = sum((Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x_fine, c)), Fraction(0))
    left = Fraction(mu) - r
    if has_coarse:
        t = left / Fraction(tau)
        return (t - (math.ceil(t) - 1)) * Fraction(tau)
    return left if left > 0 else math.inf


def strict_eps_per_row(problem: Problem, rows: np.ndarray, cap: float) -> np.ndarray:
    """eps_u = min(cap, G_u / 2) (module docstring, point 1); 0 where no gap is proven."""
    gaps = margin_gaps(problem, rows)
    eps = np.minimum(cap, gaps / 2.0)
    # G_u / 2 in floating point could round up to G_u only for subnormal gaps: be safe
    return np.where(eps < gaps, eps, 0.0)


# --- the lazy cuts -----------------------------------------------------------------------------


@dataclass(frozen=True)
class BandCut:
    """For row ``row``: when w_j = fine_values[i] for every j = fine_cols[i], the row is +1 iff
    sum_{j in coarse_cols} x_uj w_j >= threshold, where that sum lies on tau Z and
    ``threshold`` = tau (T - 1/2) sits half a unit from it (module docstring, point 3)."""

    row: int
    fine_cols: tuple[int, ...]
    fine_k: tuple[int, ...]
    coarse_cols: tuple[int, ...]
    threshold: float


def band_cut(problem: Problem, row: int, w: np.ndarray) -> BandCut:
    """The cut of ``row`` at the grid point ``w``."""
    domain = problem.domain
    x = problem.points[row]
    coarse = _coarse_mask(problem, x[None, :])[0]
    fine_cols = np.flatnonzero((x != 0) & ~coarse)
    coarse_cols = np.flatnonzero(coarse)
    k = np.round(np.asarray(w, dtype=float) / domain.step).astype(np.int64)
    values = domain.values[k[fine_cols] + domain.bound]
    r = sum(
        (Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x[fine_cols], values)), Fraction(0)
    )
    T = math.ceil((Fraction(problem.margin) - r) / Fraction(domain.step))
    return BandCut(
        int(row),
        tuple(int(j) for j in fine_cols),
        tuple(int(v) for v in k[fine_cols]),
        tuple(int(j) for j in coarse_cols),
        float(domain.step * (T - 0.5)),
    )


def mislabelled_rows(milp, x: np.ndarray) -> np.ndarray:
    """Problem rows whose z in the solver's assignment ``x`` is not the exact label at the
    decoded w."""
    problem = milp.problem
    active = np.flatnonzero(milp.z_cols >= 0)
    if not len(active):
        return active
    w = milp.decode_w(x)
    exact = exact_positive(problem.points[active], w, problem.margin)
    z = np.asarray(x, dtype=float)[milp.z_cols[active]] > 0.5
    return active[z != exact]


__all__ = [
    "BandCut",
    "MAX_BAND_ROUNDS",
    "band_cut",
    "exact_grid_values",
    "margin_gaps",
    "mislabelled_rows",
    "strict_eps_per_row",
]
