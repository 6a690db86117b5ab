"""The 0/1 loss every oracle minimizes and every report measures (SPEC section 2).

h_w(x) = +1 if <w, x> >= mu else -1, with a fixed margin mu > 0. The oracle, ``predict`` and
every reported accuracy use this one rule, so the loss an oracle minimizes is the loss that is
reported.

Rows with identical x may be merged into (distinct x_u, P_u = #(+1), Q_u = #(-1)); the merged
loss sum_u P_u 1[h_w(x_u) = -1] + Q_u 1[h_w(x_u) = +1] is the same function of w as the full
loss, computed with the same floating-point products, so the two agree exactly.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: Default margin mu of the threshold rule (SPEC section 2: "small, e.g. 1e-4 for features in
#: [0, 1]").
DEFAULT_MARGIN = 1e-4


def _as_readonly(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.setflags(write=False)
    return a


def predict(X: np.ndarray, w: np.ndarray, margin: float = DEFAULT_MARGIN) -> np.ndarray:
    """Labels in {-1, +1}: +1 where <w, x> >= margin. ``w`` may be (d,) or a batch (k, d)."""
    scores = np.asarray(X, dtype=float) @ np.asarray(w, dtype=float).T
    return np.where(scores >= margin, 1, -1).astype(np.int8)


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
