"""The sweep on Ray: every (mechanism, epsilon, run) as a task, OPSamp's m oracle calls too.

The driver composes the runs, puts the dataset into the object store once, and submits:

* one task per run for OPDisc, RSPM, DP-SGD, the references (``run_task``);
* for OPSamp, m tasks per run (``opsamp_call_task``), one per oracle call. The driver
  draws the run's noise from the run's own generator, and each task rebuilds only its own
  problem from the shared dataset; the driver then finishes the release when all m are in.

Results are taken as they complete (``ray.wait``) and logged to MLflow by the driver alone.
Solver threads equal the CPUs the task holds. A task whose worker dies is retried
(``max_retries``). Runs already FINISHED in MLflow for the same sweep are skipped (resume).
"""

from __future__ import annotations

import dataclasses
import logging
import shutil
import sys
import time
from pathlib import Path
from typing import Any

from pipeline.config import Config
from pipeline.data.record import Dataset
from pipeline.tracking import HEARTBEAT
from pipeline.tasks import (RunKey, build_mechanism, make_oracle, privacy_delta,
                            result_row, run_generator, run_one, sweep_keys)

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


def _assigned_cpus() -> int:
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, int(round(cpus)))


def _node_id() -> str:
    import ray

    return ray.get_runtime_context().get_node_id()


def _remote_functions(solver_cpus: int):
    import ray

    @ray.remote(num_cpus=solver_cpus, max_retries=MAX_RETRIES)
    def run_task(config: Config, key: RunKey, train: Dataset, test: Dataset | None):
        row, release = run_one(config, key, train, test, threads=_assigned_cpus())
        row["node"] = _node_id()
        return row, release

    @ray.remote(num_cpus=solver_cpus, max_retries=MAX_RETRIES)
    def opsamp_call_task(config: Config, key: RunKey, k: int, train: Dataset):
        """Oracle call k of an OPSamp run: redraws the run's noise, solves problem k only."""
        start = time.perf_counter()
        mechanism = build_mechanism(config.mechanisms[key.mechanism], key.epsilon,
                                    privacy_delta(config, train.n), config.margin)  # fmt: skip
        rows = train.merged()
        noise = mechanism.draw_noise(run_generator(_sweep_seed(config), key), rows.n, rows.d)
        one = {**noise, "sigmas": noise["sigmas"][k:k + 1]}
        (problem,) = mechanism.problems(rows, one)
        oracle = make_oracle(config.oracle, _assigned_cpus(),
                             mechanism=config.mechanisms[key.mechanism])  # fmt: skip
        solution = oracle.solve(problem)
        return k, solution, _node_id(), time.perf_counter() - start

    return run_task, opsamp_call_task


def _sweep_seed(config: Config) -> int:
    return config.sweep.sweep_seed if config.sweep is not None else 0


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
    text = lines[0] if lines else ""
    return f"{type(cause).__name__}: {text}"[:300]


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
    run_task, opsamp_call_task = _remote_functions(config.oracle.threads)
    train_ref = ray.put(train)  # the dataset goes into the object store once
    test_ref = ray.put(test)

    pending: dict[Any, tuple[str, RunKey]] = {}
    opsamp: dict[RunKey, dict[str, Any]] = {}
    progress = Progress(len(todo))
    failed: dict[str, str] = {}

    def fail(key: RunKey, error: BaseException) -> None:
        # a run failed for good: record why, go on, redo it on the next run
        reason = failure_reason(error)
        failed[str(key)] = reason
        log.error("run %s failed: %s", key, reason)
        tracker.log_failed_child(str(key), key.mechanism, reason)
        if key in opsamp:
            for other in [r for r, (_, k) in pending.items() if k == key]:
                ray.cancel(other)
                pending.pop(other)
            del opsamp[key]
        progress.update(f"{key} FAILED")

    for key in todo:
        cfg = config.mechanisms[key.mechanism]
        if cfg.name == "opsamp":
            try:  # the driver draws OPSamp's noise: a failure here is the run's, not the sweep's
                mechanism = build_mechanism(cfg, key.epsilon, privacy_delta(config, train.n),
                                            config.margin)  # fmt: skip
                rows = train.merged()
                rng = run_generator(_sweep_seed(config), key)
                noise = mechanism.draw_noise(rng, rows.n, rows.d)
            except Exception as e:  # noqa: BLE001
                fail(key, e)
                continue
            opsamp[key] = {"mechanism": mechanism, "rows": rows, "noise": noise, "rng": rng,
                           "solutions": {}, "nodes": set(), "task_seconds": 0.0}  # fmt: skip
            for k in range(noise["m"]):
                pending[opsamp_call_task.remote(config, key, k, train_ref)] = ("call", key)
        else:
            pending[run_task.remote(config, key, train_ref, test_ref)] = ("run", key)

    results: list[dict[str, Any]] = []
    while pending:
        ready, _ = ray.wait(list(pending), num_returns=1, timeout=HEARTBEAT)
        tracker.heartbeat()  # the lease on the parent run: this driver is alive
        if not ready:
            continue
        ref = ready[0]
        kind, key = pending.pop(ref)
        try:
            value = ray.get(ref)
        except Exception as e:  # noqa: BLE001
            fail(key, e)
            continue
        if kind == "run":
            row, release = value
        else:
            state = opsamp[key]
            k, solution, node, seconds = value
            state["solutions"][k] = solution
            state["nodes"].add(node)
            state["task_seconds"] += seconds
            if len(state["solutions"]) < state["noise"]["m"]:
                continue
            try:
                row, release = _finish_opsamp(key, state, train, test)
            except Exception as e:  # noqa: BLE001
                fail(key, e)
                continue
            del opsamp[key]
        tracker.log_child(row, release, dataclasses.asdict(config.mechanisms[key.mechanism]))
        results.append(row)
        progress.update(f"{key}: acc {row['train_accuracy']:.3f}, privacy "
                        f"{row.get('privacy_status', row['privacy_holds'])}")  # fmt: skip
    return results, failed


def _finish_opsamp(key: RunKey, state: dict[str, Any], train: Dataset, test: Dataset | None):
    mechanism, rows, noise = state["mechanism"], state["rows"], state["noise"]
    solutions = [state["solutions"][k] for k in range(noise["m"])]
    solve_seconds = sum(s.certificate.seconds for s in solutions)
    release = mechanism.finish(rows, noise, solutions, state["rng"],
                               {"solve": solve_seconds})  # fmt: skip
    # the run's time is what its m tasks took, summed: the compute it cost, not how long its
    # tasks waited in the queue behind other runs
    wall = state["task_seconds"]
    row = result_row(key, release, train, test, wall)
    row["node"] = ",".join(sorted(state["nodes"]))
    return row, release


