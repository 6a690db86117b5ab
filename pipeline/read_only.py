"""Config records that are read-only once validated (``pipeline.config.validate``).

Hydra composes a config by writing into its schemas' dataclasses, so they cannot be frozen
dataclasses (OmegaConf makes a frozen dataclass's node read-only, and a command-line override
of it fails). They derive from ``ReadOnly`` instead: writable while Hydra builds them and
``check`` normalizes them, read-only once ``freeze`` has run on the validated tree. A changed
config is a new record (``dataclasses.replace``), validated again where it matters.
"""

from __future__ import annotations

import dataclasses
from typing import Any

#: The instance attribute (not a field) that marks a record read-only.
_FROZEN = "_read_only"


class ReadOnly:
    """A dataclass mixin: attribute writes and deletes raise ``dataclasses.FrozenInstanceError``
    once ``freeze`` has run on the instance."""

    __slots__ = ()

    def __setattr__(self, name: str, value: Any) -> None:
        if self.__dict__.get(_FROZEN, False):
            raise dataclasses.FrozenInstanceError(_refusal(self, name))
        object.__setattr__(self, name, value)

    def __delattr__(self, name: str) -> None:
        if self.__dict__.get(_FROZEN, False):
            raise dataclasses.FrozenInstanceError(_refusal(self, name))
        object.__delattr__(self, name)


def _refusal(record: Any, name: str) -> str:
    return (
        f"cannot assign to field {name!r} of {type(record).__name__}: a validated config is "
        "read-only; make a changed copy with dataclasses.replace"
    )


def freeze(record: Any) -> Any:
    """``record`` and every ``ReadOnly`` record below it (fields, and the values of dict
    fields) made read-only, in place; returns ``record``."""
    if isinstance(record, ReadOnly):
        record.__dict__[_FROZEN] = True
    if dataclasses.is_dataclass(record) and not isinstance(record, type):
        for f in dataclasses.fields(record):
            child = getattr(record, f.name)
            children = child.values() if isinstance(child, dict) else (child,)
            for value in children:
                if dataclasses.is_dataclass(value) and not isinstance(value, type):
                    freeze(value)
    return record


def is_frozen(record: Any) -> bool:
    """Whether ``freeze`` has made ``record`` read-only."""
    return isinstance(record, ReadOnly) and record.__dict__.get(_FROZEN, False)


__all__ = ["ReadOnly", "freeze", "is_frozen"]
