"""pipeline.sweep.fan_out, one piece at a time, without a Ray cluster: a fake clock, a fake ``ray``
module (``LocalRay``: every task run at once in-process, real mechanisms on a tiny dataset) and
a tracking store in memory stand in for the services; the tests check what a sweep returns, logs
and asks of the cluster (tests/pipeline/sweep/test_fan_out.py runs the sweep for real)."""

from __future__ import annotations

import dataclasses
import io
import math
import os
import shutil
import signal
import sys
import threading
import time
import types

import numpy as np
import pytest

from mechanisms.entries import ClassifierScores
from mechanisms.release import PrivacyClaim, Release
from mechanisms.synthetic.evaluate import TableScores
from oracles.contract.certificate import Certificate, Status
from pipeline.sweep import fan_out as sweep
from pipeline.config import Config, SweepConfig
from pipeline.data.record import Dataset
from pipeline.data.schema import SyntheticDatasetConfig
from pipeline.sweep.faults import Terminated, stop_on_sigterm
from pipeline.sweep.preflight import ServiceError
from pipeline.tracking.run_record import release_fields
from pipeline.settings_schemas import SCHEMAS
from pipeline.sweep.one_run import RunKey
from tests.pipeline.records import classifier_result, result_for

# --- fakes -----------------------------------------------------------------------------------


