"""bench.tree_size: one tiny instance measured end to end (the search's nodes against the
estimates, which count a tree this small exactly), the summary's ratios and shares, and the
command line's families and output."""

from __future__ import annotations

import argparse

import pytest

from bench.generic_instances import make_instance
from bench.tree_size import Measured, family, line, main, measure, summary, within
from oracles.window.tree_size import TreeEstimate
from tests.bench.conftest import TINY_ROWS


def test_a_tiny_instance_is_measured_and_its_tree_counted_exactly():
    inst = make_instance("opdisc", 1.0, 0, rows=TINY_ROWS)
    r = measure(inst, limit=30.0, grid_seconds=0.1, width=100, runs=2)
    assert r.finished and r.value <= r.incumbent
    assert r.at_tenth is not None and r.at_tenth.exact  # a tree within the width: counted
    # the search below the incumbent makes at least the tree below the minimum
    assert r.at_tenth.nodes <= r.nodes
    assert r.preflight.best == r.incumbent and r.cpu >= r.cpu_seconds >= 0
    stopped = measure(inst, limit=-1.0, grid_seconds=0.1, width=100, runs=2)  # past its limit
    assert not stopped.finished and stopped.at_tenth is None and stopped.at_stop is not None
    assert stopped.at_stop.nodes == r.at_tenth.nodes  # the same tree, counted exactly
    assert "stopped: about" in line("tiny", stopped)
    survey = measure(inst, limit=30.0, grid_seconds=0.1, survey=True)
    assert not survey.finished and survey.at_tenth is None and survey.nodes == 0
    assert line("tiny", survey).split()[:4] == ["tiny", "opdisc", "eps=1", "seed=0"]


def _estimate(nodes: float) -> TreeEstimate:
    return TreeEstimate(nodes, nodes * 0.9, nodes * 1.1, False, 0.0, 8, 1000, 1, 0.1)


def _row(nodes: int, estimated: float, cpu: float) -> Measured:
    est = _estimate(estimated)
    return Measured("x", 0.0, 1.0, 1.0, est, True, 0.0, nodes, cpu, cpu, nodes // 10, 0.0, est)


def test_the_summary_counts_the_long_solves_within_a_factor_of_three():
    rows = [_row(1000, 2900, 20), _row(1000, 3100, 20), _row(1000, 400, 20), _row(10, 10, 1)]
    head, tenth, preflight = summary(rows, 10.0)
    assert head == "instances 4; ended 4; ended after at least 10 CPU s: 3"
    assert "within a factor 3: 2/3 (67%)" in tenth and tenth.startswith("at a tenth:")
    assert "nodes inside the interval: 0/3" in preflight
    assert within(3.0) and within(1 / 3) and not within(3.01)
    assert "at a tenth: about 2,800 nodes left" in line("t", rows[0])


def test_the_command_line_runs_a_family_and_refuses_a_bad_one(capsys):
    assert family("crime:rspm:10") == ("crime", "rspm", 10.0)
    with pytest.raises(argparse.ArgumentTypeError, match="found 'crime:svm:1'"):
        family("crime:svm:1")
    args = ["--family", "crime:opdisc:1", "--seeds", "0", "--survey", "--grid-seconds", "0.1"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "crime opdisc eps=1 seed=0" in out and out.count("load average") == 3
