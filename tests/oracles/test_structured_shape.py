"""The shape the structured oracle exploits (``oracles.structured_shape``): the combinations of
continuous weights, counted and listed, and the cap on how many are ever listed."""

from __future__ import annotations

import numpy as np
import pytest

from oracles.base import IntegerGrid, Problem
from oracles.structured_shape import (
    MAX_LISTED_COMBOS, ShapeMismatch, _combos, _count_combos, decompose,
)  # fmt: skip


def test_combinations_are_listed_in_lexicographic_order():
    for p, B, cap in [(0, 2, 3), (1, 2, 1), (3, 2, 5), (4, 3, 9)]:
        rows = [()]
        for _ in range(p):
            rows = [r + (k,) for r in rows for k in range(-B, B + 1)
                    if sum(x * x for x in r) + k * k <= cap]  # fmt: skip
        expected = np.asarray(rows, dtype=np.int64).reshape(len(rows), p)
        np.testing.assert_array_equal(_combos(p, B, cap), expected)
        assert _count_combos(p, B, cap) == len(expected)


def test_more_combinations_than_are_ever_listed_fall_back():
    d = 24  # every column continuous: (2 * 4 + 1)^24 grid points, far more than are listed
    X = np.linspace(0.05, 0.95, 3 * d).reshape(3, d)
    problem = Problem(X, [1.0, 0.0, 1.0], [0.0, 1.0, 0.0], IntegerGrid(d, bound=4))
    with pytest.raises(ShapeMismatch, match=f"more than the {MAX_LISTED_COMBOS}"):
        decompose(problem)
