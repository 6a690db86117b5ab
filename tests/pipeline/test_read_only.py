"""Records read-only once frozen (``pipeline.read_only``): writable until ``freeze``, then every
write and delete refused with a line that says what to do; the freeze reaches records in fields
and in the values of dict fields, survives a pickle (a Ray task's copy) and a deepcopy, and a
``dataclasses.replace`` copy is a new, writable record."""

from __future__ import annotations

import copy
import dataclasses
import pickle
from dataclasses import dataclass, field

import pytest

from pipeline.read_only import ReadOnly, freeze, is_frozen


@dataclass
class Leaf(ReadOnly):
    value: int = 1


@dataclass
class Root(ReadOnly):
    leaf: Leaf = field(default_factory=Leaf)
    by_name: dict[str, Leaf] = field(default_factory=lambda: {"a": Leaf(2)})
    plain: int = 0


def test_a_record_is_writable_until_frozen_then_every_write_is_refused():
    root = Root()
    root.plain = 3  # as Hydra and a check() write it
    assert freeze(root) is root and root.plain == 3
    with pytest.raises(dataclasses.FrozenInstanceError) as raised:
        root.plain = 4
    assert str(raised.value) == (
        "cannot assign to field 'plain' of Root: a validated config is read-only; make a "
        "changed copy with dataclasses.replace"
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        del root.plain
    assert root.plain == 3


def test_the_freeze_reaches_fields_and_dict_values():
    root = freeze(Root())
    assert is_frozen(root) and is_frozen(root.leaf) and is_frozen(root.by_name["a"])
    for record in (root.leaf, root.by_name["a"]):
        with pytest.raises(dataclasses.FrozenInstanceError, match="'value' of Leaf"):
            record.value = 9
    assert not is_frozen(Leaf()) and not is_frozen(object())


def test_a_pickled_or_copied_record_stays_frozen_and_equal():
    root = freeze(Root())
    for copied in (pickle.loads(pickle.dumps(root)), copy.deepcopy(root)):
        assert copied == root and is_frozen(copied) and is_frozen(copied.leaf)
        with pytest.raises(dataclasses.FrozenInstanceError):
            copied.leaf.value = 5


def test_replace_makes_a_writable_copy_and_leaves_the_original():
    root = freeze(Root(plain=1))
    changed = dataclasses.replace(root, plain=2)
    assert not is_frozen(changed) and root.plain == 1 and changed.plain == 2
    changed.plain = 7
    assert freeze(changed).plain == 7 and is_frozen(changed)
    assert dataclasses.asdict(root) == {
        "leaf": {"value": 1},
        "by_name": {"a": {"value": 2}},
        "plain": 1,
    }
