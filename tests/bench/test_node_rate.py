"""bench.node_rate: two kernels' searches of the same first nodes, a kernel loaded from its
source, the engine's search on a node limit against the old main's engine in its child process,
and the refusal of a commit that has no kernel or no engine."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from bench.node_rate import (
    OldEngine,
    Searched,
    compare,
    compare_engines,
    engine_search,
    kernel_source,
    load_kernel,
    same_search,
    search,
)
from oracles.contract.budget import Budget
from oracles.window import kernel as branch_kernel
from oracles.window.minorant import tightened_decomposition
from oracles.window.plan import plan
from oracles.window.tree import build_tables
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


def test_the_engine_stops_at_its_nodes_and_ends_with_the_minimum():
    start = plan(fuzz_instance(5), Budget.unlimited(), search_seconds=0.0)
    t = start.tables
    whole = engine_search(t, start.units, start.incumbent, 10**7)
    assert whole.nodes > 10 and whole.least_left == math.inf  # searched to the end
    part = engine_search(t, start.units, start.incumbent, whole.nodes // 2)
    assert whole.nodes // 2 <= part.nodes < whole.nodes and math.isfinite(part.least_left)


@pytest.mark.integration  # a child process, and the old kernel compiled afresh (about 30 s)
def test_the_old_mains_engine_makes_the_same_search_in_its_child():
    """The default base's ``descend`` (commit a9f9241), run from its own files, searches the
    tables built here as this checkout's engine does: the same nodes, leaves and least value."""
    start = plan(fuzz_instance(3), Budget.unlimited(), search_seconds=0.0)
    old = OldEngine("a9f9241")
    try:
        assert old.imported_from.startswith(str(old.folder))
        best = compare_engines(start.tables, start, old, nodes=10**6, repeats=1)
    finally:
        old.close()
    assert not old.folder.exists()
    assert best["this"].nodes > 1 and same_search(best["base"], best["this"])


def test_a_commit_without_the_engine_is_refused():
    with pytest.raises(SystemExit, match="cannot read the files of commit"):
        OldEngine("no-such-commit-anywhere")
