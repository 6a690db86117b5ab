"""The one place numbers are validated: a parameter's type and range, its name in the message.

The bottom of the import graph (it imports only numpy), so that the oracles, the mechanisms and
the pipeline's config check a number the same way (privacy targets: ``mechanisms.privacy``). A
bad value raises ``InvalidValue`` (a ValueError) or TypeError; the message starts with the name
of the parameter, which the config prefixes with the path of its key
(``mechanisms.opdisc.tau: ...``). Numbers, choices among names, types and exclusive pairs.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

_REAL = (int, float, np.integer, np.floating)
_INT = (int, np.integer)


class InvalidValue(ValueError):
    """A value out of range: ``key: message, found value``."""

    def __init__(self, key: str, message: str, value: Any) -> None:
        super().__init__(f"{key}: {message}, found {value!r}")
        self.key, self.message, self.value = key, message, value


def require(ok: bool, key: str, message: str, value: Any) -> None:
    """InvalidValue(key, message, value) unless ``ok``."""
    if not ok:
        raise InvalidValue(key, message, value)


def is_real(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, _REAL)


_BOUNDS = {
    "> 0": lambda v: v > 0,
    ">= 0": lambda v: v >= 0,
    "": lambda v: True,
    "(0, 1]": lambda v: 0 < v <= 1,
    "(0, 1)": lambda v: 0 < v < 1,
}

#: The largest integer a shape (a dimension, a count) may take: every integer up to it is a
#: float exactly, so the float formulas that take it lose nothing to rounding.
MAX_EXACT_INT = 2**53


def check_real(name: str, value: Any, bound: str = "> 0") -> None:
    """A finite real ``value`` within ``bound`` ("> 0", ">= 0", "(0, 1]", "(0, 1)" or "" for
    any), else TypeError (not a real number: bool, str, None, ...) / ValueError (nan, inf, out
    of the bound) naming ``name``."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, found {value!r}")
    if not (math.isfinite(value) and _BOUNDS[bound](value)):
        if bound.startswith("("):
            raise ValueError(f"{name} must be in {bound}, found {value!r}")
        raise ValueError(
            f"{name} must be finite{' and ' + bound if bound else ''}, found {value!r}"
        )


def check_int(name: str, value: Any, minimum: int = 1, *, why: str = "") -> None:
    """An integer ``value`` >= ``minimum``, else TypeError (bool, float, even 2.0, str, ...) /
    ValueError naming ``name``; ``why`` says where the minimum comes from."""
    if isinstance(value, bool) or not isinstance(value, _INT):
        raise TypeError(f"{name} must be an integer, found {value!r}")
    if value < minimum:
        reason = f" ({why})" if why else ""
        raise ValueError(f"{name} must be >= {minimum}{reason}, found {value!r}")


def check_shape(name: str, value: Any, minimum: int = 1) -> None:
    """A dimension or a count (d, m, n): an integer in [``minimum``, 2**53]."""
    check_int(name, value, minimum)
    if value > MAX_EXACT_INT:
        raise ValueError(
            f"{name} must be <= 2**53 (the largest integer a float holds exactly), found {value!r}"
        )


def check_choice(name: str, value: Any, allowed: Sequence[Any]) -> Any:
    """``value`` if it is one of ``allowed`` (a setting's names: a loss, a noise, a rule), else
    ValueError naming ``name`` and listing what it may be."""
    if isinstance(value, bool) or value not in allowed:
        options = " or ".join(repr(a) for a in allowed) if len(allowed) <= 2 else list(allowed)
        raise ValueError(
            f"{name} must be {'one of ' if len(allowed) > 2 else ''}{options}, found {value!r}"
        )
    return value


def check_type(name: str, value: Any, expected: type) -> Any:
    """``value`` if it is an ``expected``, else TypeError naming ``name`` and both types."""
    if not isinstance(value, expected):
        raise TypeError(f"{name} must be {expected.__name__}, found {type(value).__name__}")
    return value


def check_not_both(first: str, a: Any, second: str, b: Any) -> None:
    """Two settings that say the same thing two ways (gamma or m, epochs or steps): at most one
    may be given (not None), else ValueError naming both."""
    if a is not None and b is not None:
        raise ValueError(
            f"give {first} or {second}, not both (found {first}={a!r}, {second}={b!r})"
        )


def check_result(name: str, value: float, **inputs: Any) -> float:
    """``value``, computed from ``inputs``, as a finite float > 0, else ValueError.

    Inputs that each pass their own check can still take a formula out of the float range
    (D = 1e200 squared, tau = 1e-300 inverted): that is refused here, naming the result and the
    inputs, instead of returning inf, nan or 0.
    """
    if not (
        isinstance(value, (int, float, np.integer, np.floating))
        and math.isfinite(value)
        and value > 0
    ):
        args = ", ".join(f"{k}={v!r}" for k, v in inputs.items())
        raise ValueError(
            f"{name} is not a finite float > 0 for {args}: found {value!r} (an "
            f"input is too large or too small for a float here)"
        )
    return float(value)


def check_solver_options(time_limit: Any, threads: Any, strict_eps: Any = None) -> None:
    """The options every oracle takes: ``time_limit`` (seconds) finite and > 0, ``threads`` an
    integer >= 1, and a MIP backend's ``strict_eps`` finite and > 0 (None: not one of its
    options); messages quote the value."""
    check_real("time_limit", time_limit)
    check_int("threads", threads)
    if strict_eps is not None:
        check_real("strict_eps", strict_eps)


__all__ = [
    "MAX_EXACT_INT",
    "InvalidValue",
    "check_int",
    "check_real",
    "check_result",
    "check_shape",
    "check_solver_options",
    "is_real",
    "require",
]