class Clock:
    """``time`` for pipeline.sweep.fan_out: perf_counter moves only when a test says so."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    from pipeline.sweep import progress

    fake = Clock()
    monkeypatch.setattr(sweep, "time", fake)
    monkeypatch.setattr(progress, "time", fake)  # the progress line's clock
    return fake


class Ref:
    """An object ref of the fake ray: the task's result, or the error it raised."""

    def __init__(self, value=None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error


class FakeRay(types.ModuleType):
    """The parts of ``ray`` that pipeline.sweep.fan_out calls; ``get`` takes ``get_seconds`` of the
    fake clock (the time a driver waits on its tasks, queueing included)."""

    def __init__(self, clock: Clock | None = None, get_seconds: float = 0.0) -> None:
        super().__init__("ray")
        self.clock, self.get_seconds = clock, get_seconds
        self.cancelled: list[Ref] = []
        self.put_objects: list = []

    def get(self, refs):
        if self.clock is not None:
            self.clock.advance(self.get_seconds)
        if isinstance(refs, Ref):
            refs = [refs]
            single = True
        else:
            single = False
        for ref in refs:
            if ref.error is not None:
                raise ref.error
        values = [ref.value for ref in refs]
        return values[0] if single else values

    def cancel(self, ref) -> None:
        self.cancelled.append(ref)

    def put(self, value):
        self.put_objects.append(value)
        return f"ref-{len(self.put_objects)}"

    def cluster_resources(self):
        return {"CPU": 2.0}


@pytest.fixture
def fake_ray(monkeypatch, clock) -> FakeRay:
    """``import ray`` inside pipeline.sweep.fan_out gets this module for the test's duration."""
    fake = FakeRay(clock)
    monkeypatch.setitem(sys.modules, "ray", fake)
    return fake


class SolveTask:
    """``solve_task`` of the fake ray: a problem is a dict naming its node, seconds and error."""

    def __init__(self) -> None:
        self.submitted: list = []

    def remote(self, oracle, problem) -> Ref:
        self.submitted.append(problem)
        if problem.get("error") is not None:
            return Ref(error=problem["error"])
        return Ref((f"solution-{problem['id']}", problem["node"], problem["seconds"]))


def _dataset(n: int = 12) -> Dataset:
    rng = np.random.default_rng(0)
    return Dataset(
        features=rng.integers(0, 2, size=(n, 2)).astype(float),
        labels=rng.choice([-1, 1], size=n),
        feature_names=("a", "b"),
    )


def _config(mechanisms=("opdisc", "dpsgd_lr", "expmech")) -> Config:
    settings = {name: SCHEMAS[name]() for name in ("opdisc", "dpsgd_lr", "expmech")}
    return Config(
        dataset=SyntheticDatasetConfig(n=20),
        mechanisms={m: settings[m] for m in mechanisms},
        sweep=SweepConfig(name="unit", mechanisms=list(mechanisms), epsilons=[0.5, 1.0], seeds=1),
    )


# --- Progress --------------------------------------------------------------------------------


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_progress_off_a_tty_writes_one_line_per_update_with_elapsed_and_eta(clock):
    stream = io.StringIO()
    progress = sweep.Progress(3, stream=stream)
    for label in ("a", "b", "c"):
        clock.advance(10)
        progress.update(label)
    lines = stream.getvalue().split("\n")
    assert lines[-1] == "" and len(lines) == 4  # three lines, each ended
    # one run measures its kind's mean, not its spread (pipeline.sweep.progress): a wide range
    assert lines[0] == f"[{'#' * 10}{'.' * 20}] 1/3 elapsed    10s eta 0-103s  a"
    assert lines[1] == f"[{'#' * 20}{'.' * 10}] 2/3 elapsed    20s eta 10-20s  b"
    assert lines[2] == f"[{'#' * 30}] 3/3 elapsed    30s eta     0s  c"
    assert "\r" not in stream.getvalue()


def test_progress_on_a_tty_rewrites_one_line_and_ends_it_after_the_last_run(clock, monkeypatch):
    monkeypatch.setattr(
        shutil, "get_terminal_size", lambda fallback=None: os.terminal_size((100, 24))
    )
    stream = Tty()
    progress = sweep.Progress(2, stream=stream)
    clock.advance(4)
    progress.update("first " + "x" * 200)
    after_first = stream.getvalue()
    assert after_first.startswith("\r") and "\n" not in after_first
    assert len(after_first) == 1 + 99  # cut to the terminal's width less one column
    assert "1/2 elapsed     4s eta  0-25s" in after_first
    clock.advance(4)
    progress.update("second")
    text = stream.getvalue()
    assert text.endswith("\n") and text.count("\n") == 1  # the final newline, once
    last = text[len(after_first) :]
    assert last.startswith("\r") and len(last.rstrip("\n")) == 1 + 99  # padded over the old one
    assert "2/2 elapsed     8s eta     0s  second" in last


def test_closing_an_unfinished_progress_line_ends_it_once(clock):
    stream = Tty()
    progress = sweep.Progress(3, stream=stream)
    progress.update("a")
    progress.close()  # interrupted after one of three: what follows starts on its own line
    assert stream.getvalue().endswith("\n") and stream.getvalue().count("\n") == 1
    finished = sweep.Progress(1, stream=Tty())
    finished.update("only")
    finished.close()  # the last update ended the line already
    assert finished.stream.getvalue().count("\n") == 1
    plain = io.StringIO()
    sweep.Progress(2, stream=plain).close()  # off a terminal every line is ended anyway
    assert plain.getvalue() == ""


# --- failure_reason --------------------------------------------------------------------------


class GurobiError(Exception):
    pass


def test_failure_reason_unwraps_a_ray_task_error_to_its_cause():
    from ray.exceptions import RayTaskError

    cause = GurobiError("Model too large for size-limited license\nvisit gurobi.com")
    traceback = (
        'Traceback (most recent call last):\n  File "solve.py", line 3, in solve_one\n'
        "GurobiError: Model too large for size-limited license"
    )
    wrapped = RayTaskError("solve_one", traceback, cause).as_instanceof_cause()
    assert not str(wrapped).startswith("Model too large")  # Ray's text is the traceback
    assert sweep.failure_reason(wrapped) == (
        "GurobiError: Model too large for size-limited license"
    )


def test_failure_reason_of_any_wrapper_with_a_cause_names_the_cause():
    class Wrapper(Exception):
        def __init__(self, cause):
            super().__init__("task failed\n  Traceback ...")
            self.cause = cause

    assert sweep.failure_reason(Wrapper(KeyError("w"))) == "KeyError: 'w'"


def test_failure_reason_is_the_first_non_blank_line_stripped():
    error = ValueError("\n\n   expmech: 3^12 grid points exceed max_points=10   \nsecond\nthird")
    assert sweep.failure_reason(error) == (
        "ValueError: expmech: 3^12 grid points exceed max_points=10"
    )


def test_failure_reason_of_an_error_without_a_cause_is_its_own_type():
    from ray.exceptions import WorkerCrashedError

    reason = sweep.failure_reason(WorkerCrashedError())
    assert reason.startswith("WorkerCrashedError: ") and "\n" not in reason


@pytest.mark.parametrize("error", [TimeoutError(), ValueError("  \n  ")])
def test_failure_reason_of_an_error_without_a_message_is_its_type_alone(error):
    assert sweep.failure_reason(error) == type(error).__name__  # no dangling ": "


def test_failure_reason_is_at_most_300_characters():
    reason = sweep.failure_reason(RuntimeError("y" * 1000))
    assert len(reason) == 300 and reason.startswith("RuntimeError: yyy")


# --- _in_threads -----------------------------------------------------------------------------


def test_in_threads_yields_every_key_once_with_its_value_or_error():
    boom = {3: ValueError("three"), 7: RuntimeError("seven")}

    def work(key):
        if key in boom:
            raise boom[key]
        return key * 10

    items = list(sweep._in_threads(list(range(10)), 3, work, heartbeat=lambda: None))
    assert sorted(key for key, _, _ in items) == list(range(10))
    for key, value, error in items:
        if key in boom:
            assert value is None and error is boom[key]
        else:
            assert value == key * 10 and error is None


def test_in_threads_runs_at_most_in_flight_at_a_time():
    in_flight, lock, running, most = 3, threading.Lock(), [0], [0]
    barrier = threading.Barrier(in_flight, timeout=10)

    def work(key):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        if key < in_flight:
            barrier.wait()  # the first three run together, or this times out
        time.sleep(0.02)  # long enough for a fourth thread, were there one, to overlap
        with lock:
            running[0] -= 1
        return key

    items = list(sweep._in_threads(list(range(9)), in_flight, work, heartbeat=lambda: None))
    assert [error for _, _, error in items] == [None] * 9
    assert most[0] == in_flight


def test_a_carried_on_sweep_starts_a_run_only_when_one_before_it_has_ended():
    """Issue 45, item 3: carried on, the cheapest first, exactly. One run a slot in flight, so a
    run starts only when an earlier one in the order has ended: never queued for a CPU beside
    a dearer one whose driver part happened to end first (a fresh sweep keeps more in flight,
    to overlap the driver parts)."""
    assert sweep.runs_in_flight(2, 2, carried=True) == 2
    assert sweep.runs_in_flight(8, 4, carried=True) == 4  # 2 threads a solve: 4 slots
    assert sweep.runs_in_flight(2, 2, carried=False) == 4
    assert sweep.runs_in_flight(8, 8, carried=False) == 16
    slots = sweep.runs_in_flight(2, 2, carried=True)
    lock, events = threading.Lock(), []
    rng = np.random.default_rng(0)
    pause = {key: float(rng.uniform(0.0, 0.02)) for key in range(8)}

    def work(key):
        with lock:
            events.append(("start", key))
        time.sleep(pause[key])
        with lock:
            events.append(("end", key))
        return key

    items = list(sweep._in_threads(list(range(8)), slots, work, heartbeat=lambda: None))
    assert sorted(key for key, _, _ in items) == list(range(8))
    for i, (what, key) in enumerate(events):
        if what == "start" and key >= slots:  # the (key - slots + 1)-th end came before it
            assert sum(w == "end" for w, _ in events[:i]) >= key - slots + 1


def test_in_threads_beats_the_heart_while_a_run_is_still_going(monkeypatch):
    monkeypatch.setattr(sweep, "HEARTBEAT", 0.01)
    beats = threading.Semaphore(0)
    count = [0]

    def heartbeat():
        count[0] += 1
        beats.release()

    def work(key):
        # the run ends only after five heartbeats have come while it was going
        return all(beats.acquire(timeout=10) for _ in range(5))

    ((key, value, error),) = list(sweep._in_threads(["k"], 1, work, heartbeat=heartbeat))
    assert (key, value, error) == ("k", True, None)
    assert count[0] >= 5


def test_in_threads_with_no_keys_yields_nothing():
    def work(key):
        raise AssertionError("no key, no work")

    assert list(sweep._in_threads([], 4, work, heartbeat=lambda: None)) == []


# --- RaySolveMany ----------------------------------------------------------------------------


def test_ray_solve_many_counts_task_seconds_not_the_wait_and_every_node(fake_ray, clock):
    fake_ray.get_seconds = 50.0  # queueing: the driver waits far longer than the tasks work
    task = SolveTask()
    solver = sweep.RaySolveMany(task)
    first = solver(
        "oracle", [{"id": 0, "node": "n1", "seconds": 3.0}, {"id": 1, "node": "n2", "seconds": 4.0}]
    )
    assert first == ["solution-0", "solution-1"]
    assert solver.task_seconds == pytest.approx(7.0)
    assert solver.waited == pytest.approx(50.0)
    assert solver.nodes == {"n1", "n2"}
    second = solver("oracle", [{"id": 2, "node": "n1", "seconds": 0.5}])
    assert second == ["solution-2"]
    assert solver.task_seconds == pytest.approx(7.5) and solver.waited == pytest.approx(100.0)
    assert solver.nodes == {"n1", "n2"} and fake_ray.cancelled == []


def test_ray_solve_many_cancels_every_call_of_a_failed_run(fake_ray, clock):
    fake_ray.get_seconds = 5.0
    task = SolveTask()
    solver = sweep.RaySolveMany(task)
    error = GurobiError("size-limited license")
    problems = [
        {"id": 0, "node": "n1", "seconds": 1.0},
        {"id": 1, "error": error},
        {"id": 2, "node": "n1", "seconds": 1.0},
    ]
    with pytest.raises(GurobiError) as raised:
        solver("oracle", problems)
    assert raised.value is error
    assert len(fake_ray.cancelled) == 3 and len(set(map(id, fake_ray.cancelled))) == 3
    assert solver.waited == pytest.approx(5.0)  # the wait is counted, failed or not
    assert solver.task_seconds == 0.0 and solver.nodes == set()


# --- run_on_cluster --------------------------------------------------------------------------


def test_oracle_run_time_is_driver_plus_task_seconds_not_queueing(fake_ray, clock, monkeypatch):
    fake_ray.get_seconds = 50.0

    def run_one(config, key, train, test, *, solve_many):
        start = clock.perf_counter()
        clock.advance(2.0)  # the driver draws the noise and builds the problems
        solutions = solve_many(
            "oracle",
            [
                {"id": 0, "node": "node-b", "seconds": 3.0},
                {"id": 1, "node": "node-a", "seconds": 4.0},
            ],
        )
        clock.advance(1.0)  # and finishes the release
        return result_for(key, wall_seconds=clock.perf_counter() - start), solutions

    def run_task_remote(*args):
        raise AssertionError("an oracle mechanism runs in the driver, its calls as tasks")

    monkeypatch.setattr(sweep, "run_one", run_one)
    row, release = sweep.run_on_cluster(
        _config(),
        RunKey("opdisc", 1.0, 0),
        _dataset(),
        None,
        types.SimpleNamespace(remote=run_task_remote),
        SolveTask(),
        "train-ref",
        "test-ref",
    )
    assert release == ["solution-0", "solution-1"]  # the calls' answers, in order
    assert row.wall_seconds == pytest.approx(2.0 + 1.0 + 3.0 + 4.0)  # not 53 s
    assert row.node == "node-a,node-b"


def test_an_oracle_runs_solve_step_is_its_tasks_seconds_and_its_wait_is_named(
    fake_ray, clock, monkeypatch
):
    """The driver's wait for its oracle tasks (queue included) was the step ``solve``: 12.75 s
    beside a run of 3.68 s. The step is the tasks' own seconds, as ``wall_seconds`` counts
    them; the wait is ``solve_waited``; every time metric names its clock."""
    fake_ray.get_seconds = 50.0

    def run_one(config, key, train, test, *, solve_many):
        start = clock.perf_counter()
        clock.advance(2.0)
        built = clock.perf_counter()
        solve_many("oracle", [{"id": 0, "node": "n", "seconds": 3.0}])
        solved = clock.perf_counter()
        clock.advance(1.0)
        timings = {"prepare": built - start, "solve": solved - built}
        release = Release(
            "opdisc",
            np.zeros(2),
            PrivacyClaim(1.0, 1e-6, True, "certified"),
            certificates=(Certificate(Status.OPTIMAL, 1.0, 1.0, 2.9, "highs", cpu_seconds=2.5),),
            timings=timings | {"total": sum(timings.values())},
        )
        return result_for(key, wall_seconds=clock.perf_counter() - start), release

    monkeypatch.setattr(sweep, "run_one", run_one)
    key = RunKey("opdisc", 1.0, 0)
    row, release = sweep.run_on_cluster(
        _config(), key, _dataset(), None, None, SolveTask(), "train-ref", "test-ref"
    )
    assert release.timings == {"prepare": 2.0, "solve": 3.0, "total": 5.0, "solve_waited": 50.0}
    assert row.wall_seconds == pytest.approx(2.0 + 3.0 + 1.0)
    result = classifier_result(key, release, _dataset(), None, row.wall_seconds)
    metrics = release_fields(release)[1] | result.to_metrics()
    times = sorted(k for k in metrics if "seconds" in k)
    assert times == [
        "oracle_cpu_seconds",
        "oracle_cpu_seconds_to_certify",
        "oracle_total_cpu_seconds",
        "oracle_wall_seconds",
        "step_wall_seconds.prepare",
        "step_wall_seconds.solve",
        "step_wall_seconds.solve_waited",
        "step_wall_seconds.total",
        "wall_seconds",
    ]
    steps = ("prepare", "solve", "total")
    assert all(metrics[f"step_wall_seconds.{s}"] <= metrics["wall_seconds"] for s in steps)
    assert metrics["oracle_wall_seconds"] <= metrics["step_wall_seconds.solve"]
    assert metrics["oracle_cpu_seconds"] <= metrics["oracle_wall_seconds"]  # one thread
    assert metrics["step_wall_seconds.solve_waited"] >= metrics["step_wall_seconds.solve"]


class TaskError(Exception):
    """What ``ray.get`` raises for a task that raised: Ray's traceback text, the error as
    ``cause`` (ray.exceptions.RayTaskError)."""

    def __init__(self, function: str, cause: BaseException) -> None:
        super().__init__(f"ray::{function}() (pid=1, ip=127.0.0.1)\nTraceback ...\n{cause!r}")
        self.cause = cause


class LocalRay(FakeRay):
    """A Ray that runs every task at once, in the calling thread: ``remote`` functions run for
    real, object refs given as arguments are resolved (as Ray does), a task's exception comes
    back from ``get`` wrapped as Ray wraps it, and the runtime context a task sees is its own
    (the CPUs it asked for; its node is ``node-<function name>``). Records what a cluster would
    see: whether Ray was started and how, the objects put in its store, the tasks that ran and
    the CPUs each asked for, and any dataset sent to a task by value instead of by reference."""

    def __init__(self) -> None:
        super().__init__()
        self.started: dict | None = None
        self.ran: list[str] = []
        self.cpus: dict[str, float] = {}
        self.by_value: list[str] = []
        self._task = threading.local()

    # the driver's side
    def is_initialized(self) -> bool:
        return self.started is not None

    def init(self, **options) -> None:
        self.started = options

    def put(self, value) -> Ref:
        self.put_objects.append(value)
        return Ref(value)

    def remote(self, **options):
        def decorate(function):
            if isinstance(function, type):
                raise TypeError("no actors on this Ray")  # the progress board: none, then
            return types.SimpleNamespace(remote=lambda *args: self._run(function, options, args))

        return decorate

    def _run(self, function, options, args) -> Ref:
        name = function.__name__
        self.ran.append(name)
        self.cpus[name] = options.get("num_cpus", 1)
        self.by_value += [name for arg in args if isinstance(arg, Dataset)]
        args = [arg.value if isinstance(arg, Ref) else arg for arg in args]
        self._task.name = name
        try:
            return Ref(function(*args))
        except Exception as cause:  # noqa: BLE001 - the task's failure, for get to raise
            return Ref(error=TaskError(name, cause))
        finally:
            self._task.name = None

    # a task's side
    def get_runtime_context(self):
        name = self._task.name
        return types.SimpleNamespace(
            get_assigned_resources=lambda: {"CPU": float(self.cpus[name])},
            get_node_id=lambda: f"node-{name}",
        )


@pytest.fixture
def local_ray(monkeypatch) -> LocalRay:
    fake = LocalRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)  # else init_ray would join that cluster
    return fake


