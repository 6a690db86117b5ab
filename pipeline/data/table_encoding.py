"""Checking and encoding a table for ``pipeline.data.table``: the column checks, the labels in
{-1, +1}, and the one-hot and [0, 1] encoding fitted on the training rows (with a
``PrivacyLeakWarning`` for each choice read off the data)."""

from __future__ import annotations

import difflib
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from mechanisms.privacy import PrivacyLeakWarning
from pipeline.data.record import DataError
from pipeline.data.table_reading import Raw


def _as_text(values: pd.Series) -> np.ndarray:
    """Cell values as stripped strings (labels and categories are compared as text)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values.tolist()):
        if isinstance(v, (float, np.floating)) and float(v).is_integer():
            v = int(v)  # a float column read from Parquet: 1.0 and "1" are the same level
        out[i] = str(v).strip()
    return out


#: A stated range the training values span less than this fraction of is warned about
#: (``check_spans``): every value then scales to nearly one point of [0, 1].
NEGLIGIBLE_SPAN = 1e-3


class BoundsWarning(UserWarning):
    """A numeric column's stated bounds are far wider than its data: the column, scaled by
    them, is nearly constant (``check_spans``)."""


class UnusedColumnsWarning(UserWarning):
    """Columns of a table that are neither its label nor a listed feature: left out of the data
    the mechanisms see (``warn_unused_columns``)."""


def warn_unused_columns(raw: Raw, used: Sequence[str], listed_in: str) -> list[str]:
    """Warn once (``UnusedColumnsWarning``, one line naming them all) for the columns of ``raw``
    that are not in ``used`` (the label and the listed features): a column the user forgot to
    list, or misplaced, would otherwise be dropped without a word. ``listed_in`` names the keys
    that take features. Returns those columns."""
    kept = set(used)
    unused = [c for c in raw.frame.columns if c not in kept]
    if unused:
        warnings.warn(
            f"{raw.where}: {len(unused)} column(s) left out, neither the label nor listed in "
            f"{listed_in}: {', '.join(map(repr, unused))}",
            UnusedColumnsWarning,
            stacklevel=4,  # the loader's caller (pipeline.run), as the encoding's warnings
        )
    return unused


def _missing_mask(frame: pd.DataFrame, columns: Sequence[str]) -> np.ndarray:
    mask = frame[list(columns)].isna().to_numpy()
    texts = frame[list(columns)].to_numpy(dtype=object)
    blank = np.vectorize(lambda v: isinstance(v, str) and v.strip() == "", otypes=[bool])(texts)
    return mask | blank if texts.size else mask


def numeric_values(raw: Raw, column: str, rows: np.ndarray) -> np.ndarray:
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
class Encoding:
    """Everything the training rows fixed: levels, bounds, and which were read off the data."""

    levels: dict[str, tuple[str, ...]]
    bounds: dict[str, tuple[float, float]]
    leaks: tuple[str, ...]

    def names(self) -> tuple[str, ...]:
        cats = [f"{col}={lvl}" for col, lvls in self.levels.items() for lvl in lvls]
        return tuple(cats + list(self.bounds))


def fit_encoding(raw, rows, categorical, numeric) -> Encoding:
    levels, bounds, leaks = {}, {}, []
    read_levels, read_bounds = [], []  # the columns whose encoding is read off the data
    for col, stated in categorical.items():
        values = _as_text(raw.frame[col].iloc[rows])
        if stated is None:
            levels[col] = tuple(sorted(set(values)))
            read_levels.append(col)
            leaks.append(
                f"the levels of {col!r} {list(levels[col])} are read off the training "
                "data (state them: dataset.categorical."
                f"{col}=[...])"
            )
            continue
        stated = tuple(str(v).strip() for v in stated)
        if len(set(stated)) != len(stated) or not stated:
            raise DataError(
                f"categorical column {col!r}: the stated levels {list(stated)} "
                "must be distinct and non-empty"
            )
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
            values = numeric_values(raw, col, rows)
            low, high = float(values.min()), float(values.max())
            if not high > low:
                raise DataError(
                    f"{raw.where}: numeric column {col!r} is constant ({low!r}) "
                    "in the training rows; state its bounds or drop it"
                )
            leaks.append(
                f"the bounds of {col!r} [{low!r}, {high!r}] are the training "
                f"minimum and maximum (state them: dataset.numeric.{col}=[low,high])"
            )
            bounds[col] = (low, high)
            read_bounds.append(col)
            continue
        if len(stated) != 2:
            raise DataError(
                f"numeric column {col!r}: bounds must be [low, high], found {list(stated)!r}"
            )
        low, high = float(stated[0]), float(stated[1])
        if not (np.isfinite(low) and np.isfinite(high) and high > low):
            raise DataError(
                f"numeric column {col!r}: bounds must be finite with low < high, "
                f"found [{low!r}, {high!r}]"
            )
        bounds[col] = (low, high)
    if len(leaks) == 1:
        summary = f"{leaks[0]}: a PrivacyLeakWarning, not accounted for"
    elif leaks:
        read = [
            f"the levels of {_columns(read_levels)}" if read_levels else "",
            f"the bounds of {_columns(read_bounds)}" if read_bounds else "",
        ]
        summary = (
            f"{' and '.join(r for r in read if r)} are read off the training data, not "
            "accounted for (a PrivacyLeakWarning; state them: dataset.categorical.COLUMN=[...], "
            "dataset.numeric.COLUMN=[low,high]; the values read are in the dataset's record)"
        )
    if leaks:  # one warning, however many columns: one line to read, not one per column
        warnings.warn(summary, PrivacyLeakWarning, stacklevel=4)
    return Encoding(levels, bounds, tuple(leaks))


def check_spans(raw: Raw, rows: np.ndarray, enc: Encoding, stated: set[str]) -> list[str]:
    """Warn (``BoundsWarning``, one per column) for each ``stated`` numeric column whose training
    values span less than ``NEGLIGIBLE_SPAN`` of its bounds (``dataset.numeric={x: [0, 1e300]}``
    scales every value to about 1e-300). The message names the column and its public bounds,
    not the data's values. Returns the messages."""
    messages = []
    for col, (low, high) in enc.bounds.items():
        if col not in stated:  # bounds read off the data span it whole
            continue
        values = numeric_values(raw, col, rows)
        if float(values.max()) - float(values.min()) >= NEGLIGIBLE_SPAN * (high - low):
            continue
        messages.append(
            f"numeric column {col!r}: the training values occupy less than "
            f"{NEGLIGIBLE_SPAN:.1%} of its stated bounds [{low:g}, {high:g}], so scaled by them "
            f"the column is nearly constant and carries almost nothing to the classifiers; state "
            f"bounds near its public range (dataset.numeric.{col}=[low,high])"
        )
        warnings.warn(messages[-1], BoundsWarning, stacklevel=3)
    return messages


