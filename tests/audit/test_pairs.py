"""The audit's neighbouring pairs (mechanisms.audit.pairs): how they are built, that each is the
pair its note describes (the loss changes the module doc states, computed with the exact 0/1
loss), and that every mechanism's list is well formed."""

from __future__ import annotations

import numpy as np
import pytest

from core.objective import zero_one_loss
from mechanisms.audit.pairs import (
    add_pair,
    dpsgd_pairs,
    expmech_pairs,
    opdisc_pairs,
    opsamp_pairs,
    replace_pair,
    rspm_pairs,
)

#: w = -1, 0, 1 on d = 1, the grid of the module doc.
W1 = np.array([[-1.0], [0.0], [1.0]])


def _losses(X, y) -> list[int]:
    return [int(v) for v in zero_one_loss(np.asarray(X, float), np.asarray(y), W1)]


@pytest.mark.parametrize(
    "x, label, vector",
    [
        (1.0, 1, [1, 1, 0]),
        (1.0, -1, [0, 0, 1]),
        (0.0, 1, [1, 1, 1]),
        (-1.0, 1, [0, 1, 1]),
        (-1.0, -1, [1, 0, 0]),
        (0.0, -1, [0, 0, 0]),
    ],
)
def test_the_loss_vectors_of_the_module_doc_are_the_zero_one_losses(x, label, vector):
    assert _losses([[x]], [label]) == vector


def test_replace_pair_expands_the_base_and_replaces_the_last_row():
    pair = replace_pair(
        "p",
        [((1.0, 0.0), 1, 3), ((0.0, -1.0), -1, 2)],
        ((1.0, 1.0), 1),
        ((-1.0, 1.0), -1),
        "why",
        settings={"steps": 2},
    )
    assert (pair.n, pair.d, pair.relation, pair.note) == (6, 2, "replace", "why")
    np.testing.assert_array_equal(pair.X0[:5], [[1, 0]] * 3 + [[0, -1]] * 2)
    np.testing.assert_array_equal(pair.X0[:5], pair.X1[:5])
    np.testing.assert_array_equal(pair.y0, [1, 1, 1, -1, -1, 1])
    np.testing.assert_array_equal(pair.X1[-1], [-1, 1])
    assert pair.y1[-1] == -1 and pair.settings == {"steps": 2}
    assert pair.X0.dtype == float and pair.y0.dtype == np.int8


def test_add_pair_appends_one_row():
    pair = add_pair("a", [((1.0,), 1, 2)], ((0.0,), -1), "grow")
    assert pair.relation == "add_remove" and (len(pair.y0), len(pair.y1)) == (2, 3)
    np.testing.assert_array_equal(pair.X1, [[1.0], [1.0], [0.0]])
    np.testing.assert_array_equal(pair.y1, [1, 1, -1])


def test_opdisc_pairs_are_the_ones_their_notes_describe():
    pairs = {p.name: p for p in opdisc_pairs()}
    flip = pairs["flip_far_label"]

    def curvature(X, y):  # L(1) + L(-1) - 2 L(0)
        low, mid, high = _losses(X, y)
        return high + low - 2 * mid

    assert curvature(flip.X0, flip.y0) == 2 and curvature(flip.X1, flip.y1) == 0
    tail = pairs["duplicated_rows_tail"]
    assert tail.n == 31 and int((tail.X0[:, 0] == 1).sum()) == 31  # 31 copies of (1, +1)
    low, mid, high = _losses(tail.X0, tail.y0)
    assert min(low, mid) - high == 31  # w = 1 wins by 31
    d2 = pairs["d2_duplicated_flip"]
    assert (d2.d, d2.n) == (2, 15)


def test_every_list_is_well_formed():
    lists = {
        "opdisc": opdisc_pairs(),
        "expmech": expmech_pairs(),
        "rspm": rspm_pairs(),
        "dpsgd": dpsgd_pairs(),
        "opsamp": opsamp_pairs(),
    }
    for name, pairs in lists.items():
        assert len(pairs) >= 3, name
        assert len({p.name for p in pairs}) == len(pairs), name
        assert all(p.note for p in pairs), name  # each says why it is hard
        # DP-SGD claims replace-one now (pairs.dpsgd_pairs): every pair is a replacement
        assert {p.relation for p in pairs} == {"replace"}, name
        assert {p.d for p in pairs} <= {1, 2}, name
    dpsgd = {p.name: p for p in lists["dpsgd"]}
    assert dpsgd["replace_large_norm_flip"].settings == {"batch_size": 51, "steps": 1}
    assert dpsgd["replace_large_norm_flip"].n == 51  # q = b / n = 1
    assert {p.n for p in lists["opsamp"]} == {1, 4}
