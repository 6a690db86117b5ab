"""A small hand-checked problem shared by the tests of the problem records and of certificates."""

from __future__ import annotations

from core.problem import IntegerGrid, Problem


def small_problem(**kwargs) -> Problem:
    """Rows (1, 0) with pos 2, neg 1; (0, 1) with pos 0.5, neg -3; (0, 0) with pos 4, neg 1."""
    args = dict(
        points=[[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]],
        pos=[2.0, 0.5, 4.0],
        neg=[1.0, -3.0, 1.0],
        domain=IntegerGrid(2, 2, 1.0, 5.0),
        margin=0.5,
    )
    return Problem(**(args | kwargs))
