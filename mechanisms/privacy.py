"""Privacy targets and privacy warnings: the small module the mechanisms and the pipeline share.

A privacy target is (epsilon, delta): epsilon finite and > 0, delta in [0, 1), or (0, 1) where
the guarantee needs delta > 0 (a Gaussian mechanism has no pure epsilon). ``PrivacyTarget`` and
``ApproximateTarget`` are the one place that is checked, as dp_accounting's events are frozen
records: a target is checked once, when it is built, and every function that takes one trusts
it. A mechanism's parameter record builds its target once (``TargetRecord.hold_target``); the
pipeline's config builds its grid's targets when it is validated. ``PrivacyLeakWarning`` marks
a choice read off the private data without being accounted for (the data loader and the
mechanisms' bound checks raise it); ``PrivacyError`` refuses a release that would break a
guarantee. Numbers in general are checked by ``core.validation``, which this builds on.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import ClassVar

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


@dataclass(frozen=True)
class PrivacyTarget:
    """The target (epsilon, delta) of a release: it is to be (epsilon, delta)-DP.

    epsilon finite and > 0; delta in [0, 1) (0: pure epsilon-DP). Checked here, once, when the
    target is built: both types first (TypeError: not a real number, e.g. a bool, a str, None),
    then both values (ValueError naming the field and quoting the value). Both are then floats.
    A function that takes a target trusts it and checks neither again.
    """

    epsilon: float
    delta: float = 0.0

    #: Whether delta = 0 (pure DP) is a target of this kind (``ApproximateTarget``: not).
    ZERO_DELTA: ClassVar[bool] = True

    def __post_init__(self) -> None:
        for name in ("epsilon", "delta"):
            value = getattr(self, name)
            if not is_real(value):
                raise TypeError(f"{name} must be a real number, found {value!r}")
        if not (math.isfinite(self.epsilon) and self.epsilon > 0):
            raise ValueError(f"epsilon must be finite and > 0, found {self.epsilon!r}")
        low_ok = self.delta >= 0 if self.ZERO_DELTA else self.delta > 0
        if not (low_ok and self.delta < 1):
            bound = "[0, 1)" if self.ZERO_DELTA else "(0, 1)"
            raise ValueError(f"delta must be in {bound}, found {self.delta!r}")
        object.__setattr__(self, "epsilon", float(self.epsilon))
        object.__setattr__(self, "delta", float(self.delta))

    @property
    def pure(self) -> bool:
        """delta = 0: pure epsilon-DP."""
        return self.delta == 0.0


@dataclass(frozen=True)
class ApproximateTarget(PrivacyTarget):
    """A target whose guarantee needs delta > 0, delta in (0, 1): the Gaussian mechanisms' (no
    pure epsilon), and the zCDP conversions' (ln(1 / delta)). No default delta."""

    delta: float = field()  # field(): no default (a bare annotation would inherit 0.0)

    ZERO_DELTA: ClassVar[bool] = False


class TargetRecord:
    """A mechanism's frozen parameter record whose ``epsilon`` and ``delta`` fields (``delta``
    0 when it has none) are its privacy target.

    Its ``__post_init__`` calls ``hold_target`` where it checks its other fields: that builds
    ``target`` once, of the kind its guarantee needs, which checks epsilon and delta; what the
    record runs takes ``record.target`` and trusts it. ``target`` is not a field: the record's
    fields stay its settings, equality and ``asdict`` (what a release records) unchanged.
    """

    epsilon: float
    target: PrivacyTarget

    def hold_target(self, kind: type[PrivacyTarget] = ApproximateTarget) -> None:
        target = kind(self.epsilon, getattr(self, "delta", 0.0))
        object.__setattr__(self, "target", target)


__all__ = [
    "ApproximateTarget",
    "PrivacyError",
    "PrivacyLeakWarning",
    "PrivacyTarget",
    "TargetRecord",
    "warn_data_dependent",
]
