"""The compiled search of ``oracles.branch_kernel`` against ``oracles.branch.expand``: at a fixed
threshold it visits exactly the nodes that expanding level by level keeps, with the same bounds,
and hands every leaf kept to its caller, however small its leaf buffer."""

from __future__ import annotations

import numpy as np
import pytest

from oracles.branch import Nodes, build_tables, expand
from oracles.branch_kernel import BUDGET, DONE, LEAVES, State, open_node, run
from oracles.noise_window import tightened_split
from tests.oracles.fuzz import fuzz_instance, parallel_instance
from tests.oracles.test_branch import _grid_points


def _tables_and_threshold(problem, quantile):
    K = _grid_points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    upper = float(np.quantile(F, quantile))
    tight, _, prune = tightened_split(problem, upper, 50)
    t = build_tables(problem, tight, prune)
    return t, t.threshold(upper)


def _levels(t, T):
    """Every level's nodes kept by ``expand`` at threshold T: {prefix: bound}."""
    nodes, levels = Nodes.root(t), []
    for _ in range(t.d):
        nodes = expand(t, nodes, T)
        levels.append(dict(zip(map(tuple, nodes.states.tolist()), nodes.lb.tolist())))
    return levels


def _kernel_leaves(t, T, leaf_room, budget):
    state = State.empty(t.d, t.bound, len(t.sign), leaf_room=leaf_room)
    root = Nodes.root(t)
    made = open_node(t, state, 0, root.states[0], root.C[0], root.P[0], root.Y[0], T)
    leaves, reasons = [], set()
    while True:
        why, n = run(t, state, T, budget)
        made += n
        reasons.add(why)
        leaves += [tuple(k) for k in state.leaves[: state.n_leaves].tolist()]
        state.n_leaves = 0
        if why == DONE:
            return leaves, made, reasons


@pytest.mark.parametrize(
    "family, seed, quantile",
    [(fuzz_instance, s, 0.3) for s in range(0, 20, 4)]
    + [(parallel_instance, s, 0.5) for s in range(0, 10, 3)],
)
def test_the_kernel_keeps_exactly_the_nodes_expand_keeps(family, seed, quantile):
    problem = family(seed)
    t, T = _tables_and_threshold(problem, quantile)
    levels = _levels(t, T)
    leaves, made, reasons = _kernel_leaves(t, T, leaf_room=3, budget=5)
    # every leaf once, and the same leaves as level-by-level expansion
    assert len(leaves) == len(set(leaves))
    assert set(leaves) == set(levels[-1])
    # nodes made: every inner node kept, and the leaves
    assert made == sum(len(level) for level in levels)
    if len(leaves) > 3:
        assert LEAVES in reasons
    # with room for every leaf, a budget of 5 nodes stops it and it resumes where it was
    again, made_again, reasons = _kernel_leaves(t, T, leaf_room=len(leaves) + 1, budget=5)
    assert sorted(again) == sorted(leaves) and made_again == made
    assert (BUDGET in reasons) == (made - len(levels[0]) >= 5)  # the root's children are free


@pytest.mark.parametrize("seed", range(0, 12, 3))
def test_the_kernel_bounds_a_node_s_children_as_expand_does(seed):
    problem = fuzz_instance(seed)
    t, T = _tables_and_threshold(problem, 0.6)
    nodes = Nodes.root(t)
    state = State.empty(t.d, t.bound, len(t.sign))
    for _ in range(t.d - 1):
        children = expand(t, nodes, T)
        for i in range(len(nodes)):
            n = open_node(
                t, state, nodes.level, nodes.states[i], nodes.C[i], nodes.P[i], nodes.Y[i], T
            )
            mine = children.states[:, : nodes.level] == nodes.states[i]
            expected = dict(
                zip(children.states[mine.all(axis=1), -1].tolist(), children.lb[mine.all(axis=1)])
            )
            got = dict(zip(state.vals[nodes.level, :n].tolist(), state.lbs[nodes.level, :n]))
            assert got.keys() == expected.keys()
            for v, lb in got.items():
                assert lb == pytest.approx(expected[v], rel=1e-12, abs=1e-9)
            assert list(state.lbs[nodes.level, :n]) == sorted(state.lbs[nodes.level, :n])
        nodes = children
        if not len(nodes):
            break