def _real_config(mechanisms=("opdisc", "dpsgd_lr", "expmech")) -> Config:
    """Mechanisms that run for real in a fraction of a second on ``_dataset()``: the exact
    OPDisc, DP-SGD with small batches, and an exponential mechanism whose grid (9 points) is
    more than it may enumerate, so that its runs fail as Adult's runs once did."""
    settings = {
        "opdisc": SCHEMAS["opdisc"](),
        "dpsgd_lr": SCHEMAS["dpsgd_lr"](batch_size=4, steps=3),
        "expmech": SCHEMAS["expmech"](max_points=3),
    }
    config = _config(mechanisms)
    return dataclasses.replace(
        config,
        mechanisms={m: settings[m] for m in mechanisms},
        oracle=dataclasses.replace(config.oracle, threads=2),  # tell the two tasks apart
        cluster=dataclasses.replace(config.cluster, cpus_per_task=1),
    )


@pytest.mark.parametrize("mechanism", ["dpsgd_lr", "logistic_regression"])
def test_a_non_oracle_run_is_one_task_on_the_object_store_data(local_ray, mechanism):
    config = _real_config(("opdisc",))
    config.mechanisms[mechanism] = SCHEMAS[mechanism](
        **({"batch_size": 4, "steps": 3} if mechanism == "dpsgd_lr" else {})
    )
    key, train, test = RunKey(mechanism, 0.5, 0), _dataset(), _dataset(6)
    run_task, solve_task = sweep._remote_functions(
        config.cluster.cpus_per_task, config.oracle.threads
    )
    result, release = sweep.run_on_cluster(
        config, key, train, test, run_task, solve_task, local_ray.put(train), local_ray.put(test)
    )
    assert result.key == str(key) and isinstance(release, Release)
    assert result.train_n == 12 and 0.0 <= result.scores.test_accuracy <= 1.0  # both sets
    assert result.node == "node-run_task"  # ran whole in its task, not in the driver
    assert local_ray.ran == ["run_task"] and local_ray.by_value == []  # the store's copy


