"""The compiled search of ``oracles.window.kernel``: a node's bound against the formula written
out in numpy, and its depth-first search against expanding level by level
(``oracles.window.tree.expand``): at a fixed threshold it makes exactly the nodes kept there, keeps
every point at or below the threshold, and hands every leaf kept to its caller, however small
its leaf buffer."""

from __future__ import annotations

import math

import numpy as np
import pytest

from oracles.window.tree import Nodes, build_tables, expand, rows_slack
from oracles.window.kernel import (
    BUDGET,
    DONE,
    LEAVES,
    State,
    node_bounds,
    open_node,
    run,
)
from oracles.window.minorant import tightened_decomposition
from tests.oracles.fuzz import fuzz_instance, parallel_instance
from tests.oracles.window.test_tree import _grid_points


def _tables_and_threshold(problem, quantile):
    K = _grid_points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    upper = float(np.quantile(F, quantile))
    tight, _, prune = tightened_decomposition(problem, upper, 50)
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
    K = _grid_points(problem.domain)
    F = problem.objective(problem.domain.step * K.astype(float))
    below = {tuple(k) for k in K[:, t.order][F - t.const <= T + 1e-9].tolist()}
    levels = _levels(t, T)
    leaves, made, reasons = _kernel_leaves(t, T, leaf_room=3, budget=5)
    # every leaf once, the same leaves as level-by-level expansion, every point at or below T
    assert len(leaves) == len(set(leaves))
    assert set(leaves) == set(levels[-1])
    assert below <= set(leaves)
    # nodes made: every inner node kept, and the leaves
    assert made == sum(len(level) for level in levels)
    if len(leaves) > 3:
        assert LEAVES in reasons
    # with room for every leaf, a budget of 5 nodes stops it and it resumes where it was
    again, made_again, reasons = _kernel_leaves(t, T, leaf_room=len(leaves) + 1, budget=5)
    assert sorted(again) == sorted(leaves) and made_again == made
    assert (BUDGET in reasons) == (made - len(levels[0]) >= 5)  # the root's children are free


def _reference_bound(t, level, C, P, Y, T):
    """``branch_kernel._bound`` of one node written out in numpy, term by term
    (``noise_window.RowPrune``), for comparison."""
    room = t.room[level, t.cap - P].astype(float)
    y = Y.astype(float)
    top = y + room
    share = top / t.span
    owed = np.where(y > room, t.weight - t.minorant * np.minimum(share, 1.0), 0.0)
    owed += np.where((y <= room) & (top < 0), -t.minorant * share, 0.0)
    lb = C + t.comp[level, P] + owed.sum()
    return lb if lb <= T else np.inf


@pytest.mark.parametrize("seed", range(0, 16, 3))
def test_a_node_s_bound_is_the_formula_s(seed):
    problem = fuzz_instance(seed)
    t, T = _tables_and_threshold(problem, 0.5)
    nodes, compared, forced_right = Nodes.root(t), 0, 0
    for _ in range(t.d):
        nodes = expand(t, nodes, np.inf)
        got = node_bounds(t, nodes.level, nodes.C, nodes.P, nodes.Y, T)
        for i in range(len(nodes)):
            want = _reference_bound(t, nodes.level, nodes.C[i], nodes.P[i], nodes.Y[i], T)
            assert got[i] == pytest.approx(want, rel=1e-9, abs=1e-9)
            compared += np.isfinite(want)
        room = t.room[nodes.level][t.cap - nodes.P]
        forced_right += np.sum((nodes.Y + room < 0) & (t.minorant > 0))
    assert compared > 0 and forced_right > 0  # both kinds of forced rows are in play


@pytest.mark.parametrize(
    "family, seed", [(fuzz_instance, s) for s in (0, 2, 5)] + [(parallel_instance, 1)]
)
def test_the_rows_allowance_covers_the_kernel_s_sum_in_any_order(family, seed):
    """The kernel sums a block's row terms in vector lanes (``branch_kernel._bound``); against the
    same terms summed exactly (``math.fsum``) it is off by at most ``Tables.rows_slack`` (the
    part of the threshold's slack that covers the rows) plus one rounding of C + Comp."""
    problem = family(seed)
    t, _ = _tables_and_threshold(problem, 0.5)
    assert 0.0 < t.rows_slack < t.slack(0.0)
    nodes, worst = Nodes.root(t), 0.0
    for _ in range(t.d):
        nodes = expand(t, nodes, np.inf)
        got = node_bounds(t, nodes.level, nodes.C, nodes.P, nodes.Y)
        for i in range(len(nodes)):
            P, y = nodes.P[i], nodes.Y[i].astype(float)
            room = t.room[nodes.level, t.cap - P].astype(float)
            top = y + room
            share = top / t.span
            costly = t.weight - t.minorant * np.minimum(share, 1.0)
            owed = np.where(y > room, costly, np.where(top < 0, -t.minorant * share, 0.0))
            head = nodes.C[i] + t.comp[nodes.level, P]
            exact = math.fsum([head, *owed.tolist()])
            error = abs(got[i] - exact) - 2.0**-52 * abs(head)
            worst = max(worst, error)
    assert worst <= t.rows_slack


def test_a_row_without_a_positive_span_is_refused():
    ones = np.ones(3)
    assert rows_slack(ones, ones, ones, ones, ones) > 0
    for bad in (0.0, -1.0, np.nan, np.inf):
        with pytest.raises(ValueError, match="span must be finite and > 0"):
            rows_slack(ones, ones, np.array([1.0, bad, 1.0]), ones, ones)
