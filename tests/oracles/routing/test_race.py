"""The race of the window search and a rival process (oracles.routing.race, the ``portfolio`` route):
the one that certifies first stops the other, the answers are the brute force's, and a rival
that fails, is killed or never starts leaves the search's answer standing."""

from __future__ import annotations

import math
import os
import threading
import time

import pytest

from bench.generic_instances import make_instance
from oracles.routing import race
from oracles.window import oracle as window
from oracles.contract.certificate import OBJECTIVE_TOL, Status
from oracles.contract.budget import Budget, now
from oracles.routing.registry import make_oracle
from oracles.contract.stats import CarryStats, TreeStats
from oracles.window.checkpoint import CarryStore
from oracles.window.engine import InProcess
from oracles.window.oracle import WindowOracle
from tests.oracles.fuzz import brute_force, fuzz_instance
from tests.oracles.limited import on_limits


class Raises:
    """A rival route that fails in its process."""

    def solve(self, problem, budget):
        raise RuntimeError("a rival that fails")


class Sleeps:
    """A rival route that never answers in time (it writes its pid first)."""

    def __init__(self, pid_file: str) -> None:
        self.pid_file = pid_file

    def solve(self, problem, budget):
        with open(self.pid_file, "w") as out:
            out.write(str(os.getpid()))
        time.sleep(600)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("seed", range(6))
def test_the_portfolio_certifies_the_brute_force_minimum(seed):
    problem = fuzz_instance(seed)
    cert = on_limits(make_oracle("portfolio", time_limit=30, threads=2), problem).certificate
    truth = brute_force(problem)
    assert cert.certified, cert.message
    assert cert.objective - float(truth.minimum) <= OBJECTIVE_TOL
    # a small problem: the search ends within its head start, no process is started
    assert cert.fallback == "raced with auto: search first"


def test_a_stopped_shared_best_stops_the_search_within_seconds():
    problem = make_instance("rspm", 10.0, 2, table="midwest").problem  # about 6e8 nodes
    WindowOracle(search_seconds=0.1).solve(
        fuzz_instance(0), Budget.unlimited()
    )  # the kernel compiled first
    shared = race.RaceStop()
    timer = threading.Timer(4.0, shared.stop, args=("a rival certified",))
    timer.start()
    start = time.perf_counter()
    solution = WindowOracle(search_seconds=1.0).solve(
        problem, Budget.from_limit(120, 1), stop=shared
    )
    seconds = time.perf_counter() - start
    cert = solution.certificate
    assert seconds < 10.0, seconds
    assert cert.status is Status.TIME_LIMIT and not cert.certified
    assert "a rival certified" in cert.stat(TreeStats).stopped


def test_a_race_stop_says_why_once_stopped():
    shared = race.RaceStop()
    assert shared() == ""
    shared.stop("done")
    assert shared() == "done"


def test_a_rival_stopped_before_its_head_start_never_starts():
    entry = race.Entry(Raises(), fuzz_instance(0), Budget.from_limit(30))
    with race.Rival(entry, head_start=5.0) as rival:
        pass
    assert not rival.started and rival.result(until=now()) is None


@pytest.mark.integration
def test_a_rival_that_fails_contributes_nothing_and_says_why():
    entry = race.Entry(Raises(), fuzz_instance(0), Budget.from_limit(30))
    with race.Rival(entry, head_start=0.0) as rival:
        answer = rival.result(until=now() + 60)
    assert answer is None and rival.started
    assert "a rival that fails" in rival.error


@pytest.mark.integration
def test_a_rival_past_its_time_is_killed(tmp_path):
    pid_file = tmp_path / "pid"
    entry = race.Entry(Sleeps(str(pid_file)), fuzz_instance(0), Budget.from_limit(30))
    rival = race.Rival(entry, head_start=0.0)
    deadline = time.time() + 60
    while not pid_file.exists() or not pid_file.read_text():
        assert time.time() < deadline, "the rival process did not start"
        time.sleep(0.1)
    pid = int(pid_file.read_text())
    assert rival.result(until=now() + 0.5) is None
    assert not _alive(pid)


@pytest.mark.integration
@pytest.mark.parametrize("seed", range(4))
def test_a_rival_that_certifies_first_is_the_brute_forces_answer(monkeypatch, seed):
    # the search stops after its first node; the rival starts at once, certifies
    monkeypatch.setattr(race, "HEAD_START", 0.0)

    class FirstNodeOnly(InProcess):
        def run(self, tables, units, best, budget, **options):
            return super().run(tables, units, best, budget.with_nodes(1), **options)

    monkeypatch.setattr(window, "local_executor", lambda threads: FirstNodeOnly())
    problem = fuzz_instance(seed)
    solution = on_limits(make_oracle("portfolio", time_limit=60, threads=2), problem)
    cert = solution.certificate
    truth = brute_force(problem)
    assert cert.certified, cert.message
    assert cert.fallback == "raced with auto"
    assert float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL


@pytest.mark.integration
def test_the_portfolio_returns_within_its_limit_on_a_hard_problem():
    problem = make_instance("rspm", 10.0, 2, table="midwest").problem
    start = time.perf_counter()
    cert = on_limits(make_oracle("portfolio", time_limit=6, threads=2), problem).certificate
    seconds = time.perf_counter() - start
    assert not cert.certified and seconds <= 1.1 * 6 + 5, seconds
    assert cert.fallback == "raced with auto" and math.isfinite(cert.bound)


@pytest.mark.integration
@pytest.mark.parametrize("seed", [0, 3])
def test_a_raced_window_search_resumes_the_state_another_route_kept(tmp_path, seed):
    # a kept state belongs to the problem: the window route's first attempt left it, the
    # portfolio's raced search carries it on (issue 45)
    problem, directory = fuzz_instance(seed), str(tmp_path)
    first = make_oracle("window", fallback=None, search_seconds=0.0, carry=directory)
    stopped = first.solve(problem, Budget.from_limit(0.5).with_nodes(1)).certificate
    assert stopped.status is Status.TIME_LIMIT
    kept = CarryStore(directory).summary(problem)
    portfolio = make_oracle("portfolio", time_limit=30, threads=2, carry=directory)
    solution = on_limits(portfolio, problem)
    cert, truth = solution.certificate, brute_force(problem)
    assert cert.certified and float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL
    carry = cert.stat(CarryStats)
    assert carry.attempts == 2 and carry.started_from == f"kept state of attempt 1 ({kept})"
    assert carry.total_cpu_seconds == stopped.cpu_seconds + cert.cpu_seconds
    assert list(tmp_path.iterdir()) == []
