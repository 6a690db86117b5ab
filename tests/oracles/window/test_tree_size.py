"""The tree-size estimate of ``oracles.window.tree_size``: the tree it estimates is the one the search
makes (the engine's node count), the estimate is unbiased (exactly, over every draw, on small
trees: Knuth's probe at width 1 and the systematic draw at width 2), small trees are counted
exactly, it lands near the search's count on random instances, and its progress line."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from oracles.contract.budget import Budget
from oracles.window.engine import InProcess
from oracles.window.tree import Nodes, build_tables
from oracles.window.kernel import DONE, State, open_node, run
from oracles.window.minorant import tightened_decomposition
from oracles.window.tree_size import (
    PROXIES,
    TreeEstimate,
    _start,
    children,
    count_tree,
    estimate_tree,
    open_nodes,
    remaining_message,
    resample,
    selection_probabilities,
    systematic_counts,
)
from tests.oracles.fuzz import fuzz_instance, parallel_instance


def _grid_values(problem) -> np.ndarray:
    domain = problem.domain
    ks = [
        k
        for k in itertools.product(range(-domain.bound, domain.bound + 1), repeat=domain.d)
        if domain.norm_sq_max is None or sum(v * v for v in k) <= domain.norm_sq_max
    ]
    return problem.objective(domain.step * np.array(ks, dtype=float))


def _searched(family, seed, quantile=0.5, max_points=20_000):
    """An instance, its tables (minorant tightened below the value at ``quantile``), and the
    exact minimum the search finds."""
    problem = family(seed, max_points=max_points)
    upper = float(np.quantile(_grid_values(problem), quantile))
    tight, _, prune = tightened_decomposition(problem, upper, 50)
    t = build_tables(problem, tight, prune)
    out = descend(t, upper)
    assert out.finished
    return t, upper, out


@pytest.mark.parametrize(
    "family, seed",
    [(fuzz_instance, s) for s in range(8)] + [(parallel_instance, s) for s in (0, 1)],
)
def test_the_tree_counted_is_the_one_the_search_makes_given_its_best(family, seed):
    t, upper, out = _searched(family, seed)
    # given the minimum from the start, the search makes exactly the counted tree
    assert descend(t, out.value).nodes == count_tree(t, out.value)
    # starting above it and lowering its best, it makes at least as many
    assert count_tree(t, out.value) <= out.nodes <= count_tree(t, upper)


def descend(t, best: float):
    """One worker's search from the root below ``best`` (``oracles.window.engine``)."""
    return InProcess().run(t, (Nodes.root(t).states,), best, Budget.unlimited())


def _exact_expectation(t, best, width, proxy):
    """E[estimate] of one run over every outcome of its draws: at each level the outcome of the
    systematic draw is constant between the offsets u where a draw position crosses a
    cumulative sum (u = frac(width c_i / Q)), so the expectation is a finite sum."""
    T = t.threshold(best)

    def expect(nodes) -> float:
        if nodes.level >= t.d or not len(nodes.C):
            return 0.0
        kids = children(t, nodes, T)
        here = float(kids.weight.sum())
        if kids.level == t.d or not len(kids.C):
            return here
        slack = T - kids.lb
        h = proxy(slack, kids.level, t)
        if len(kids.C) <= width:
            return here + expect(kids)
        q = (kids.weight * h)[np.argsort(slack, kind="stable")]
        cuts = np.sort(np.concatenate([[0.0, 1.0], np.mod(width * np.cumsum(q) / q.sum(), 1.0)]))
        total = 0.0
        for a, b in itertools.pairwise(cuts):
            if b - a > 1e-12:
                idx, weight = resample(kids.weight, slack, h, width, (a + b) / 2)
                total += (b - a) * expect(kids.take(idx, weight))
        return here + total

    return expect(_start(t, None, T))


@pytest.mark.parametrize("width", [1, 2])
@pytest.mark.parametrize("proxy", ["flat", "slack"])
@pytest.mark.parametrize("seed", [4, 7])
def test_the_estimate_is_unbiased_exactly_over_every_draw(seed, proxy, width):
    t, _, out = _searched(fuzz_instance, seed)
    expected = _exact_expectation(t, out.value, width, PROXIES[proxy])
    assert expected == pytest.approx(count_tree(t, out.value), rel=1e-9)


def test_knuths_probe_enumerated_path_by_path_is_unbiased():
    """Width 1 is Knuth's probe: one child a level, taken with probability q_i / Q and weighted
    by 1 / that; summed over every root-to-leaf path with its probability."""
    t, _, out = _searched(fuzz_instance, 7)
    T = t.threshold(out.value)
    h = PROXIES["slack"]

    def paths(nodes, prob, weight):
        kids = children(t, nodes, T)
        est = weight * len(kids.C)
        if kids.level == t.d or not len(kids.C):
            yield prob, est
            return
        p = selection_probabilities(np.ones(len(kids.C)), h(T - kids.lb, kids.level, t))
        for i in range(len(kids.C)):
            one = np.array([i])
            for pr, rest in paths(kids.take(one, np.array([1.0])), prob * p[i], weight / p[i]):
                yield pr, est + rest

    outcomes = list(paths(_start(t, None, T), 1.0, 1.0))
    assert sum(p for p, _ in outcomes) == pytest.approx(1.0)
    assert len(outcomes) > 3  # a real choice of paths
    mean = sum(p * e for p, e in outcomes)
    assert mean == pytest.approx(count_tree(t, out.value), rel=1e-9)


