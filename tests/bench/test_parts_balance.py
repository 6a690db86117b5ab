"""bench.parts_balance: on a small instance the donating workers (in process and on threads)
make the one-process search's nodes and answer, the fixed split's baseline is measured beside
them, the replay's speed-up is bounded by the CPUs; the command line refuses bad instances and
counts."""

from __future__ import annotations

import argparse
import re

import pytest

from bench.parts_balance import counts, deal, dealt, fixed_split, instance_spec, main, measure
from oracles.contract.budget import Budget
from oracles.window.plan import plan
from oracles.window.tree import Nodes
from tests.oracles.oracle_contract import hard_instance


def medium_instance(d: int = 10, seed: int = 7):
    """``tests.oracles.oracle_contract.hard_instance``'s shape at d = 10: the window search certifies
    it in about 6.3e4 nodes."""
    return hard_instance(d, seed)


def _ratio(row: str) -> float:
    return float(re.search(r"nodes/one\s+([\d.]+)", row).group(1))


def test_a_small_instance_measured_gives_the_one_process_nodes_and_answer():
    problem = medium_instance(10)
    lines = measure(
        "d10", problem, [2, 4], [2, 8], 100, 0.0, threads_list=[2], threads_chunk=1000
    )  # untimed
    assert lines[0].startswith("d10: incumbent")
    incumbent, minimum = (
        float(x) for x in re.findall(r"(?:incumbent|minimum) (-?[\d.]+)", lines[0])
    )
    rows = [line for line in lines if " parts " in line and " fixed " not in line]
    fixed = [line for line in lines if " fixed parts " in line]
    threads = [line for line in lines if " threads " in line]
    assert len(rows) == 2 and len(fixed) == 3 and len(threads) == 1
    assert all("answer same" in row for row in rows + fixed + threads)
    for row in rows + threads:
        # the same tree when the incumbent is the minimum; fewer nodes when a worker finds a
        # better point sooner than the one depth-first search does
        assert _ratio(row) <= 1.15, row
        if incumbent == minimum:
            assert _ratio(row) >= 0.99, row
    for row in fixed:  # the frontier's nodes come on top of the tree's
        if incumbent == minimum:
            assert _ratio(row) >= 0.99, row
    donations = [int(re.search(r"donations\s+([\d,]+)", r).group(1).replace(",", "")) for r in rows]
    assert sum(donations) > 0, rows  # the workers shared work
    per = re.search(r"worker nodes \[([\d, ]+)\]", threads[0]).group(1)
    assert len(per.split(", ")) == 2  # one count a thread
    replays = [line for line in lines if "replay" in line]
    assert len(replays) == 2
    # the makespan is at least the recorded run's nodes over the CPUs (printed rounded)
    ratio = _ratio(rows[-1])
    for cpus, row in zip((2, 8), replays):
        speedup = float(re.search(r"speed-up\s+([\d.]+)", row).group(1))
        assert 0 < speedup <= cpus / ratio + 0.1, row


def test_the_fixed_split_deals_every_frontier_node_once_by_bound():
    start = plan(medium_instance(8), Budget.unlimited(), search_seconds=0.0)
    units, made = dealt(start, 3)
    assert len(units) == 3 and made > 0
    states = [tuple(s) for u in units for s in u]
    assert len(states) == len(set(states)) >= 3 * 64 or units[0].shape[1] == start.tables.d
    nodes = Nodes.root(start.tables)
    assert [list(g) for g in deal(nodes, 4)] == [[0]]  # one node: one part, empties dropped
    parts, found, frontier, _ = fixed_split(start, 3)
    assert len(parts) == 3 and frontier == made and found <= start.incumbent


def test_the_command_line_refuses_bad_instances_and_counts(capsys):
    with pytest.raises(SystemExit):
        main(["--instance", "nowhere:rspm:3:0"])
    with pytest.raises(SystemExit):
        main(["--parts", "0"])
    assert "--parts, --cpus, --chunk and --thread-chunk must be >= 1" in capsys.readouterr().err
    assert instance_spec("midwest:opdisc:10:2") == ("midwest", "opdisc", 10.0, 2)
    assert counts("2,4,8") == [2, 4, 8]
    for bad in ("0,2", "two", ""):
        with pytest.raises(argparse.ArgumentTypeError):
            counts(bad)
