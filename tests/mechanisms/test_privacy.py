"""Privacy targets and warnings (``mechanisms.privacy``): epsilon finite and > 0, delta in [0, 1)
or (0, 1), types before values, and the warning for a choice read off the private data."""

from __future__ import annotations

import inspect
import math
import warnings

import numpy as np
import pytest

from mechanisms.privacy import (
    PrivacyError,
    PrivacyLeakWarning,
    check_delta,
    check_epsilon,
    check_epsilon_delta,
    warn_data_dependent,
)

TINY = 5e-324


@pytest.mark.parametrize("epsilon", [TINY, 1e-12, 1, 1.0, 1e300, np.float64(0.5), np.int64(2)])
def test_check_epsilon_accepts_finite_positive_reals(epsilon):
    check_epsilon(epsilon)


@pytest.mark.parametrize("epsilon", [0, 0.0, -0.0, -1.0, -TINY, math.inf, -math.inf, math.nan])
def test_check_epsilon_refuses_zero_negative_infinite_and_nan(epsilon):
    with pytest.raises(ValueError, match=rf"^epsilon must be finite and > 0, found {epsilon!r}$"):
        check_epsilon(epsilon)


@pytest.mark.parametrize("epsilon", [True, False, np.bool_(True), "1", None, 1j, [1.0]])
def test_check_epsilon_refuses_a_non_number_with_a_type_error(epsilon):
    # True is not epsilon = 1: a bool where a number is expected is a mistake
    with pytest.raises(TypeError, match=r"^epsilon must be a real number, found "):
        check_epsilon(epsilon)


@pytest.mark.parametrize("delta", [0, 0.0, -0.0, TINY, 0.5, 1 - 2**-53, np.float64(1e-10)])
def test_check_delta_accepts_zero_up_to_below_one(delta):
    check_delta(delta)


@pytest.mark.parametrize("delta", [1, 1.0, 1.5, -TINY, -1.0, math.inf, -math.inf, math.nan])
def test_check_delta_refuses_one_and_beyond_negative_and_nan(delta):
    with pytest.raises(ValueError, match=rf"^delta must be in \[0, 1\), found {delta!r}$"):
        check_delta(delta)


def test_check_delta_without_zero():
    check_delta(TINY, allow_zero_delta=False)
    check_delta(1 - 2**-53, allow_zero_delta=False)
    for delta in (0, 0.0, -0.0, 1.0, math.nan):
        with pytest.raises(ValueError, match=r"^delta must be in \(0, 1\), found "):
            check_delta(delta, allow_zero_delta=False)


@pytest.mark.parametrize("delta", [True, False, "0", None])
def test_check_delta_refuses_a_non_number_with_a_type_error(delta):
    # False is not delta = 0
    with pytest.raises(TypeError, match=r"^delta must be a real number, found "):
        check_delta(delta)


def test_check_epsilon_delta_checks_both_types_before_either_value():
    # epsilon's value is wrong, delta's type is wrong: the type error comes first
    with pytest.raises(TypeError, match=r"^delta must be a real number, found '1e-5'$"):
        check_epsilon_delta(-1.0, "1e-5")
    with pytest.raises(TypeError, match=r"^epsilon must be a real number, found None$"):
        check_epsilon_delta(None, 2.0)
    # both values wrong: epsilon's error first
    with pytest.raises(ValueError, match=r"^epsilon must be finite and > 0, found 0\.0$"):
        check_epsilon_delta(0.0, 2.0)
    with pytest.raises(ValueError, match=r"^delta must be in \[0, 1\), found 2\.0$"):
        check_epsilon_delta(1.0, 2.0)


def test_check_epsilon_delta_passes_allow_zero_delta_through():
    check_epsilon_delta(1.0, 0.0)
    with pytest.raises(ValueError, match=r"\(0, 1\), found 0\.0"):
        check_epsilon_delta(1.0, 0.0, allow_zero_delta=False)
    check_epsilon_delta(1.0, 1e-9, allow_zero_delta=False)


def test_the_warning_and_the_error_are_their_builtin_kinds():
    # a PrivacyLeakWarning is a RuntimeWarning: filters on RuntimeWarning catch it
    assert issubclass(PrivacyLeakWarning, RuntimeWarning)
    assert issubclass(PrivacyError, RuntimeError)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        with pytest.raises(PrivacyLeakWarning):
            warn_data_dependent("x")


def _loader():
    """Stands for a function of the project that reads something off the data."""
    warn_data_dependent("the column maxima")


def test_warn_data_dependent_says_what_and_points_at_the_callers_caller():
    with pytest.warns(PrivacyLeakWarning) as record:
        line = inspect.currentframe().f_lineno + 1
        _loader()
    (warning,) = record
    assert str(warning.message) == (
        "the column maxima is read off the private data and not accounted for"
    )
    # stacklevel 3: the warning names the line that called the function that read the data
    assert warning.filename == __file__ and warning.lineno == line
