"""oracles.contract.progress: the channel (fake clock), and real solves that report while they run and
return exactly what they return without a listener."""

from __future__ import annotations

import math
import time

import numpy as np
import pytest

from core.problem import Problem
from oracles.contract import progress
from oracles.contract.certificate import Status
from oracles.contract.progress import Price, SolveProgress, listening, reporter
from tests.oracles.oracle_contract import hard_instance
from tests.oracles.limited import limited


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


# --- the channel -----------------------------------------------------------------------------


def test_without_a_listener_a_reporter_is_inactive_and_silent():
    r = reporter("solve", "highs")
    assert not r.active and not r.due()
    r.report(1.0, 0.0, force=True)  # nothing to call, nothing raised


def test_reports_are_throttled_to_one_per_interval():
    clock, seen = Clock(), []
    with listening(seen.append, interval=5.0):
        r = reporter("opdisc", "highs", clock=clock)
        assert r.active
        r.report(10.0, 1.0)  # at 0 s: the first interval has not passed
        clock.now += 4.9
        r.report(9.0, 2.0)
        assert seen == [] and not r.due()
        clock.now += 0.1
        assert r.due()
        r.report(8.0, 3.0)
        clock.now += 1.0
        r.report(7.0, 4.0)  # 1 s after the last report: dropped
        r.report(6.5, 4.5, force=True)  # forced: passed on
    assert seen == [
        SolveProgress("opdisc", "highs", 5.0, 8.0, 3.0),
        SolveProgress("opdisc", "highs", 6.0, 6.5, 4.5),
    ]
    assert seen[0].gap == 5.0
    assert not reporter("after", "highs").active  # the block ended: nobody listens


def test_solver_infinities_are_missing_values_and_the_gap_is_infinite():
    clock, seen = Clock(), []
    with listening(seen.append, interval=0.0):
        r = reporter("x", "gurobi", clock=clock)
        r.report(1e100, -1e100)
        r.report(float("inf"), float("nan"))
        r.report("not a number", None)
    assert all(p.incumbent == math.inf and p.bound == -math.inf for p in seen)
    assert len(seen) == 3 and seen[0].gap == math.inf


def test_listeners_nest_and_the_innermost_is_in_force():
    outer, inner = [], []
    with listening(outer.append, interval=0.0):
        with listening(inner.append, interval=0.0):
            reporter("a", "b").report(1.0, 0.0)
        reporter("c", "d").report(1.0, 0.0)
    assert [p.label for p in inner] == ["a"] and [p.label for p in outer] == ["c"]


def test_a_failing_listener_is_silenced_not_raised(caplog):
    calls = []

    def broken(p):
        calls.append(p)
        raise ConnectionError("driver gone")

    with listening(broken, interval=0.0):
        r = reporter("opdisc", "highs")
        r.report(1.0, 0.0)
        r.report(1.0, 0.0)  # silenced after the first failure
        assert not r.active
    assert len(calls) == 1
    assert "progress listener failed" in caplog.text


@pytest.mark.parametrize("interval", [-1.0, math.inf, math.nan, "5", True])
def test_the_interval_is_checked_with_its_value_quoted(interval):
    with pytest.raises(ValueError, match="interval must be a finite number >= 0, found"):
        with listening(lambda p: None, interval=interval):
            pass


def test_a_listener_must_be_callable():
    with pytest.raises(TypeError, match="listener must be callable, found 3"):
        with listening(3):
            pass


def test_guarded_swallows_what_the_callback_raises():
    def boom(*args):
        raise RuntimeError("no")

    assert progress.guarded(boom)(1, 2) is None


# --- real solves -----------------------------------------------------------------------------


def slow_instance(n: int = 200, d: int = 6, seed: int = 7) -> Problem:
    """``contract.hard_instance`` made smaller: HiGHS certifies it in 2.5 to 4 s (one thread,
    one core of a 2-core VM), Gurobi in about 1 s; at n = 130 HiGHS takes about 1.3 s."""
    return hard_instance(d, seed, n=n, noise=20.0, norm_coef=-10.0, label="slow")


