"""bench.node_rate: two kernels' searches of the same first nodes, a kernel loaded from its
source, and the refusal of a commit that has no kernel."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.node_rate import Searched, compare, kernel_source, load_kernel, search
from oracles.window import kernel as branch_kernel
from oracles.window.tree import build_tables
from oracles.window.minorant import tightened_decomposition
from tests.oracles.fuzz import fuzz_instance


def _tables(seed: int):
    problem = fuzz_instance(seed)
    tight, _, prune = tightened_decomposition(problem, float("inf"), 0)
    return build_tables(problem, tight, prune)


def test_a_kernel_loaded_from_its_source_makes_the_same_tree(tmp_path):
    source = Path(branch_kernel.__file__).read_text()
    copy = load_kernel(source, "branch_kernel_copy_for_test", tmp_path)
    assert copy is not branch_kernel
    t = _tables(3)
    T = float(t.comp[0, 0]) + 50.0
    best = compare(t, T, {"this": branch_kernel, "copy": copy}, nodes=10**6, repeats=1)
    assert best["this"].nodes == best["copy"].nodes > 1
    assert best["this"].leaves == best["copy"].leaves > 0
    assert best["this"].least_left == best["copy"].least_left


def test_a_search_stops_at_its_nodes_and_counts_them():
    t = _tables(5)
    whole = search(branch_kernel, t, float("inf"), 10**7)
    assert whole.nodes > 10 and whole.least_left == math.inf  # searched to the end
    part = search(branch_kernel, t, float("inf"), whole.nodes // 2)
    assert whole.nodes // 2 <= part.nodes < whole.nodes and math.isfinite(part.least_left)
    assert Searched(10, 0, 0.0, 2.0).rate == 5.0


def test_a_commit_without_the_kernel_is_refused():
    with pytest.raises(SystemExit, match="cannot read the kernel of commit"):
        kernel_source("no-such-commit-anywhere")
