"""Fixtures shared by the mechanisms' test files."""

from __future__ import annotations

import pytest

from pipeline.data.synthetic import make_linear_threshold


@pytest.fixture(scope="module")
def small():
    """200 rows, d = 5 (one group of 3 levels and 2 continuous columns): every grid enumerable."""
    return make_linear_threshold(200, 2, groups=(3,), levels=4, seed=3)
