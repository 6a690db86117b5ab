"""bench.parts_balance: on a small instance the donated parts make the one-process search's
nodes and answer, the replay's speed-up is bounded by the CPUs; the command line refuses bad
instances and counts."""

from __future__ import annotations

import re

import pytest

from bench.parts_balance import instance_spec, main, measure
from tests.pipeline.test_elastic_solve import medium_instance


def test_a_small_instance_measured_gives_the_one_process_nodes_and_answer():
    problem = medium_instance(10)  # 6.3e4 nodes: the parts search below their frontier
    lines = measure("d10", problem, [2, 4], [2, 8], chunk=100, grid_seconds=0.0)  # untimed
    assert lines[0].startswith("d10: incumbent")
    incumbent, minimum = (
        float(x) for x in re.findall(r"(?:incumbent|minimum) (-?[\d.]+)", lines[0])
    )
    rows = [line for line in lines if " parts " in line]
    assert len(rows) == 2 and all("answer same" in row for row in rows)
    for row in rows:
        ratio = float(re.search(r"nodes/one\s+([\d.]+)", row).group(1))
        # the same tree when the incumbent is the minimum; fewer nodes when a worker finds a
        # better point sooner than the one depth-first search does
        assert ratio <= 1.15, row
        if incumbent == minimum:
            assert ratio >= 0.99, row
    donations = [int(re.search(r"donations\s+([\d,]+)", r).group(1).replace(",", "")) for r in rows]
    assert sum(donations) > 0, rows  # the workers shared work
    replays = [line for line in lines if "replay" in line]
    assert len(replays) == 2
    # the makespan is at least the recorded run's nodes over the CPUs (printed rounded)
    ratio = float(re.search(r"nodes/one\s+([\d.]+)", rows[-1]).group(1))
    for cpus, row in zip((2, 8), replays):
        speedup = float(re.search(r"speed-up\s+([\d.]+)", row).group(1))
        assert 0 < speedup <= cpus / ratio + 0.1, row


def test_the_command_line_refuses_bad_instances_and_counts(capsys):
    with pytest.raises(SystemExit):
        main(["--instance", "nowhere:rspm:3:0"])
    with pytest.raises(SystemExit):
        main(["--parts", "0"])
    assert "--parts, --cpus and --chunk must be >= 1" in capsys.readouterr().err
    assert instance_spec("midwest:opdisc:10:2") == ("midwest", "opdisc", 10.0, 2)
