"""A fast heuristic for min F over an IntegerGrid: starts, then local search on the grid.

An exact oracle's bound has to MEET its incumbent, so the incumbent matters: a solver that
certifies must first find the argmin, and a good point early lets it prune (a MIP start, a
cutoff). This module finds good grid points; it proves nothing. Its points are exact grid
points (w = tau k), and every value it returns is ``Problem.objective`` (SPEC section 2's exact
rule), so a caller may hand them to ``certify`` or to a solver as a start.

Starts (``starting_points``):
* 0 and the grid point that minimizes the noise alone, <linear, w> + norm_coef sqrt(D^2 - ||w||^2)
  (exact: for each attainable ||k||^2 = q the best k is found by a knapsack over coordinates,
  ``noise_argmin``);
* the directions of two linear classifiers on the rows (a least-squares fit of the labels and
  a logistic regression without intercept, ``logistic_direction``, both weighted by the row
  counts), each scaled to ``SCALES`` of the ball's radius and rounded; the best few by F start
  (``rounded_along``). On a table a logistic regression separates, a rounded direction can
  classify every row (crime's exact ERM: 0 errors, the least any point has, so certified at
  once; the local search from 0 and the noise's argmin stopped at 1).

Moves (``local_search``): change one coordinate to any other value of the grid inside the norm
bound, or move one unit from one coordinate to another; the best improving move is taken until
none improves. Scores are updated in floating point for speed; the final point and every
reported value are re-evaluated exactly. ``improve`` adds random restarts (perturb a few
coordinates of the best point and search again) within a time budget, with an explicit
``numpy.random.Generator``.
"""

from __future__ import annotations

import math

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.contract.budget import Budget
from oracles.window.minorant import grid_cap, norm_table, separable_argmin

#: ``improve`` stops after this many restarts in a row without a better point.
PATIENCE = 100
#: The fractions of the ball's radius a classifier's direction is scaled to (``rounded_along``).
SCALES = tuple(np.linspace(0.1, 1.0, 19))
#: The best rounded points of each direction that start a local search.
STARTS_PER_DIRECTION = 3
#: The logistic direction's L2 penalty, per unit of total row count, and its Newton steps.
LOGISTIC_RIDGE = 1e-4
LOGISTIC_STEPS = 50


class _Scorer:
    """F in floating point at a grid point k, with cheap one- and two-coordinate moves."""

    def __init__(self, problem: Problem) -> None:
        domain = problem.domain
        self.problem = problem
        self.tau, self.B, self.cap = domain.step, domain.bound, grid_cap(domain)
        self.X = problem.points * self.tau  # scores are X @ k
        self.pos, self.neg = problem.pos, problem.neg
        self.mu = problem.margin
        self.lin = problem.linear * self.tau
        self.norm = norm_table(problem)
        self.ks = np.arange(-self.B, self.B + 1)

    def value(self, k: np.ndarray, scores: np.ndarray | None = None) -> float:
        s = self.X @ k if scores is None else scores
        positive = s >= self.mu
        q = int(k @ k)
        return float(self.neg @ positive + self.pos @ ~positive + self.lin @ k + self.norm[q])

    def best_single(self, k: np.ndarray, s: np.ndarray) -> tuple[float, int, int]:
        """The best change of one coordinate: (delta, j, new value)."""
        q = int(k @ k)
        base = float(self.neg @ (s >= self.mu) + self.pos @ (s < self.mu))
        cur = base + float(self.lin @ k) + self.norm[q]
        best = (0.0, -1, 0)
        for j in range(len(k)):
            step = self.ks - k[j]  # (V,)
            q_new = q - k[j] ** 2 + self.ks**2
            ok = (q_new <= self.cap) & (step != 0)
            if not ok.any():
                continue
            S = s[:, None] + self.X[:, j, None] * step[None, :]  # (u, V)
            positive = S >= self.mu
            loss = self.neg @ positive + self.pos @ ~positive
            norm = self.norm[np.minimum(q_new, self.cap)]
            val = loss + float(self.lin @ k) + self.lin[j] * step + norm
            val = np.where(ok, val, np.inf)
            i = int(np.argmin(val))
            if val[i] - cur < best[0] - 1e-12:
                best = (float(val[i] - cur), j, int(self.ks[i]))
        return best

    def best_pair(self, k: np.ndarray, s: np.ndarray) -> tuple[float, int, int, int, int]:
        """The best move of +-1 on two coordinates at once: (delta, j, dj, l, dl)."""
        d = len(k)
        q = int(k @ k)
        cur = self.value(k, s)
        best = (0.0, -1, 0, -1, 0)
        steps = (-1, 1)
        for j in range(d):
            for dj in steps:
                if abs(k[j] + dj) > self.B:
                    continue
                s1 = s + self.X[:, j] * dj
                qj = q - k[j] ** 2 + (k[j] + dj) ** 2
                for dl in steps:
                    new_l = k + dl
                    ok = np.abs(new_l) <= self.B
                    ok[j] = False
                    q_new = qj - k**2 + new_l**2
                    ok &= q_new <= self.cap
                    if not ok.any():
                        continue
                    S = s1[:, None] + self.X * dl  # (u, d): column l moved by dl
                    positive = S >= self.mu
                    loss = self.neg @ positive + self.pos @ ~positive
                    val = (
                        loss
                        + float(self.lin @ k)
                        + self.lin[j] * dj
                        + self.lin * dl
                        + self.norm[np.clip(q_new, 0, self.cap)]
                    )
                    val = np.where(ok, val, np.inf)
                    i = int(np.argmin(val))
                    if val[i] - cur < best[0] - 1e-12:
                        best = (float(val[i] - cur), j, dj, i, dl)
        return best