def test_an_oracle_run_runs_in_the_driver_and_solves_in_tasks(local_ray):
    config = _real_config(("opdisc",))
    key, train = RunKey("opdisc", 1.0, 0), _dataset()
    run_task, solve_task = sweep._remote_functions(
        config.cluster.cpus_per_task, config.oracle.threads
    )
    result, release = sweep.run_on_cluster(
        config, key, train, None, run_task, solve_task, local_ray.put(train), local_ray.put(None)
    )
    assert result.key == str(key) and isinstance(release, Release)
    assert result.oracle_certified and result.privacy_holds
    assert result.node == "node-solve_one"  # where its oracle call ran
    assert local_ray.ran == ["solve_one"] * result.oracle_calls and result.oracle_calls >= 1
    assert local_ray.cpus == {"solve_one": 2}  # the oracle's threads


# --- run_sweep -------------------------------------------------------------------------------


class FakeTracker:
    """A tracking store in memory: the runs a sweep logged (``children``: key -> (result,
    release)), the failures (``failures``: key -> reasons, one per attempt), and what it
    reports as finished (those logged, and ``finished`` given at the start)."""

    def __init__(self, finished: set[str] = frozenset()) -> None:
        self.finished = set(finished)
        self.children: dict[str, tuple] = {}
        self.failures: dict[str, list[str]] = {}
        self.beats = 0

    def finished_keys(self) -> set[str]:
        return self.finished | set(self.children)

    def heartbeat(self, force: bool = False) -> None:
        self.beats += 1

    def log_child(self, result, release, mechanism_config=None, *args, **kwargs) -> str:
        assert result.key not in self.children, f"{result.key} logged twice"
        self.children[result.key] = (result, release)
        return f"child-{len(self.children)}"

    def log_failed_child(self, key: str, mechanism: str, reason: str) -> None:
        self.failures.setdefault(key, []).append(reason)


