"""bench.carry_table: a solve stopped at its first limit is carried on to its total, its first
estimate kept beside it; a finished instance is read back, not solved again."""

from __future__ import annotations

import json
import math

import pytest

from bench.carry_table import HEADER, Row, line, main, solve_carried
from bench.generic_instances import sweep_instance


def test_a_hard_solve_is_carried_on_and_keeps_its_first_estimate(tmp_path):
    instance = sweep_instance("rspm", 10.0, 0, "breast_cancer")  # about 1e9 nodes
    row = solve_carried(instance, tmp_path, first=3.0, total=6.5, table="breast_cancer")
    assert not row.certified and row.attempts >= 2 and row.seconds >= 5.5
    assert not row.first_certified and math.isfinite(row.estimate_nodes)
    assert row.estimate_low <= row.estimate_nodes <= row.estimate_high
    assert row.nodes_after_first > 0 and row.nodes > row.nodes_after_first
    assert " no " in line(row) and "nodes" in line(row)


def test_cpu_limits_give_the_search_its_cpu_seconds_whatever_the_load(tmp_path):
    instance = sweep_instance("rspm", 10.0, 1, "breast_cancer")
    row = solve_carried(instance, tmp_path, first=2.0, total=4.0, table="breast_cancer", cpu=True)
    assert not row.certified and row.attempts >= 2
    assert 3.0 <= row.cpu_seconds <= 4.0 + 2.0  # the last attempt's node limit, at its own rate
    assert row.seconds >= row.cpu_seconds * 0.95 and math.isfinite(row.estimate_nodes)


def test_an_easy_solve_certifies_at_once_and_a_rerun_reads_it_back(tmp_path, capsys):
    argv = ["--state", str(tmp_path), "--tables", "crime", "--epsilon", "1", "--runs", "1"]
    assert main([*argv, "--first", "30", "--total", "60"]) == 0
    (text,) = (tmp_path / "results.jsonl").read_text().splitlines()
    row = Row(**json.loads(text))
    assert row.certified and row.first_certified and row.attempts == 1
    first = capsys.readouterr().out
    assert HEADER.splitlines()[0] in first and "certified at once" in first
    assert main([*argv, "--first", "30", "--total", "60"]) == 0  # read back, not solved again
    assert (tmp_path / "results.jsonl").read_text().splitlines() == [text]


def test_the_limits_are_checked(tmp_path):
    with pytest.raises(SystemExit):
        main(["--state", str(tmp_path), "--first", "10", "--total", "5"])
