"""What ``python -m pipeline`` does with a validated config.

Without a sweep: load, encode and summarize the dataset (``summary.json``). With a sweep: run
it on Ray, record it in MLflow and write its report (pipeline.sweep, pipeline.tracking,
pipeline.report). Every path is made absolute first: under ``ray job submit`` the driver runs
in a temporary copy of the working directory.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import signal
import time
from pathlib import Path
from typing import Any

from mechanisms.audit import audit_table, run_audit
from mechanisms.catalog import NON_PRIVATE
from pipeline.config import Config, ConfigError, sweep_id, with_content
from pipeline.data import load_dataset
from pipeline.faults import StorageError, Terminated, stop_on_sigterm, storage_fault
from pipeline.lease import DriverLease
from pipeline.preflight import (
    check_data_bounds,
    check_job_output_dir,
    check_oracle_calls,
    check_rows,
    check_task_cpus,
    check_workload,
    local_cpus,
    probe_ray_address,
    probe_tracking_store,
)
from pipeline.progress import Phase
from pipeline.report import best_accuracy_note, write_report
from pipeline.sweep import init_ray, largest_node_cpus, run_sweep
from pipeline.tasks import sweep_keys
from pipeline.tracking import SweepTracker, default_tracking_uri, results_from_mlflow

log = logging.getLogger(__name__)


def summarize(config: Config, data: tuple[Any, Any] | None = None) -> dict[str, Any]:
    """Describe the configured dataset (``data``: it loaded and encoded, else loaded here)."""
    start = time.perf_counter()
    train, test = data if data is not None else load_dataset(config.dataset)
    return {
        "dataset": config.dataset.name,
        "train": train.summary(),
        "test": test.summary() if test is not None else None,
        "feature_names": list(train.feature_names),
        "provenance": dict(train.provenance),
        "load_seconds": round(time.perf_counter() - start, 3),
    }


def _write_json(path: Path, content: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(content, indent=2, default=str))
    tmp.replace(path)


@dataclasses.dataclass(frozen=True)
class SweepOutcome:
    """What a sweep achieved against what was requested; decides the exit code (pipeline.cli).

    Complete means every requested run FINISHED and every private run's guarantee holds; the
    first line of summary.md and the process's last line of stderr say which it is, and why not.
    """

    requested: int
    finished: int
    failed: dict[str, str]
    interrupted: bool
    private_not_holding: tuple[str, ...]
    #: interrupted by SIGTERM (pipeline.faults.Terminated), not by Ctrl-C
    terminated: bool = False

    @property
    def status(self) -> str:
        if self.interrupted:
            return "interrupted"
        if self.finished < self.requested:
            return "incomplete"
        if self.private_not_holding:
            return "privacy_not_holding"
        return "complete"

    @property
    def reason(self) -> str:
        """One line: what is wrong (empty when complete)."""
        missing = self.requested - self.finished
        if self.status == "interrupted":
            by = " by SIGTERM" if self.terminated else ""
            return (
                f"sweep interrupted{by}: {self.finished} of {self.requested} requested runs "
                f"finished, {missing} not run; rerun the same command to resume"
            )
        if self.status == "incomplete":
            text = f"{missing} of {self.requested} requested runs did not finish"
            if self.failed:
                key, why = next(iter(self.failed.items()))
                text += f" ({len(self.failed)} failed; first: {key}: {why})"
            return text
        if self.status == "privacy_not_holding":
            first = self.private_not_holding[0]
            return (
                f"privacy does not hold for {len(self.private_not_holding)} private run(s) "
                f"(first: {first}); see summary.md"
            )
        return ""

    def headline(self) -> str:
        """The first line of summary.md."""
        if self.status == "complete":
            return (
                f"**Complete**: all {self.requested} requested runs finished and privacy "
                f"holds for every private run."
            )
        label = {
            "interrupted": "INTERRUPTED (partial sweep)",
            "incomplete": "INCOMPLETE (partial sweep)",
            "privacy_not_holding": "PRIVACY DOES NOT HOLD",
        }[self.status]
        return f"**{label}**: {self.reason}."


def _claim_output_dir(output_dir: Path, sid: str) -> bool:
    """One grid per output directory: refuse to overwrite another sweep's report. True when the
    directory was claimed here first (no marker before)."""
    marker = output_dir / ".sweep_id"
    # an empty marker (a crash mid-write) claims nothing
    other = (marker.read_text().strip() or None) if marker.exists() else None
    if other is None and (output_dir / "summary.json").exists():
        try:  # a directory written before the marker existed
            other = json.loads((output_dir / "summary.json").read_text())["sweep"]["sweep_id"]
        except (ValueError, KeyError, TypeError):
            other = None
    if other is not None and other != sid:
        raise ConfigError(
            f"hydra.run.dir: {output_dir} holds the report of another sweep ({other}; this one is "
            f"{sid}: a different grid or config) and would be overwritten; give another "
            f"hydra.run.dir, found {str(output_dir)!r}"
        )
    fresh = not marker.exists()
    marker.write_text(sid + "\n")
    return fresh


def _check_cluster_cpus(config: Config, output_dir: Path, fresh: bool) -> None:
    """``check_task_cpus`` on the cluster connected to, before the parent run exists and any task
    starts; a refused sweep gives back a directory it claimed (the fixed command is another
    sweep: its config differs)."""
    cpus = largest_node_cpus()
    if cpus is None:
        return
    try:
        check_task_cpus(config, cpus, "the largest node of the Ray cluster")
    except ConfigError:
        if fresh:
            (output_dir / ".sweep_id").unlink(missing_ok=True)
        raise


def _probe_before_loading(config: Config, output_dir: Path) -> None:
    """The checks that need no data, first: a dead service fails in seconds, not after a load.
    (The sqlite store is probed later, under the driver's lock: another driver may be creating it.)
    """
    check_job_output_dir(output_dir)
    cpus = local_cpus(config)
    if cpus is not None:  # a Ray of our own: its CPUs are known before it starts
        where = "the local Ray (cluster.num_cpus)" if config.cluster.num_cpus else "this machine"
        check_task_cpus(config, cpus, where)
    if config.cluster.address:
        probe_ray_address(config.cluster.address)  # seconds, not the minutes ray.init waits
    uri = config.tracking.tracking_uri
    if uri and uri.startswith(("http://", "https://")):
        probe_tracking_store(uri)


def run_sweep_and_report(
    config: Config, output_dir: Path, data: tuple[Any, Any] | None = None
) -> dict[str, Any]:
    """Check, lock, run, report (``data``: the loaded (train, test), else loaded here). Nothing is
    created in the tracking store before every check passed and Ray is up, so a sweep that
    cannot start leaves no FAILED parent behind."""
    train, test = data if data is not None else load_dataset(config.dataset)
    # a line every PHASE_EVERY seconds until the plan ("sweep NAME: N runs, ...") is said
    with Phase(f"planning sweep {config.sweep.name}") as planning:
        planning.now("reading the table's file for the sweep's id")
        resolved = with_content(dataclasses.asdict(config))  # a table's file: edited, a new sweep
        planning.now("checking the grid against the data")
        keys = sweep_keys(config)
        check_rows(config, train.n)
        check_workload(config, train)
        check_oracle_calls(config, config.sweep.epsilons, train.n, train.d)
        clipped = check_data_bounds(config, train)
        uri = config.tracking.tracking_uri or default_tracking_uri(output_dir)
        state: dict[str, Any] = {}  # what _run_locked got to: the tracker, once it exists
        try:
            return _run_locked(
                config, output_dir, train, test, resolved, keys, uri, clipped, state, planning
            )
        except Exception as e:
            fault = storage_fault(e)
            if fault is None:
                raise
            raise _stopped_by_storage(fault, state.get("tracker"), keys, output_dir) from None


def _stopped_by_storage(fault: str, tracker, keys, output_dir: Path) -> StorageError:
    """A sweep stopped by a full or read-only disk, as one line. The runs finished are in the
    tracking store; as far as the store still takes writes, the parent is marked KILLED and a
    child left half-logged FAILED (best effort: the store may be the full disk)."""
    if tracker is None or tracker.parent_id is None:
        return StorageError(
            f"{output_dir} cannot be written: {fault}; nothing was run (free space or give a "
            "writable hydra.run.dir, then rerun)"
        )
    finished, marked = "some", "could not be marked (the store takes no writes)"
    try:
        wanted = {str(k) for k in keys}
        finished = str(sum(r.key in wanted for r in results_from_mlflow(tracker)))
        tracker.end_after_fault(f"stopped: {fault}")
        marked = "is marked KILLED"
    except Exception:  # noqa: BLE001 - the store may be the disk that is full
        pass
    return StorageError(
        f"the sweep stopped: {fault} under {output_dir}; {finished} of {len(keys)} runs finished "
        f"and are kept, the sweep run {marked}; free space (or make it writable) and rerun the "
        "same command to resume"
    )


def _run_locked(
    config, output_dir, train, test, resolved, keys, uri, clipped, state, planning
) -> dict[str, Any]:
    """The sweep under the driver's lease: the tracker, the parent, the runs, the report
    (``planning``: the phase that ends with the plan's line)."""
    sid = sweep_id(resolved)
    planning.now("taking the output directory")
    with DriverLease(output_dir, sid):
        fresh = _claim_output_dir(output_dir, sid)
        planning.now("opening the MLflow store")
        probe_tracking_store(uri)
        # database and experiment exist before anything fans out
        tracker = SweepTracker(uri, config.tracking.experiment, output_dir / "mlartifacts")
        state["tracker"] = tracker
        planning.now("describing the data for MLflow")
        tracker.use_datasets(config.dataset.name, train, test)  # each run's input, built once
        planning.now("looking up the runs already finished")
        tracker.find_parent(sid)
        tracker.check_no_live_driver()  # a driver elsewhere sharing only the tracking store
        done = tracker.finished_keys()
        todo = [k for k in keys if str(k) not in done]
        planning.stop()
        log.info(
            "sweep %s: %d runs, %d already finished, %d to run",
            config.sweep.name,
            len(keys),
            len(keys) - len(todo),
            len(todo),
        )
        if todo:
            with Phase("starting Ray"):
                init_ray(config)  # connect (or fail, in one line) before the parent exists
            _check_cluster_cpus(config, output_dir, fresh)
        failed: dict[str, str] = {}
        interrupted = terminated = False
        # SIGTERM (`ray job stop`, a scheduler's timeout) ends the sweep like Ctrl-C: with a
        # report of what finished and a KILLED parent, not a RUNNING one forever
        parent = tracker.start_parent(config.sweep.name, sid, resolved)
        previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
        try:
            # encoding choices read off the private data (pipeline.data.table) and data clipped
            # to a mechanism's bound on request (check_data_bounds), on record
            leaks = [*(train.provenance.get("privacy_leak_warnings") or []), *clipped]
            if leaks:
                tracker.client.set_tag(parent, "privacy_leak_warnings", " | ".join(leaks)[:5000])
            log.info(
                "MLflow: %s, experiment %r, sweep run %s (sweep_id %s); its runs: %s",
                uri,
                config.tracking.experiment,
                parent,
                sid,
                tracker.view_url(),
            )
            _, failed = run_sweep(config, train, test, tracker, todo)
        except KeyboardInterrupt as e:
            interrupted, terminated = True, isinstance(e, Terminated)
            tracker.fail_unfinished_children()  # a child half-logged when the signal came
        finally:
            # the report is written whole: a second SIGTERM meanwhile does not cut it short
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            try:
                wanted = {str(k) for k in keys}
                results = [r for r in results_from_mlflow(tracker) if r.key in wanted]
                private = [r for r in results if r.mechanism not in NON_PRIVATE]
                outcome = SweepOutcome(
                    requested=len(keys),
                    finished=len(results),
                    failed=failed,
                    interrupted=interrupted,
                    private_not_holding=tuple(r.key for r in private if not r.privacy_holds),
                    terminated=terminated,
                )
                finished_keys = {r.key for r in results}
                missing = [str(k) for k in keys if str(k) not in finished_keys]
                paths = write_report(
                    [r.to_row() for r in results],
                    output_dir,
                    f"Sweep {config.sweep.name} ({sid})",
                    outcome=outcome,
                    missing=missing,
                )
                metrics = {
                    "runs": float(len(results)),
                    "runs_requested": float(len(keys)),
                    "runs_failed": float(len(failed)),
                    "private_runs_not_certified": float(len(outcome.private_not_holding)),
                }
                status = {
                    "complete": "FINISHED",
                    "privacy_not_holding": "FINISHED",
                    "interrupted": "KILLED",
                }.get(outcome.status, "FAILED")
                tracker.finish_parent(
                    paths,
                    metrics,
                    status=status,
                    tags={"outcome": outcome.status, "failure_reason": outcome.reason or "-"},
                )
            finally:
                signal.signal(signal.SIGTERM, previous)
    return {
        "sweep_id": sid,
        "parent_run_id": parent,
        "tracking_uri": uri,
        "status": outcome.status,
        "terminated": outcome.terminated,
        "reason": outcome.reason,
        "runs_requested": len(keys),
        "runs": len(results),
        "failures": len(failed),
        "failed": failed,
        "missing": missing,
        "private_runs_not_certified": len(outcome.private_not_holding),
        "report": [str(p) for p in paths],
    }


def run_audit_and_report(config: Config, output_dir: Path) -> dict[str, Any]:
    """The privacy audit of one mechanism: its table (audit.md) and records (audit.json)."""
    reports = run_audit(**dataclasses.asdict(config.audit))
    table = audit_table(reports)
    (output_dir / "audit.md").write_text(table + "\n")
    _write_json(
        output_dir / "audit.json", {"reports": [r.to_params() | r.to_metrics() for r in reports]}
    )
    log.info("privacy audit of %s:\n%s", config.audit.mechanism, table)
    caught = [r for r in reports if not r.is_mutant and r.exceeds_claim]
    return {
        "reports": len(reports),
        "correct_pairs_exceeding_claim": len(caught),
        "table": str(output_dir / "audit.md"),
    }


def run(config: Config) -> dict[str, Any]:
    output_dir = Path(config.output_dir or ".").resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    if config.sweep is not None:
        _probe_before_loading(config, output_dir)
    load_start = time.perf_counter()
    with Phase(f"loading and encoding the data ({config.dataset.name})"):
        data = load_dataset(config.dataset)  # once, for the summary and the sweep
        summary = summarize(config, data)
    summary["load_seconds"] = round(time.perf_counter() - load_start, 3)
    t = summary["train"]
    if summary["provenance"].get("kind") == "records":  # the label is among the attributes
        domain = summary["provenance"]["domain"]
        log.info(
            "%s: %d records over %d attributes (a universe of %.3g records), %d distinct",
            summary["dataset"],
            t["n"],
            t["d"],
            math.prod(len(levels) for levels in domain.values()),
            t["distinct_rows"],
        )
    else:
        log.info(
            "%s: n=%d d=%d (+1: %d, -1: %d), %d distinct rows, %s",
            summary["dataset"],
            t["n"],
            t["d"],
            t["positives"],
            t["negatives"],
            t["distinct_rows"],
            best_accuracy_note(t),
        )
    if config.audit is not None:
        summary["audit"] = run_audit_and_report(config, output_dir)
    if config.sweep is not None:
        summary["sweep"] = run_sweep_and_report(config, output_dir, data)
        done = summary["sweep"]
        log.info(
            "sweep %s: %s, %d of %d requested runs finished, %d failed; report in %s",
            done["sweep_id"],
            done["status"],
            done["runs"],
            done["runs_requested"],
            done["failures"],
            output_dir,
        )
    _write_json(output_dir / "summary.json", summary)
    log.info("summary written to %s", output_dir / "summary.json")
    return summary
