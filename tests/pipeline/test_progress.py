"""pipeline.progress without a cluster: the ETA rule, the board, forwarding from a task, and
the progress line with its block of running solves (a fake clock, as in test_sweep_units)."""

from __future__ import annotations

import io
import math
import re
import threading
import time
import types

import pytest

from oracles.solve_progress import SolveProgress, reporter
from pipeline import progress as pp
from pipeline.progress import (
    BoardEntry,
    Channel,
    Eta,
    Progress,
    ProgressBoard,
    estimate_eta,
    left_of_running,
    lengthened,
    reporting,
    running_line,
    typical_durations,
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


def test_a_running_run_has_its_typical_duration_left_then_anything_up_to_the_limit():
    assert left_of_running(10.0, typical=30.0, limit=600.0) == (20.0, 20.0)
    assert left_of_running(30.0, typical=30.0, limit=600.0) == (0.0, 0.0)
    # past its typical duration it may end now, or overrun as much again (up to twice it)
    assert left_of_running(45.0, typical=30.0, limit=600.0) == (0.0, 15.0)
    assert left_of_running(60.0, typical=30.0, limit=600.0) == (0.0, 30.0)
    # past twice its typical duration, it may run on to the time limit
    assert left_of_running(100.0, typical=30.0, limit=600.0) == (0.0, 500.0)
    assert left_of_running(700.0, typical=30.0, limit=600.0) == (0.0, 0.0)
    assert left_of_running(50.0, typical=30.0, limit=None) == (0.0, 20.0)  # the overrun again


def test_eta_counts_pending_runs_at_their_mechanism_typical_duration_over_the_slots():
    eta = estimate_eta(
        finished=[("fast", 2.0), ("fast", 4.0), ("slow", 100.0)],
        running=[],
        pending=["fast", "slow", "slow", "new"],
        slots=2,
    )
    # fast 3, slow 100 twice, an unseen mechanism the overall mean 106 / 3
    assert eta == Eta(pytest.approx((3.0 + 200.0 + 106.0 / 3) / 2), pytest.approx(eta.low))


def test_a_long_running_solve_widens_the_eta_to_its_time_limit():
    """The issue's case: fast runs finished, one solve far past the typical duration. Counting
    finished runs alone says 0 s; the running solve may go on to its limit."""
    finished = [("opdisc", 20.0)] * 5
    assert estimate_eta(finished=finished, running=[], pending=[], slots=2) == Eta(0.0, 0.0)
    eta = estimate_eta(
        finished=finished, running=[("opdisc", 360.0)], pending=[], slots=2, limit=600.0
    )
    assert eta == Eta(0.0, 240.0)
    assert eta.text() == "0-240s"


def test_a_run_past_the_mean_lengthens_its_mechanisms_typical_duration():
    """The runs that finish first are the short ones: a running run already longer than the
    finished ones' mean counts at what it has run, so the runs still to come are not planned
    at the short ones' mean (296 s predicted of a sweep that took 1,516 s)."""
    base, to_come = typical_durations(
        [("opdisc", 2.0), ("opdisc", 4.0), ("dpsgd", 1.0)],
        [("opdisc", 60.0), ("opdisc", 1.0), ("erm_01", 40.0), ("expmech", 0.5)],
        fallback=7.0 / 3,
    )
    assert base == {"opdisc": 3.0, "dpsgd": 1.0, "erm_01": 7.0 / 3, "expmech": 7.0 / 3}
    assert to_come["opdisc"] == pytest.approx((2.0 + 4.0 + 60.0) / 3)  # 1 s: no news
    assert to_come["dpsgd"] == 1.0
    assert to_come["erm_01"] == 40.0  # no finished run: at least what it has run
    assert to_come["expmech"] == pytest.approx(7.0 / 3)  # shorter than the fallback so far
    eta = estimate_eta(
        finished=[("opdisc", 2.0), ("opdisc", 4.0)],
        running=[("opdisc", 60.0)],
        pending=["opdisc"] * 4,
        slots=1,
        limit=600.0,
    )
    assert eta == Eta(pytest.approx(4 * 22.0), pytest.approx(4 * 22.0 + 540.0))


def test_a_mechanism_not_seen_yet_is_planned_at_the_mean_lengthened_by_long_running_runs():
    """The table sweep's case: fast mechanisms finish first, slow ones run; a mechanism that has
    not started is planned at the mean of every run, the long running ones counted."""
    finished = [("dpsgd_lr", 5.0)] * 4
    running = [("opdisc", 100.0), ("opdisc", 60.0)]
    eta = estimate_eta(finished=finished, running=running, pending=["rspm"], slots=1)
    unseen = (20.0 + 100.0 + 60.0) / 6  # 30 s, not the finished runs' 5 s
    assert eta.low == pytest.approx(unseen)  # the running opdiscs may end now
    assert lengthened([5.0] * 4, [100.0, 60.0, 1.0], 5.0) == pytest.approx(unseen)
    assert lengthened([5.0], [4.0], 5.0) == 5.0  # shorter so far: no news


def _replay(runs: list[tuple[str, float]], slots: int, t: float) -> dict:
    """(finished, running, pending) at time t of ``runs`` taken in order by ``slots`` slots."""
    free, state = [0.0] * slots, {"finished": [], "running": [], "pending": []}
    for group, seconds in runs:
        slot = min(range(slots), key=lambda j: free[j])
        start, free[slot] = free[slot], free[slot] + seconds
        if start + seconds <= t:
            state["finished"].append((group, seconds))
        elif start <= t:
            state["running"].append((group, t - start))
        else:
            state["pending"].append(group)
    return state | {"end": max(free)}


def test_a_replayed_sweep_of_fast_then_slow_mechanisms():
    """docs/sweeps.md's replay: 26 runs on 2 slots, fast mechanisms first, 917 s in all. At
    96 s the rule before said 100 s (the fast runs' mean for everything); the range now starts
    at 206 s. At the end, the exact ERM alone: its range holds the truth, 61 s."""
    runs = (
        [("dpsgd_lr", 4.0)] * 5
        + [("expmech", 3.0)] * 5
        + [("opdisc", 150.0)] * 5
        + [("rspm", 90.0)] * 5
        + [("opsamp", 20.0)] * 5
        + [("erm_01", 250.0)]
    )
    for t, text in ((96.0, "206-727s"), (856.0, "0-411s")):
        state = _replay(runs, 2, t)
        assert state["end"] == 917.0
        eta = estimate_eta(
            finished=state["finished"],
            running=state["running"],
            pending=state["pending"],
            slots=2,
            limit=600.0,
        )
        assert eta.text() == text
    assert eta.low <= 917.0 - 856.0 <= eta.high


def test_eta_falls_back_to_throughput_then_the_limit_then_unknown():
    eta = estimate_eta(finished=[], running=[], pending=[None, None], slots=1, throughput=10.0)
    assert eta == Eta(20.0, 20.0)
    eta = estimate_eta(finished=[], running=[("a", 5.0)], pending=[None], slots=1, limit=60.0)
    assert eta == Eta(60.0 + 55.0, 60.0 + 55.0)
    assert estimate_eta(finished=[], running=[("a", 5.0)], pending=[], slots=1) is None
    assert estimate_eta(finished=[], running=[], pending=[], slots=1) == Eta(0.0, 0.0)


def test_the_eta_shows_one_number_when_the_ends_are_close_else_the_range():
    assert Eta(42.0, 44.0).text() == "   42s"
    assert Eta(100.0, 124.0).text() == "  100s"  # within a quarter
    assert Eta(100.0, 130.0).text() == "100-130s"
    assert Eta(0.0, 545.0).text() == "0-545s"
    assert Eta(1.0, 9.0).text() == "  1-9s"  # as wide as one number


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
    assert lines[-1] == (
        "  opdisc/eps=1/run=0 300s of 600s: highs 299s incumbent -12.5 bound -20 gap 7.5"
    )
    # ETA: the running opdisc, 300 s in, is opdisc's typical duration so far (dpsgd_lr's 10 s
    # is no guide to it): it may end now or run to its 600 s limit, 300 s more; the waiting
    # opdisc takes 300 s. Over 2 slots: low (0 + 300) / 2, high max((300 + 300) / 2, 300)
    assert progress.eta() == Eta(150.0, 300.0)
    assert "eta 150-300s" in lines[-2]


def _eta_texts(progress: Progress, clock: Clock, seconds: float, step: float) -> list[str]:
    texts = []
    for _ in range(int(seconds / step)):
        clock.now += step
        texts.append(progress._line("x").split(" eta ")[1].split("  ")[0].strip())
    return texts


def test_the_eta_moves_while_time_passes_and_no_run_ends(clock):
    """The issue's freeze: ``eta 172s`` for 91 s. One run short of its typical duration and
    one past it (the old rule, "the overrun again", summed them to a constant); now the first
    counts down and the second heads for its limit, so the text changes at every step."""
    keys = [RunKey("dpsgd_lr", 1.0, 0)] + [RunKey("opdisc", 1.0, i) for i in range(3)]
    progress = Progress(6, stream=io.StringIO(), keys=keys, slots=2, limit=600.0)
    progress.finished = [("opdisc", 60.0), ("dpsgd_lr", 300.0)]
    progress.finished_keys = {"done", "done too"}
    progress.done = 2
    progress.started(keys[0])
    progress.started(keys[1])
    progress.show_running(  # dpsgd_lr 200 s short of its 300, opdisc past twice its 60
        [BoardEntry(str(keys[0]), 100.0), BoardEntry(str(keys[1]), 130.0)]
    )
    texts = _eta_texts(progress, clock, 91.0, 10.0)
    assert all(a != b for a, b in zip(texts, texts[1:])), texts
    highs = [int(t.rstrip("s").split("-")[-1]) for t in texts]
    assert highs == sorted(highs, reverse=True)


def test_a_solve_left_alone_after_every_other_run_is_not_eta_0(clock):
    """The smoke sweep's case: every run done in seconds but the exact ERM, which went on for
    55 s while the ETA read 0 s. Past the others' duration, it may go on to its time limit."""
    keys = [RunKey("opdisc", 1.0, 0), RunKey("erm_01", math.inf, 0)]
    stream = io.StringIO()
    progress = Progress(2, stream=stream, keys=keys, slots=2, limit=600.0)
    progress.started(keys[1])
    progress.started(keys[0])
    clock.now += 3
    progress.update("opdisc done", keys[0])
    progress.show_running([BoardEntry("erm_01/eps=inf/run=0", 5.0)])
    assert progress.eta() == Eta(0.0, 2.0)  # within twice the others' 3 s: the overrun again
    clock.now += 2
    assert progress.eta() == Eta(0.0, 593.0)  # past it: up to its limit
    assert progress._line("x").endswith("eta 0-593s  x")
    clock.now += 30
    assert progress.eta() == Eta(0.0, 563.0)
    assert stream.getvalue().splitlines()[-1] == (
        "  erm_01 (non-private reference) 5s of 600s: no solver report yet"
    )


def test_a_board_that_does_not_answer_counts_its_solves_on_and_says_so(clock):
    """``34s: no solver report yet`` twice, 195 s apart: the block showed the last snapshot's
    seconds again. They count on from when it was read, and the block says how old it is."""
    key = RunKey("opdisc", 1.0, 0)
    stream = io.StringIO()
    progress = Progress(1, stream=stream, keys=[key], limit=600.0)
    progress.started(key)
    progress.show_running([BoardEntry(str(key), 34.0)])
    assert (
        stream.getvalue().splitlines()[-1]
        == "  opdisc/eps=1/run=0 34s of 600s: no solver report yet"
    )
    clock.now += 195
    progress.show_running(None)  # the board did not answer in time
    lines = stream.getvalue().splitlines()
    assert lines[-2].endswith("running 1 (the progress board did not answer: as read 195s ago)")
    assert lines[-1] == "  opdisc/eps=1/run=0 229s of 600s: no solver report yet"


def test_a_terminal_bar_is_redrawn_between_runs_and_a_log_is_not(clock):
    tty = Tty()
    progress = Progress(2, stream=tty, keys=[RunKey("opdisc", 1.0, 0)])
    progress.update("first")
    clock.now += 7
    progress.redraw()
    assert "elapsed     7s" in tty.getvalue().rsplit("\r", 1)[-1]
    assert tty.getvalue().rsplit("\r", 1)[-1].rstrip().endswith("first")
    log = io.StringIO()
    quiet = Progress(2, stream=log)
    quiet.update("first")
    before = log.getvalue()
    quiet.redraw()
    assert log.getvalue() == before


def test_a_run_that_calls_no_oracle_has_no_time_limit_in_its_line_nor_its_eta(clock):
    """An exponential mechanism's run showed ``0s of 600s: no solver report yet``: the limit
    is the oracle's, and such a run has none (its ETA is "the overrun again")."""
    keys = [RunKey("opdisc", 1.0, 0), RunKey("expmech", 1.0, 0)]
    stream = io.StringIO()
    progress = Progress(2, stream=stream, keys=keys, limit=600.0, unlimited={"expmech"})
    for key in keys:
        progress.started(key)
    progress.show_running([BoardEntry(str(k), 40.0) for k in keys])
    assert stream.getvalue().splitlines()[-2:] == [
        "  opdisc/eps=1/run=0 40s of 600s: no solver report yet",
        "  expmech/eps=1/run=0 40s: running (calls no oracle)",
    ]
    finished = [("opdisc", 10.0), ("expmech", 10.0)]
    eta = estimate_eta(
        finished=finished, running=[("expmech", 40.0)], pending=[], slots=1, limit=600.0
    )
    assert eta == Eta(0.0, 560.0)
    eta = estimate_eta(
        finished=finished,
        running=[("expmech", 40.0)],
        pending=[],
        slots=1,
        limit=600.0,
        unlimited={"expmech"},
    )
    assert eta == Eta(0.0, 30.0)  # past twice its 10 s, but no limit: the overrun again


def test_running_lines_name_a_reference_and_each_call_of_a_run():
    keys = [RunKey("erm_01", math.inf, 0), RunKey("opsamp", 0.5, 1)]
    progress = Progress(2, stream=io.StringIO(), keys=keys)
    assert progress.name_of("erm_01/eps=inf/run=0") == "erm_01 (non-private reference)"
    assert progress.name_of("opsamp/eps=0.5/run=1#3") == "opsamp/eps=0.5/run=1#3"
    assert progress.name_of("unknown/eps=1/run=0") == "unknown/eps=1/run=0"


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


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


# --- before the runs: a slow phase says what it is doing -------------------------------------


def test_a_slow_phase_says_what_it_is_doing_every_interval_and_nothing_after():
    said: list[str] = []
    three = threading.Event()

    def say(line: str) -> None:
        said.append(line)
        if len(said) >= 3:
            three.set()

    with pp.Phase("planning sweep table", every=0.05, say=say) as phase:
        phase.now("opening the MLflow store")
        assert three.wait(timeout=10)  # a phase blocked in a slow call: three lines meanwhile
    after = len(said)
    time.sleep(0.2)
    assert len(said) == after  # ended: no more lines
    assert all(
        re.fullmatch(r"still planning sweep table \(\d+ s\): opening the MLflow store", line)
        for line in said
    ), said


def test_a_quick_phase_says_nothing_and_stopping_twice_is_once():
    said: list[str] = []
    with pp.Phase("loading and encoding the data (synthetic)", every=0.05, say=said.append) as p:
        p.stop()
        time.sleep(0.15)
    p.stop()
    assert said == []