GRID_TOO_LARGE = (
    "ValueError: the grid has up to 9 points, more than max_points=3: the "
    "exponential mechanism needs an enumerable grid"
)


def test_run_sweep_logs_each_run_and_each_failure_with_one_line(local_ray):
    config = _real_config()
    tracker = FakeTracker()
    train, test = _dataset(), _dataset(6)
    results, failed = sweep.run_sweep(config, train, test, tracker)
    keys = [str(k) for k in sweep.sweep_keys(config)]
    bad = [k for k in keys if k.startswith("expmech/")]
    assert len(keys) == 6 and len(bad) == 2
    assert failed == {k: GRID_TOO_LARGE for k in bad}  # one line, not Ray's traceback
    assert tracker.failures == {k: [GRID_TOO_LARGE] for k in bad}
    assert sorted(r.key for r in results) == sorted(set(keys) - set(bad))
    assert tracker.children.keys() == {r.key for r in results}
    for result, release in tracker.children.values():
        assert isinstance(release, Release) and 0.0 <= result.scores.train_accuracy <= 1.0
        assert result.train_n == 12 and 0.0 <= result.scores.test_accuracy <= 1.0
    assert {r.mechanism: r.node for r in results} == {
        "opdisc": "node-solve_one",
        "dpsgd_lr": "node-run_task",
    }
    # a Ray of its own, the data in its store once, each task with the CPUs the config gives it
    assert local_ray.started["address"] == "local"
    assert local_ray.started["num_cpus"] == config.cluster.num_cpus
    assert len(local_ray.put_objects) == 2 and local_ray.by_value == []
    assert local_ray.cpus == {
        "solve_one": config.oracle.threads,
        "run_task": config.cluster.cpus_per_task,
    }
    assert tracker.beats >= 1  # the driver's lock is renewed while it waits