def same_answer(a, b, *, extra: bool = True) -> None:
    """The same w and certificate, but for the times (and, with ``extra`` False, for the
    certificate's extra: a search that starts from a timed grid search records a different
    incumbent and node count on a loaded machine, and proves the same minimum)."""
    np.testing.assert_array_equal(a.w, b.w)
    ca, cb = a.certificate, b.certificate
    for name in (
        "status",
        "objective",
        "bound",
        "backend",
        "threads",
        "fallback",
        "message",
        "solver_objective",
    ):
        assert getattr(ca, name) == getattr(cb, name), name
    if not extra:
        return
    timeless = {k: v for k, v in ca.stats_dict().items() if not k.endswith("seconds")}
    assert timeless == {k: v for k, v in cb.stats_dict().items() if not k.endswith("seconds")}


def _solve_with_and_without(oracle, problem, interval):
    seen = []
    with listening(seen.append, interval=interval):
        heard = oracle.solve(problem, oracle.budget())
    return oracle.solve(problem, oracle.budget()), heard, seen


def test_a_highs_solve_reports_while_it_runs_and_returns_the_same_answer():
    from oracles.mip.highs import HighsOracle

    plain, heard, seen = _solve_with_and_without(
        limited(HighsOracle(), 120.0), slow_instance(n=130), interval=0.1
    )
    # the premise: the solve lasts several reporting intervals
    assert plain.certificate.status is Status.OPTIMAL and plain.certificate.seconds > 0.5
    same_answer(plain, heard)
    finite = [p for p in seen if math.isfinite(p.incumbent) and math.isfinite(p.bound)]
    assert finite, seen
    assert all(p.label == "slow" and p.backend == "highs" for p in seen)
    assert all(p.bound <= p.incumbent + 1e-6 for p in finite)
    assert [p.elapsed for p in seen] == sorted(p.elapsed for p in seen)
    # the model's bound never exceeds the certified minimum
    assert max(p.bound for p in finite) <= plain.certificate.objective + 1e-6


@pytest.mark.parametrize("where", ["listener", "reporter"])
def test_a_failing_channel_does_not_fail_a_highs_solve(where, monkeypatch):
    """An exception inside a HiGHS callback would end the solve with kSolveError: neither a
    listener that raises nor a reporter that does (``guarded``) may reach HiGHS."""
    from oracles.mip.highs import HighsOracle

    def broken(*args, **kwargs):
        raise RuntimeError("channel down")

    if where == "reporter":
        monkeypatch.setattr(progress.Reporter, "report", broken)
    oracle, problem = limited(HighsOracle(), 60.0), slow_instance(n=60)
    with listening(broken, interval=0.0):
        heard = oracle.solve(problem, oracle.budget())
    same_answer(oracle.solve(problem, oracle.budget()), heard)
    assert heard.certificate.certified


def test_a_gurobi_solve_reports_nothing_and_returns_the_same_answer():
    """No callback inside Gurobi (oracles.mip.gurobi: a Python callback at every event slows the
    solve down when other Python threads run)."""
    from oracles.mip.gurobi import GurobiOracle
    from tests.oracles.licence import require_gurobi_licence

    require_gurobi_licence()
    oracle = limited(GurobiOracle(), 60.0)
    plain, heard, seen = _solve_with_and_without(oracle, slow_instance(), interval=0.05)
    same_answer(plain, heard)
    assert plain.certificate.certified
    assert seen == []


def test_the_structured_search_reports_its_incumbent_and_bound():
    from oracles.structured.oracle import StructuredOracle
    from tests.oracles.structured.test_oracle import medium_instance

    problem = medium_instance(1)
    plain, heard, seen = _solve_with_and_without(
        limited(StructuredOracle(), 120.0), problem, interval=0.0
    )
    assert plain.certificate.backend == "structured" and plain.certificate.certified
    same_answer(plain, heard)
    assert seen and all(p.backend == "structured" for p in seen)
    assert all(math.isfinite(p.incumbent) for p in seen)  # w = 0 is the first incumbent
    assert seen[-1].incumbent >= plain.certificate.objective - 1e-9
    assert all(p.bound <= plain.certificate.objective + 1e-6 for p in seen)


