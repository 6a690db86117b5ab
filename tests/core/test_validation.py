"""The one place numbers are validated (``core.validation``): the type first (TypeError), then the
range (ValueError), and every message starts with the parameter's name and quotes the value."""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

from core.validation import (
    MAX_EXACT_INT,
    InvalidValue,
    check_choice,
    check_int,
    check_not_both,
    check_real,
    check_result,
    check_shape,
    check_solver_options,
    check_type,
    is_real,
    require,
)

TINY = 5e-324  # the smallest positive float (subnormal)


# --- is_real -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "value",
    [
        0,
        -3,
        2.5,
        -0.0,
        math.inf,
        math.nan,
        np.int8(1),
        np.int64(-7),
        np.float32(0.5),
        np.float64(math.nan),
    ],
)
def test_numbers_are_real(value):
    assert is_real(value)


@pytest.mark.parametrize(
    "value", [True, False, np.bool_(True), "1", None, 1 + 0j, [1.0], np.array(1.0), Fraction(1, 2)]
)
def test_bools_strings_containers_and_other_number_types_are_not_real(value):
    # a bool is an int in Python, but True where a sigma is expected is a mistake, not 1
    assert not is_real(value)


# --- check_real: every bound at its edges --------------------------------------------------------


@pytest.mark.parametrize(
    "bound, inside, outside",
    [
        ("> 0", [TINY, 1.0, 1e308, 3, np.float64(2.0)], [0.0, -0.0, -TINY, -1]),
        (">= 0", [0.0, -0.0, TINY, 7], [-TINY, -1.0]),
        ("", [-1e308, -1, 0.0, 1e308], []),
        ("(0, 1]", [TINY, 0.5, 1.0, 1], [0.0, 1 + 2**-52, 2, -0.5]),
        ("(0, 1)", [TINY, 0.5, 1 - 2**-53], [0.0, 1.0, 1, -0.5]),
    ],
)
def test_check_real_accepts_inside_and_refuses_outside_each_bound(bound, inside, outside):
    for value in inside:
        check_real("x", value, bound)  # no exception
    for value in outside + [math.inf, -math.inf, math.nan]:  # never finite: refused by every bound
        with pytest.raises(ValueError, match=r"^x must be "):
            check_real("x", value, bound)


def test_check_real_messages_name_the_parameter_the_bound_and_the_value():
    with pytest.raises(ValueError, match=r"^sigma must be finite and > 0, found 0\.0$"):
        check_real("sigma", 0.0)
    with pytest.raises(ValueError, match=r"^alpha must be finite and >= 0, found -1$"):
        check_real("alpha", -1, ">= 0")
    with pytest.raises(ValueError, match=r"^shift must be finite, found inf$"):
        check_real("shift", math.inf, "")
    with pytest.raises(ValueError, match=r"^beta must be in \(0, 1\), found 1\.0$"):
        check_real("beta", 1.0, "(0, 1)")
    with pytest.raises(ValueError, match=r"^gamma must be in \(0, 1\], found nan$"):
        check_real("gamma", math.nan, "(0, 1]")


@pytest.mark.parametrize("value", [True, np.bool_(False), "0.5", None, [0.5], 1j])
def test_check_real_refuses_a_non_number_with_a_type_error_before_any_range(value):
    # the type is checked first: True is refused as a type even where 1 would be in range
    with pytest.raises(TypeError, match=r"^tau must be a real number, found "):
        check_real("tau", value, "(0, 1]")


def test_the_type_error_quotes_the_value_as_repr():
    with pytest.raises(TypeError, match=r"found '1'$"):
        check_real("epsilon", "1")
    with pytest.raises(TypeError, match=r"found True$"):
        check_real("epsilon", True)


# --- check_int and check_shape -----------------------------------------------------------------


def test_check_int_takes_python_and_numpy_integers_at_or_above_the_minimum():
    for value in (1, np.int64(1), np.int8(5), 10**30):
        check_int("m", value)
    check_int("m", 0, 0)
    check_int("m", -5, -5)


@pytest.mark.parametrize("value", [True, False, 2.0, np.float64(3.0), "3", None, 2.5])
def test_check_int_refuses_bools_and_floats_even_integral_ones(value):
    with pytest.raises(TypeError, match=r"^steps must be an integer, found "):
        check_int("steps", value)


def test_check_int_minimum_edge_and_its_reason():
    with pytest.raises(ValueError, match=r"^steps must be >= 1, found 0$"):
        check_int("steps", 0)
    with pytest.raises(ValueError, match=r"^m must be >= 8 \(so that gamma <= 1\), found 7$"):
        check_int("m", 7, 8, why="so that gamma <= 1")
    check_int("m", 8, 8, why="so that gamma <= 1")


