"""MLflow records of a sweep: one parent run per sweep, one child run per (mechanism, eps, run).

Only the driver writes to MLflow. Ray tasks return releases and the driver logs them as they
complete, so a sqlite store never sees concurrent writers. The database and the experiment are
created before anything fans out.

A child run is created, filled and set FINISHED in one step when its result arrives, so a sweep
killed half-way leaves finished children and at most one unfinished one. A rerun of the same sweep
(same ``sweep_id``) finds the parent, skips keys that already have a FINISHED child, and
deletes unfinished ones, so nothing is duplicated.
"""

from __future__ import annotations

import enum
import functools
import json
import math
import os
import shlex
import socket
import time
from pathlib import Path
from typing import Any, Iterable

from mechanisms.catalog import NON_PRIVATE
from mechanisms.release import Release
from mechanisms.synthetic.fem import SyntheticRelease
from oracles.contract.stats import CarryStats
from pipeline.tracking import mlflow_log
from pipeline.data.record import Dataset
from pipeline.sweep.dir_lock import SweepBusyError, this_driver
from pipeline.tracking.run_record import RunResult, release_fields
from pipeline.sweep.one_run import run_label


class RunStatus(enum.StrEnum):
    """An MLflow run's status, as MLflow spells it (``mlflow.entities.RunStatus``'s names)."""

    RUNNING = "RUNNING"
    FINISHED = "FINISHED"
    FAILED = "FAILED"
    KILLED = "KILLED"


#: Seconds between a driver's heartbeats on its parent run, and after which a silent one is dead.
HEARTBEAT = 30
DRIVER_TTL = 120
MAX_PARAM = 6000  # MLflow's limit on a parameter value
#: The port of the suggested ``mlflow ui`` command for a local store (any free port will do).
UI_PORT = 5000


def default_tracking_uri(output_dir: Path) -> str:
    """A sqlite database under the output directory, as an absolute URI."""
    return f"sqlite:///{(Path(output_dir).resolve() / 'mlflow.db').as_posix()}"


def local_store(uri: str) -> str:
    """A local tracking store's URI with an absolute path, so that ``mlflow ui
    --backend-store-uri`` opens the same store from any directory (``sqlite:///runs.db`` is
    relative to the driver's working directory, ``sqlite:////abs/runs.db`` is not). A URI of
    another kind is returned as it is."""
    if uri.startswith("sqlite:///"):
        path = uri[len("sqlite:///") :]
        return f"sqlite:///{Path(path).resolve().as_posix()}" if path else uri
    if uri.startswith("file:"):
        return uri
    if "://" not in uri:  # a directory of runs (MLflow's file store)
        return Path(uri).resolve().as_uri()
    return uri


def review_hint(uri: str, experiment_id: str, port: int = UI_PORT) -> str:
    """Where a reviewer sees the run list of ``experiment_id`` (in the sweep's view): on a
    tracking server, its URL there; for a local store (sqlite, a directory) the ``mlflow ui``
    command that serves it, then the URL it serves it at (``port`` is only a suggestion)."""
    if uri.startswith(("http://", "https://")):
        return mlflow_log.view_url(uri, experiment_id)
    store = shlex.quote(local_store(uri))
    url = mlflow_log.view_url(f"http://127.0.0.1:{port}", experiment_id)
    return (
        f"run `mlflow ui --backend-store-uri {store} --port {port}`, then open {url} "
        f"(another free port: change it in both)"
    )


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _param(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return text[:MAX_PARAM]


def _flatten(prefix: str, value: Any, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), v, out)
    else:
        out[prefix] = value


