"""Public bounds on the data that a privacy proof assumes (``mechanisms.bounds``), checked entry by
entry: |x_ij| <= x_max passes at the bound itself, anything beyond (NaN and inf included) is
refused naming its first entry, or clipped on request with a PrivacyLeakWarning. OPSamp's use of
them is tested in test_opsamp.py."""

from __future__ import annotations

import math
import pickle
import warnings

import numpy as np
import pytest

from mechanisms.bounds import (
    OUT_OF_BOUNDS,
    BeyondBound,
    FeatureBoundError,
    NoFeatureBound,
    check_out_of_bounds,
    enforce_feature_bound,
)
from mechanisms.privacy import PrivacyLeakWarning


def _enforce(X, x_max=1.0, out_of_bounds="error", **kwargs):
    return enforce_feature_bound(
        np.asarray(X, dtype=float), x_max, out_of_bounds=out_of_bounds, mechanism="M", **kwargs
    )


def test_entries_at_the_bound_pass_unchanged_and_without_a_warning():
    X = np.array([[1.0, -1.0, 0.0], [0.25, -0.5, 1.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no warning at all
        out = _enforce(X, out_of_bounds="clip")
    np.testing.assert_array_equal(out, X)
    assert out.dtype == float
    ints = np.array([[1, -1], [0, 1]])
    out = enforce_feature_bound(ints, 1.0, out_of_bounds="error", mechanism="M")
    assert out.dtype == float and out.tolist() == [[1.0, -1.0], [0.0, 1.0]]  # as floats


@pytest.mark.parametrize(
    "value",
    [math.nextafter(1.0, 2.0), -math.nextafter(1.0, 2.0), 1e300, math.inf, -math.inf, math.nan],
)
def test_the_least_step_beyond_the_bound_and_non_finite_entries_are_refused(value):
    X = np.zeros((2, 2))
    X[1, 0] = value
    with pytest.raises(FeatureBoundError) as raised:
        _enforce(X)
    where = raised.value.where
    assert (where.row, where.column, where.entries, where.in_rows) == (1, 0, 1, 1)
    assert where.value == value or (math.isnan(value) and math.isnan(where.value))


def test_the_refusal_names_the_first_entry_in_row_order_and_counts_them_all():
    X = np.zeros((4, 3))
    X[2, 0], X[1, 2], X[1, 1], X[3, 2] = 5.0, -2.0, 1.5, 9.0  # first in row order: (1, 1)
    with pytest.raises(FeatureBoundError) as raised:
        _enforce(X, feature_names=("age", "hours", "gain"))
    error = raised.value
    assert isinstance(error, ValueError)
    assert error.where == BeyondBound("M", 1.0, "row", 1, "hours", 1.5, 4, 3)
    assert str(error) == (
        "x_max: row 1, column 'hours' is 1.5, beyond the feature bound |x| <= x_max = 1.0 that "
        "M's privacy proof assumes (4 entries in 3 rows); raise x_max to a public bound on the "
        "data, or set out_of_bounds=clip to clip them (a PrivacyLeakWarning), found 1.0"
    )


def test_the_message_under_a_config_path_and_for_merged_rows():
    with pytest.raises(FeatureBoundError) as raised:
        _enforce([[0.0, 3.0]], x_max=2.5, rows="distinct row")
    error = raised.value
    assert str(error).startswith(
        "x_max: distinct row 0, column 1 is 3.0, beyond the feature bound "
        "|x| <= x_max = 2.5 that M's privacy proof assumes (1 entry in 1 "
        "distinct row);"
    )
    prefixed = error.message("mechanisms.opsamp.")
    assert prefixed.startswith("mechanisms.opsamp.x_max: distinct row 0, column 1 is 3.0,")
    assert (
        "raise mechanisms.opsamp.x_max to a public bound on the data, or set "
        "mechanisms.opsamp.out_of_bounds=clip"
    ) in prefixed
    assert prefixed.endswith("found 2.5")


def test_the_counted_phrase_is_singular_or_plural():
    one = BeyondBound("M", 1.0, "row", 0, 0, 2.0, 1, 1)
    many = BeyondBound("M", 1.0, "distinct row", 0, 0, 2.0, 5, 2)
    assert one.counted() == "1 entry in 1 row"
    assert many.counted() == "5 entries in 2 distinct rows"


def test_the_error_pickles_with_its_record():
    """A Ray task's error crosses to the driver by pickling: the record must come along."""
    with pytest.raises(FeatureBoundError) as raised:
        _enforce([[0.5, -4.0]], feature_names=["a", "b"])
    clone = pickle.loads(pickle.dumps(raised.value))
    assert type(clone) is FeatureBoundError
    assert clone.where == raised.value.where and str(clone) == str(raised.value)


def test_clipping_projects_onto_the_box_warns_and_leaves_the_input_alone():
    X = np.array([[2.0, -0.5], [-3.0, 1.0], [0.5, 0.75]])
    given = X.copy()
    with pytest.warns(
        PrivacyLeakWarning,
        match=r"^M clipped 2 entries in 2 rows beyond x_max = "
        r"1\.0 to it \(out_of_bounds=clip\), so it ran on data other than those "
        r"given; that it did is read off the private data",
    ):
        out = _enforce(X, out_of_bounds="clip")
    np.testing.assert_array_equal(out, [[1.0, -0.5], [-1.0, 1.0], [0.5, 0.75]])
    np.testing.assert_array_equal(X, given)


def test_an_unknown_choice_is_refused_when_it_matters():
    assert OUT_OF_BOUNDS == ("error", "clip")
    for choice in OUT_OF_BOUNDS:
        check_out_of_bounds(choice)
    for bad in ("drop", "Error", None, 0):
        with pytest.raises(
            ValueError,
            match=rf"^out_of_bounds must be 'error' or 'clip', "
            rf"found {bad!r}$",
        ):
            check_out_of_bounds(bad)
    with pytest.raises(ValueError, match="found 'drop'"):
        _enforce([[2.0]], out_of_bounds="drop")


def test_a_zero_one_loss_mechanism_checks_no_feature_bound():
    X = [[1e6, -3], [0.5, math.inf]]  # the 0/1 loss is in {0, 1} whatever x is (SPEC section 2)
    out = NoFeatureBound().enforce_bounds(X, feature_names=("a", "b"))
    assert out.dtype == float
    np.testing.assert_array_equal(out, np.asarray(X, dtype=float))
