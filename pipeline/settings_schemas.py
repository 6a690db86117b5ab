"""The catalog's Hydra side: each mechanism's settings schema, made from its catalog entry.

The catalog itself, the single registry of the mechanisms, is ``mechanisms.catalog``;
``settings_schema`` turns an entry's settings (its parameter dataclass's fields and defaults)
into the Hydra schema registered in the ConfigStore (pipeline.config), so a default is written
in one place, the mechanism's module. Every entry is in the config under ``mechanisms.NAME``
(``pipeline.config.Config``); a sweep picks which ones run.
"""

from __future__ import annotations

import dataclasses
import sys
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal, Optional

from omegaconf import MISSING

from mechanisms.catalog import CATALOG, Entry
from pipeline.read_only import ReadOnly


@dataclass
class MechanismConfig(ReadOnly):
    """The base of every settings schema: the catalog entry's name."""

    name: str = MISSING


def _schema_type(hint: Any) -> Any:
    """An OmegaConf type for a parameter's annotation: a Literal is a str, ``X | None`` an
    Optional[X]."""
    origin = typing.get_origin(hint)
    if origin is Literal:
        return str
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return Optional[_schema_type(args[0])]
    return hint


def settings_schema(entry: Entry) -> type:
    """The Hydra schema of ``entry``: a dataclass named ``<Entry>Settings`` with the entry's
    ``name`` and its settings (a module attribute here, so that it pickles by reference)."""
    cls_name = "".join(part.title() for part in entry.name.split("_")) + "Settings"
    existing = getattr(sys.modules[__name__], cls_name, None)
    if existing is not None:
        return existing
    fields = [("name", str, field(default=entry.name))]
    fields += [(n, _schema_type(t), field(default=d)) for n, t, d in entry.setting_fields()]
    cls = dataclasses.make_dataclass(
        cls_name, fields, bases=(MechanismConfig,), namespace={"__doc__": entry.doc}
    )
    cls.__module__ = __name__
    setattr(sys.modules[__name__], cls_name, cls)
    return cls


#: Every entry's settings schema, made at import so that a worker unpickles them by reference.
SCHEMAS = {name: settings_schema(entry) for name, entry in CATALOG.items()}

__all__ = ["MechanismConfig", "SCHEMAS", "settings_schema"]