class SweepTracker:
    """The MLflow side of a sweep, used by the driver only."""

    def __init__(self, tracking_uri: str, experiment: str, artifact_dir: Path | None) -> None:
        import mlflow
        from mlflow import MlflowClient

        self.uri = tracking_uri
        mlflow.set_tracking_uri(tracking_uri)
        self.client = MlflowClient(tracking_uri)
        found = self.client.get_experiment_by_name(experiment)
        if found is None:
            location = None
            if artifact_dir is not None and tracking_uri.startswith("sqlite:"):
                location = Path(artifact_dir).resolve().as_uri()
            self.experiment_id = self.client.create_experiment(experiment, location)
        else:
            self.experiment_id = found.experiment_id
        self.parent_id: str | None = None
        self._beat = 0.0
        self._inputs: list = []  # the sweep's datasets (use_datasets)
        self._feature_names: tuple[str, ...] = ()
        self._train: Dataset | None = None  # a synthetic table's columns: its records' domain
        #: children run again to carry their solves on, by key: deleted once the new one is in
        self._superseded: dict[str, str] = {}

    def find_parent(self, sid: str) -> str | None:
        """The parent run of the sweep ``sid`` if there is one; creates nothing."""
        existing = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.sweep_id = '{sid}' and tags.role = 'sweep'",
            max_results=1,
        )
        self.parent_id = existing[0].info.run_id if existing else None
        return self.parent_id

    def check_no_live_driver(self) -> None:
        """Refuse when another live driver runs this sweep (a lease in the tracking store).

        The output directory's lock (pipeline.sweep.dir_lock) is exact but local; drivers that share only
        a tracking server see each other here: the parent is RUNNING, its ``driver`` tag names
        someone else, and its ``driver_heartbeat`` is younger than DRIVER_TTL seconds (a driver
        on this host whose pid is gone is dead at once). Best effort: MLflow has no atomic
        compare-and-set, so two drivers started within the same second can both pass.
        """
        if self.parent_id is None:
            return
        run = self.client.get_run(self.parent_id)
        holder = run.data.tags.get("driver", "")
        try:
            age = time.time() - float(run.data.tags.get("driver_heartbeat", "0"))
        except ValueError:
            age = math.inf
        if run.info.status != RunStatus.RUNNING or not holder or holder == this_driver():
            return
        host, _, pid = holder.rpartition(":")
        if host == socket.gethostname() and pid.isdigit() and not _alive(int(pid)):
            return
        if age < DRIVER_TTL:
            raise SweepBusyError(
                f"another driver ({holder}) is running this sweep (tracking store {self.uri}, "
                f"heartbeat {age:.0f} s ago); wait for it, or for {DRIVER_TTL} s after it died"
            )

    def heartbeat(self, force: bool = False) -> None:
        """Renew this driver's lease on the parent run (at most every HEARTBEAT seconds)."""
        now = time.time()
        if self.parent_id is None or (not force and now - self._beat < HEARTBEAT):
            return
        self._beat = now
        self.client.set_tag(self.parent_id, "driver", this_driver())
        self.client.set_tag(self.parent_id, "driver_heartbeat", f"{now:.0f}")

    def start_parent(self, sweep_name: str, sid: str, resolved: dict[str, Any]) -> str:
        """The parent run of this sweep: the existing one for the same sweep_id, else new (with
        the sweep's datasets as input). Stores the run list's view in the experiment."""
        view = f"mlflow.sharedViewState.{mlflow_log.VIEW_KEY}"
        self.client.set_experiment_tag(
            self.experiment_id, view, json.dumps(mlflow_log.RUN_LIST_VIEW)
        )
        if self.find_parent(sid) is not None:
            self.client.update_run(self.parent_id, status=RunStatus.RUNNING)
            for tag in ("outcome", "failure_reason"):  # this attempt's verdict is not known yet
                self.client.set_tag(self.parent_id, tag, "running")
            self.heartbeat(force=True)
            return self.parent_id
        run = self.client.create_run(
            self.experiment_id,
            run_name=f"sweep-{sweep_name}",
            tags={"sweep_id": sid, "role": "sweep", "sweep_name": sweep_name},
        )
        self.parent_id = run.info.run_id
        self.heartbeat(force=True)
        flat: dict[str, Any] = {}
        _flatten("", resolved, flat)
        self._log_params(self.parent_id, flat)
        if self._inputs:
            self.client.log_inputs(self.parent_id, datasets=self._inputs)
        return self.parent_id

    def view_url(self) -> str:
        """Where to open the run list of this experiment in the MLflow UI, with the columns that
        matter first, as the driver logs it (``review_hint``): the tracking server's URL, or for
        a local store the ``mlflow ui`` command to run first (no server listens on its own)."""
        return review_hint(self.uri, self.experiment_id)

    def finished_keys(self, carry_on: bool = False) -> set[str]:
        """Keys with a FINISHED child; unfinished children are deleted (they will be redone).
        ``carry_on``: a FINISHED child whose oracle did not certify is not done either: it runs
        again, its solves carried on (``oracles.window.checkpoint``), and is deleted once the new one is
        logged (``log_child``), so that nothing is lost if the new one fails."""
        done: set[str] = set()
        if self.parent_id is None:
            return done
        children = self.client.search_runs(
            [self.experiment_id],
            filter_string=f"tags.mlflow.parentRunId = '{self.parent_id}'",
            max_results=50_000,
        )
        for child in children:
            key = child.data.tags.get("run_key")
            finished = child.info.status == RunStatus.FINISHED and key and key not in done
            if finished and carry_on and child.data.tags.get("oracle_certified") == "no":
                self._superseded.setdefault(key, child.info.run_id)
            elif finished and key not in self._superseded:
                done.add(key)
            else:
                self.client.delete_run(child.info.run_id)
        return done

    def time_limit_before(self) -> float | None:
        """The longest ``oracle.time_limit`` this sweep ran with before (None: a new sweep):
        the parent's tag, or the param of a parent logged before the tag."""
        if self.parent_id is None:
            return None
        run = self.client.get_run(self.parent_id)
        value = run.data.tags.get("oracle_time_limit", run.data.params.get("oracle.time_limit"))
        return None if value is None else float(value)

    def record_time_limit(self, seconds: float) -> None:
        """Keep the longest ``oracle.time_limit`` the sweep has run with on its parent."""
        before = self.time_limit_before()
        if self.parent_id is not None and (before is None or seconds > before):
            self.client.set_tag(self.parent_id, "oracle_time_limit", repr(float(seconds)))

    def use_datasets(self, name: str, train: Dataset, test: Dataset | None) -> None:
        """The sweep's data (built once, here, in the driver): the input of every run logged."""
        self._inputs = mlflow_log.dataset_inputs(name, train, test)
        self._feature_names = train.feature_names
        self._train = train

    def log_child(
        self, result: RunResult, release: Release | SyntheticRelease, mechanism_cfg: dict[str, Any]
    ) -> str:
        """One child run, created and finished in one step, timed as the run ran (not as logged):
        the result (pipeline.tracking.run_record), its dataset as input, its classifier as the model
        ``runs:/<id>/model`` or its synthetic table as an artifact and output dataset, the rest
        of the release in release.json (pipeline.tracking.mlflow_log)."""
        noise, release_metrics = release_fields(release)
        start, end = result.times()
        run_id = self.client.create_run(
            self.experiment_id,
            start_time=start,
            tags=result.to_tags(self.parent_id),
            run_name=run_label(result.mechanism, result.key),
        ).info.run_id
        self._log_params(run_id, result.to_params() | noise)
        self._log_metrics(run_id, release_metrics | result.to_metrics(), timestamp=end)
        if self._inputs:
            self.client.log_inputs(run_id, datasets=self._inputs)
        record = mlflow_log.release_json(release, mechanism_cfg)
        self.client.log_text(run_id, record, "release.json")
        self._log_output(release, run_id)
        for path in carried_states(release):  # what a carried-on solve would start from
            self.client.log_artifact(run_id, str(path), "carry")
        self.client.set_terminated(run_id, status=RunStatus.FINISHED, end_time=end)
        old = self._superseded.pop(result.key, None)
        if old is not None:  # the run it carried on from
            self.client.delete_run(old)
        return run_id

    @functools.singledispatchmethod
    def _log_output(self, release: Release, run_id: str) -> None:
        """A classifier's output: its model, ``runs:/<id>/model``."""
        import mlflow

        names = self._feature_names or [f"x{j}" for j in range(release.w.shape[-1])]
        mlflow.set_tracking_uri(self.uri)  # where MLflow logs a model (one store per driver)
        mlflow_log.log_release_model(self.client, self.experiment_id, run_id, release, names)

    @_log_output.register
    def _(self, release: SyntheticRelease, run_id: str) -> None:
        """A synthetic table's output: the table, as an artifact and output dataset; none for
        the non-private reference, whose table is the private data."""
        if release.mechanism not in NON_PRIVATE:
            domain = self._train.records().domain
            mlflow_log.log_synthetic_table(self.client, run_id, release, domain)

    def log_failed_child(self, key: str, mechanism: str, reason: str) -> None:
        """A run that failed for good, as a FAILED child with its reason (redone on resume)."""
        run = self.client.create_run(
            self.experiment_id,
            run_name=run_label(mechanism, key),
            tags={
                "mlflow.parentRunId": self.parent_id,
                "role": mlflow_log.CHILD_ROLE,
                "run_key": key,
                "mechanism": mechanism,
                "failure_reason": reason[:5000],
            },
        )
        if self._inputs:
            self.client.log_inputs(run.info.run_id, datasets=self._inputs)
        self.client.set_terminated(run.info.run_id, status=RunStatus.FAILED)

    def fail_unfinished_children(self, reason: str | None = None) -> int:
        """Any child left RUNNING (half-logged by a driver that stopped) FAILED, with ``reason``
        as its ``failure_reason`` when given: a rerun redoes those runs (only FINISHED children
        count as done). Returns how many there were."""
        running = self.client.search_runs(
            [self.experiment_id],
            filter_string=(
                f"tags.mlflow.parentRunId = '{self.parent_id}' and attributes.status = 'RUNNING'"
            ),
            max_results=50_000,
        )
        for child in running:
            if reason:
                self.client.set_tag(child.info.run_id, "failure_reason", reason[:5000])
            self.client.set_terminated(child.info.run_id, status=RunStatus.FAILED)
        return len(running)

    def close_left_running(self, reason: str) -> int:
        """Close what a driver that is gone left RUNNING of this sweep: the parent KILLED, its
        children FAILED, each with ``reason`` in ``failure_reason`` (and the parent's in
        ``lost_driver``, which a resumed sweep keeps); returns how many runs.

        A driver killed by ``kill -9`` (or out of memory, or whose disk was full when it tried
        to mark its runs) leaves its parent and a half-logged child RUNNING. The rerun resumes
        the parent, but a child it deletes (``finished_keys``) kept its status: RUNNING in the
        store for good. Call it under the output directory's lock and after
        ``check_no_live_driver``: then no driver is alive to finish those runs."""
        if self.parent_id is None:
            return 0
        closed = self.fail_unfinished_children(reason)
        if self.client.get_run(self.parent_id).info.status == RunStatus.RUNNING:
            # kept when the rerun resumes the sweep run and overwrites its outcome tags
            self.client.set_tag(self.parent_id, "lost_driver", reason[:5000])
            self.client.set_tag(self.parent_id, "outcome", "interrupted")
            self.client.set_tag(self.parent_id, "failure_reason", reason[:5000])
            self.client.set_terminated(self.parent_id, status=RunStatus.KILLED)
            closed += 1
        return closed

    def end_after_fault(self, reason: str) -> None:
        """The parent KILLED with ``reason``, any child left RUNNING (half-logged) FAILED
        (``fail_unfinished_children``), with the same reason."""
        self.fail_unfinished_children(reason)
        self.client.set_tag(self.parent_id, "outcome", "interrupted")
        self.client.set_tag(self.parent_id, "failure_reason", reason[:5000])
        self.client.set_terminated(self.parent_id, status=RunStatus.KILLED)

    def finish_parent(
        self,
        artifacts: Iterable[Path],
        metrics: dict[str, float],
        status: RunStatus = RunStatus.FINISHED,
        tags: dict[str, str] | None = None,
    ) -> None:
        """Artifacts, metrics, the outcome tags (``outcome``, ``failure_reason``), then status."""
        for name, value in (tags or {}).items():
            self.client.set_tag(self.parent_id, name, value[:5000])
        for path in artifacts:
            self.client.log_artifact(self.parent_id, str(path))
        self._log_metrics(self.parent_id, metrics)
        self.client.set_terminated(self.parent_id, status=status)

    def _log_params(self, run_id: str, params: dict[str, Any]) -> None:
        from mlflow.entities import Param

        items = [Param(k[:250], _param(v)) for k, v in params.items()]
        for i in range(0, len(items), 100):
            self.client.log_batch(run_id, params=items[i : i + 100])

    def _log_metrics(
        self, run_id: str, metrics: dict[str, float], timestamp: int | None = None
    ) -> None:
        from mlflow.entities import Metric

        now = timestamp or int(time.time() * 1000)
        items = [Metric(k, float(v), now, 0) for k, v in metrics.items() if math.isfinite(v)]
        for i in range(0, len(items), 500):
            self.client.log_batch(run_id, metrics=items[i : i + 500])


