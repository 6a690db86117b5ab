"""pipeline.sweep.progress without a cluster: the ETA rule, the board, forwarding from a task, and
the progress line with its block of running solves (a fake clock, as in test_sweep_units)."""

from __future__ import annotations

import csv
import heapq
import io
import math
import re
import threading
import time
import types
from pathlib import Path

import pytest

from oracles.contract.progress import SolveProgress, reporter
from pipeline.sweep import progress as pp
from pipeline.sweep.progress import (
    BoardEntry,
    Channel,
    Eta,
    KindTimes,
    Progress,
    ProgressBoard,
    RunTimes,
    estimate_eta,
    eta_at,
    kind_times,
    left_of_running,
    makespan,
    reporting,
    running_line,
)
from pipeline.sweep.one_run import RunKey, launch_order

#: The smoke sweep's runs as its results.csv recorded them (key, mechanism, start, wall time).
SMOKE_TIMES = Path(__file__).with_name("smoke_sweep_times.csv")
#: ``+sweep=table`` on breast cancer (bench.generic_instances' CSV, 62 runs), recorded the same
#: way on the 2-core VM at load 3 to 8.
TABLE_TIMES = Path(__file__).with_name("table_sweep_times.csv")
#: ``+sweep=adult`` (302 runs), recorded the same way at load 2 to 5, its runs started a
#: mechanism after another (before ``pipeline.sweep.one_run.launch_order``).
ADULT_TIMES = Path(__file__).with_name("adult_sweep_times.csv")
#: Its mechanisms that call no oracle (no time limit).
NO_ORACLE = frozenset({"dpsgd_lr", "expmech", "logistic_regression"})


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


def test_eta_is_unknown_until_finished_runs_measure_what_is_left():
    """``eta 7800s`` for the first seconds of a 2-minute sweep (every run at its time limit):
    now ``?`` until every kind with runs left has a finished run, or MIN_FINISHED have."""
    assert estimate_eta(finished=[], running=[("a", 5.0)], pending=["a"], slots=2) is None
    two = [("a", 2.0), ("a", 3.0)]
    assert estimate_eta(finished=two, running=[], pending=["b"], slots=2, limit=600.0) is None
    eta = estimate_eta(finished=two, running=[], pending=["a", "a"], slots=2)
    assert eta == Eta(2.5, 3.0)  # every kind left measured: one run each on 2 slots
    three = [*two, ("a", 4.0)]
    eta = estimate_eta(finished=three, running=[], pending=["b"], slots=2, limit=600.0)
    assert eta == Eta(3.0, 600.0)  # the others' median, up to its limit
    assert estimate_eta(finished=[], running=[], pending=[], slots=1) == Eta(0.0, 0.0)
    runs = [RunTimes("a", 0.0, 10.0, 600.0), RunTimes("b", 0.0, 30.0, 600.0)]
    assert eta_at(runs, 5.0, slots=2) is None


def test_a_running_run_has_at_least_what_its_kind_takes_left():
    """A run that has run 30 s of a kind that takes 60 s has 30 s left, whatever else ended."""
    times = kind_times([60.0, 60.0, 60.0], [30.0])
    assert times == KindTimes(60.0, 60.0)
    assert left_of_running(30.0, times, limit=600.0) == (30.0, 90.0)  # up to twice 60 s
    assert left_of_running(100.0, times, limit=600.0) == (0.0, 20.0)
    assert left_of_running(130.0, times, limit=600.0) == (0.0, 470.0)  # past it: the limit
    assert left_of_running(130.0, times, limit=None) == (0.0, 130.0)  # no limit: as long again
    eta = estimate_eta(
        finished=[("a", 60.0)] * 3 + [("b", 1.0)] * 9, running=[("a", 30.0)], pending=[], slots=2
    )
    assert eta.low == 30.0


def test_running_runs_longer_than_their_kind_lengthen_it():
    """The runs that finish first are the short ones: a running run already longer than its
    kind's median counts at what it has run (a lower bound of its own duration)."""
    assert kind_times([2.0, 4.0], [60.0, 1.0]) == KindTimes(4.0, 60.0)
    assert kind_times([2.0, 4.0, 6.0], []) == KindTimes(4.0, 6.0)


