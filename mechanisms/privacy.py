"""Privacy targets and privacy warnings: the small module the mechanisms and the pipeline share.

A privacy target is (epsilon, delta): epsilon finite and > 0, delta in [0, 1) (or (0, 1) where
the mechanism needs delta > 0). It is checked here, once, where a mechanism's parameter record is
built; the config checks the sweep's grid with the same functions. ``PrivacyLeakWarning`` marks a
choice read off the private data without being accounted for (the data loader and the
mechanisms' bound checks raise it); ``PrivacyError`` refuses a release that would break a
guarantee. Numbers in general are checked by ``core.validation``, which this builds on.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

from core.validation import is_real


class PrivacyLeakWarning(RuntimeWarning):
    """A choice was read off the private data without being accounted for (as in diffprivlib)."""


class PrivacyError(RuntimeError):
    """A privacy guarantee would be broken; nothing is released."""


def warn_data_dependent(what: str) -> None:
    """A ``PrivacyLeakWarning`` that ``what`` is read off the private data, unaccounted for."""
    warnings.warn(
        f"{what} is read off the private data and not accounted for",
        PrivacyLeakWarning,
        stacklevel=3,
    )


def check_epsilon(epsilon: Any) -> None:
    """epsilon finite and > 0; TypeError for a wrong type, ValueError for a wrong value."""
    if not is_real(epsilon):
        raise TypeError(f"epsilon must be a real number, found {epsilon!r}")
    if not (math.isfinite(epsilon) and epsilon > 0):
        raise ValueError(f"epsilon must be finite and > 0, found {epsilon!r}")


def check_delta(delta: Any, *, allow_zero_delta: bool = True) -> None:
    """delta in [0, 1) (``allow_zero_delta``) or (0, 1); TypeError / ValueError as above."""
    if not is_real(delta):
        raise TypeError(f"delta must be a real number, found {delta!r}")
    low_ok = delta >= 0 if allow_zero_delta else delta > 0
    if not (low_ok and delta < 1):
        bound = "[0, 1)" if allow_zero_delta else "(0, 1)"
        raise ValueError(f"delta must be in {bound}, found {delta!r}")


def check_epsilon_delta(epsilon: Any, delta: Any, *, allow_zero_delta: bool = True) -> None:
    """A privacy target (epsilon, delta): both types first, then both values."""
    for name, value in (("epsilon", epsilon), ("delta", delta)):
        if not is_real(value):
            raise TypeError(f"{name} must be a real number, found {value!r}")
    check_epsilon(epsilon)
    check_delta(delta, allow_zero_delta=allow_zero_delta)


__all__ = [
    "PrivacyError",
    "PrivacyLeakWarning",
    "check_delta",
    "check_epsilon",
    "check_epsilon_delta",
    "warn_data_dependent",
]