def carried_states(release: Release | SyntheticRelease) -> list[Path]:
    """The states a release's stopped window searches kept (``oracles.window.checkpoint``; a certificate's
    ``CarryStats.carry``) that are on this machine's disk: the run's MLflow artifacts under
    ``carry/`` keep a copy beside the output directory's (docs/privacy.md, "Carrying on")."""
    paths = (carry.carry for c in release.oracle_answers if (carry := c.stat(CarryStats)))
    return [Path(p) for p in paths if p and Path(p).is_file()]


def results_from_mlflow(tracker) -> list[RunResult]:
    """The results of the sweep's FINISHED children (the runs done before a resume), one per key.

    The inverse of ``SweepTracker.log_child``: a result logged there reads back equal, every
    field with its type (pipeline.tracking.run_record, tests/pipeline/tracking/test_run_record.py).
    """
    if tracker.parent_id is None:
        return []
    children = tracker.client.search_runs(
        [tracker.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{tracker.parent_id}'",
        max_results=50_000,
    )
    results, seen = [], set()
    for child in children:
        key = child.data.tags.get("run_key")
        if (
            child.info.status != RunStatus.FINISHED or key in seen
        ):  # a duplicate of an older version
            continue
        seen.add(key)
        results.append(RunResult.from_mlflow(child))
    return results
