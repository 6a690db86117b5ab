"""pipeline.sweep, one piece at a time, without a Ray cluster: a fake clock, a fake ``ray``
module and a fake tracker stand in for the services (tests/pipeline/test_sweep.py runs the
sweep for real)."""

from __future__ import annotations

import io
import os
import shutil
import sys
import threading
import time
import types

import numpy as np
import pytest

from pipeline import sweep
from pipeline.catalog import SCHEMAS
from pipeline.config import Config, SweepConfig
from pipeline.data.schema import SyntheticDatasetConfig
from pipeline.data.record import Dataset
from pipeline.tasks import RunKey
from tests.pipeline.records import result_for

# --- fakes -----------------------------------------------------------------------------------


class Clock:
    """``time`` for pipeline.sweep: perf_counter moves only when a test says so."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def perf_counter(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


@pytest.fixture
def clock(monkeypatch) -> Clock:
    from pipeline import progress

    fake = Clock()
    monkeypatch.setattr(sweep, "time", fake)
    monkeypatch.setattr(progress, "time", fake)  # the progress line's clock
    return fake


class Ref:
    """An object ref of the fake ray: the task's result, or the error it raised."""

    def __init__(self, value=None, error: BaseException | None = None) -> None:
        self.value, self.error = value, error


class FakeRay(types.ModuleType):
    """The parts of ``ray`` that pipeline.sweep calls; ``get`` takes ``get_seconds`` of the
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
    """``import ray`` inside pipeline.sweep gets this module for the test's duration."""
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
    return Dataset(features=rng.integers(0, 2, size=(n, 2)).astype(float),
                   labels=rng.choice([-1, 1], size=n), feature_names=("a", "b"))  # fmt: skip


def _config(mechanisms=("opdisc", "dpsgd_lr", "expmech")) -> Config:
    settings = {name: SCHEMAS[name]() for name in ("opdisc", "dpsgd_lr", "expmech")}
    return Config(dataset=SyntheticDatasetConfig(n=20),
                  mechanisms={m: settings[m] for m in mechanisms},
                  sweep=SweepConfig(name="unit", mechanisms=list(mechanisms), epsilons=[0.5, 1.0],
                                    seeds=1))  # fmt: skip


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
    assert lines[0] == f"[{'#' * 10}{'.' * 20}] 1/3 elapsed    10s eta    20s  a"
    assert lines[1] == f"[{'#' * 20}{'.' * 10}] 2/3 elapsed    20s eta    10s  b"
    assert lines[2] == f"[{'#' * 30}] 3/3 elapsed    30s eta     0s  c"
    assert "\r" not in stream.getvalue()


def test_progress_on_a_tty_rewrites_one_line_and_ends_it_after_the_last_run(clock, monkeypatch):
    monkeypatch.setattr(shutil, "get_terminal_size",
                        lambda fallback=None: os.terminal_size((100, 24)))  # fmt: skip
    stream = Tty()
    progress = sweep.Progress(2, stream=stream)
    clock.advance(4)
    progress.update("first " + "x" * 200)
    after_first = stream.getvalue()
    assert after_first.startswith("\r") and "\n" not in after_first
    assert len(after_first) == 1 + 99  # cut to the terminal's width less one column
    assert "1/2 elapsed     4s eta     4s" in after_first
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
    traceback = ('Traceback (most recent call last):\n  File "solve.py", line 3, in solve_one\n'
                 "GurobiError: Model too large for size-limited license")  # fmt: skip
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
    first = solver("oracle", [{"id": 0, "node": "n1", "seconds": 3.0},
                              {"id": 1, "node": "n2", "seconds": 4.0}])  # fmt: skip
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
    problems = [{"id": 0, "node": "n1", "seconds": 1.0}, {"id": 1, "error": error},
                {"id": 2, "node": "n1", "seconds": 1.0}]  # fmt: skip
    with pytest.raises(GurobiError) as raised:
        solver("oracle", problems)
    assert raised.value is error
    assert len(fake_ray.cancelled) == 3 and len(set(map(id, fake_ray.cancelled))) == 3
    assert solver.waited == pytest.approx(5.0)  # the wait is counted, failed or not
    assert solver.task_seconds == 0.0 and solver.nodes == set()


# --- run_on_cluster --------------------------------------------------------------------------


def test_oracle_run_time_is_driver_plus_task_seconds_not_queueing(fake_ray, clock, monkeypatch):
    fake_ray.get_seconds = 50.0
    seen = {}

    def run_one(config, key, train, test, *, solve_many):
        start = clock.perf_counter()
        clock.advance(2.0)  # the driver draws the noise and builds the problems
        solutions = solve_many("oracle", [{"id": 0, "node": "node-b", "seconds": 3.0},
                                          {"id": 1, "node": "node-a", "seconds": 4.0}])  # fmt: skip
        clock.advance(1.0)  # and finishes the release
        seen["solutions"], seen["train"] = solutions, train
        return result_for(key, wall_seconds=clock.perf_counter() - start), "release"

    def run_task_remote(*args):
        raise AssertionError("an oracle mechanism runs in the driver, its calls as tasks")

    monkeypatch.setattr(sweep, "run_one", run_one)
    train = _dataset()
    row, release = sweep.run_on_cluster(
        _config(),
        RunKey("opdisc", 1.0, 0),
        train,
        None,
        types.SimpleNamespace(remote=run_task_remote),
        SolveTask(),
        "train-ref",
        "test-ref",
    )
    assert release == "release" and seen["train"] is train
    assert seen["solutions"] == ["solution-0", "solution-1"]
    assert row.wall_seconds == pytest.approx(2.0 + 1.0 + 3.0 + 4.0)  # not 53 s
    assert row.node == "node-a,node-b"


