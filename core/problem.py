"""Every problem an oracle solves, in one module: the mechanisms build them, the oracles take them.

A mechanism's ``Problem`` (its domain, a grid or a box, and its weighted rows):

    F(w) = sum_u pos_u 1[<w, x_u> < mu] + neg_u 1[<w, x_u> >= mu]      (weighted 0/1 loss)
           + <linear, w>                                                (linear perturbation)
           + norm_coef * sqrt(D^2 - ||w||^2)                            (OPDisc's last coordinate)

The mechanisms build these records (SPEC sections 3 to 5) and the oracles solve them
(``oracles.contract.certificate`` has the certificate that comes back). F is evaluated by the exact rule of SPEC
section 2 (``core.objective``).

Beside it, the problems of the other strategies (each strategy declares the classes it
``accepts``; ``oracles.routing.routes`` routes by them):

* ``ConvexProblem``: OPSamp's surrogate over a box (SPEC section 5; solved by
  ``oracles.convex``, whose docstring has the loss and its scale);
* ``ConjunctionProblem`` / ``ConjunctionBatch``: the data player's best record of synthetic
  data, one noise vector or a round of them (``oracles.synthetic.data_player``);
* ``SelectionProblem``: RSPM's selection of a conjunction and sign (``oracles.synthetic.query_player``,
  whose docstring has the class order that ``conjunction_index`` numbers).

They live here, not in the strategies' modules, so that a mechanism imports the problem it
builds and never a strategy.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from scipy.special import expit

from core.objective import DEFAULT_MARGIN, MIN_MARGIN, MergedRows, check_data, exact_positive
from core.validation import check_choice, check_int, check_real, check_shape, is_real, require


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


# --- OPSamp's surrogate (SPEC section 5) -------------------------------------------------------

#: The surrogate losses of OPSamp's convex oracle.
LOSSES = ("logistic", "hinge")


def box_radius(X: np.ndarray, box: Box) -> float:
    """R = max_i max_{w in box} |<w, x_i>| (exact: the box's extreme point is per coordinate)."""
    X = np.asarray(X, dtype=float)
    hi = np.maximum(box.lower * X, box.upper * X).sum(axis=1)
    lo = np.minimum(box.lower * X, box.upper * X).sum(axis=1)
    return float(max(hi.max(initial=0.0), (-lo).max(initial=0.0)))


def loss_scale(radius: float, loss: str = "logistic") -> float:
    """S, the maximum of the unscaled loss over margins |t| <= radius."""
    check_loss(loss)
    if not (math.isfinite(radius) and radius >= 0):
        raise ValueError(f"radius must be finite and >= 0, found {radius!r}")
    return float(np.logaddexp(0.0, radius)) if loss == "logistic" else 1.0 + radius


def surrogate_value(margins: Any, *, loss: str = "logistic", scale: float) -> np.ndarray:
    """l(t) for margins t = y <w, x>: the unscaled loss divided by ``scale``
    (``oracles.convex``'s docstring)."""
    check_loss(loss)
    t = np.asarray(margins, dtype=float)
    raw = np.logaddexp(0.0, -t) if loss == "logistic" else np.maximum(0.0, 1.0 - t)
    return raw / scale


def check_loss(loss: Any) -> None:
    """``loss`` is one of ``LOSSES``, else ValueError quoting it."""
    check_choice("loss", loss, LOSSES)


@dataclass(frozen=True, eq=False)
class ConvexProblem:
    """min over ``box`` of f(w) = (1/n) sum_k m_k l(y_k <w, x_k>) - <sigma, w> / n
    (``oracles.convex``'s docstring).

    Rows are distinct (x, y) pairs with counts ``weights`` (m_k); n = sum_k m_k. Build it with
    ``from_xy`` or ``from_rows``. ``scale`` is S (``oracles.convex``); None computes it from the
    data. A scale too small for these rows (the loss would leave [0, 1]) is refused.
    """

    points: np.ndarray
    labels: np.ndarray
    weights: np.ndarray
    sigma: np.ndarray
    box: Box
    loss: str = "logistic"
    scale: float | None = None
    label: str = ""
    #: 'given' (public, as OPSamp needs) or 'data' (S computed from these rows).
    scale_source: str = field(init=False, default="given")

    def __post_init__(self) -> None:
        check_loss(self.loss)
        points, labels = check_data(self.points, self.labels)
        if points.shape[1] != self.box.d:
            raise ValueError(
                f"points must be (rows, {self.box.d}) for a {self.box.d}-dimensional box, "
                f"found {points.shape}"
            )
        weights = np.asarray(self.weights, dtype=float)
        if weights.shape != labels.shape or not np.isfinite(weights).all() or (weights < 0).any():
            raise ValueError(f"weights must be {labels.shape} finite counts >= 0")
        if not weights.sum() > 0:
            raise ValueError("weights must not all be zero")
        sigma = np.asarray(self.sigma, dtype=float)
        if sigma.shape != (self.box.d,) or not np.isfinite(sigma).all():
            raise ValueError(
                f"sigma must be a finite vector of length {self.box.d}, found shape {sigma.shape}"
            )
        needed = loss_scale(box_radius(points, self.box), self.loss)
        scale, source = self.scale, "given"
        if scale is None:
            scale, source = needed, "data"
        if not is_real(scale):
            raise TypeError(f"scale must be a real number, found {scale!r}")
        if not (math.isfinite(scale) and scale >= needed * (1 - 1e-12)):
            raise ValueError(
                f"scale must be >= {needed!r}, the {self.loss} loss's maximum over the box on "
                f"these rows (else the loss leaves [0, 1]), found {scale!r}"
            )
        object.__setattr__(self, "points", frozen_array(points))
        object.__setattr__(self, "labels", frozen_array(labels, np.int8))
        object.__setattr__(self, "weights", frozen_array(weights))
        object.__setattr__(self, "sigma", frozen_array(sigma))
        object.__setattr__(self, "scale", float(scale))
        object.__setattr__(self, "scale_source", source)

    @classmethod
    def from_rows(cls, rows: MergedRows, sigma: Any, box: Box, **kwargs: Any) -> "ConvexProblem":
        """From merged rows: (x_u, +1) with count P_u and (x_u, -1) with count Q_u."""
        keep_pos, keep_neg = rows.pos > 0, rows.neg > 0
        points = np.vstack([rows.points[keep_pos], rows.points[keep_neg]])
        labels = np.concatenate([np.ones(keep_pos.sum()), -np.ones(keep_neg.sum())])
        weights = np.concatenate([rows.pos[keep_pos], rows.neg[keep_neg]])
        return cls(points, labels, weights, sigma, box, **kwargs)

    @classmethod
    def from_xy(cls, X: Any, y: Any, sigma: Any, box: Box, **kwargs: Any) -> "ConvexProblem":
        X, y = check_data(X, y)
        return cls.from_rows(MergedRows.from_xy(X, y), sigma, box, **kwargs)

    @property
    def n(self) -> float:
        return float(self.weights.sum())

    @property
    def d(self) -> int:
        return self.box.d

    @property
    def lipschitz_l1(self) -> float:
        """G with |l_i(w) - l_i(w')| <= G ||w - w'||_1: max_i ||x_i||_inf / S (|l'| <= 1)."""
        return float(np.abs(self.points).max()) / self.scale

    def margins(self, w: np.ndarray) -> np.ndarray:
        return self.labels * (self.points @ np.asarray(w, dtype=float))

    def objective(self, w: np.ndarray) -> float:
        w = np.asarray(w, dtype=float)
        losses = surrogate_value(self.margins(w), loss=self.loss, scale=self.scale)
        return float((self.weights @ losses - self.sigma @ w) / self.n)

    def gradient(self, w: np.ndarray) -> np.ndarray:
        """The gradient (logistic) or a subgradient (hinge: slope -1/S where t < 1, else 0)."""
        t = self.margins(w)
        if self.loss == "logistic":
            slope = -expit(-t) / self.scale
        else:
            slope = np.where(t < 1.0, -1.0 / self.scale, 0.0)
        return ((self.weights * slope * self.labels) @ self.points - self.sigma) / self.n

    def value_and_gradient(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        return self.objective(w), self.gradient(w)

    def frank_wolfe_gap(self, w: np.ndarray) -> float:
        """max_{v in box} <grad f(w), w - v> >= f(w) - min f (for the logistic loss)."""
        w = np.asarray(w, dtype=float)
        g = self.gradient(w)
        terms = g * w - np.minimum(self.box.lower * g, self.box.upper * g)  # each >= 0 on the box
        return float(np.maximum(terms, 0.0).sum())

    def dual_bound(self, a: np.ndarray) -> float:
        """A lower bound on min f for the hinge loss, valid for any a in [0, 1]^rows."""
        a = np.clip(np.asarray(a, dtype=float), 0.0, 1.0)
        c = 1.0 / (self.n * self.scale)
        ma = self.weights * a
        g = c * (ma * self.labels) @ self.points + self.sigma / self.n
        return float(c * ma.sum() - np.maximum(self.box.lower * g, self.box.upper * g).sum())


# --- the synthetic-data game's problems --------------------------------------------------------

Literal = tuple[int, int]
Conjunction = tuple[Literal, ...]


def _checked_levels(levels: Any) -> tuple[int, ...]:
    """The levels of a product domain of attributes, each an integer >= 1 (the conjunction and
    selection problems share the domain)."""
    levels = tuple(int(k) for k in levels)
    if not levels:
        raise ValueError("levels must list at least one attribute")
    for a, k in enumerate(levels):
        check_int(f"levels[{a}]", k)
    return levels


def _finite_coefs(coefs: Any, size: int, what: str = "") -> np.ndarray:
    """``coefs`` as ``size`` finite floats; the message ends with ``what`` (what one is per)."""
    coefs = np.asarray(coefs, dtype=float)
    if coefs.shape != (size,) or not np.isfinite(coefs).all():
        raise ValueError(f"coefs must be {size} finite numbers{what}")
    return coefs


def _level_weights(name: str, weights: Any, levels: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """One finite weight per level of each attribute (none given: all zero), as float arrays."""
    weights = weights or tuple(np.zeros(k) for k in levels)
    weights = tuple(np.asarray(n, dtype=float) for n in weights)
    if [n.shape for n in weights] != [(k,) for k in levels] or not all(
        np.isfinite(n).all() for n in weights
    ):
        raise ValueError(f"{name} must hold one finite weight per level of each attribute")
    return weights


@dataclass(frozen=True)
class ConjunctionProblem:
    """max_x sum_c coef_c q_c(x) + <noise, b(x)> (``oracles.synthetic.data_player``' docstring)."""

    levels: tuple[int, ...]
    conjunctions: tuple[Conjunction, ...]
    coefs: np.ndarray
    #: One array per attribute, noise[a][v] the weight of b_{a,v}.
    noise: tuple[np.ndarray, ...] = field(default=())

    def __post_init__(self) -> None:
        levels = _checked_levels(self.levels)
        object.__setattr__(self, "levels", levels)
        conjunctions = tuple(tuple((int(a), int(v)) for a, v in c) for c in self.conjunctions)
        for c in conjunctions:
            attrs = [a for a, _ in c]
            if not c or len(set(attrs)) != len(attrs):
                raise ValueError(f"a conjunction needs literals on distinct attributes, found {c}")
            for a, v in c:
                if not (0 <= a < len(levels) and 0 <= v < levels[a]):
                    raise ValueError(f"literal ({a}, {v}) is outside the levels {levels}")
        object.__setattr__(self, "conjunctions", conjunctions)
        object.__setattr__(self, "coefs", _finite_coefs(self.coefs, len(conjunctions)))
        object.__setattr__(self, "noise", _level_weights("noise", self.noise, levels))

    @property
    def size(self) -> int:
        return math.prod(self.levels)

    def values(self, records: np.ndarray) -> np.ndarray:
        """The objective (to maximize) at each row of ``records`` (an (r, attributes) code array)."""
        records = np.atleast_2d(np.asarray(records, dtype=np.int64))
        out = np.zeros(len(records))
        for a, n in enumerate(self.noise):
            out += n[records[:, a]]
        for c, coef in zip(self.conjunctions, self.coefs):
            if coef:
                hold = np.ones(len(records), dtype=bool)
                for a, v in c:
                    hold &= records[:, a] == v
                out += coef * hold
        return out


@dataclass(frozen=True, eq=False)
class ConjunctionBatch:
    """The best record for each row of ``noises`` (flat noise vectors: one weight per level of
    each attribute in turn) against ``problem``'s conjunctions; ``problem``'s own noise is not
    used. Its answer has one record a row, and ONE certificate for the batch: the objective the
    sum of the rows' exact values, OPTIMAL when every row is (``each_row``)."""

    problem: ConjunctionProblem
    noises: np.ndarray

    def __post_init__(self) -> None:
        width = int(sum(self.problem.levels))
        noises = np.atleast_2d(np.asarray(self.noises, dtype=float))
        if noises.ndim != 2 or noises.shape[1] != width or not np.isfinite(noises).all():
            raise ValueError(
                f"noises must be rows of {width} finite weights (one per level of each "
                f"attribute), found shape {noises.shape}"
            )
        object.__setattr__(self, "noises", noises)

    def row(self, i: int) -> ConjunctionProblem:
        """The problem of row ``i``: the conjunctions with that row's noise."""
        bounds = np.cumsum((0,) + self.problem.levels)
        noise = tuple(self.noises[i, bounds[a] : bounds[a + 1]] for a in range(len(bounds) - 1))
        return ConjunctionProblem(
            self.problem.levels, self.problem.conjunctions, self.problem.coefs, noise
        )


@dataclass(frozen=True, eq=False)
class SelectionProblem:
    """The maximization of ``oracles.synthetic.query_player``'s docstring."""

    levels: tuple[int, ...]
    max_literals: int
    #: (r, attributes) level codes (distinct in the game, not required here).
    records: np.ndarray
    #: c_x, one per record.
    coefs: np.ndarray
    #: One array per attribute, literal_noise[a][v] the weight of literal (a, v).
    literal_noise: tuple[np.ndarray, ...] = field(default=())
    sign_noise: float = 0.0
    #: True: on equal values the first candidate in the class order (``conjunction_index``); False:
    #: any maximizer (the value and its certificate are the same). Where every weight is 0 (a
    #: table measured against itself) the first would take visiting the whole class.
    first_on_ties: bool = True

    def __post_init__(self) -> None:
        levels = _checked_levels(self.levels)
        object.__setattr__(self, "levels", levels)
        check_int("max_literals", self.max_literals)
        if self.max_literals > len(levels):
            raise ValueError(
                f"max_literals must be <= the {len(levels)} attributes, found {self.max_literals}"
            )
        records = np.asarray(self.records, dtype=np.int64).reshape(-1, len(levels))
        if (records < 0).any() or (records >= np.array(levels)).any():
            raise ValueError(f"records must hold level codes within the levels {levels}")
        object.__setattr__(self, "records", records)
        coefs = _finite_coefs(self.coefs, len(records), ", one per record")
        object.__setattr__(self, "coefs", coefs)
        noise = _level_weights("literal_noise", self.literal_noise, levels)
        object.__setattr__(self, "literal_noise", noise)
        if not math.isfinite(self.sign_noise):
            raise ValueError(f"sign_noise must be finite, found {self.sign_noise!r}")
        object.__setattr__(self, "sign_noise", float(self.sign_noise))

    @property
    def candidates(self) -> int:
        """|class| with both signs: 2 sum_{j <= k} sum_{|A| = j} prod_{a in A} levels[a]."""
        return 2 * sum(cells(self.levels, j) for j in range(1, self.max_literals + 1))

    def value(self, conjunction: Conjunction, sign: int) -> float:
        """The objective at (conjunction, sign)."""
        hold = np.ones(len(self.records), dtype=bool)
        noise = 0.0
        for a, v in conjunction:
            hold &= self.records[:, a] == v
            noise += self.literal_noise[a][v]
        return sign * float(self.coefs[hold].sum()) + noise + (self.sign_noise if sign > 0 else 0)


def cells(levels: tuple[int, ...], size: int) -> int:
    """How many conjunctions of exactly ``size`` literals the ``levels`` hold."""
    return sum(
        math.prod(levels[a] for a in attrs)
        for attrs in itertools.combinations(range(len(levels)), size)
    )


def conjunction_index(levels, max_literals: int, conjunction: Conjunction) -> int:
    """The position of ``conjunction`` in the class order (``oracles.synthetic.query_player``'s
    docstring), from 0."""
    levels = tuple(int(k) for k in levels)
    conjunction = tuple(sorted((int(a), int(v)) for a, v in conjunction))
    size = len(conjunction)
    if not 1 <= size <= max_literals:
        raise ValueError(f"a conjunction of 1 to {max_literals} literals, found {conjunction}")
    attrs = tuple(a for a, _ in conjunction)
    index = sum(cells(levels, j) for j in range(1, size))
    for other in itertools.combinations(range(len(levels)), size):
        if other == attrs:
            cell = np.ravel_multi_index([v for _, v in conjunction], [levels[a] for a in attrs])
            return index + int(cell)
        index += math.prod(levels[a] for a in other)
    raise ValueError(f"{conjunction} is not a conjunction over the levels {levels}")