def test_a_second_sweep_redoes_only_the_runs_that_did_not_finish(local_ray):
    config = _real_config()
    tracker = FakeTracker()
    first, failed = sweep.run_sweep(config, _dataset(), None, tracker)
    again, failed_again = sweep.run_sweep(config, _dataset(), None, tracker)
    assert again == [] and failed_again == failed  # only the failed runs ran, and failed again
    assert all(len(reasons) == 2 for reasons in tracker.failures.values())
    assert len(tracker.children) == len(first) == 4  # each finished run logged once


def test_run_sweep_skips_the_runs_already_finished(local_ray):
    config = _real_config(("opdisc",))
    tracker = FakeTracker(finished={"opdisc/eps=0.5/run=0"})
    results, failed = sweep.run_sweep(config, _dataset(), None, tracker)
    assert [r.key for r in results] == ["opdisc/eps=1/run=0"] and failed == {}
    assert list(tracker.children) == ["opdisc/eps=1/run=0"]


@pytest.mark.parametrize("todo", [None, []])
def test_nothing_to_run_returns_empty_without_starting_ray(local_ray, todo):
    config = _real_config(("opdisc",))
    tracker = FakeTracker(finished={str(k) for k in sweep.sweep_keys(config)})
    assert sweep.run_sweep(config, _dataset(), None, tracker, todo) == ([], {})
    assert not local_ray.is_initialized() and local_ray.put_objects == []
    assert local_ray.ran == [] and tracker.children == {} and tracker.failures == {}


