"""The problem every oracle minimizes: its domain (a grid or a box) and its weighted rows.

    F(w) = sum_u pos_u 1[<w, x_u> < mu] + neg_u 1[<w, x_u> >= mu]      (weighted 0/1 loss)
           + <linear, w>                                                (linear perturbation)
           + norm_coef * sqrt(D^2 - ||w||^2)                            (OPDisc's last coordinate)

The mechanisms build these records (SPEC sections 3 to 5) and the oracles solve them
(``oracles.base`` has the certificate that comes back). F is evaluated by the exact rule of SPEC
section 2 (``core.objective``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from core.objective import DEFAULT_MARGIN, MIN_MARGIN, MergedRows, exact_positive
from core.validation import check_real, check_shape, require


def frozen_array(a, dtype=float) -> np.ndarray:
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


# --- domains -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class IntegerGrid:
    """W_tau = { w in tau * Z^d : |w_j| <= B tau... } as in SPEC section 3.

    Coordinates are ``step * k`` with integer k in [-bound, bound]; when ``norm_sq_max`` is set,
    also ||w||_2^2 <= norm_sq_max (D^2). RSPM's {-1, 0, 1}^d is step 1, bound 1, no norm bound.
    """

    d: int
    bound: int
    step: float = 1.0
    norm_sq_max: float | None = None

    def __post_init__(self) -> None:
        check_shape("d", self.d)
        check_shape("bound", self.bound)
        check_real("step", self.step)
        if self.norm_sq_max is not None:
            check_real("norm_sq_max", self.norm_sq_max, ">= 0")

    @property
    def values(self) -> np.ndarray:
        """The values one coordinate can take."""
        return self.step * np.arange(-self.bound, self.bound + 1, dtype=float)

    @property
    def size_upper_bound(self) -> int:
        return (2 * self.bound + 1) ** self.d

    def contains(self, w: np.ndarray, tol: float = 1e-9) -> bool:
        w = np.asarray(w, dtype=float)
        k = w / self.step
        ok = w.shape == (self.d,) and np.allclose(k, np.round(k), atol=tol)
        ok = ok and bool(np.all(np.abs(np.round(k)) <= self.bound))
        if ok and self.norm_sq_max is not None:
            ok = float(w @ w) <= self.norm_sq_max + tol
        return bool(ok)


@dataclass(frozen=True)
class Box:
    """The continuous box [lower, upper]^d (OPSamp, SPEC section 5)."""

    d: int
    lower: float = -1.0
    upper: float = 1.0

    def __post_init__(self) -> None:
        check_shape("d", self.d)
        check_real("lower", self.lower, "")
        check_real("upper", self.upper, "")
        require(self.lower < self.upper, "upper", f"must be > lower = {self.lower!r}", self.upper)

    def contains(self, w: np.ndarray, tol: float = 1e-7) -> bool:
        w = np.asarray(w, dtype=float)
        return w.shape == (self.d,) and bool(
            np.all(w >= self.lower - tol) and np.all(w <= self.upper + tol)
        )


Domain = IntegerGrid | Box


# --- the problem -------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class Problem:
    """min over ``domain`` of F(w) (module docstring). Built by the mechanisms, solved by oracles.

    ``norm_radius_sq`` is D^2 of the norm term; it must not be smaller than the domain's norm
    bound so that sqrt(D^2 - ||w||^2) is real on the domain.
    """

    points: np.ndarray
    pos: np.ndarray
    neg: np.ndarray
    domain: Domain
    linear: np.ndarray | None = None
    norm_coef: float = 0.0
    norm_radius_sq: float | None = None
    margin: float = DEFAULT_MARGIN
    #: Free-form description carried into certificates (mechanism, epsilon, ...).
    label: str = ""

    def __post_init__(self) -> None:
        points = frozen_array(self.points)
        if points.ndim != 2 or points.shape[1] != self.domain.d:
            raise ValueError(
                f"points must be (u, {self.domain.d}) for a {self.domain.d}-dimensional domain, "
                f"found {points.shape}"
            )
        pos, neg = frozen_array(self.pos), frozen_array(self.neg)
        if pos.shape != (len(points),) or neg.shape != (len(points),):
            raise ValueError(f"pos and neg must have shape ({len(points)},)")
        if not (np.isfinite(points).all() and np.isfinite(pos).all() and np.isfinite(neg).all()):
            raise ValueError("points and weights must be finite")
        linear = frozen_array(np.zeros(self.domain.d) if self.linear is None else self.linear)
        if linear.shape != (self.domain.d,) or not np.isfinite(linear).all():
            raise ValueError(f"linear must be a finite vector of length {self.domain.d}")
        if not math.isfinite(self.norm_coef):
            raise ValueError(f"norm_coef must be finite, found {self.norm_coef!r}")
        if self.norm_coef != 0.0:
            if not isinstance(self.domain, IntegerGrid) or self.domain.norm_sq_max is None:
                raise ValueError("a norm term needs an IntegerGrid domain with a norm bound")
            if self.norm_radius_sq is None or self.norm_radius_sq < self.domain.norm_sq_max:
                raise ValueError(
                    f"norm_radius_sq must be >= the domain's norm bound "
                    f"{self.domain.norm_sq_max}, found {self.norm_radius_sq!r}"
                )
        if not (math.isfinite(self.margin) and self.margin >= MIN_MARGIN):
            raise ValueError(
                f"margin must be >= {MIN_MARGIN} (oracles.objective.MIN_MARGIN), "
                f"found {self.margin!r}"
            )
        object.__setattr__(self, "points", points)
        object.__setattr__(self, "pos", pos)
        object.__setattr__(self, "neg", neg)
        object.__setattr__(self, "linear", linear)

    @classmethod
    def from_rows(cls, rows: MergedRows, domain: Domain, **kwargs: Any) -> "Problem":
        return cls(rows.points, rows.pos, rows.neg, domain, **kwargs)

    @property
    def d(self) -> int:
        return self.domain.d

    @property
    def n_rows(self) -> int:
        return int(self.points.shape[0])

    def with_rows(self, points: np.ndarray, pos: np.ndarray, neg: np.ndarray) -> "Problem":
        """The same problem with extra weighted rows appended (RSPM's separator examples)."""
        return replace(
            self,
            points=np.vstack([self.points, points]),
            pos=np.concatenate([self.pos, pos]),
            neg=np.concatenate([self.neg, neg]),
        )

    def objective(self, w: np.ndarray) -> np.ndarray | float:
        """F(w) by the exact rule of SPEC section 2; ``w`` may be (d,) or a batch (k, d).

        The labels are exact (``oracles.objective.exact_positive``), so one w and a batch that
        contains it always get the same labels; the weighted sums are in floating point.
        """
        W = np.atleast_2d(np.asarray(w, dtype=float))
        positive = exact_positive(self.points, W, self.margin)  # (u, k)
        value = self.neg @ positive + self.pos @ ~positive + W @ self.linear
        if self.norm_coef != 0.0:
            slack = np.maximum(self.norm_radius_sq - np.einsum("kd,kd->k", W, W), 0.0)
            value = value + self.norm_coef * np.sqrt(slack)
        return float(value[0]) if np.ndim(w) == 1 else value
