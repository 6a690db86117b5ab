"""pipeline.progress without a cluster: the ETA rule, the board, forwarding from a task, and
the progress line with its block of running solves (a fake clock, as in test_sweep_units)."""

from __future__ import annotations

import io
import math
import types

import pytest

from oracles.progress import SolveProgress, reporter
from pipeline import progress as pp
from pipeline.progress import (
    BoardEntry,
    Channel,
    Progress,
    ProgressBoard,
    estimate_eta,
    left_of_running,
    reporting,
    running_line,
)
from pipeline.tasks import RunKey


class Clock:
    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now

    def monotonic(self) -> float:
        return self.now


@pytest.fixture
def clock(monkeypatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(pp, "time", fake)
    return fake


# --- the ETA rule ----------------------------------------------------------------------------


def test_a_running_run_has_its_typical_duration_left_then_its_overrun_up_to_the_limit():
    assert left_of_running(10.0, typical=30.0, limit=600.0) == 20.0
    assert left_of_running(30.0, typical=30.0, limit=600.0) == 0.0  # continuous at typical
    assert left_of_running(100.0, typical=30.0, limit=600.0) == 70.0  # the overrun again
    assert left_of_running(400.0, typical=30.0, limit=600.0) == 200.0  # but not past the limit
    assert left_of_running(700.0, typical=30.0, limit=600.0) == 0.0
    assert left_of_running(50.0, typical=30.0, limit=None) == 20.0


def test_eta_counts_pending_runs_at_their_mechanism_typical_duration_over_the_slots():
    eta = estimate_eta(
        finished=[("fast", 2.0), ("fast", 4.0), ("slow", 100.0)],
        running=[],
        pending=["fast", "slow", "slow", "new"],
        slots=2,
    )
    # fast 3, slow 100 twice, an unseen mechanism the overall mean 106 / 3
    assert eta == pytest.approx((3.0 + 200.0 + 106.0 / 3) / 2)


def test_a_long_running_solve_lengthens_the_eta_instead_of_being_ignored():
    """The issue's case: fast runs finished, one solve far past the typical duration. Counting
    finished runs alone says a few seconds; the running solve says minutes."""
    finished = [("opdisc", 20.0)] * 5
    ignoring = estimate_eta(finished=finished, running=[], pending=[], slots=2)
    assert ignoring == 0.0
    eta = estimate_eta(
        finished=finished, running=[("opdisc", 360.0)], pending=[], slots=2, limit=600.0
    )
    assert eta == 240.0  # up to the time limit: the longest any running run has left


def test_eta_falls_back_to_throughput_then_the_limit_then_unknown():
    assert (
        estimate_eta(finished=[], running=[], pending=[None, None], slots=1, throughput=10.0)
        == 20.0
    )
    assert (
        estimate_eta(finished=[], running=[("a", 5.0)], pending=[None], slots=1, limit=60.0)
        == 60.0 + 55.0
    )
    assert estimate_eta(finished=[], running=[("a", 5.0)], pending=[], slots=1) is None
    assert estimate_eta(finished=[], running=[], pending=[], slots=1) == 0.0


# --- the board and forwarding ----------------------------------------------------------------


def test_the_board_keeps_the_latest_report_of_each_running_task(clock):
    board = ProgressBoard()
    board.start("a")
    clock.now += 5
    board.start("b#0")
    p1 = SolveProgress("x", "highs", 4.0, 10.0, 1.0)
    p2 = SolveProgress("x", "highs", 9.0, 8.0, 2.0)
    board.report("a", p1)
    board.report("a", p2)
    board.report("zombie", p1)  # never started (or already done): dropped
    clock.now += 1
    assert board.snapshot() == [BoardEntry("a", 6.0, p2), BoardEntry("b#0", 1.0, None)]
    board.done("a")
    board.report("a", p1)  # late: after its task ended
    assert [e.tag for e in board.snapshot()] == ["b#0"]


class FakeMethod:
    def __init__(self, calls: list, name: str, fail: bool = False) -> None:
        self.calls, self.name, self.fail = calls, name, fail

    def remote(self, *args):
        if self.fail:
            raise ConnectionError("actor died")
        self.calls.append((self.name, *args))


def fake_board(fail: bool = False):
    calls: list = []
    board = types.SimpleNamespace(
        **{n: FakeMethod(calls, n, fail) for n in ("start", "report", "done")}
    )
    return board, calls


def test_a_task_reports_its_start_its_solver_and_its_end():
    board, calls = fake_board()
    with reporting(Channel(board, "opdisc/eps=1/run=0", interval=0.0)):
        reporter("opdisc", "highs").report(5.0, 1.0)
    assert [c[0] for c in calls] == ["start", "report", "done"]
    assert calls[1][1] == "opdisc/eps=1/run=0" and calls[1][2].incumbent == 5.0
    assert not reporter("after", "highs").active  # the listener is gone with the task


def test_a_task_ends_on_the_board_when_its_solve_raises():
    board, calls = fake_board()
    with pytest.raises(ValueError):
        with reporting(Channel(board, "t", interval=0.0)):
            raise ValueError("solver error")
    assert [c[0] for c in calls] == ["start", "done"]


def test_a_dead_board_never_fails_the_task():
    board, _ = fake_board(fail=True)
    with reporting(Channel(board, "t", interval=0.0)):
        r = reporter("opdisc", "highs")
        r.report(5.0, 1.0)  # the listener raises; the reporter silences it
        value = 42
    assert value == 42


def test_no_channel_no_listener():
    with reporting(None):
        assert not reporter("x", "highs").active


def test_ray_solve_many_tags_each_call_of_a_run(monkeypatch):
    from pipeline import sweep

    submitted = []

    class Task:
        def remote(self, oracle, problem, channel=None):
            submitted.append(channel)
            return ("ok", "node", 1.0)

    monkeypatch.setitem(
        __import__("sys").modules, "ray", types.SimpleNamespace(get=lambda refs: refs)
    )
    sweep.RaySolveMany(Task(), board="B", tag="opsamp/eps=1/run=0")("o", ["p1", "p2"])
    assert [c.tag for c in submitted] == ["opsamp/eps=1/run=0#0", "opsamp/eps=1/run=0#1"]
    assert all(c.board == "B" and c.interval == sweep.REPORT_EVERY for c in submitted)
    submitted.clear()
    sweep.RaySolveMany(Task(), board="B", tag="opdisc/eps=1/run=0")("o", ["p"])
    assert [c.tag for c in submitted] == ["opdisc/eps=1/run=0"]
    submitted.clear()
    sweep.RaySolveMany(Task())("o", ["p"])  # no board: the call of old, no channel
    assert submitted == [None]


# --- the progress line -----------------------------------------------------------------------


def test_running_line_shows_backend_elapsed_incumbent_bound_and_gap():
    entry = BoardEntry(
        "opdisc/eps=1/run=0", 95.4, SolveProgress("opdisc", "highs", 93.2, -123.456789, -130.2)
    )
    assert running_line(entry) == (
        "  opdisc/eps=1/run=0 95s: highs 93s incumbent -123.457 bound -130.2 gap 6.743"
    )
    empty = SolveProgress("x", "gurobi", 3.0, math.inf, -math.inf)
    assert running_line(BoardEntry("t", 3.0, empty)) == (
        "  t 3s: gurobi 3s incumbent none bound -inf gap -"
    )
    assert running_line(BoardEntry("t", 3.0)) == "  t 3s: no solver report yet"


def test_the_block_of_running_solves_and_an_eta_that_counts_them(clock):
    keys = [RunKey("dpsgd_lr", 1.0, 0), RunKey("opdisc", 1.0, 0), RunKey("opdisc", 1.0, 1)]
    stream = io.StringIO()
    progress = Progress(3, stream=stream, keys=keys, slots=2, limit=600.0, every=30.0)
    for key in keys:
        progress.started(key)
    board = [BoardEntry("dpsgd_lr/eps=1/run=0", 0.0)]
    progress.show_running(board)
    clock.now += 10
    progress.update("dpsgd_lr done", keys[0])  # its task ran 10 s since the board was read
    assert progress.finished == [("dpsgd_lr", 10.0)]
    assert not progress.due()
    clock.now += 20
    assert progress.due()
    board = [
        BoardEntry(
            "opdisc/eps=1/run=0", 300.0, SolveProgress("opdisc", "highs", 299.0, -12.5, -20.0)
        )
    ]
    progress.show_running(board)
    lines = stream.getvalue().splitlines()
    assert lines[-2].endswith("running 1, 1 waiting for a CPU or starting")
    assert lines[-1] == "  opdisc/eps=1/run=0 300s: highs 299s incumbent -12.5 bound -20 gap 7.5"
    # ETA: the running opdisc is 290 s past the typical 10 s: 290 more (within the limit);
    # the waiting one takes the typical 10; over 2 slots 150, but at least 290
    assert progress.eta() == 290.0
    assert "eta   290s" in lines[-2]


def test_the_block_goes_above_the_bar_on_a_terminal(clock, monkeypatch):
    import os
    import shutil

    class Tty(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setattr(
        shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((80, 24))
    )
    stream = Tty()
    progress = Progress(2, stream=stream, keys=[RunKey("opdisc", 1.0, 0)])
    progress.started(RunKey("opdisc", 1.0, 0))
    progress.show_running(
        [BoardEntry("opdisc/eps=1/run=0", 40.0, SolveProgress("o", "highs", 39.0, 3.0, 1.0))]
    )
    text = stream.getvalue()
    solve_line = "  opdisc/eps=1/run=0 40s: highs 39s incumbent 3 bound 1 gap 2\n"
    assert solve_line in text
    assert text.rindex("\r") > text.index(solve_line)  # the bar is redrawn below the block
    assert not text.endswith("\n")


def test_in_threads_ticks_while_a_run_goes_and_a_failing_tick_is_not_the_sweep(monkeypatch):
    import threading

    from pipeline import sweep

    ticks = threading.Semaphore(0)

    def tick():
        ticks.release()
        raise RuntimeError("board down")

    def work(key):
        return all(ticks.acquire(timeout=10) for _ in range(3))

    items = list(sweep._in_threads(["k"], 1, work, heartbeat=lambda: None, tick=tick, wait=0.01))
    assert items == [("k", True, None)]
