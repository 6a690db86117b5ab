"""Solver progress through a real (small, local) Ray: a running HiGHS solve's incumbent and
bound reach the driver's board, and the sweep's progress output shows them.

One Ray of this module's own (one CPU), stopped after; each solve takes a few seconds.
"""

from __future__ import annotations

import math
import re
import threading
import time

import numpy as np
import pytest

from pipeline.data.record import Dataset
from tests.pipeline.own_ray import own_ray

pytestmark = pytest.mark.integration  # a local Ray of its own


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of this test's own (one CPU)."""
    with own_ray(1) as ray:
        yield ray


def slow_erm_data(n: int = 250, d: int = 6, seed: int = 0) -> Dataset:
    """Data whose exact 0/1 ERM takes HiGHS (the reference formulation) a few seconds: about
    3 s at n = 200 on one core of a 2-core VM."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.normal(size=(n, d)), 2)
    y = np.where(X @ rng.normal(size=d) + rng.normal(0, 1.5, n) > 0, 1, -1)
    return Dataset(features=X, labels=y, feature_names=tuple(f"x{j}" for j in range(d)))


def test_a_running_solve_reports_to_the_board(local_ray, monkeypatch):
    from mechanisms.opdisc import ExactERM
    from mechanisms.runner import run
    from oracles.routing.registry import make_oracle
    from pipeline.sweep import fan_out as sweep
    from pipeline.sweep.progress import close_board, make_board, read_board

    monkeypatch.setattr(sweep, "REPORT_EVERY", 0.2)  # read by RaySolveMany in this process
    board = make_board()
    assert board is not None
    data = slow_erm_data()
    solve_task = sweep._remote_functions(1, 1)[1]
    result: dict = {}

    def go() -> None:
        result["release"] = run(
            ExactERM(),
            data.features,
            data.labels,
            make_oracle("highs", time_limit=60.0),
            np.random.default_rng(0),
            solve_many=sweep.RaySolveMany(solve_task, board, "erm/run=0"),
        )

    thread = threading.Thread(target=go)
    thread.start()
    seen = []
    try:
        while thread.is_alive():
            seen += read_board(board) or []
            time.sleep(0.1)
        thread.join()
        after = read_board(board)
    finally:
        close_board(board)
    reports = [e.progress for e in seen if e.progress is not None]
    assert reports, seen
    assert {e.tag for e in seen} == {"erm/run=0"}
    assert any(math.isfinite(p.incumbent) and math.isfinite(p.bound) for p in reports)
    assert all(p.backend == "highs" for p in reports)
    assert after == []  # the task cleared its entry when it ended
    assert result["release"].certificates[0].certified


def test_the_sweep_prints_a_running_solve_with_incumbent_and_bound(
    local_ray, monkeypatch, capsys, tmp_path
):
    from pipeline.sweep import fan_out as sweep
    from pipeline.config import Config, OracleConfig, SweepConfig
    from pipeline.data.schema import SyntheticDatasetConfig
    from pipeline.settings_schemas import SCHEMAS
    from tests.pipeline.sweep.test_fan_out_units import FakeTracker

    monkeypatch.setattr(sweep, "PROGRESS_EVERY", 0.5)
    monkeypatch.setattr(sweep, "REPORT_EVERY", 0.2)
    config = Config(
        dataset=SyntheticDatasetConfig(n=20),
        mechanisms={"erm_01": SCHEMAS["erm_01"]()},
        oracle=OracleConfig(name="highs", time_limit=60.0),
        sweep=SweepConfig(name="progress", mechanisms=["erm_01"], epsilons=[1.0], seeds=1),
    )
    tracker = FakeTracker()
    rows, failed = sweep.run_sweep(config, slow_erm_data(), None, tracker)
    assert failed == {} and len(rows) == 1 and rows[0].oracle_certified
    err = capsys.readouterr().err
    solve_lines = re.findall(
        r"^  erm_01 \(non-private reference\) \d+s of 60s: highs \d+s incumbent (\S+) "
        r"bound (\S+) gap (\S+)$",
        err,
        flags=re.M,
    )
    assert solve_lines, err
    assert any(inc != "none" and bound != "-inf" for inc, bound, _ in solve_lines), err
    assert re.search(r"\] 0/1 elapsed +\d+s eta +\?  running 1$", err, flags=re.M), err
    assert "1/1 elapsed" in err
