"""The oracle contract's instances (``contract.py``) cover what the contract claims: both norm
signs, negative weights, repeated rows, one-hot columns; and they are reproducible.

Each backend's test file runs the contract (``TestEnumerate`` in test_enumerate.py, which proves
the instances solvable and the assertions consistent; ``TestHighs``, ``TestGurobi``,
``TestAuto``, ``TestStructured`` in test_highs.py, test_gurobi.py, test_auto.py and
test_structured.py).
"""

from __future__ import annotations

import numpy as np

from core.problem import IntegerGrid
from tests.oracles.oracle_contract import KINDS, N_INSTANCES, make_instance

# --- the suite's instances cover what it claims ------------------------------------------------


def test_instances_cover_both_norm_signs_negative_weights_and_repeats():
    problems = [make_instance(seed) for seed in range(N_INSTANCES)]
    opdisc = [p for p in problems if p.label == "opdisc"]
    assert {p.label for p in problems} == {"opdisc", "rspm", "mixed"} == set(KINDS)
    assert any(p.norm_coef > 0 for p in opdisc) and any(p.norm_coef < 0 for p in opdisc)
    assert sum(np.any(p.pos < 0) for p in problems if p.label == "rspm") >= 10
    assert any(np.any(p.neg < 0) for p in problems)
    assert all(isinstance(p.domain, IntegerGrid) for p in problems)
    assert max(p.d for p in problems) == 4
    assert all(p.domain.size_upper_bound <= 2401 for p in problems)
    # repeated feature vectors: merged counts above 1, or equal points in separate rows
    merged_counts = sum(np.any(p.pos + p.neg > 1) for p in opdisc)
    repeated_points = sum(
        len(np.unique(p.points, axis=0)) < p.n_rows for p in problems if p.label != "opdisc"
    )
    assert merged_counts >= 10 and repeated_points >= 10
    # one-hot columns appear
    assert any(
        p.d >= 2
        and np.all(np.isin(p.points[:, :2], (0.0, 1.0)))
        and np.all(p.points[:, :2].sum(axis=1) <= 1)
        for p in problems
    )


def test_instances_are_reproducible():
    a, b = make_instance(5), make_instance(5)
    np.testing.assert_array_equal(a.points, b.points)
    np.testing.assert_array_equal(a.pos, b.pos)
    assert a.norm_coef == b.norm_coef