def test_systematic_draws_are_proportional_to_q_on_average():
    q = np.array([0.5, 3.0, 0.1, 1.4, 2.0])
    us = (np.arange(10_000) + 0.5) / 10_000
    mean = np.mean([systematic_counts(q, 3, u) for u in us], axis=0)
    np.testing.assert_allclose(mean, 3 * q / q.sum(), atol=1e-3)
    assert all(systematic_counts(q, 3, u).sum() == 3 for u in (0.0, 0.3, 0.999999))


def test_a_tree_within_the_width_is_counted_exactly_with_no_spread():
    t, _, out = _searched(fuzz_instance, 4)
    est = estimate_tree(t, out.value, rng=np.random.default_rng(0), width=10_000)
    assert est.exact and est.runs == 1
    assert est.nodes == est.low == est.high == count_tree(t, out.value)
    assert sum(est.per_level) == est.nodes


@pytest.mark.parametrize("seed", range(6))
def test_the_estimate_lands_near_the_searchs_count_on_random_instances(seed):
    """Width 2 (so the draws act), 200 runs: the mean within 15% of the count (stated error
    rate: the runs' standard error is under 4% of it on these seeds, fixed)."""
    t, _, out = _searched(fuzz_instance, seed)
    truth = count_tree(t, out.value)
    est = estimate_tree(t, out.value, rng=np.random.default_rng(seed), width=2, runs=200)
    assert est.nodes == pytest.approx(truth, rel=0.15)
    assert est.low <= truth <= est.high or est.exact
    assert est.probes > 0 and est.seconds >= 0


def test_an_estimate_below_the_root_bound_is_an_empty_tree():
    t, _, _ = _searched(fuzz_instance, 4)
    root = Nodes.root(t).lb[0] + t.const
    est = estimate_tree(t, root - 1e6, rng=np.random.default_rng(0))
    assert est.nodes == 0 and est.exact


def test_it_only_reads_the_tables():
    t, _, out = _searched(fuzz_instance, 7)
    before = {k: np.copy(v) for k, v in vars(t).items() if isinstance(v, np.ndarray)}
    estimate_tree(t, out.value, rng=np.random.default_rng(0), width=2, runs=3)
    for k, v in before.items():
        np.testing.assert_array_equal(getattr(t, k), v)
    again = descend(t, out.value)
    assert again.value == out.value


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"width": 0}, "width must be an integer >= 1, found 0"),
        ({"runs": 1.5}, "runs must be an integer >= 1, found 1.5"),
        ({"best": math.nan}, "best must be a number, found nan"),
    ],
)
def test_bad_arguments_are_refused_by_name(kwargs, message):
    t, _, out = _searched(fuzz_instance, 4)
    args = {"best": out.value, "rng": np.random.default_rng(0)} | kwargs
    with pytest.raises(ValueError, match=message):
        estimate_tree(t, **args)


def test_the_progress_line_says_nodes_left_and_cpu_hours():
    est = TreeEstimate(3.6e9, 2.9e9, 4.3e9, False, -1.0, 8, 1000, 1, 0.5)
    assert remaining_message(est, 6e8, 4e5) == (
        "about 3e9 nodes left (2.3e9 to 3.7e9), about 2.1 CPU-hours at 400,000 nodes/s"
    )
    small = TreeEstimate(1234.0, 1234.0, 1234.0, True, -1.0, 1, 1000, 1, 0.1)
    assert remaining_message(small, 234, 1e3) == (
        "about 1,000 nodes left, about 0.00028 CPU-hours at 1,000 nodes/s"
    )
    assert remaining_message(small, 234, None) == "about 1,000 nodes left"
    assert small.left(5000) == 0.0
    assert small.certifies_within(1.0, 1e3, made=234) and not small.certifies_within(0.5, 1e3)
    with pytest.raises(ValueError, match="rate must be > 0 nodes a second, found 0"):
        small.seconds_left(0, 0)
    assert est.to_metrics()["tree_nodes"] == 3.6e9


@pytest.mark.parametrize("seed", [0, 4, 7])
@pytest.mark.parametrize("budget", [1, 3, 8])
def test_a_running_search_has_made_plus_the_tree_below_its_open_nodes(seed, budget):
    """Stopped after ``budget`` nodes, the search's count so far plus the tree below the children
    left on its stack (``open_nodes``) is the whole tree: what 'nodes left' estimates."""
    t, _, out = _searched(fuzz_instance, seed)
    T = t.threshold(out.value)
    root = Nodes.root(t)
    state = State.empty(t.d, t.bound, len(t.sign))
    made = open_node(t, state, 0, root.states[0], root.C[0], root.P[0], root.Y[0], T)
    why, n = run(t, state, T, budget)
    made += n
    left = open_nodes(t, state)
    assert made + count_tree(t, out.value, start=left) == count_tree(t, out.value)
    est = estimate_tree(t, out.value, rng=np.random.default_rng(0), start=left)
    assert est.exact and est.nodes == count_tree(t, out.value, start=left)
    if why == DONE:
        assert not left and est.nodes == 0
