"""The one place numbers are validated: a parameter's type and range, its name in the message.

The bottom of the import graph (it imports only numpy), so that the oracles, the mechanisms and
the pipeline's config check a number the same way. A bad value raises ``InvalidValue`` (a
ValueError) or TypeError; the message starts with the name of the parameter, which the config
prefixes with the path of its key (``mechanisms.opdisc.tau: ...``).
"""

from __future__ import annotations

import math
from typing import Any

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


_BOUNDS = {"> 0": lambda v: v > 0, ">= 0": lambda v: v >= 0, "": lambda v: True}


def check_real(name: str, value: Any, bound: str = "> 0") -> None:
    """A finite real ``value`` within ``bound`` ("> 0", ">= 0" or "" for any), else TypeError /
    ValueError naming ``name``."""
    if not is_real(value):
        raise TypeError(f"{name} must be a real number, found {value!r}")
    if not (math.isfinite(value) and _BOUNDS[bound](value)):
        raise ValueError(f"{name} must be finite{' and ' + bound if bound else ''}, "
                         f"found {value!r}")  # fmt: skip


def check_int(name: str, value: Any, minimum: int = 1) -> None:
    """An integer ``value`` >= ``minimum``, else TypeError / ValueError naming ``name``."""
    if isinstance(value, bool) or not isinstance(value, _INT):
        raise TypeError(f"{name} must be an integer, found {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, found {value!r}")


def check_epsilon_delta(epsilon: Any, delta: Any, *, allow_zero_delta: bool = True) -> None:
    """A privacy target: epsilon finite and > 0, delta in [0, 1) (or (0, 1)); TypeError for a
    wrong type, ValueError for a wrong value; messages quote the value."""
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if not is_real(value):
            raise TypeError(f"{name} must be a real number, found {value!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be finite and > 0, found {epsilon!r}")
    low_ok = delta >= 0 if allow_zero_delta else delta > 0
    if not (low_ok and delta < 1):
        bound = "[0, 1)" if allow_zero_delta else "(0, 1)"
        raise ValueError(f"delta must be in {bound}, found {delta!r}")


__all__ = ["InvalidValue", "check_epsilon_delta", "check_int", "check_real", "is_real",
           "require"]  # fmt: skip