def test_the_runs_to_come_are_taken_by_the_first_free_slot():
    assert makespan([], [10.0] * 4, slots=2) == 20.0
    assert makespan([30.0], [10.0] * 2, slots=2) == 30.0  # the long one alone on its slot
    assert makespan([5.0, 5.0, 5.0], [], slots=2) == 5.0  # more running than slots
    assert makespan([], [], slots=2) == 0.0


def _last_run_eta(finished, running, slots, unlimited=()):
    """The ETA with ``running`` (kind, elapsed) the last run, under a 600 s time limit that the
    ``unlimited`` kinds (calling no oracle) do not have."""
    return estimate_eta(
        finished=finished,
        running=[running],
        pending=[],
        slots=slots,
        limit=600.0,
        unlimited=unlimited,
    )


def test_the_last_run_of_a_kind_not_measured_may_end_now_or_at_its_limit():
    """The smoke sweep's case: every run done in seconds but the exact ERM's one run, which
    went on for 30 s while the ETA read ``eta 0s``/``4s``: its kind has no finished run, so
    it may end at any moment or run on to its 600 s time limit."""
    finished = [("opdisc", 3.0)] * 20
    eta = _last_run_eta(finished, ("erm_01", 10.0), slots=2)
    assert eta == Eta(0.0, 590.0) and eta.text() == "0-590s"
    eta = _last_run_eta(finished, ("expmech", 10.0), slots=2, unlimited={"expmech"})
    assert eta == Eta(0.0, 10.0)  # no limit: as long again as it has run


def test_measured_kinds_give_the_true_time_left_where_a_first_guess_was_17_times_off():
    """``eta 225s`` with 13 s left: every run planned at a duration no run had. Replayed on a
    schedule of known durations (2 slots, 10 a-runs of 10 s then 10 b-runs of 20 s), once
    both kinds have finished a run the likely end is the true time left and the range holds
    it; before that, ``?`` or a range that holds it."""
    runs, free = [], [0.0, 0.0]
    for kind, seconds in [("a", 10.0)] * 10 + [("b", 20.0)] * 10:
        slot = free.index(min(free))
        runs.append(RunTimes(kind, free[slot], free[slot] + seconds, 600.0))
        free[slot] += seconds
    end = max(free)
    for t in range(int(end)):
        eta = eta_at(runs, float(t), slots=2)
        if eta is None:
            assert t < 20  # fewer than MIN_FINISHED runs, none of kind b
            continue
        assert eta.low <= end - t <= eta.high, t
        if t >= 70:  # a b-run has finished
            assert eta.low == pytest.approx(end - t), t


def _smoke_sweep(path: Path = SMOKE_TIMES) -> list[RunTimes]:
    """The runs of ``python -m pipeline +sweep=smoke`` (2 cores; SMOKE_TIMES, its results.csv
    cut to four columns), or of another recorded sweep, on a clock that starts with the first
    run."""
    with path.open() as f:
        rows = list(csv.DictReader(f))
    first = min(int(r["start_time_ms"]) for r in rows)
    runs = []
    for r in sorted(rows, key=lambda r: int(r["start_time_ms"])):
        start = (int(r["start_time_ms"]) - first) / 1000
        limit = None if r["mechanism"] in NO_ORACLE else 600.0
        runs.append(RunTimes(r["mechanism"], start, start + float(r["wall_seconds"]), limit))
    return runs


def eta_error(eta: Eta, left: float) -> float:
    """How far the true time ``left`` is outside the ETA's range, as a factor (1: inside)."""
    return max(1.0, eta.low / max(left, 1e-9), left / max(eta.high, 1e-9))


