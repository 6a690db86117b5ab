"""Checking and encoding a table (pipeline.data.table_encoding): the column checks, the labels,
missing cells, and the one-hot and [0, 1] encoding fitted on the training rows, with a
PrivacyLeakWarning for each choice read off the data."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from mechanisms.privacy import PrivacyLeakWarning
from pipeline.data import DataError
from pipeline.data.table_encoding import (
    NEGLIGIBLE_SPAN,
    BoundsWarning,
    Encoding,
    check_columns,
    check_spans,
    check_two_classes,
    complete_rows,
    encode,
    fit_encoding,
    labels,
    numeric_values,
)
from pipeline.data.table_reading import Raw
from tests.data.tables import CSV, load, write


def _raw(**columns) -> Raw:
    return Raw(pd.DataFrame(columns), "t.csv", 2, {})


ALL = np.arange(4)


def test_bounds_and_levels_read_off_the_data_warn_and_are_recorded(tmp_path):
    with pytest.warns(PrivacyLeakWarning) as record:
        train = load(
            write(tmp_path, CSV), categorical=["colour"], numeric={"size": None, "income": [0, 100]}
        ).train
    (message,) = [str(w.message) for w in record]  # one warning for every column read
    assert message.startswith(
        "the levels of 1 column ('colour') and the bounds of 1 column ('size') are read off "
        "the training data, not accounted for"
    )
    leaks = train.provenance["privacy_leak_warnings"]
    assert len(leaks) == 2 and "bounds of 'size' [1.0, 8.0]" in leaks[1]
    assert train.features[:, 3].min() == 0.0 and train.features[:, 3].max() == 1.0
    assert train.feature_names[:3] == ("colour=blue", "colour=green", "colour=red")  # sorted


def test_missing_rows_can_be_dropped_and_out_of_bounds_clipped(tmp_path):
    text = CSV.replace("green,5,50", "green,,50").replace("red,3,30", "red,30,30")
    train = load(write(tmp_path, text), drop_missing=True, out_of_bounds="clip").train
    assert train.n == 7 and train.provenance["rows_dropped_missing"] == 1
    assert train.features[:, 3].max() == 1.0 and train.provenance["clipped_values"] == 1


def test_labels_compare_text_and_refuse_a_third_value_only_when_negative_is_set():
    raw = _raw(y=[" yes", "no", 1.0, "maybe"])  # 1.0 read from Parquet is the level "1"
    np.testing.assert_array_equal(labels(raw, ALL, "y", "yes", None), [1, -1, -1, -1])
    np.testing.assert_array_equal(labels(raw, np.array([2]), "y", "1", None), [1])
    with pytest.raises(
        DataError,
        match=r"t.csv: row 2 \(line 4\): label column 'y' has '1', "
        r"neither the positive value 'yes' nor the negative "
        r"'no' \(2 such rows\)",
    ):
        labels(raw, ALL, "y", "yes", "no")


def test_one_class_is_refused_with_the_values_seen():
    raw = _raw(y=["a", "a", "b"])
    check_two_classes(raw, np.array([1, -1]), "y", "a", "the rows used")  # both: fine
    with pytest.raises(
        DataError,
        match=r"in the training rows, label column 'y' has no row "
        r"equal to the positive value 'c', so one class only; "
        r"values found in the file: \['a', 'b'\]",
    ):
        check_two_classes(raw, np.array([-1, -1]), "y", "c", "the training rows")


@pytest.mark.parametrize(
    "label, categorical, numeric, message",
    [
        ("y", {"c": None}, {"zz": None}, "t.csv: no column 'zz'; the columns are ['c', 'x', 'y']"),
        ("y", {"c": None}, {"c": None}, "columns ['c'] are listed as both categorical and numeric"),
        ("y", {"y": None}, {}, "the label column 'y' is also listed as a feature"),
        ("y", {}, {}, "no feature columns"),
    ],
)
def test_column_checks_name_the_columns(label, categorical, numeric, message):
    raw = _raw(c=["a"], x=["1"], y=["p"])
    with pytest.raises(DataError) as err:
        check_columns(raw, label, categorical, numeric)
    assert message in str(err.value)


def test_blank_and_nan_cells_are_missing():
    raw = _raw(x=["1", "  ", None, "4"], y=["p", "q", "p", np.nan])
    np.testing.assert_array_equal(complete_rows(raw, ["x"], drop_missing=True), [0, 3])
    np.testing.assert_array_equal(complete_rows(raw, ["x", "y"], drop_missing=True), [0])
    with pytest.raises(DataError, match=r"row 1 \(line 3\): column 'x' is missing .*3 such rows"):
        complete_rows(raw, ["x", "y"], drop_missing=False)


def test_numeric_values_take_booleans_and_name_the_first_bad_row():
    np.testing.assert_array_equal(
        numeric_values(_raw(b=[True, False]), "b", np.arange(2)), [1.0, 0.0]
    )
    raw = _raw(x=["1", "inf", "two", "3"])
    np.testing.assert_array_equal(numeric_values(raw, "x", np.array([0, 3])), [1.0, 3.0])
    with pytest.raises(
        DataError,
        match=r"row 1 \(line 3\): numeric column 'x' must hold finite "
        r"numbers, found 'inf' \(2 such rows\)",
    ):
        numeric_values(raw, "x", ALL)


def test_the_encoding_is_fitted_on_the_training_rows_and_names_its_columns():
    raw = _raw(c=["b", "a", "b", "z"], x=["2", "4", "6", "100"])
    train = np.arange(3)  # row 3 is a test row: neither its level nor its value is read
    with pytest.warns(PrivacyLeakWarning) as record:
        enc = fit_encoding(raw, train, {"c": None}, {"x": None})
    assert enc.levels == {"c": ("a", "b")} and enc.bounds == {"x": (2.0, 6.0)}
    assert len(enc.leaks) == 2 and len(record) == 1
    assert enc.names() == ("c=a", "c=b", "x")
    X, unseen, clipped = encode(raw, ALL, enc, stated=set(), out_of_bounds="error")
    np.testing.assert_array_equal(X, [[0, 1, 0.0], [1, 0, 0.5], [0, 1, 1.0], [0, 0, 24.5]])
    assert (unseen, clipped) == (1, 0)  # bounds read off the data are not checked on new rows


def test_stated_levels_and_bounds_are_checked_and_clipped_on_request():
    raw = _raw(c=["a", "b", "a", "b"], x=["-5", "0", "5", "20"])
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # stated: no warning
        enc = fit_encoding(raw, ALL, {"c": ["b", "a"]}, {"x": [0, 10]})
    assert enc == Encoding({"c": ("b", "a")}, {"x": (0.0, 10.0)}, ())
    X, _, clipped = encode(raw, ALL, enc, stated={"x"}, out_of_bounds="clip")
    np.testing.assert_array_equal(X[:, 2], [0.0, 0.0, 0.5, 1.0])
    np.testing.assert_array_equal(X[:, :2], [[0, 1], [1, 0], [0, 1], [1, 0]])  # stated order
    assert clipped == 2
    with pytest.raises(
        DataError,
        match=r"row 0 \(line 2\): numeric column 'x' has -5.0 outside "
        r"its stated bounds \[0.0, 10.0\] \(2 such rows\)",
    ):
        encode(raw, ALL, enc, stated={"x"}, out_of_bounds="error")


@pytest.mark.parametrize(
    "categorical, numeric, message",
    [
        ({"c": ["a", "a"]}, {}, "the stated levels ['a', 'a'] must be distinct and non-empty"),
        ({}, {"x": [0, 1, 2]}, "bounds must be [low, high], found [0, 1, 2]"),
        ({}, {"x": [3, 3]}, "bounds must be finite with low < high, found [3.0, 3.0]"),
        ({}, {"k": None}, "numeric column 'k' is constant (7.0) in the training rows"),
    ],
)
def test_bad_stated_encodings_are_refused(categorical, numeric, message):
    raw = _raw(c=["a", "a"], x=["1", "2"], k=["7", "7"])
    with pytest.raises(DataError) as err:
        fit_encoding(raw, np.arange(2), categorical, numeric)
    assert message in str(err.value)


def test_thirty_columns_read_off_the_data_are_one_warning_naming_them():
    raw = _raw(**{f"x{i}": [str(i), str(i + 1), str(i + 2), "0"] for i in range(30)})
    with pytest.warns(PrivacyLeakWarning) as record:
        enc = fit_encoding(raw, np.arange(3), {}, {f"x{i}": None for i in range(30)})
    (message,) = [str(w.message) for w in record]
    assert message.startswith("the bounds of 30 columns ('x0', 'x1', ")
    assert "'x9', ...) are read off the training data" in message and "x10" not in message
    assert len(enc.leaks) == 30  # each column's bounds, on record


def test_stated_bounds_the_data_barely_occupy_are_warned_about_naming_the_column():
    """``dataset.numeric={x: [0, 1e300]}`` scales every value to about 1e-300: a BoundsWarning
    names the column and its public bounds, never the data's values."""
    raw = _raw(x=["1", "2", "3"], z=["0", "5", "9"], y=["p", "q", "p"])
    rows = np.arange(3)
    enc = fit_encoding(raw, rows, {}, {"x": [0, 1e300], "z": [0, 10]})
    with pytest.warns(BoundsWarning) as caught:
        messages = check_spans(raw, rows, enc, {"x", "z"})
    assert [str(w.message) for w in caught] == messages
    assert messages == [
        "numeric column 'x': the training values occupy less than 0.1% of its stated bounds "
        "[0, 1e+300], so scaled by them the column is nearly constant and carries almost nothing "
        "to the classifiers; state bounds near its public range (dataset.numeric.x=[low,high])"
    ]
    # at the threshold the span is not negligible: 3 - 1 = 2 of [0, 2000] is 0.1%
    at = fit_encoding(raw, rows, {}, {"x": [0, 2 / NEGLIGIBLE_SPAN]})
    with warnings.catch_warnings():
        warnings.simplefilter("error", BoundsWarning)
        assert check_spans(raw, rows, at, {"x"}) == []