def test_a_local_ray_that_would_not_start_is_tried_again_and_leaves_nothing(monkeypatch):
    import ray

    started: list[int] = []  # the "processes" each start leaves behind
    stopped: list[list[int]] = []

    def init(**kwargs):
        started.append(1000 + len(started))
        raise TimeoutError("The current node timed out during startup.\nraylet.out ...")

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(sweep.reaper, "descendants", lambda pid: [7, *started])  # 7: not Ray's
    monkeypatch.setattr(sweep.reaper, "stop", lambda pids: stopped.append(pids))
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setenv(sweep.GCS_WAIT_ENV, "x")
    monkeypatch.delenv(sweep.GCS_WAIT_ENV)  # the driver's default applies (and is undone)
    with pytest.raises(ServiceError) as raised:
        sweep.init_ray(_config())
    assert str(raised.value).startswith(
        "a local Ray would not start (3 attempts, each waiting 30 s for its raylet and 120 s for "
        "its GCS (RAY_gcs_server_port_wait_time_s), its processes stopped after): TimeoutError: "
        "The current node timed out during startup. (rerun the same command"
    )
    assert "\n" not in str(raised.value)
    # each start's own processes stopped, before the next start and after the last
    assert stopped == [[1000], [1001], [1002]]


def test_a_local_ray_that_starts_on_a_second_attempt_is_used(monkeypatch):
    import ray

    attempts = []

    def init(**kwargs):
        attempts.append(kwargs)
        if len(attempts) == 1:
            raise RuntimeError("Timed out waiting for file /tmp/ray/session_x/gcs_server_port")
        return types.SimpleNamespace(address_info={})

    monkeypatch.setattr(ray, "init", init)
    monkeypatch.setattr(sweep.reaper, "stop", lambda pids: None)
    monkeypatch.setenv(sweep.GCS_WAIT_ENV, "45")  # the user's own wait is kept
    assert sweep.start_local_ray(2).address_info == {}
    assert len(attempts) == 2 and attempts[1]["num_cpus"] == 2
    assert os.environ[sweep.GCS_WAIT_ENV] == "45"


