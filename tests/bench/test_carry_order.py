"""bench.carry_order: the runs it carries on, its figures per order, and the launch-order
driver replacing the one name the sweep orders its carried runs by."""

from __future__ import annotations

import pandas as pd
import pytest

import pipeline.sweep.fan_out
from bench import carry_order


def _results(path, rows):
    pd.DataFrame(rows).to_csv(path / "results.csv", index=False)


def test_the_carried_runs_are_those_left_uncertified_and_counted_per_cpu_hour(tmp_path):
    first = tmp_path / "first"
    first.mkdir()
    _results(
        first,
        [
            {"key": "a/run=0", "oracle_certified": "no"},
            {"key": "a/run=1", "oracle_certified": "yes"},
            {"key": "b/run=0", "oracle_certified": "no oracle"},
            {"key": "a/run=2", "oracle_certified": "no"},
        ],
    )
    keys = carry_order.carried_keys(first)
    assert keys == ["a/run=0", "a/run=2"]
    out = tmp_path / "cheapest"
    out.mkdir()
    _results(
        out,
        [
            {
                "key": "a/run=0",
                "oracle_certified": "yes",
                "start_time_ms": 11_000,
                "wall_seconds": 30.0,
                "oracle_cpu_seconds": 40.0,
            },
            {
                "key": "a/run=2",
                "oracle_certified": "no",
                "start_time_ms": 10_000,
                "wall_seconds": 600.0,
                "oracle_cpu_seconds": 700.0,
            },
            {
                "key": "a/run=1",  # not carried on: not counted
                "oracle_certified": "yes",
                "start_time_ms": 0,
                "wall_seconds": 1.0,
                "oracle_cpu_seconds": 1.0,
            },
        ],
    )
    got = carry_order.figures(out, keys, wall=900.0, cpus=2, began_ms=10_000.0)
    assert got["carried"] == 2 and got["certified"] == 1
    assert got["oracle_cpu_s"] == 740.0 and got["machine_cpu_h"] == pytest.approx(0.5)
    assert got["certified_per_cpu_h"] == 2.0 and got["certified_at_s"] == [31.0]


def test_the_launch_order_driver_replaces_a_name_the_sweep_has():
    assert callable(pipeline.sweep.fan_out.carry_order)  # what LAUNCH_ORDER_DRIVER replaces
    assert "s.carry_order = " in carry_order.LAUNCH_ORDER_DRIVER