def test_a_replayed_smoke_sweep_is_within_its_eta_at_a_quarter_half_and_three_quarters():
    """Measured on the recorded smoke sweep (26 runs on 2 cores, 42.6 s from the first start
    to the last end; the exact ERM's one run takes the last 25 s): at 25, 50 and 75 % the
    true time left (32.0, 21.3, 10.7 s) is inside the range shown (``5-1822s``, ``0-596s``,
    ``0-585s``): error factor 1.0, and so at every 0.1 s after the first 2.5 s (``?`` until 3
    runs have finished). The estimator before said ``7799s`` at 0.4 s (185 times the truth)
    and ``17s`` with 38 s left; live, ``eta 0s`` through the last run (its board read before
    that run started). The likely (low) end is no guide while a kind without a finished run
    is left (``0`` through the exact ERM's run): what no run has shown, only its time limit
    bounds."""
    runs = _smoke_sweep()
    end = max(r.end for r in runs)
    assert len(runs) == 26 and end == pytest.approx(42.6, abs=0.1)
    for share, text in ((0.25, "5-1822s"), (0.5, "0-596s"), (0.75, "0-585s")):
        now = share * end
        eta = eta_at(runs, now, slots=2)
        assert eta.text() == text and eta_error(eta, end - now) == 1.0, share
    etas = [(t / 10, eta_at(runs, t / 10, slots=2)) for t in range(int(end * 10))]
    assert max(t for t, eta in etas if eta is None) == pytest.approx(2.4)
    assert max(eta_error(eta, end - t) for t, eta in etas if eta is not None) == 1.0


def test_a_replayed_table_sweep_is_within_its_eta_to_a_second():
    """Measured on a recorded ``+sweep=table`` (breast cancer, 62 runs on 2 cores, 658 s; the
    exact ERM reference, started at 58 s, runs to its 600 s limit and ends the sweep): at 25,
    50 and 75 % the true time left (494, 329, 165 s) is the range's high end (``0-493s``,
    ``0-329s``, ``0-164s``: the reference's limit, what bounds it), and at every 0.1 s after
    the first 8.1 s (``?``) the truth lies within the range to a second or 0.5 % (the run's
    wall time is its oracle's 600 s and a fraction of a second around it, which the range does
    not count). The low end is 0 while the reference runs: nothing has shown how soon an exact
    ERM on 30 columns ends."""
    runs = _smoke_sweep(TABLE_TIMES)
    end = max(r.end for r in runs)
    assert len(runs) == 62 and end == pytest.approx(658.1, abs=0.1)
    for share, text in ((0.25, "0-493s"), (0.5, "0-329s"), (0.75, "0-164s")):
        now = share * end
        eta = eta_at(runs, now, slots=2)
        assert eta.text() == text and eta.low <= end - now <= eta.high * 1.005 + 1, share
    etas = [(t / 10, eta_at(runs, t / 10, slots=2)) for t in range(int(end * 10))]
    assert max(t for t, eta in etas if eta is None) == pytest.approx(8.0)
    for t, eta in etas:
        if eta is not None:
            assert eta.low - 1 <= end - t <= eta.high * 1.005 + 1, (t, eta.text())


def _key(text: str) -> RunKey:
    """A RunKey from its text (``opdisc/eps=0.5/run=1``)."""
    mechanism, eps, run = text.split("/")
    return RunKey(mechanism, float(eps.removeprefix("eps=")), int(run.removeprefix("run=")))


def _scheduled(keys: list[RunKey], seconds: dict[str, float], slots: int) -> list[RunTimes]:
    """The runs ``keys`` started in that order on ``slots`` slots, each taking its recorded
    ``seconds`` (a list schedule: the next run on the first free slot)."""
    free, runs = [0.0] * slots, []
    for key in keys:
        start = heapq.heappop(free)
        end = start + seconds[str(key)]
        heapq.heappush(free, end)
        limit = None if key.mechanism in NO_ORACLE else 600.0
        runs.append(RunTimes(key.mechanism, start, end, limit))
    return runs