def test_check_shape_is_an_integer_up_to_two_to_the_53():
    check_shape("d", 1)
    check_shape("d", MAX_EXACT_INT)
    assert MAX_EXACT_INT == 2**53 and float(MAX_EXACT_INT) == MAX_EXACT_INT
    assert float(MAX_EXACT_INT + 1) != MAX_EXACT_INT + 1  # why the cap: beyond it floats round
    with pytest.raises(ValueError, match=r"^d must be <= 2\*\*53 .*found 9007199254740993$"):
        check_shape("d", MAX_EXACT_INT + 1)
    with pytest.raises(ValueError, match=r"^d must be >= 1, found 0$"):
        check_shape("d", 0)
    check_shape("n", 0, minimum=0)
    with pytest.raises(TypeError, match=r"^d must be an integer, found 2\.0$"):
        check_shape("d", 2.0)


# --- check_result ---------------------------------------------------------------------------------


def test_check_result_returns_a_float():
    value = check_result("c", 4, D=1.0)
    assert value == 4.0 and type(value) is float
    assert type(check_result("c", np.float32(0.5))) is float
    assert check_result("c", TINY) == TINY


@pytest.mark.parametrize("value", [math.inf, -math.inf, math.nan, 0.0, -0.0, -2.0, None, "1"])
def test_check_result_names_the_result_and_the_inputs(value):
    with pytest.raises(ValueError) as raised:
        check_result("c = 4 D^2 / tau^2", value, D=1e200, tau=1.0)
    message = str(raised.value)
    assert message.startswith("c = 4 D^2 / tau^2 is not a finite float > 0 for D=1e+200, tau=1.0")
    assert f"found {value!r}" in message


# --- InvalidValue and require ---------------------------------------------------------------------


def test_invalid_value_is_a_value_error_that_keeps_its_parts():
    error = InvalidValue("oracle.time_limit", "must be > 0", -1.0)
    assert isinstance(error, ValueError)
    assert str(error) == "oracle.time_limit: must be > 0, found -1.0"
    assert (error.key, error.message, error.value) == ("oracle.time_limit", "must be > 0", -1.0)


def test_require_raises_only_when_not_ok():
    require(True, "k", "never raised", 0)
    with pytest.raises(InvalidValue, match=r"^k: must be one of \('a', 'b'\), found 'c'$"):
        require(False, "k", "must be one of ('a', 'b')", "c")


@pytest.mark.parametrize(
    "kwargs, error, text",
    [
        (dict(time_limit=0.0, threads=1, strict_eps=1e-6), ValueError, "time_limit"),
        (dict(time_limit=math.inf, threads=1, strict_eps=1e-6), ValueError, "inf"),
        (dict(time_limit="60", threads=1, strict_eps=1e-6), TypeError, "'60'"),
        (dict(time_limit=60.0, threads=0, strict_eps=1e-6), ValueError, "threads"),
        (dict(time_limit=60.0, threads=1.5, strict_eps=1e-6), TypeError, "1.5"),
        (dict(time_limit=60.0, threads=1, strict_eps=0.0), ValueError, "strict_eps"),
        (dict(time_limit="60", threads=1), TypeError, "'60'"),  # an oracle without strict_eps
    ],
)
def test_solver_options_are_validated_with_the_value_quoted(kwargs, error, text):
    with pytest.raises(error, match=text):
        check_solver_options(**kwargs)


def test_a_choice_names_the_setting_and_what_it_may_be():
    assert check_choice("noise", "laplace", ("gaussian", "laplace")) == "laplace"
    with pytest.raises(ValueError, match=r"^noise must be 'gaussian' or 'laplace', found 'lap'$"):
        check_choice("noise", "lap", ("gaussian", "laplace"))
    with pytest.raises(ValueError, match=r"^rule must be one of \['a', 'b', 'c'\], found None$"):
        check_choice("rule", None, ("a", "b", "c"))
    with pytest.raises(ValueError, match="found True"):  # True == 1, but it is not the choice 1
        check_choice("k", True, (1, 2))
    with pytest.raises(ValueError, match=r"found \['a'\]"):  # unhashable: refused, not a crash
        check_choice("k", ["a"], ("a", "b"))


def test_a_type_and_an_exclusive_pair_are_named_in_their_errors():
    assert check_type("grid", 3, int) == 3
    with pytest.raises(TypeError, match="^grid must be int, found str$"):
        check_type("grid", "3", int)
    check_not_both("gamma", None, "m", 4)
    check_not_both("gamma", 0.5, "m", None)
    with pytest.raises(ValueError, match=r"^give gamma or m, not both \(found gamma=0.5, m=4\)$"):
        check_not_both("gamma", 0.5, "m", 4)
