"""The branch and bound of ``oracles.window.tree`` piece by piece, against enumeration of the grid:
the rows' reach is the exact integer maximum, every node's lower bound is below F on every
point under it, and the frontier covers every point at or below the threshold once. The search
itself (its minimum, a stopped search's bound, a best lowered by another worker) is tested in
``test_engine.py`` and ``test_worker.py``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from core.problem import IntegerGrid
from oracles.window.minorant import tightened_decomposition
from oracles.window.tree import Nodes, build_tables, expand, frontier, reach_tables
from tests.oracles.fuzz import fuzz_instance, parallel_instance


def _grid_points(domain: IntegerGrid) -> np.ndarray:
    ks = [
        k
        for k in itertools.product(range(-domain.bound, domain.bound + 1), repeat=domain.d)
        if domain.norm_sq_max is None or sum(v * v for v in k) <= domain.norm_sq_max
    ]
    return np.array(ks, dtype=np.int64)


def test_reach_is_the_exact_integer_maximum():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(5, 4))
    B, cap = 2, 7
    reach = reach_tables(X, B, cap)
    ks = np.array(list(itertools.product(range(-B, B + 1), repeat=4)))
    for j in range(5):
        tail = ks[:, j:]
        sq = (tail * tail).sum(axis=1)
        scores = np.abs(tail @ X[:, j:].T)  # (points, u)
        for r in range(cap + 1):
            expected = scores[sq <= r].max(axis=0)
            np.testing.assert_allclose(reach[:, j, r], expected, rtol=1e-12, atol=1e-12)


def _tables(problem, upper):
    tight, _, prune = tightened_decomposition(problem, upper, 50)
    return build_tables(problem, tight, prune)


@pytest.mark.parametrize(
    "family, seed",
    [(fuzz_instance, s) for s in range(0, 24, 3)]
    + [(parallel_instance, s) for s in range(0, 12, 3)],
)
def test_every_node_bound_is_below_f_under_it_and_the_tree_keeps_every_point(family, seed):
    problem = family(seed)
    K = _grid_points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    upper = float(np.quantile(F, 0.3))
    t = _tables(problem, upper)
    Ko = K[:, t.order]  # search order
    nodes, T = Nodes.root(t), t.threshold(upper)
    for level in range(1, t.d + 1):
        nodes = expand(t, nodes, T)
        assert nodes.level == level
        kept = {tuple(s) for s in nodes.states.tolist()}
        # every point with F <= upper keeps its prefix
        assert {tuple(k[:level]) for k in Ko[F <= upper].tolist()} <= kept
        # each node's bound is below F at every point under it
        index = {tuple(s): i for i, s in enumerate(nodes.states.tolist())}
        for k, f in zip(Ko.tolist(), F):
            i = index.get(tuple(k[:level]))
            if i is not None:
                assert nodes.lb[i] + t.const <= f + 1e-9
        # a node rebuilt from its prefix alone at the same threshold has the same bound (what a
        # part ships), up to the float32 rounding of its scores Y (summed at once there,
        # incrementally here), which moves a forced row's share by about 1e-7 of its weight
        again = Nodes.from_states(t, nodes.states, T)
        np.testing.assert_allclose(again.lb, nodes.lb, rtol=1e-6, atol=1e-5)


@pytest.mark.parametrize("seed", range(8))
def test_the_frontier_covers_each_point_once(seed):
    problem = parallel_instance(seed)
    K = _grid_points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    upper = float(np.quantile(F, 0.5))
    t = _tables(problem, upper)
    nodes = frontier(t, upper, at_least=10)
    assert len(nodes) >= 10 or nodes.level == t.d
    prefixes = [tuple(s) for s in nodes.states.tolist()]
    assert len(set(prefixes)) == len(prefixes)  # disjoint
    Ko = K[:, t.order]
    assert {tuple(k[: nodes.level]) for k in Ko[F <= upper].tolist()} <= set(prefixes)