def test_the_adult_sweep_s_eta_measures_every_kind_early_in_launch_order():
    """The Adult sweep as recorded (302 runs; opdisc's runs 2-17 s, the others' 0.4-2 s), its
    mechanisms one after another: half-way the ETA read ``948-48491s`` with 329 s left, its
    low end 2.9 times the truth, as every kind not yet run was planned at opdisc's median. The
    same runs' times in ``launch_order`` (every cell's first run early), scheduled on 2 slots:
    at 25, 50 and 75 % the truth lies in the range shown (``309-2147s``, ``211-1454s``,
    ``118-1279s`` with 508, 339 and 169 s left), and so at every second from 22 s on (``?``
    until 12 s; from 13 to 21 s, while opdisc's first runs are its only slow ones measured, the
    low end is up to 1.65 times the truth)."""
    recorded = _smoke_sweep(ADULT_TIMES)
    end = max(r.end for r in recorded)
    assert len(recorded) == 302 and end == pytest.approx(658.3, abs=0.1)
    half = eta_at(recorded, end / 2, slots=2)
    assert half.text() == "948-48491s" and eta_error(half, end / 2) > 2.8
    with ADULT_TIMES.open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["start_time_ms"]))
    seconds = {r["key"]: float(r["wall_seconds"]) for r in rows}
    runs = _scheduled(launch_order([_key(r["key"]) for r in rows]), seconds, slots=2)
    end = max(r.end for r in runs)
    for share, text in ((0.25, "309-2147s"), (0.5, "211-1454s"), (0.75, "118-1279s")):
        now = share * end
        eta = eta_at(runs, now, slots=2)
        assert eta.text() == text and eta_error(eta, end - now) == 1.0, share
    for t in range(13, int(end)):
        eta = eta_at(runs, float(t), slots=2)
        error = eta_error(eta, max(end - t, 1.0))
        assert error <= (1.7 if t < 22 else 1.0), (t, eta.text())


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
    from pipeline.sweep import fan_out as sweep

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
    # ETA: no opdisc has finished, and one run has (dpsgd_lr's 10 s is no guide to it)
    assert progress.eta() is None
    assert "eta      ?  running 1" in lines[-2]


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
    30 s while the ETA read 0 s. No run of its kind has finished: it may end at any moment or
    go on to its time limit."""
    keys = [RunKey("opdisc", 1.0, i) for i in range(3)] + [RunKey("erm_01", math.inf, 0)]
    stream = io.StringIO()
    progress = Progress(4, stream=stream, keys=keys, slots=2, limit=600.0)
    for key in keys:
        progress.started(key)
    clock.now += 3
    for key in keys[:3]:
        progress.update("opdisc done", key)
    progress.show_running([BoardEntry("erm_01/eps=inf/run=0", 5.0)])
    assert progress.eta() == Eta(0.0, 595.0)
    assert progress._line("x").endswith("eta 0-595s  x")
    clock.now += 30
    assert progress.eta() == Eta(0.0, 565.0)
    assert stream.getvalue().splitlines()[-1] == (
        "  erm_01 (non-private reference) 5s of 600s: no solver report yet"
    )


def test_a_run_started_since_the_board_was_read_is_running_not_to_come(clock):
    """Live, the smoke sweep's last run read ``eta 0s`` for its 25 s: the board had been read
    before it started, so it counted as a run to come at the others' 1 s. A run taken since
    the read counts as running from then, while a slot is free."""
    keys = [RunKey("opdisc", 1.0, i) for i in range(3)] + [RunKey("erm_01", math.inf, 0)]
    progress = Progress(4, stream=io.StringIO(), keys=keys, slots=2, limit=600.0)
    progress.show_running([])
    for key in keys[:3]:
        progress.started(key)
        progress.update("opdisc done", key)
    clock.now += 1
    progress.started(keys[3])
    clock.now += 10
    assert progress.running() == {str(keys[3]): 10.0}
    assert progress.eta() == Eta(0.0, 590.0)


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
    is the oracle's, and such a run has none (its ETA: as long again as it has run)."""
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
    eta = _last_run_eta(finished, ("expmech", 40.0), slots=1)
    assert eta == Eta(0.0, 560.0)
    eta = _last_run_eta(finished, ("expmech", 40.0), slots=1, unlimited={"expmech"})
    assert eta == Eta(0.0, 40.0)  # past twice its 10 s, but no limit: as long again


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

    from pipeline.sweep import fan_out as sweep

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


# --- the ETA live: the driver's Progress on a recorded sweep's run times ---------------------


def _recorded(path: Path, order=None) -> list[tuple[RunKey, float]]:
    """(key, seconds) of a recorded sweep's runs, in the order it started them (``order``: a
    function of the keys that reorders them, e.g. launch_order)."""
    with path.open() as f:
        rows = sorted(csv.DictReader(f), key=lambda r: int(r["start_time_ms"]))
    seconds = {r["key"]: float(r["wall_seconds"]) for r in rows}
    keys = [_key(r["key"]) for r in rows]
    return [(k, seconds[str(k)]) for k in (order(keys) if order else keys)]