def local_search(
    problem: Problem, k0: np.ndarray, *, budget: Budget, pairs: bool = True
) -> np.ndarray:
    """A local minimum of F (in floating point) reached from the grid point ``k0``
    (integer coordinates; module docstring, moves), or where it was when ``budget`` expired."""
    sc = _Scorer(problem)
    k = np.asarray(k0, dtype=np.int64).copy()
    s = sc.X @ k
    while not budget.expired():
        delta, j, v = sc.best_single(k, s)
        if j >= 0:
            s = s + sc.X[:, j] * (v - k[j])
            k[j] = v
            continue
        if not pairs:
            break
        delta, j, dj, l, dl = sc.best_pair(k, s)
        if j < 0:
            break
        k[j] += dj
        k[l] += dl
        s = sc.X @ k
    return k


def noise_argmin(problem: Problem) -> np.ndarray:
    """The grid point (integer k) minimizing <linear, w> + norm_coef sqrt(D^2 - ||w||^2) alone.

    For each q the best k with ||k||^2 = q is a knapsack over coordinates (each coordinate picks
    a value k_j with cost tau linear_j k_j and weight k_j^2), solved exactly by dynamic
    programming in floating point; the best q then adds the norm table.
    """
    domain = problem.domain
    ks = np.arange(-domain.bound, domain.bound + 1)
    unary = domain.step * problem.linear[:, None] * ks[None, :].astype(float)
    return separable_argmin(unary, norm_table(problem))[1]


def logistic_direction(problem: Problem, ridge: float = LOGISTIC_RIDGE) -> np.ndarray:
    """The weights of a logistic regression without intercept on the rows (row u counted pos_u
    times as +1 and neg_u times as -1; negative counts, RSPM's noise on its separator rows, count
    as 0), with an L2 penalty ``ridge`` times the total count: damped Newton steps. A heuristic's
    direction: nothing is proven from it."""
    X = problem.points
    pos, neg = np.maximum(problem.pos, 0.0), np.maximum(problem.neg, 0.0)
    lam = ridge * max(float((pos + neg).sum()), 1.0)
    w = np.zeros(problem.d)
    for _ in range(LOGISTIC_STEPS):
        s = np.clip(X @ w, -30.0, 30.0)
        p = 1.0 / (1.0 + np.exp(-s))  # sigma(s)
        grad = X.T @ (neg * p - pos * (1.0 - p)) + lam * w
        hess = (X * ((pos + neg) * p * (1.0 - p))[:, None]).T @ X + lam * np.eye(problem.d)
        step = np.linalg.solve(hess, grad)
        w = w - step
        if float(np.abs(step).max(initial=0.0)) < 1e-8:
            break
    return w


