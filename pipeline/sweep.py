"""The sweep on Ray: every run on the cluster, every oracle call of a run as a task of its own.

The driver composes the runs, puts the dataset into the object store once, and hands each run
to a driver thread (at most ``in_flight`` at a time), which

* for an oracle mechanism (OPDisc, RSPM, OPSamp, the exact ERM) runs it through
  ``mechanisms.runner.run`` with ``RaySolveMany``: the noise is drawn and the problems built in
  the driver, each problem is solved by a Ray task (``solve_task``; the solver's model is built
  inside the task), and the release is finished in the driver. OPSamp's m calls are m tasks,
  OPDisc's one call one task: no mechanism is a special case;
* for any other run (DP-SGD, the exponential mechanism, logistic regression) waits on one Ray
  task that runs it whole (``run_task``).

Results are taken as they complete and logged to MLflow by the driver alone. Solver threads
equal the CPUs a task holds. A task whose worker dies is retried (``max_retries``). Runs already
FINISHED in MLflow for the same sweep are skipped (resume).
"""

from __future__ import annotations

import dataclasses
import logging
import queue
import shutil
import sys
import threading
import time
from pathlib import Path
from typing import Any, Sequence

from pipeline.config import Config
from pipeline.data.record import Dataset
from pipeline.tracking import HEARTBEAT
from pipeline.catalog import NON_ORACLE
from pipeline.tasks import RunKey, run_one, sweep_keys

log = logging.getLogger(__name__)

#: Retries of a task whose worker process or node died (not of a Python exception).
MAX_RETRIES = 3


class Progress:
    """A console progress line: done / total, elapsed, ETA (one line per update off a TTY)."""

    def __init__(self, total: int, stream=sys.stderr) -> None:
        self.total, self.done, self.start, self.stream = total, 0, time.perf_counter(), stream
        self.tty = hasattr(stream, "isatty") and stream.isatty()

    def update(self, label: str) -> None:
        self.done += 1
        elapsed = time.perf_counter() - self.start
        eta = elapsed / self.done * (self.total - self.done)
        width = 30
        filled = int(width * self.done / max(self.total, 1))
        line = (f"[{'#' * filled}{'.' * (width - filled)}] {self.done}/{self.total} "
                f"elapsed {elapsed:5.0f}s eta {eta:5.0f}s  {label}")  # fmt: skip
        if self.tty:
            # one terminal line, whatever its width: a wrapped line is not overwritten by \r
            columns = max(20, shutil.get_terminal_size((150, 20)).columns - 1)
            self.stream.write("\r" + line[:columns].ljust(columns))
            if self.done == self.total:
                self.stream.write("\n")
        else:
            self.stream.write(line + "\n")
        self.stream.flush()

    def close(self) -> None:
        """End an unfinished terminal line (an interrupted or failed sweep), so that what is
        printed next starts on a line of its own."""
        if self.tty and self.done < self.total:
            self.stream.write("\n")
            self.stream.flush()


def _assigned_cpus() -> int:
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, int(round(cpus)))


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def solve_one(oracle: Any, problem: Any) -> tuple[Any, str, float]:
    """One oracle call on a Ray worker: (solution, node, seconds the task took)."""
    start = time.perf_counter()
    solution = oracle.solve(problem)
    return solution, _node_id(), time.perf_counter() - start


def _remote_functions(solver_cpus: int):
    """(run_task, solve_task), each holding ``solver_cpus`` CPUs and retried on a lost worker."""
    import ray

    @ray.remote(num_cpus=solver_cpus, max_retries=MAX_RETRIES)
    def run_task(config: Config, key: RunKey, train: Dataset, test: Dataset | None):
        row, release = run_one(config, key, train, test, threads=_assigned_cpus())
        row["node"] = _node_id()
        return row, release

    solve_task = ray.remote(num_cpus=solver_cpus, max_retries=MAX_RETRIES)(solve_one)
    return run_task, solve_task


class RaySolveMany:
    """``solve_many`` for ``mechanisms.runner.run``: each problem a Ray task, in order.

    Problems and oracles are plain picklable records; a backend builds its solver model inside
    the task. Keeps the accounting of the calls it made: ``task_seconds`` (what the tasks took,
    summed: the compute, not the time they queued), ``waited`` (the caller's wall time spent
    waiting on them) and the ``nodes`` they ran on.
    """

    def __init__(self, solve_task: Any) -> None:
        self.solve_task = solve_task
        self.task_seconds = 0.0
        self.waited = 0.0
        self.nodes: set[str] = set()

    def __call__(self, oracle: Any, problems: Sequence[Any]) -> list[Any]:
        import ray

        start = time.perf_counter()
        refs = [self.solve_task.remote(oracle, problem) for problem in problems]
        try:
            results = ray.get(refs)
        except BaseException:
            for ref in refs:  # the run failed: its other calls are of no use
                ray.cancel(ref)
            raise
        finally:
            self.waited += time.perf_counter() - start
        solutions = []
        for solution, node, seconds in results:
            solutions.append(solution)
            self.nodes.add(node)
            self.task_seconds += seconds
        return solutions


