"""bench.adult_structured: a tiny run (one run per mechanism, the synthetic dataset in place of
Adult) that solves each problem with both codes and checks them; the base commit's modules
imported apart from this checkout's; the check that fails on objectives that differ; and the
refusal of a commit without the modules."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pytest

from bench.adult_structured import DEFAULT_BASE, Solved, base_modules, main, report
from oracles.structured import oracle as structured
from pipeline.sweep.one_run import RunKey

TINY = ["--epsilons", "1.0", "--runs", "1", "--override", "dataset=synthetic"]


def test_a_tiny_run_solves_each_problem_with_both_codes_and_they_agree(capsys):
    assert main(TINY) == 0
    out = capsys.readouterr().out
    assert "2 problems of +sweep=adult dataset=synthetic" in out
    assert "| opdisc | 1 | 1 |" in out and "| rspm_gaussian | 1 | 1 |" in out
    assert "objectives: 2 of 2 certified by both and equal within 1e-09" in out
    assert "| search_combination |" in out and "| run_highs |" in out
    assert out.count("load average") == 3  # at start, and at start and end on the last line


def test_the_base_commit_is_imported_apart_from_this_checkout(tmp_path):
    old = base_modules(DEFAULT_BASE, tmp_path)
    assert old is not structured and old.StructuredOracle is not structured.StructuredOracle
    assert not hasattr(old, "MAX_SEARCH_NODES")  # the code before the compiled search
    helpers = old.decompose.__module__, old.solve_subproblem.__module__
    assert all(name.startswith(f"base_{DEFAULT_BASE}_") for name in helpers)


def _solved(objective: float) -> Solved:
    return Solved(0.1, objective, True, np.zeros(2), {})


def test_objectives_that_differ_fail_the_run_and_points_that_differ_are_listed(capsys):
    parts = {"base": defaultdict(float), "this": defaultdict(float)}
    key = RunKey("opdisc", 1.0, 0)
    assert report([(key, _solved(1.0), _solved(1.0))], parts, "base") == 0
    assert report([(key, _solved(1.0), _solved(1.0 + 1e-6))], parts, "base") == 1
    tie = Solved(0.1, 1.0, True, np.ones(2), {})
    assert report([(key, _solved(1.0), tie)], parts, "base") == 0
    assert "released points equal in 0 of 1; different" in capsys.readouterr().out


def test_a_commit_without_the_modules_is_refused(tmp_path):
    with pytest.raises(SystemExit, match="cannot read oracles/base.py"):
        base_modules("no-such-commit-anywhere", tmp_path)
