"""A problem small enough to solve by enumeration in a millisecond, for the benchmarks' checks."""

from __future__ import annotations

import numpy as np
import pytest

from bench.generic_instances import make_mechanism
from core.objective import MergedRows

TINY_ROWS = MergedRows.from_xy(
    np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [-1.0, 0.0]]), np.array([1, -1, 1, -1])
)


@pytest.fixture
def tiny_problem():
    """OPDisc's problem on four rows, d = 2 (the grid {-1, 0, 1}^2), noise of seed 0."""
    mechanism = make_mechanism("opdisc", 1.0, TINY_ROWS.n)
    noise = mechanism.draw_noise(np.random.default_rng(0), TINY_ROWS.n, TINY_ROWS.d)
    (problem,) = mechanism.problems(TINY_ROWS, noise)
    return problem