def run_on_cluster(config: Config, key: RunKey, train: Dataset, test: Dataset | None,
                   run_task: Any, solve_task: Any, train_ref: Any, test_ref: Any,
                   ) -> tuple[dict[str, Any], Any]:  # fmt: skip
    """One run, from a driver thread: an oracle mechanism through ``run`` with its calls as
    tasks, anything else as one task. The row's time is the compute the run cost: the driver's
    own part plus what its tasks took, not how long they waited in the queue."""
    import ray

    if config.mechanisms[key.mechanism].name in NON_ORACLE:
        return ray.get(run_task.remote(config, key, train_ref, test_ref))
    solver = RaySolveMany(solve_task)
    row, release = run_one(config, key, train, test, solve_many=solver)
    row["wall_seconds"] = row["wall_seconds"] - solver.waited + solver.task_seconds
    row["node"] = ",".join(sorted(solver.nodes))
    return row, release


def init_ray(config: Config) -> None:
    """Connect to ``cluster.address``, else to $RAY_ADDRESS (set by ``ray job submit``), else start
    a Ray of our own: never join, unasked, a cluster someone started on this machine."""
    import os

    import ray

    from pipeline.preflight import probe_ray_address, ray_connect_error

    if ray.is_initialized():
        return
    if config.cluster.address:
        probe_ray_address(config.cluster.address)  # ray.init waits minutes on a dead address
        try:
            ray.init(address=config.cluster.address, log_to_driver=False)
        except Exception as e:  # noqa: BLE001 - any failure to connect is the same user error
            raise ray_connect_error(config.cluster.address, e) from None
    elif os.environ.get("RAY_ADDRESS"):
        try:
            ray.init(log_to_driver=False)
        except Exception as e:  # noqa: BLE001
            raise ray_connect_error(os.environ["RAY_ADDRESS"], e) from None
    else:
        # A Ray of our own enables token authentication by default and says so on every run;
        # the warning is not news to anyone here (ray.init(address="local") keeps the token).
        quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        try:
            ray.init(address="local", num_cpus=config.cluster.num_cpus, log_to_driver=False,
                     include_dashboard=False)  # fmt: skip
        finally:
            quiet.setLevel(level)


def failure_reason(error: BaseException) -> str:
    """A task's exception as one line: the original error (not Ray's wrapper), type first."""
    cause = getattr(error, "cause", None) or error
    lines = [line.strip() for line in str(cause).strip().splitlines() if line.strip()]
    name = type(cause).__name__
    return (f"{name}: {lines[0]}" if lines else name)[:300]


def run_sweep(config: Config, train: Dataset, test: Dataset | None, output_dir: Path,
              tracker, todo: list[RunKey] | None = None,
              ) -> tuple[list[dict[str, Any]], dict[str, str]]:  # fmt: skip
    """Run ``todo`` (default: every run not yet FINISHED).

    Returns (rows of this call's runs, {key: one-line reason} of the runs that failed). A
    KeyboardInterrupt propagates; the runs finished until then are already in MLflow.
    """
    import ray

    if todo is None:
        keys = sweep_keys(config)
        done = tracker.finished_keys()
        todo = [k for k in keys if str(k) not in done]
    if not todo:
        return [], {}
    init_ray(config)
    run_task, solve_task = _remote_functions(config.oracle.threads)
    train_ref = ray.put(train)  # the dataset goes into the object store once
    test_ref = ray.put(test)
    in_flight = max(4, 2 * int(ray.cluster_resources().get("CPU", 1)))
    progress = Progress(len(todo))
    failed: dict[str, str] = {}
    results: list[dict[str, Any]] = []
    try:
        for key, value, error in _in_threads(
            todo, in_flight,
            lambda key: run_on_cluster(config, key, train, test, run_task, solve_task, train_ref,
                                       test_ref),
            heartbeat=tracker.heartbeat,  # the lease on the parent run: this driver is alive
        ):  # fmt: skip
            if error is not None:
                # a run failed for good: record why, go on, redo it on the next run
                reason = failure_reason(error)
                failed[str(key)] = reason
                log.error("run %s failed: %s", key, reason)
                tracker.log_failed_child(str(key), key.mechanism, reason)
                progress.update(f"{key} FAILED")
                continue
            row, release = value
            tracker.log_child(row, release, dataclasses.asdict(config.mechanisms[key.mechanism]))
            results.append(row)
            progress.update(f"{key}: acc {row['train_accuracy']:.3f}, privacy "
                            f"{row.get('privacy_status', row['privacy_holds'])}")  # fmt: skip
    finally:
        progress.close()
    return results, failed


def _in_threads(keys: list[RunKey], in_flight: int, work, *, heartbeat):
    """Yield (key, work(key), None) or (key, None, error) as they complete, ``in_flight``
    daemon threads working at a time (daemons: an interrupted driver exits without waiting for
    the cluster); ``heartbeat()`` at least every HEARTBEAT seconds."""
    todo: queue.Queue = queue.Queue()
    for key in keys:
        todo.put(key)
    done: queue.Queue = queue.Queue()

    def worker() -> None:
        while True:
            try:
                key = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((key, work(key), None))
            except Exception as e:  # noqa: BLE001 - the run's failure, reported by the caller
                done.put((key, None, e))

    for _ in range(min(in_flight, len(keys))):
        threading.Thread(target=worker, daemon=True).start()
    for _ in range(len(keys)):
        while True:
            heartbeat()
            try:
                item = done.get(timeout=HEARTBEAT)
                break
            except queue.Empty:
                continue
        yield item
