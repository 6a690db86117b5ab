"""Hypothesis strategies and checks for a function's whole input space.

For arbitrary arguments (bool, nan, inf, negative, zero, huge, subnormal, non-integral where an
integer is expected, strings, None) a function may raise only TypeError / ValueError, and the
message names an argument (``call_or_none``); where it is defined its result is finite and > 0
(``assert_finite_positive``). Shared by the calibrations' test files (test_*_calibration.py) and
the mechanisms' test files that check their parameter records the same way.
"""

from __future__ import annotations

import math
import re

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from core.validation import MAX_EXACT_INT
from mechanisms.calibration import ROOT_RTOL

#: Adult's training rows, its dimension and the sweep's delta there, 1/n^2 (SPEC section 9).
N_ADULT = 15_682
D_ADULT = 23
DELTA_ADULT = 1 / N_ADULT**2
#: The root searches' promise: sigma within a few ROOT_RTOL above the exact root.
SLACK = 4 * ROOT_RTOL


def derandomized(n: int):
    return settings(
        max_examples=n,
        deadline=None,
        derandomize=True,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
    )


# --- strategies: any value, and values in range -----------------------------------------------

EXTREME_FLOATS = [
    0.0,
    -0.0,
    -1.0,
    5e-324,
    1e-300,
    1e-12,
    0.5,
    1.0,
    1.5,
    2.5,
    1e12,
    1e300,
    1.7976931348623157e308,
    math.inf,
    -math.inf,
    math.nan,
]


ODD = st.one_of(
    st.booleans(),
    st.none(),
    st.text(max_size=2),
    st.just([1.0]),
    st.just(np.bool_(True)),
    st.just(1 + 1j),
)


#: Any value where a real number is expected.
ANY_REAL = st.one_of(
    st.floats(), st.sampled_from(EXTREME_FLOATS), st.integers(-3, 3), st.just(np.float64(0.25)), ODD
)


#: Any value where an integer (a dimension, a count) is expected: bounded so that a valid one
#: stays cheap (RSPM's lattice grows with m), plus huge and non-integral ones.
ANY_INT = st.one_of(
    st.integers(-3, 6),
    st.sampled_from([MAX_EXACT_INT + 1, 10**20, -(10**20), 10**400]),
    st.sampled_from([2.0, 2.5, math.nan, math.inf]),
    st.just(np.int64(3)),
    ODD,
)


def log_uniform(low: float, high: float):
    return st.floats(math.log(low), math.log(high)).map(math.exp)


EPSILON = st.one_of(log_uniform(1e-3, 1e3), st.sampled_from([5e-324, 1e-300, 1e300]))


DELTA = st.one_of(log_uniform(1e-320, 0.9), st.sampled_from([5e-324, DELTA_ADULT]))
#: Moderate values, where a monotonicity check is not lost in the float range's ends.
MODERATE_EPS = log_uniform(0.01, 10)
MODERATE_DELTA = log_uniform(1e-300, 0.1)
#: How much a monotonicity check moves one argument.
FACTOR = st.floats(1.01, 100)


def either(valid, anything=ANY_REAL):
    """Mostly in range (so the valid branch is exercised), sometimes anything."""
    return st.one_of(valid, valid, anything)


def names_pattern(*names: str) -> re.Pattern:
    return re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")


def call_or_none(names: re.Pattern, function, *args, **kwargs):
    """function(*args, **kwargs), or None if it raised TypeError / ValueError naming one of
    ``names``; any other exception fails the test."""
    try:
        return function(*args, **kwargs)
    except (TypeError, ValueError) as error:
        assert names.search(str(error)), f"the message names no argument: {error}"
        return None


def assert_finite_positive(value: float, *, zero_ok: bool = False) -> None:
    assert isinstance(value, float) and math.isfinite(value), value
    assert value > 0 or (zero_ok and value == 0.0), value


#: What the mechanisms' parameter records and calibrations may name in an error.
PARAMS_NAMES = names_pattern(
    "epsilon",
    "delta",
    "n",
    "d",
    "m",
    "gamma",
    "beta",
    "alpha",
    "lower",
    "upper",
    "x_max",
    "margin",
    "tau",
    "B",
    "D",
    "D_inf",
    "G",
    "eta",
    "sigma",
    "lambda",
    "laplace_scale",
    "calibration",
    "loss",
    "noise",
)