def _live(
    monkeypatch, runs: list[tuple[RunKey, float]], slots: int = 2, in_flight: int = 4
) -> list[tuple[float, Eta | None, int]]:
    """The sweep as ``pipeline.sweep.fan_out.run_sweep`` drives it, on a fake clock: ``in_flight``
    driver threads take the runs in order (``Progress.started``), the cluster executes
    ``slots`` of them at once, the longest waiting first, each for its recorded seconds; the
    board of the executing runs is read every PROGRESS_EVERY seconds (``show_running``), and
    each run's end is a progress line (``update``). Returns (time, ETA shown, runs done) of
    every progress line, and the sweep's end last as (end, None, total)."""
    clock = Clock(0.0)
    monkeypatch.setattr(pp, "time", clock)
    oracle_free = {k.mechanism for k, _ in runs if k.mechanism in NO_ORACLE}
    progress = Progress(
        len(runs),
        io.StringIO(),
        keys=[k for k, _ in runs],
        slots=slots,
        limit=600.0,
        unlimited=oracle_free,
    )
    seconds = {str(k): s for k, s in runs}
    todo, taken, waiting = list(runs), 0, []
    executing: dict[str, tuple[float, float]] = {}  # key -> (start, end)
    lines: list[tuple[float, Eta | None, int]] = []
    next_read = pp.PROGRESS_EVERY

    def take() -> None:
        nonlocal taken
        while todo and taken < in_flight:
            key, _ = todo.pop(0)
            taken += 1
            progress.started(key)
            waiting.append(str(key))
        while waiting and len(executing) < slots:
            key = waiting.pop(0)
            executing[key] = (clock.now, clock.now + seconds[key])

    take()
    while executing:
        key, (_, end) = min(executing.items(), key=lambda item: item[1][1])
        while next_read <= end:  # the block of running solves, between two ends
            clock.now = next_read
            board = [BoardEntry(k, clock.now - s, None) for k, (s, _) in executing.items()]
            progress.show_running(board)
            lines.append((clock.now, progress.eta(), progress.done))
            next_read += pp.PROGRESS_EVERY
        clock.now = end
        del executing[key]
        taken -= 1
        progress.update("done", _key(key))
        lines.append((clock.now, progress.eta(), progress.done))
        take()
    return [*lines, (clock.now, None, len(runs))]


def _held(lines, total: int) -> tuple[int, int, list[str]]:
    """Of the progress lines after the first 10 % of runs (and before the last), how many show
    a range that holds the true time left (to 1 s: the recorded seconds are a run's own, a
    line's clock is the driver's), of how many; and the ones that do not."""
    end = lines[-1][0]
    judged = [(t, eta) for t, eta, done in lines[:-1] if done >= 0.1 * total and done < total]
    missed = [
        f"{t:.0f}s: eta {eta.text().strip() if eta else '?'} with {end - t:.0f}s left"
        for t, eta in judged
        if eta is None or not eta.low - 1 <= end - t <= eta.high + 1
    ]
    return len(judged) - len(missed), len(judged), missed


@pytest.mark.parametrize(
    "path, order, count",
    [
        (SMOKE_TIMES, None, 26),
        (TABLE_TIMES, None, 62),
        (ADULT_TIMES, launch_order, 302),
    ],
    ids=["smoke", "table", "adult"],
)
def test_the_live_eta_holds_the_true_time_left_at_95_percent_of_its_lines(
    path, order, count, monkeypatch
):
    """Issue 45, item 11: live (4 runs in flight on 2 slots, the board read every 30 s) a run's
    wait for a slot was counted as its own time. Driven this way on the recorded Adult sweep
    (launch order), the range held the true time left at 22 of 291 lines before (``849-1553s``
    with 603 s left: its low end near twice the truth, as the issue saw live), 291 of 291 now;
    the recorded smoke and table sweeps hold at every line either way. The requirement: the
    truth inside the range at >= 95 % of the progress lines after the first 10 % of runs."""
    runs = _recorded(path, order)
    assert len(runs) == count
    lines = _live(monkeypatch, runs)
    held, judged, missed = _held(lines, count)
    assert judged >= 0.8 * count
    assert held >= 0.95 * judged, (held, judged, missed[:10])
