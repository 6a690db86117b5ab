"""Public bounds on the data that a privacy proof assumes, checked against the data.

A calibration that rests on a bound the user declares is only as good as the bound. OPSamp's
``x_max`` (SPEC sections 5 and 10.3) sets its loss's Lipschitz constant G = x_max / S: data
beyond it make the true constant larger than G, the noise too small, and the recorded epsilon a
claim nothing proves. So every release checks the data against every bound its calibration
assumes, in the norm its proof uses, before any noise is drawn or used on the data, and
refuses (``FeatureBoundError``: the first row and column beyond the bound, the value, the
bound) unless the user asked to clip. Clipping sets the entries beyond the bound to it, row by
row by a fixed public rule (the projection onto the l_inf ball of radius x_max), so
neighbouring datasets stay neighbours; but that the data changed, and how much, is read off the
private data: a ``PrivacyLeakWarning`` says so.

What each mechanism's privacy proof assumes about the data, and where it is enforced:

* every mechanism: features finite, labels in {-1, +1} (``core.objective.check_data``, run
  first by ``mechanisms.runner.run``, ``run_expmech``, ``run_dpsgd``, ``tune_dpsgd`` and
  ``run_logistic``);
* OPDisc, RSPM, the exponential mechanism (and the exact ERM): nothing about the features. The
  0/1 loss is in {0, 1} whatever x is, so L(D, w) has sensitivity 1 under replacement of one
  example (SPEC section 2), the only property their proofs use (``NoFeatureBound``);
* OPSamp with the logistic loss: |x_ij| <= x_max for every entry, which gives both the loss's
  range (||x||_1 <= d x_max) and its Lipschitz constant (||x||_inf <= x_max; mechanisms.opsamp)
  (``OPSamp.enforce_bounds``, run by ``mechanisms.runner.run``, and ``OPSamp.problems``); with
  the 0/1 loss its proof does not apply at all and the release is recorded as not private;
* DP-SGD: nothing about the features: each example's gradient is clipped to norm C
  (``clip_and_sum``), whatever x is;
* logistic regression: not private; nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from core.validation import check_choice
from mechanisms.privacy import warn_data_dependent

#: What to do with data beyond a mechanism's feature bound (as the table loader's
#: ``dataset.out_of_bounds``).
OUT_OF_BOUNDS = ("error", "clip")


@dataclass(frozen=True)
class BeyondBound:
    """Where data first exceed a feature bound: the entry (``rows`` names what its row index
    counts: ``row`` of the data, ``distinct row`` of merged rows), its column (a feature name
    when the caller has names, else an index), its value, and how many entries do."""

    mechanism: str
    x_max: float
    rows: str
    row: int
    column: int | str
    value: float
    entries: int
    in_rows: int

    def counted(self) -> str:
        return (
            f"{self.entries} {'entry' if self.entries == 1 else 'entries'} in {self.in_rows} "
            f"{self.rows}{'' if self.in_rows == 1 else 's'}"
        )


class FeatureBoundError(ValueError):
    """A feature entry beyond the public bound that a privacy proof assumes; nothing released.

    The message starts with the setting that states the bound and quotes it
    (``x_max: row 5, column 1 is 1.5, beyond ..., found 1.0``); ``where`` locates the entry.
    ``message(prefix)`` is the same with the settings under a config path
    (``mechanisms.opsamp.``).
    """

    def __init__(self, where: BeyondBound) -> None:
        self.where = where
        super().__init__(self.message())

    def __reduce__(self):  # pickles (a Ray task's error) with its record
        return type(self), (self.where,)

    def message(self, prefix: str = "") -> str:
        b = self.where
        return (
            f"{prefix}x_max: {b.rows} {b.row}, column {b.column!r} is {b.value!r}, beyond "
            f"the feature bound |x| <= x_max = {b.x_max!r} that {b.mechanism}'s privacy "
            f"proof assumes ({b.counted()}); raise {prefix}x_max to a public bound on the "
            f"data, or set {prefix}out_of_bounds=clip to clip them (a PrivacyLeakWarning), "
            f"found {b.x_max!r}"
        )


def check_out_of_bounds(value: object) -> None:
    check_choice("out_of_bounds", value, OUT_OF_BOUNDS)


def enforce_feature_bound(
    X: np.ndarray,
    x_max: float,
    *,
    out_of_bounds: str,
    mechanism: str,
    feature_names: Sequence[str] | None = None,
    rows: str = "row",
) -> np.ndarray:
    """``X`` if every |x_ij| <= x_max (each row's l_inf norm), else refused or clipped.

    ``out_of_bounds``: ``error`` raises FeatureBoundError naming the first entry beyond the
    bound (``rows`` says what a row index counts: ``row`` of the data, ``distinct row`` of
    merged rows); ``clip`` returns X with every entry clipped into [-x_max, x_max] and warns
    (PrivacyLeakWarning). ``mechanism`` names whose privacy proof assumes the bound.
    """
    X = np.asarray(X, dtype=float)
    beyond = ~(np.abs(X) <= x_max)  # NaN is beyond every bound
    if not beyond.any():
        return X
    first = [int(k) for k in np.argwhere(beyond)[0]]
    column: int | str = feature_names[first[1]] if feature_names is not None else first[1]
    where = BeyondBound(
        mechanism,
        x_max,
        rows,
        first[0],
        column,
        float(X[tuple(first)]),
        int(beyond.sum()),
        int(beyond.any(axis=1).sum()),
    )
    if out_of_bounds == "clip":
        warn_data_dependent(
            f"{mechanism} clipped {where.counted()} beyond x_max = {x_max!r} to it "
            f"(out_of_bounds=clip), so it ran on data other than those given; that it did"
        )
        return np.clip(X, -x_max, x_max)
    check_out_of_bounds(out_of_bounds)
    raise FeatureBoundError(where)


class NoFeatureBound:
    """A mechanism whose privacy proof assumes nothing about the features (0/1 loss).

    The 0/1 loss is in {0, 1} whatever x is, so L(D, w) is 1-sensitive under replacement of one
    example (SPEC section 2), and that is all OPDisc's, RSPM's and the exponential mechanism's
    proofs use. The labels are checked by ``core.objective.check_data``.
    """

    def enforce_bounds(
        self, X: np.ndarray, feature_names: Sequence[str] | None = None
    ) -> np.ndarray:
        """``X`` unchanged: no feature bound to check (class docstring)."""
        return np.asarray(X, dtype=float)


__all__ = [
    "BeyondBound",
    "FeatureBoundError",
    "NoFeatureBound",
    "OUT_OF_BOUNDS",
    "check_out_of_bounds",
    "enforce_feature_bound",
]