def into_ball(k: np.ndarray, cap: int) -> np.ndarray:
    """``k`` (changed in place) with its largest coordinate moved one unit towards 0 until
    ||k||^2 <= cap."""
    while k @ k > cap:
        j = int(np.argmax(np.abs(k)))
        k[j] -= np.sign(k[j])
    return k


def rounded_along(problem: Problem, direction: np.ndarray, keep: int) -> list[np.ndarray]:
    """The ``keep`` best grid points (by F) on the ray of ``direction``, scaled to
    ``SCALES`` of the ball's radius and rounded, inside the box and the ball."""
    domain = problem.domain
    B, cap = domain.bound, grid_cap(domain)
    norm = float(np.linalg.norm(direction))
    if not norm > 0 or not math.isfinite(norm):
        return []
    points = []
    for scale in SCALES:
        k = np.clip(np.round(direction / norm * math.sqrt(cap) * scale), -B, B).astype(np.int64)
        points.append(into_ball(k, cap))
    points = np.unique(np.array(points), axis=0)
    values = np.atleast_1d(problem.objective(domain.step * points.astype(float)))
    return [points[i] for i in np.argsort(values, kind="stable")[:keep]]


def starting_points(problem: Problem) -> list[np.ndarray]:
    """Integer grid points to start the local search from (module docstring, starts)."""
    d = problem.d
    starts = [np.zeros(d, dtype=np.int64), noise_argmin(problem)]
    X = problem.points
    weight = problem.pos + problem.neg
    target = np.where(weight > 0, (problem.pos - problem.neg) / np.where(weight > 0, weight, 1), 0)
    sw = np.sqrt(np.abs(weight))
    least_squares, *_ = np.linalg.lstsq(
        np.hstack([X, np.ones((len(X), 1))]) * sw[:, None], target * sw, rcond=None
    )
    for direction in (least_squares[:d], logistic_direction(problem)):
        starts.extend(rounded_along(problem, direction, STARTS_PER_DIRECTION))
    return starts


def improve(
    problem: Problem,
    budget: Budget,
    *,
    rng: np.random.Generator,
    starts: list[np.ndarray] | None = None,
    patience: int = PATIENCE,
) -> tuple[np.ndarray, float]:
    """The best grid point w found within ``budget`` and its EXACT objective (module
    docstring: starts, local search, random restarts). The restarts stop early after ``patience`` of
    them in a row found nothing better (a small problem does not wait for its whole budget)."""
    if not isinstance(problem.domain, IntegerGrid):
        raise TypeError("the grid search needs an IntegerGrid domain")
    domain = problem.domain
    tau, B, cap = domain.step, domain.bound, grid_cap(domain)
    best_k, best_val = None, math.inf
    for k0 in starting_points(problem) if starts is None else starts:
        k = local_search(problem, k0, budget=budget)
        val = float(problem.objective(tau * k))
        if val < best_val:
            best_k, best_val = k, val
        if budget.expired():
            break
    d = domain.d
    idle = 0
    while not budget.expired() and idle < patience:
        idle += 1
        k = best_k.copy()
        for j in rng.choice(d, size=min(d, int(rng.integers(2, 6))), replace=False):
            k[j] = int(rng.integers(-B, B + 1))
        k = local_search(problem, into_ball(k, cap), budget=budget)
        val = float(problem.objective(tau * k))
        if val < best_val:
            best_k, best_val, idle = k, val, 0
    return tau * best_k.astype(float), best_val


__all__ = [
    "LOGISTIC_RIDGE",
    "SCALES",
    "improve",
    "into_ball",
    "local_search",
    "logistic_direction",
    "noise_argmin",
    "rounded_along",
    "starting_points",
]