@pytest.mark.parametrize("mechanism", ["dpsgd_lr", "expmech"])
def test_a_non_oracle_run_is_one_task_on_the_object_store_data(fake_ray, monkeypatch, mechanism):
    calls = []

    class RunTask:
        def remote(self, *args):
            calls.append(args)
            return Ref(({"key": "row", "node": "n3"}, "release"))

    def run_one(*args, **kwargs):
        raise AssertionError("a non-oracle run runs whole in its task, not in the driver")

    monkeypatch.setattr(sweep, "run_one", run_one)
    config, key = _config(), RunKey(mechanism, 0.5, 0)
    row, release = sweep.run_on_cluster(config, key, _dataset(), None, RunTask(), SolveTask(),
                                        "train-ref", "test-ref")  # fmt: skip
    assert (row, release) == ({"key": "row", "node": "n3"}, "release")
    assert calls == [(config, key, "train-ref", "test-ref")]  # the refs, not the data


# --- run_sweep -------------------------------------------------------------------------------


class FakeTracker:
    """The SweepTracker calls run_sweep makes, recorded."""

    def __init__(self, finished: set[str] = frozenset()) -> None:
        self.finished = set(finished)
        self.children: list[tuple] = []
        self.failed_children: list[tuple] = []
        self.beats = 0

    def finished_keys(self) -> set[str]:
        return set(self.finished)

    def heartbeat(self, force: bool = False) -> None:
        self.beats += 1

    def log_child(self, *args, **kwargs) -> str:  # its signature is growing (MLflow datasets)
        self.children.append((args, kwargs))
        return f"child-{len(self.children)}"

    def log_failed_child(self, key: str, mechanism: str, reason: str) -> None:
        self.failed_children.append((key, mechanism, reason))


def _logged_row(args, kwargs):
    return args[0] if args else kwargs["result"]


@pytest.fixture
def cluster(monkeypatch, fake_ray):
    """run_sweep's Ray side faked; ``cluster.runs`` records the keys run_on_cluster got."""
    state = types.SimpleNamespace(runs=[], init=0, threads=None, fail={})

    def init_ray(config):
        state.init += 1

    def remote_functions(run_cpus, threads):
        state.threads = (run_cpus, threads)
        return "run-task", "solve-task"

    def run_on_cluster(config, key, train, test, run_task, solve_task, train_ref, test_ref,
                       board=None):
        state.runs.append(key)
        assert (run_task, solve_task) == ("run-task", "solve-task")
        assert (train_ref, test_ref) == ("ref-1", "ref-2")
        if str(key) in state.fail:
            raise state.fail[str(key)]
        return result_for(key), f"release of {key}"

    monkeypatch.setattr(sweep, "init_ray", init_ray)
    monkeypatch.setattr(sweep, "_remote_functions", remote_functions)
    monkeypatch.setattr(sweep, "run_on_cluster", run_on_cluster)
    return state


def test_run_sweep_logs_each_run_and_each_failure_with_one_line(cluster, fake_ray, tmp_path):
    config = _config()
    bad = RunKey("expmech", 0.5, 0)
    cluster.fail[str(bad)] = ValueError("grid too large: 3^12 points\n  Traceback (most recent)")
    tracker = FakeTracker()
    train, test = _dataset(), _dataset(6)
    rows, failed = sweep.run_sweep(config, train, test, tracker)
    keys = sweep.sweep_keys(config)
    assert len(keys) == 6 and sorted(map(str, cluster.runs)) == sorted(map(str, keys))
    assert failed == {str(bad): "ValueError: grid too large: 3^12 points"}
    assert tracker.failed_children == [(str(bad), "expmech",
                                        "ValueError: grid too large: 3^12 points")]  # fmt: skip
    logged = [_logged_row(*call) for call in tracker.children]
    assert sorted(r.key for r in logged) == sorted(str(k) for k in keys if k != bad)
    assert sorted(r.key for r in rows) == sorted(r.key for r in logged)
    releases = {_logged_row(*c).key: c[0][1] for c in tracker.children}
    assert all(release == f"release of {key}" for key, release in releases.items())
    assert fake_ray.put_objects[0] is train and fake_ray.put_objects[1] is test  # once each
    assert cluster.init == 1
    assert cluster.threads == (config.cluster.cpus_per_task, config.oracle.threads)
    assert tracker.beats >= 1  # the driver's lease is renewed while it waits


def test_run_sweep_skips_the_runs_already_finished(cluster, tmp_path):
    config = _config(("opdisc",))
    done = RunKey("opdisc", 0.5, 0)
    tracker = FakeTracker(finished={str(done)})
    rows, failed = sweep.run_sweep(config, _dataset(), None, tracker)
    assert [str(k) for k in cluster.runs] == ["opdisc/eps=1/run=0"]
    assert [r.key for r in rows] == ["opdisc/eps=1/run=0"] and failed == {}


@pytest.mark.parametrize("todo", [None, []])
def test_nothing_to_run_returns_empty_without_starting_ray(cluster, fake_ray, tmp_path, todo):
    config = _config(("opdisc",))
    tracker = FakeTracker(finished={str(k) for k in sweep.sweep_keys(config)})
    assert sweep.run_sweep(config, _dataset(), None, tracker, todo) == ([], {})
    assert cluster.init == 0 and cluster.threads is None and fake_ray.put_objects == []
    assert tracker.children == [] and tracker.failed_children == []