def test_the_window_search_reports_its_best_and_a_valid_bound(monkeypatch):
    from oracles.window import engine
    from oracles.window import oracle as window
    from oracles.window.oracle import WindowOracle

    monkeypatch.setattr(window, "ESTIMATE_EVERY", 0.0)  # its cost to certify at every report
    monkeypatch.setattr(engine, "WORKER_CHUNK", 50)  # a look at the pool every 50 nodes

    # weak noise, d = 8: the search runs for a fraction of a second
    problem = hard_instance(8, 7, label="weak")
    oracle = limited(WindowOracle(search_seconds=0.05), 120.0)
    plain, heard, seen = _solve_with_and_without(oracle, problem, interval=0.0)
    assert plain.certificate.certified
    same_answer(plain, heard, extra=False)
    assert seen and all(p.backend == "window" for p in seen)
    assert all(p.incumbent >= plain.certificate.objective - 1e-9 for p in seen)
    assert all(p.bound <= plain.certificate.objective + 1e-9 for p in seen)
    assert all(p.bound <= p.incumbent for p in seen)
    notes = [p.note for p in seen if p.note]
    assert notes and all(n.startswith("to certify: about ") and "CPU-hours" in n for n in notes)
    # the note's cost as numbers (the sweep's ETA reads them): the same CPU-hours, a high end
    # at least as dear, the search's CPU share a wall second
    priced = [p for p in seen if p.note]
    assert all(p.price is not None for p in priced)
    for p in priced:
        hours = p.note.split(", about ")[1].split(" CPU-hours")[0]
        assert f"{p.price.cpu_seconds / 3600.0:.2g}" == hours
        assert p.price.cpu_seconds_high >= p.price.cpu_seconds >= 0.0
        assert 0.0 < p.price.cpu_share <= 1.0  # one worker: one CPU at most


class _CoarseClock:
    """``time`` as a machine whose process CPU clock moves in steps of 0.1 s (CI's did): the
    wall clock is the real one."""

    def __init__(self) -> None:
        self.cpu = 0.0

    def perf_counter(self) -> float:
        return time.perf_counter()

    def process_time(self) -> float:
        self.cpu += 0.1
        return self.cpu


def test_a_coarse_cpu_clock_does_not_give_a_search_more_than_its_one_cpu(monkeypatch):
    """CI: 0.107 CPU s in 4.8 ms of wall read as a share of 22 CPUs, which would put the run's
    wall time left at a 22nd of its CPU time left."""
    from oracles.window import engine
    from oracles.window import oracle as window
    from oracles.window.oracle import WindowOracle

    monkeypatch.setattr(window, "ESTIMATE_EVERY", 0.0)
    monkeypatch.setattr(engine, "WORKER_CHUNK", 50)
    monkeypatch.setattr(window, "time", _CoarseClock())
    problem = hard_instance(8, 7, label="weak")
    _, _, seen = _solve_with_and_without(
        limited(WindowOracle(search_seconds=0.05), 120.0), problem, interval=0.0
    )
    shares = [p.price.cpu_share for p in seen if p.price is not None]
    assert shares and all(0.0 < share <= 1.0 for share in shares)


@pytest.mark.parametrize(
    "cpu, high, share",
    [
        (-1.0, 1.0, 1.0),
        (1.0, math.inf, 1.0),
        (1.0, 1.0, math.nan),
        (2.0, 1.0, 1.0),
        ("1", 1.0, 1.0),
    ],
)
def test_a_price_is_finite_non_negative_and_its_high_end_not_below_it(cpu, high, share):
    with pytest.raises(ValueError, match="cpu_seconds|cpu_share"):
        Price(cpu, high, share)


def test_a_price_in_wall_seconds_is_at_the_solve_s_cpu_share_at_least_the_least():
    assert Price(10.0, 20.0, 0.5).wall_seconds_high(0.05) == pytest.approx(40.0)
    assert Price(10.0, 20.0, 0.0).wall_seconds_high(0.05) == pytest.approx(400.0)
