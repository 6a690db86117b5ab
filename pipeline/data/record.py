"""The frozen dataset record every loader returns."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from core.objective import MergedRows
from mechanisms.synthetic.domain import Domain


class DataError(ValueError):
    """A data file is missing, corrupt or malformed; the message says which and how to fix it."""


def _readonly(a: np.ndarray, dtype) -> np.ndarray:
    a = np.array(a, dtype=dtype, copy=True)
    a.setflags(write=False)
    return a


@dataclass(frozen=True, eq=False)
class Records:
    """A records dataset as the synthetic-data mechanisms take it (docs/synthetic.md): level
    codes over a public domain, and which attribute is the label a classifier predicts."""

    codes: np.ndarray  # (n, attributes) int64 level codes
    domain: Domain
    #: The label attribute's index, and the code of its positive level.
    label: int
    positive: int


def records_provenance(domain: Domain, label: str, positive: str) -> dict[str, Any]:
    """What a records dataset's provenance says of its records (``Dataset.records`` reads it
    back): its kind, its public domain (each attribute's levels) and its label attribute."""
    return {
        "kind": "records",
        "domain": {n: list(lv) for n, lv in zip(domain.names, domain.levels)},
        "label": {"attribute": label, "positive": positive},
    }


@dataclass(frozen=True, eq=False)
class Dataset:
    """Features, labels in {-1, +1}, feature names and where the data came from.

    The arrays are read-only copies, so a record cannot change after it is made.
    """

    features: np.ndarray
    labels: np.ndarray
    feature_names: tuple[str, ...]
    provenance: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        X = _readonly(self.features, float)
        y = _readonly(self.labels, np.int8)
        if X.ndim != 2:
            raise ValueError(f"features must be 2-D, found shape {X.shape}")
        if y.shape != (X.shape[0],):
            raise ValueError(f"labels must have shape ({X.shape[0]},), found {y.shape}")
        if not np.isin(y, (-1, 1)).all():
            raise ValueError("labels must be -1 or +1")
        if len(self.feature_names) != X.shape[1]:
            raise ValueError(
                f"{len(self.feature_names)} feature names for {X.shape[1]} feature columns"
            )
        if not np.isfinite(X).all():
            raise ValueError("features must be finite")
        object.__setattr__(self, "features", X)
        object.__setattr__(self, "labels", y)
        object.__setattr__(self, "feature_names", tuple(self.feature_names))
        object.__setattr__(self, "provenance", dict(self.provenance))

    @property
    def n(self) -> int:
        return int(self.features.shape[0])

    @property
    def d(self) -> int:
        return int(self.features.shape[1])

    def records(self) -> Records:
        """The dataset as records over its public domain, for a dataset whose provenance is of
        kind ``records`` (its ``domain``: each attribute's levels; its ``label``: the attribute
        and its positive level); else a DataError."""
        p = self.provenance
        if p.get("kind") != "records":
            raise DataError("not records over a public domain (the provenance's kind)")
        domain = Domain(tuple(p["domain"]), tuple(tuple(v) for v in p["domain"].values()))
        if domain.names != self.feature_names:
            raise DataError(f"the domain's attributes {domain.names} are not the columns")
        label = domain.names.index(p["label"]["attribute"])
        positive = domain.levels[label].index(p["label"]["positive"])
        return Records(self.features.astype(np.int64), domain, label, positive)

    def merged(self) -> MergedRows:
        """Identical rows merged into (distinct x, count of +1, count of -1) (SPEC section 2)."""
        return MergedRows.from_xy(self.features, self.labels)

    def summary(self) -> dict[str, Any]:
        merged = self.merged()
        return {
            "n": self.n,
            "d": self.d,
            "positives": int((self.labels == 1).sum()),
            "negatives": int((self.labels == -1).sum()),
            "distinct_rows": merged.n_distinct,
            "distinct_rows_with_both_labels": int(((merged.pos > 0) & (merged.neg > 0)).sum()),
            "best_possible_accuracy": 1.0 - merged.min_possible_loss() / self.n,
            "feature_min": float(self.features.min()),
            "feature_max": float(self.features.max()),
        }