def test_in_threads_starts_no_run_once_its_caller_has_stopped():
    started, first, go = [], threading.Event(), threading.Event()

    def work(key):
        started.append(key)
        (first if key < 2 else go).wait(timeout=10)
        return key

    items = sweep._in_threads(list(range(20)), 2, work, heartbeat=lambda: None)
    threading.Timer(0.1, first.set).start()
    next(items)  # the caller takes one result, then stops (a full disk, an interrupt)
    items.close()
    go.set()  # the runs the two threads hold end; neither may take another key
    time.sleep(0.3)
    # the two first runs, and at most one more per thread taken before the caller stopped
    assert {0, 1} <= set(started) <= {0, 1, 2, 3}, started


def test_a_runs_progress_line_says_its_accuracy_or_its_tables_error():
    classifier = result_for(RunKey("opdisc", 1.0, 0), scores=ClassifierScores(0.8734, math.nan))
    table = result_for(RunKey("fem", 1.0, 0), scores=TableScores(0.10549, 0.05, 0.7, math.nan))
    assert sweep._headline(classifier) == "acc 0.873"
    assert sweep._headline(table) == "max marginal error 0.105"


def test_the_largest_live_node_gives_the_cpus_a_task_may_hold(fake_ray):
    """``largest_node_cpus``: a task runs on one node, so the largest live one counts (a dead
    node's CPUs do not); None before the driver is connected."""
    fake_ray.is_initialized = lambda: False
    assert sweep.largest_node_cpus() is None
    fake_ray.is_initialized = lambda: True
    fake_ray.nodes = lambda: [
        {"Alive": True, "Resources": {"CPU": 2.0, "memory": 1e9}},
        {"Alive": False, "Resources": {"CPU": 64.0}},
        {"Alive": True, "Resources": {"CPU": 4.0}},
        {"Alive": True, "Resources": {}},
    ]
    assert sweep.largest_node_cpus() == 4


def test_a_finished_reference_reads_as_a_reference_not_eps_inf_and_non_private_privacy():
    key = RunKey("erm_01", math.inf, 0)
    classifier = result_for(key, holds=False, scores=ClassifierScores(0.8725, math.nan))
    line = sweep.finished_line(key, classifier)
    assert line == "erm_01 (non-private reference): acc 0.873"
    private = result_for(RunKey("opdisc", 1.0, 0), scores=ClassifierScores(0.87, math.nan))
    line = sweep.finished_line(RunKey("opdisc", 1.0, 0), private)
    assert line == "opdisc/eps=1/run=0: acc 0.870, privacy holds"


def test_an_interrupt_during_ray_init_waits_for_it_and_ray_init_keeps_our_handler(monkeypatch):
    import ray

    returned = threading.Event()

    def init(**kwargs):
        assert threading.current_thread() is not threading.main_thread()  # sets no handler
        time.sleep(0.5)
        returned.set()
        return types.SimpleNamespace(address_info={}, kwargs=kwargs)

    monkeypatch.setattr(ray, "init", init)
    assert sweep.ray_init(address="local").kwargs == {"address": "local"}
    returned.clear()
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        threading.Timer(0.1, os.kill, (os.getpid(), signal.SIGTERM)).start()
        with pytest.raises(Terminated):
            sweep.ray_init(address="local")
        assert returned.is_set()  # not cut short inside ray.init: Ray's driver would hang
        assert signal.getsignal(signal.SIGTERM) is stop_on_sigterm
    finally:
        signal.signal(signal.SIGTERM, previous)

    def failing(**kwargs):
        raise RuntimeError("Timed out waiting for file")

    monkeypatch.setattr(ray, "init", failing)
    with pytest.raises(RuntimeError, match="Timed out waiting for file"):
        sweep.ray_init(address="local")