def _columns(names: Sequence[str]) -> str:
    """``3 columns ('a', 'b', 'c')``, at most 10 names shown."""
    shown = ", ".join(map(repr, names[:10])) + (", ..." if len(names) > 10 else "")
    return f"{len(names)} column{'s' if len(names) > 1 else ''} ({shown})"


def encode(raw, rows, enc: Encoding, stated: set[str], out_of_bounds: str):
    """(X, unseen-level count, clipped count) for ``rows`` with the training encoding."""
    blocks, unseen, clipped = [], 0, 0
    for col, levels in enc.levels.items():
        values = _as_text(raw.frame[col].iloc[rows])
        onehot = (values[:, None] == np.asarray(levels, dtype=object)[None, :]).astype(float)
        unseen += int((onehot.sum(axis=1) == 0).sum())
        blocks.append(onehot)
    for col, (low, high) in enc.bounds.items():
        values = numeric_values(raw, col, rows)
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


def labels(
    raw: Raw, rows: np.ndarray, label: str, positive: str, negative: Optional[str]
) -> np.ndarray:
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


def check_two_classes(raw: Raw, y: np.ndarray, label: str, positive: str, what: str) -> None:
    if (y == 1).any() and (y == -1).any():
        return
    seen = sorted(set(_as_text(raw.frame[label])))
    which = "no row" if not (y == 1).any() else "every row"
    raise DataError(
        f"{raw.where}: in {what}, label column {label!r} has {which} equal to the positive "
        f"value {positive!r}, so one class only; values found in the file: {seen[:10]}"
    )


def check_names(where: str, columns: Sequence[str], label: str, categorical, numeric) -> None:
    """The label and feature columns are among ``columns`` (a table's, or its header's): a
    DataError names each missing one, the closest present name and every column."""
    columns = list(columns)
    missing = [c for c in [label, *categorical, *numeric] if c not in columns]
    if not missing:
        return
    hints = [f"{c!r} -> {close!r}" for c in missing if (close := _closest(c, columns))]
    hint = f" (did you mean {', '.join(hints)}?)" if hints else ""
    raise DataError(
        f"{where}: no column {', '.join(map(repr, missing))}{hint}; the columns are {columns}"
    )


def _closest(name: str, columns: Sequence[str]) -> str | None:
    """The column ``name`` most likely meant: the same but for case, else the closest spelling."""
    by_case = {c.casefold(): c for c in columns}
    if name.casefold() in by_case:
        return by_case[name.casefold()]
    close = difflib.get_close_matches(name.casefold(), list(by_case), n=1)
    return by_case[close[0]] if close else None


def check_columns(raw: Raw, label: str, categorical, numeric) -> None:
    check_names(raw.where, raw.frame.columns, label, categorical, numeric)
    both = sorted(set(categorical) & set(numeric))
    if both:
        raise DataError(f"columns {both} are listed as both categorical and numeric")
    if label in categorical or label in numeric:
        raise DataError(f"the label column {label!r} is also listed as a feature")
    if not categorical and not numeric:
        raise DataError(
            "no feature columns: list some under dataset.categorical or dataset.numeric"
        )


def complete_rows(raw: Raw, columns: Sequence[str], drop_missing: bool) -> np.ndarray:
    missing = _missing_mask(raw.frame, columns)
    bad_rows = np.flatnonzero(missing.any(axis=1))
    if len(bad_rows) and not drop_missing:
        i = int(bad_rows[0])
        col = columns[int(np.flatnonzero(missing[i])[0])]
        raise DataError(
            f"{raw.row(i)}: column {col!r} is missing (empty or NaN; "
            f"{len(bad_rows)} such rows); fill it, or set "
            "dataset.drop_missing=true to drop such rows"
        )
    return np.flatnonzero(~missing.any(axis=1))


__all__ = [
    "NEGLIGIBLE_SPAN",
    "BoundsWarning",
    "Encoding",
    "check_columns",
    "check_names",
    "check_spans",
    "check_two_classes",
    "complete_rows",
    "encode",
    "fit_encoding",
    "labels",
    "numeric_values",
    "UnusedColumnsWarning",
    "warn_unused_columns",
]
