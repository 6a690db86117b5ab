"""The 0/1 loss every oracle minimizes and every report measures (SPEC section 2).

h_w(x) = +1 if <w, x> >= mu else -1, with a fixed margin mu > 0. The oracle, ``predict`` and
every reported accuracy use this one rule, so the loss an oracle minimizes is the loss that is
reported.

The rule is EXACT (SPEC section 8): <w, x> is the sum of the products of the float64 values of w
and x as real numbers (every float64 is m 2^e exactly, so the sum is an exact dyadic rational),
compared with the exact value of mu. On an IntegerGrid with tau = 1 that is "integer weights
times the exact binary value of each float feature". Floating point decides every entry whose
rounded score is provably on one side of mu (``score_error_bound``: the rounding error of a
d-term dot product in any summation order, FMA or not, is at most gamma_{d+1} sum_j |w_j x_j|);
the rest, scores within that bound of mu, are decided in exact rational arithmetic
(``fractions.Fraction``). The answer therefore does not depend on BLAS, on batching or on the
order of summation: scoring one w and a batch of w always agree.

Rows with identical x may be merged into (distinct x_u, P_u = #(+1), Q_u = #(-1)); the merged
loss sum_u P_u 1[h_w(x_u) = -1] + Q_u 1[h_w(x_u) = +1] is the same function of w as the full
loss, computed with the same floating-point products, so the two agree exactly.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np

#: Default margin mu of the threshold rule (SPEC section 2: "small, e.g. 1e-4 for features in
#: [0, 1]").
DEFAULT_MARGIN = 1e-4
#: The smallest margin a Problem accepts (``core.problem.Problem``). The exact rule works at any
#: mu > 0, but a MIP resolves scores only to its feasibility tolerance (1e-7 here): below about
#: 1e-6 most rows sit inside that resolution of mu and the reference formulation could certify
#: almost nothing (SPEC section 8).
MIN_MARGIN = 1e-6

_UNIT_ROUNDOFF = 2.0**-53
#: Absolute slack for products that underflow into subnormals (each loses at most 2^-1075).
_UNDERFLOW_SLACK = 2.0**-1000


def score_error_bound(abs_dot: np.ndarray, d: int) -> np.ndarray:
    """A bound on |fl(<w, x>) - <w, x>| from sum_j |w_j x_j| (itself computed in floating point).

    gamma_{d+1} = (d + 1) u / (1 - (d + 1) u) bounds a d-term dot product in any order; the
    factor 2 covers the rounding of ``abs_dot`` itself and of the comparison with mu.
    """
    gamma = (d + 1) * _UNIT_ROUNDOFF / (1.0 - (d + 1) * _UNIT_ROUNDOFF)
    return 2.0 * gamma * abs_dot + (d + 1) * _UNDERFLOW_SLACK


def exact_score(x, w) -> Fraction:
    """<w, x> in exact rational arithmetic from the float64 values of x and w."""
    return sum(
        (Fraction(float(a)) * Fraction(float(b)) for a, b in zip(x, w) if a != 0 and b != 0),
        Fraction(0),
    )


def exact_positive(X: np.ndarray, W: np.ndarray, margin: float) -> np.ndarray:
    """h = +1 as booleans, exactly (module docstring).

    Shape (u,) for w of shape (d,), (u, k) for a batch of shape (k, d).
    """
    X = np.asarray(X, dtype=float)
    W = np.asarray(W, dtype=float)
    single = W.ndim == 1
    W2 = np.atleast_2d(W)
    scores = X @ W2.T
    err = score_error_bound(np.abs(X) @ np.abs(W2).T, X.shape[1] if X.ndim == 2 else 1)
    positive = scores >= margin
    unsure = np.abs(scores - margin) <= err
    if unsure.any():
        mu = Fraction(float(margin))
        for u, k in zip(*np.nonzero(unsure)):
            positive[u, k] = exact_score(X[u], W2[k]) >= mu
    return positive[:, 0] if single else positive


def _as_readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def predict(X: np.ndarray, w: np.ndarray, margin: float = DEFAULT_MARGIN) -> np.ndarray:
    """Labels in {-1, +1}: +1 where <w, x> >= margin, exactly (module docstring).

    ``w`` may be (d,) (labels of shape (n,)) or a batch (k, d) (labels of shape (n, k)).
    """
    if not (math.isfinite(margin)):
        raise ValueError(f"margin must be finite, found {margin!r}")
    positive = exact_positive(np.asarray(X, dtype=float), w, margin)
    return np.where(positive, 1, -1).astype(np.int8)


def zero_one_loss(
    X: np.ndarray, y: np.ndarray, w: np.ndarray, margin: float = DEFAULT_MARGIN
) -> np.ndarray | int:
    """L(D, w) = sum_i 1[y_i != h_w(x_i)], unnormalized (1-sensitive under replacement).

    With ``w`` of shape (k, d) returns the k losses.
    """
    pred = predict(X, w, margin)
    y = np.asarray(y)
    if pred.ndim == 1:
        return int(np.count_nonzero(pred != y))
    return np.count_nonzero(pred != y[:, None], axis=0)


def check_data(X: Any, y: Any) -> tuple[np.ndarray, np.ndarray]:
    """Features (n, d), finite; labels (n,) in {-1, +1}. Returns them as arrays.

    The one data check, for oracles and mechanisms alike (``mechanisms.release`` re-exports it).
    """
    X = np.asarray(X)
    y = np.asarray(y)
    if X.ndim != 2 or X.shape[0] < 1 or X.shape[1] < 1:
        raise ValueError(f"X must be a non-empty 2-D array, found shape {X.shape}")
    if not np.issubdtype(X.dtype, np.number) or not np.isfinite(X).all():
        raise ValueError("X must hold finite numbers")
    if y.shape != (X.shape[0],):
        raise ValueError(f"y must have shape ({X.shape[0]},), found {y.shape}")
    if not np.isin(y, (-1, 1)).all():
        bad = np.unique(y[~np.isin(y, (-1, 1))])[:5]
        raise ValueError(f"labels must be -1 or +1, found {bad.tolist()}")
    return X.astype(float), y.astype(np.int8)


@dataclass(frozen=True, eq=False)
class MergedRows:
    """Distinct feature vectors with their label counts (SPEC section 2).

    Attributes:
        points: (u, d) distinct feature vectors, in lexicographic order.
        pos: (u,) number of rows with label +1 at each point (P_u).
        neg: (u,) number of rows with label -1 at each point (Q_u).
    """

    points: np.ndarray
    pos: np.ndarray
    neg: np.ndarray

    def __post_init__(self) -> None:
        points = np.asarray(self.points, dtype=float)
        if points.ndim != 2:
            raise ValueError(f"points must be a 2-D array, found shape {points.shape}")
        pos = np.asarray(self.pos, dtype=np.int64)
        neg = np.asarray(self.neg, dtype=np.int64)
        if pos.shape != (points.shape[0],) or neg.shape != (points.shape[0],):
            raise ValueError(
                f"pos and neg must have shape ({points.shape[0]},), "
                f"found {pos.shape} and {neg.shape}"
            )
        if (pos < 0).any() or (neg < 0).any():
            raise ValueError("label counts must be non-negative")
        object.__setattr__(self, "points", _as_readonly(points))
        object.__setattr__(self, "pos", _as_readonly(pos))
        object.__setattr__(self, "neg", _as_readonly(neg))

    @classmethod
    def from_xy(cls, X: np.ndarray, y: np.ndarray) -> "MergedRows":
        """Merge identical rows of X; y must be in {-1, +1}."""
        X = np.asarray(X, dtype=float)
        y = np.asarray(y)
        if X.ndim != 2 or y.shape != (X.shape[0],):
            raise ValueError(f"X must be (n, d) and y (n,), found {X.shape} and {y.shape}")
        if not np.isin(y, (-1, 1)).all():
            raise ValueError("labels must be -1 or +1")
        points, inverse = np.unique(X, axis=0, return_inverse=True)
        inverse = inverse.reshape(-1)
        pos = np.bincount(inverse, weights=(y == 1), minlength=len(points)).astype(np.int64)
        neg = np.bincount(inverse, weights=(y == -1), minlength=len(points)).astype(np.int64)
        return cls(points, pos, neg)

    @property
    def n(self) -> int:
        """Number of original rows."""
        return int(self.pos.sum() + self.neg.sum())

    @property
    def n_distinct(self) -> int:
        return int(self.points.shape[0])

    @property
    def d(self) -> int:
        return int(self.points.shape[1])

    def loss(self, w: np.ndarray, margin: float = DEFAULT_MARGIN) -> np.ndarray | int:
        """The same L(D, w) as :func:`zero_one_loss` on the unmerged rows."""
        positive = predict(self.points, w, margin) == 1
        if positive.ndim == 1:
            return int(self.neg[positive].sum() + self.pos[~positive].sum())
        return self.neg @ positive + self.pos @ ~positive

    def min_possible_loss(self) -> int:
        """sum_u min(P_u, Q_u): no classifier of any kind does better on these rows."""
        return int(np.minimum(self.pos, self.neg).sum())
