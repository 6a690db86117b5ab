"""What ``python -m pipeline`` does with a validated config.

Without a sweep: load, encode and summarize the dataset (``summary.json``). With a sweep: run
it on Ray, record it in MLflow and write its report (pipeline.sweep.fan_out, pipeline.tracking.mlflow_runs,
pipeline.tracking.report). Every path is made absolute first: under ``ray job submit`` the driver runs
in a temporary copy of the working directory.
"""

from __future__ import annotations

import dataclasses
import enum
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
from pipeline.data.record import Dataset
from pipeline.sweep.faults import (
    HOW_TO_RESUME,
    SpaceReserve,
    StorageError,
    Terminated,
    stop_on_sigterm,
    storage_fault,
)
from pipeline.sweep.dir_lock import DirectoryLock, another_sweep, holder_text, sweep_in, this_driver
from pipeline.sweep.preflight import (
    check_data_bounds,
    check_job_output_dir,
    check_oracle_calls,
    check_rows,
    check_task_cpus,
    check_tree_sizes,
    check_workload,
    local_cpus,
    probe_ray_address,
    probe_tracking_store,
)
from pipeline.sweep.progress import Phase
from pipeline.tracking.report import (
    best_accuracy_note,
    beyond_limit_lines,
    results_frame,
    write_report,
    write_summary,
)
from pipeline.sweep.fan_out import cluster_cpus, init_ray, largest_node_cpus, run_sweep
from pipeline.sweep.one_run import RunKey, sweep_keys
from pipeline.tracking.mlflow_runs import (
    RunStatus,
    SweepTracker,
    default_tracking_uri,
    results_from_mlflow,
)
from pipeline.tracking.run_record import RunResult

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


class SweepStatus(enum.StrEnum):
    """How a sweep ended: ``SweepOutcome.status``, summary.json's ``status`` and the sweep run's
    ``outcome`` tag (pipeline.cli maps it to the exit code)."""

    COMPLETE = "complete"
    INCOMPLETE = "incomplete"
    PRIVACY_NOT_HOLDING = "privacy_not_holding"
    INTERRUPTED = "interrupted"


#: Where the error line points for the runs whose privacy does not hold.
SEE_SUMMARY = "; see summary.md"


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
    #: interrupted by SIGTERM (pipeline.sweep.faults.Terminated), not by Ctrl-C
    terminated: bool = False
    #: stopped by a full or read-only disk: what pipeline.sweep.faults.storage_fault said of it
    storage_fault: str = ""
    #: a carry-on: the uncertified runs it set out to run again, and how many of them did
    carrying: int = 0
    carried: int = 0

    @property
    def status(self) -> SweepStatus:
        if self.interrupted or self.storage_fault:
            return SweepStatus.INTERRUPTED
        if self.finished < self.requested:
            return SweepStatus.INCOMPLETE
        if self.private_not_holding:
            return SweepStatus.PRIVACY_NOT_HOLDING
        return SweepStatus.COMPLETE

    @property
    def run_status(self) -> RunStatus:
        """The sweep run's MLflow status: FINISHED when every run finished (whether privacy
        holds is the ``outcome`` tag's to say), KILLED when interrupted, else FAILED."""
        if self.status in (SweepStatus.COMPLETE, SweepStatus.PRIVACY_NOT_HOLDING):
            return RunStatus.FINISHED
        if self.status == SweepStatus.INTERRUPTED:
            return RunStatus.KILLED
        return RunStatus.FAILED

    @property
    def reason(self) -> str:
        """One line: what is wrong (empty when complete)."""
        missing = self.requested - self.finished
        if self.storage_fault:
            return (
                f"the sweep stopped: {self.storage_fault}; {self.finished} of {self.requested} "
                f"requested runs finished, {missing} not run; {HOW_TO_RESUME}"
            )
        if self.status == SweepStatus.INTERRUPTED:
            by = " by SIGTERM" if self.terminated else ""
            if self.carrying and not missing:  # every run finished once: "0 not run" says nothing
                left = self.carrying - self.carried
                return (
                    f"sweep interrupted{by} while carrying on: {self.carried} of the "
                    f"{self.carrying} uncertified runs ran again, {left} did not (each keeps "
                    "its state); rerun the same command to carry on"
                )
            return (
                f"sweep interrupted{by}: {self.finished} of {self.requested} requested runs "
                f"finished, {missing} not run; rerun the same command to resume"
            )
        if self.status == SweepStatus.INCOMPLETE:
            text = f"{missing} of {self.requested} requested runs did not finish"
            if self.failed:
                key, why = next(iter(self.failed.items()))
                text += f" ({len(self.failed)} failed; first: {key}: {why})"
            return text
        if self.status == SweepStatus.PRIVACY_NOT_HOLDING:
            first = self.private_not_holding[0]
            return (
                f"privacy does not hold for {len(self.private_not_holding)} private run(s) "
                f"(first: {first}){SEE_SUMMARY}"
            )
        return ""

    def headline(self) -> str:
        """The first line of summary.md."""
        if self.status == SweepStatus.COMPLETE:
            return (
                f"**Complete**: all {self.requested} requested runs finished and privacy "
                f"holds for every private run."
            )
        label = {
            SweepStatus.INTERRUPTED: (
                "STOPPED BY THE DISK (partial sweep)"
                if self.storage_fault
                else "INTERRUPTED (partial sweep)"
            ),
            SweepStatus.INCOMPLETE: "INCOMPLETE (partial sweep)",
            SweepStatus.PRIVACY_NOT_HOLDING: "PRIVACY DOES NOT HOLD",
        }[self.status]
        # summary.md is where this is read: it lists the runs below, it does not point to itself
        reason = self.reason.removesuffix(SEE_SUMMARY)
        return f"**{label}**: {reason}" + (" (listed below)." if reason != self.reason else ".")


@dataclasses.dataclass(frozen=True, eq=False)
class SweepPlan:
    """A sweep as planned before the driver's lock: what it runs, on what, tracked where."""

    config: Config
    output_dir: Path
    train: Dataset
    test: Dataset | None
    #: The validated config as a dict with a table's content (``with_content``), and its id.
    resolved: dict[str, Any]
    sweep_id: str
    #: Every requested run, in order.
    keys: list[RunKey]
    tracking_uri: str
    #: What ``check_data_bounds`` clipped to a mechanism's bound, on record.
    clipped: list[str]


@dataclasses.dataclass
class DriverState:
    """How far the driver got under its lock, for the report and for a fault's line: the
    tracker once it exists, the sweep run, the runs that failed, and whether a signal stopped
    the runs (``interrupted``; ``terminated``: SIGTERM, not Ctrl-C)."""

    tracker: SweepTracker | None = None
    parent: str | None = None
    failed: dict[str, str] = dataclasses.field(default_factory=dict)
    interrupted: bool = False
    terminated: bool = False
    #: the carried runs' prices (``carried_prices``) and those beyond the limit, in words
    prices: dict[str, float] = dataclasses.field(default_factory=dict)
    #: a carry-on's runs (their keys), and when this driver began (ms since the epoch): a run
    #: logged since then ran again
    carrying: tuple[str, ...] = ()
    began_ms: int = dataclasses.field(default_factory=lambda: int(time.time() * 1000))
    beyond_limit: list[str] = dataclasses.field(default_factory=list)


def _claim_output_dir(output_dir: Path, sid: str) -> bool:
    """One grid per output directory: refuse to overwrite another sweep's report. True when the
    directory was claimed here first (no marker before)."""
    marker = output_dir / ".sweep_id"
    other = sweep_in(output_dir)
    if other is not None and other != sid:
        raise ConfigError(another_sweep(output_dir, other, sid))
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
        plan = _plan(config, output_dir, train, test, planning)
        state = DriverState()
        try:
            return _run_locked(plan, state, planning)
        except StorageError:  # said under the lock, in the space it kept back
            raise
        except Exception as e:
            fault = storage_fault(e)
            if fault is None:
                raise
            raise _stopped_by_storage(fault, plan, state) from None


def _plan(config: Config, output_dir: Path, train, test, planning: Phase) -> SweepPlan:
    """The checks that need the data, then the sweep's plan (nothing written yet)."""
    planning.now("reading the table's file for the sweep's id")
    resolved = with_content(dataclasses.asdict(config))  # a table's file: edited, a new sweep
    planning.now("checking the grid against the data")
    keys = sweep_keys(config)
    check_rows(config, train.n)
    check_workload(config, train)
    check_oracle_calls(config, config.sweep.epsilons, train.n, train.d)
    clipped = check_data_bounds(config, train)
    planning.now("estimating the window search's trees (oracle.estimate=false: not)")
    check_tree_sizes(config, train)  # warnings for the operator only, never in the record
    uri = config.tracking.tracking_uri or default_tracking_uri(output_dir)
    sid = sweep_id(resolved)
    return SweepPlan(config, output_dir, train, test, resolved, sid, keys, uri, clipped)


def _stopped_by_storage(fault: str, plan: SweepPlan, state: DriverState) -> StorageError:
    """A sweep stopped by a full or read-only disk, as one line. The runs finished are in the
    tracking store; as far as the store still takes writes (the space ``SpaceReserve`` kept back
    has been given back), the parent is marked KILLED, a child left half-logged FAILED, and
    summary.md says what finished (best effort each: the store may be the disk that is full; a
    parent left RUNNING is closed by the next driver)."""
    tracker, output_dir = state.tracker, plan.output_dir
    if tracker is None or tracker.parent_id is None:
        return StorageError(
            f"{output_dir} cannot be written: {fault}; nothing was run (free space or give a "
            "writable hydra.run.dir, then rerun)"
        )
    results, marked, summary = None, "could not be marked (the store takes no writes)", ""
    try:
        wanted = {str(k) for k in plan.keys}
        results = [r for r in results_from_mlflow(tracker) if r.key in wanted]
    except Exception:  # noqa: BLE001 - the store may be the disk that is full
        pass
    outcome = SweepOutcome(
        requested=len(plan.keys),
        finished=len(results) if results is not None else 0,
        failed=state.failed,
        interrupted=True,
        private_not_holding=(),
        storage_fault=f"{fault} under {output_dir}",
    )
    try:
        tracker.end_after_fault(f"stopped: {fault}")
        marked = "is marked KILLED"
    except Exception:  # noqa: BLE001 - the store may be the disk that is full
        pass
    if results is not None:
        summary = _write_stopped_report(plan, results, outcome)
    finished = str(outcome.finished) if results is not None else "some"
    return StorageError(
        f"the sweep stopped: {fault} under {output_dir}; {finished} of {len(plan.keys)} runs "
        f"finished and are kept, the sweep run {marked}{summary}; {HOW_TO_RESUME}"
    )


def _write_stopped_report(plan: SweepPlan, results: list, outcome: SweepOutcome) -> str:
    """The report of a sweep a full disk stopped, as much of it as fits: all of it, else
    summary.md alone; returns what the error line says of it."""
    finished = {r.key for r in results}
    missing = [str(k) for k in plan.keys if str(k) not in finished]
    rows = [r.to_row() for r in results]
    title, data = _report_title(plan), _data_description(plan)
    try:
        write_report(rows, plan.output_dir, title, outcome=outcome, missing=missing, data=data)
        return ", summary.md says so"
    except Exception:  # noqa: BLE001 - the figures may not fit where summary.md does
        pass
    try:
        write_summary(results_frame(rows), plan.output_dir, title, outcome, missing, data)
        return ", summary.md says so"
    except Exception:  # noqa: BLE001 - the disk is full still
        return ", summary.md could not be written"


def _run_locked(plan: SweepPlan, state: DriverState, planning: Phase) -> dict[str, Any]:
    """The sweep under the driver's lock: the tracker, the parent, the runs, the report
    (``planning``: the phase that ends with the plan's line)."""
    planning.now("taking the output directory")
    with (
        DirectoryLock(plan.output_dir, plan.sweep_id) as lock,
        SpaceReserve(_written_dirs(plan)) as space,
    ):
        try:
            return _run_locked_in(plan, state, planning, lock)
        except Exception as e:
            fault = storage_fault(e)
            if fault is None:
                raise
            space.release()  # the space the sweep's last words take
            raise _stopped_by_storage(fault, plan, state) from None


def _written_dirs(plan: SweepPlan) -> list[Path]:
    """Where the driver writes: the output directory, and a sqlite store's directory."""
    dirs = [plan.output_dir]
    if plan.tracking_uri.startswith("sqlite:///"):
        dirs.append(Path(plan.tracking_uri.removeprefix("sqlite:///")).resolve().parent)
    return dirs


def _run_locked_in(plan: SweepPlan, state: DriverState, planning: Phase, lock) -> dict[str, Any]:
    """``_run_locked``'s work, under the lock ``lock``."""
    config, sid = plan.config, plan.sweep_id
    fresh = _claim_output_dir(plan.output_dir, sid)
    todo = _open_tracker(plan, state, planning, lock.previous)
    if todo:
        with Phase("starting Ray"):
            init_ray(config)  # connect (or fail, in one line) before the parent exists
        _check_cluster_cpus(config, plan.output_dir, fresh)
        # before any run starts: the carried runs no order or CPU of this sweep certifies
        state.beyond_limit = beyond_limit_lines(
            state.prices, config.oracle.time_limit, _sweep_cpus(config)
        )
        for line in state.beyond_limit:
            log.warning("%s", line)
    # SIGTERM (`ray job stop`, a scheduler's timeout) ends the sweep like Ctrl-C: with a
    # report of what finished and a KILLED parent, not a RUNNING one forever
    state.parent = state.tracker.start_parent(config.sweep.name, sid, plan.resolved)
    state.tracker.record_time_limit(config.oracle.time_limit)
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
    full = False
    try:
        _run_todo(plan, state, todo)
    except KeyboardInterrupt as e:
        state.interrupted, state.terminated = True, isinstance(e, Terminated)
        state.tracker.fail_unfinished_children()  # a child half-logged when the signal came
    except Exception as e:
        # a full disk's report is _stopped_by_storage's, in the space kept back for it
        full = storage_fault(e) is not None
        raise
    finally:
        # the report is written whole: a second SIGTERM meanwhile does not cut it short
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        try:
            summary = None if full else _report(plan, state)
        finally:
            signal.signal(signal.SIGTERM, previous)
    return summary


def _open_tracker(
    plan: SweepPlan, state: DriverState, planning: Phase, previous: dict | None = None
) -> list[RunKey]:
    """The tracker (``state.tracker``) on a store that exists, the sweep's datasets described
    once, no other live driver, nothing left RUNNING by a driver that is gone (``previous``:
    the one the lock file named, pipeline.sweep.dir_lock); returns the runs not yet FINISHED, and says
    the plan's line."""
    config = plan.config
    planning.now("opening the MLflow store")
    probe_tracking_store(plan.tracking_uri)
    # database and experiment exist before anything fans out
    state.tracker = SweepTracker(
        plan.tracking_uri, config.tracking.experiment, plan.output_dir / "mlartifacts"
    )
    planning.now("describing the data for MLflow")
    state.tracker.use_datasets(config.dataset.name, plan.train, plan.test)  # built once
    planning.now("looking up the runs already finished")
    state.tracker.find_parent(plan.sweep_id)
    state.tracker.check_no_live_driver()  # a driver elsewhere sharing only the tracking store
    _close_left_running(state.tracker, previous)
    before = state.tracker.time_limit_before()
    carry_on = config.oracle.carry_on or (before is not None and config.oracle.time_limit > before)
    done = state.tracker.finished_keys(carry_on=carry_on)
    todo = [k for k in plan.keys if str(k) not in done]
    planning.stop()
    if carry_on and not todo:
        log.info(
            "nothing is left to carry on: every run of the sweep finished and every oracle "
            "answer is certified (oracle.time_limit %g s); the report is written as it stands",
            config.oracle.time_limit,
        )
    elif carry_on:
        log.info(
            "carrying on: the runs whose oracle did not certify run again, each window search "
            "from the state it kept, the cheapest to certify first (oracle.time_limit %g s%s)",
            config.oracle.time_limit,
            "" if before is None else f", before {before:g} s",
        )
        state.prices = carried_prices(state.tracker, todo)
        state.carrying = tuple(str(k) for k in todo)
    log.info(
        "sweep %s: %d runs, %d already finished, %d to run",
        config.sweep.name,
        len(plan.keys),
        len(plan.keys) - len(todo),
        len(todo),
    )
    return todo


def carried_again(results: list[RunResult], carrying: tuple[str, ...], began_ms: int) -> int:
    """How many of a carry-on's runs (``carrying``) have a record logged since this driver
    began (``began_ms``): those that ran again before the sweep ended or stopped."""
    wanted = set(carrying)
    return sum(1 for r in results if r.key in wanted and r.start_time_ms >= began_ms)


def carried_prices(tracker: SweepTracker, todo: list[RunKey]) -> dict[str, float]:
    """The price of each run in ``todo`` that finished uncertified before (its last attempt's
    ``oracle_cpu_seconds_to_certify``: CPU seconds its window search estimated it still needs,
    the kept state's own estimate), by run key; NaN where none was measured."""
    wanted = {str(k) for k in todo}
    return {
        r.key: float(r.oracle_cpu_seconds_to_certify)
        for r in results_from_mlflow(tracker)
        if r.key in wanted
    }


def _close_left_running(tracker: SweepTracker, previous: dict | None) -> None:
    """The sweep's runs that a driver which is gone left RUNNING (kill -9, out of memory, a disk
    too full to take its last words), closed with a reason that names it: the sweep run KILLED,
    a half-logged run FAILED (and redone), instead of RUNNING in the store for good."""
    who = holder_text(previous) if previous else "driver unknown"
    reason = (
        f"left RUNNING by a driver that ended without closing it ({who}: kill -9, out of "
        f"memory or a full disk); closed by the next driver, {this_driver()}"
    )
    closed = tracker.close_left_running(reason)
    if closed:
        log.warning(
            "closed %d run(s) left RUNNING by a driver that is gone (%s): the sweep run KILLED, "
            "a half-logged run FAILED (it is redone)",
            closed,
            who,
        )


def _run_todo(plan: SweepPlan, state: DriverState, todo: list[RunKey]) -> None:
    """The runs ``todo`` on Ray, each logged as it finishes (``state.failed``: the ones that
    failed); the data's privacy-leak warnings on the sweep run first."""
    config, tracker = plan.config, state.tracker
    # encoding choices read off the private data (pipeline.data.table) and data clipped to a
    # mechanism's bound on request (check_data_bounds), on record
    leaks = [*(plan.train.provenance.get("privacy_leak_warnings") or []), *plan.clipped]
    if leaks:
        tracker.client.set_tag(state.parent, "privacy_leak_warnings", " | ".join(leaks)[:5000])
    log.info(
        "MLflow: %s, experiment %r, sweep run %s (sweep_id %s); its runs: %s",
        plan.tracking_uri,
        config.tracking.experiment,
        state.parent,
        plan.sweep_id,
        tracker.view_url(),
    )
    _, state.failed = run_sweep(config, plan.train, plan.test, tracker, todo, state.prices)


def _report_title(plan: SweepPlan) -> str:
    return f"Sweep {plan.config.sweep.name} ({plan.sweep_id})"


def _data_description(plan: SweepPlan) -> dict[str, Any]:
    """What summary.md says of the data, as summary.json describes it (``summarize``), without
    the statistics that take a pass over the rows."""
    train, test = plan.train, plan.test
    return {
        "dataset": plan.config.dataset.name,
        "train": {"n": train.n, "d": train.d},
        "test": {"n": test.n, "d": test.d} if test is not None else None,
        "feature_names": list(train.feature_names),
        "provenance": dict(train.provenance),
    }


def _sweep_cpus(config: Config) -> int | None:
    """The CPUs the sweep runs on, which summary.md divides an uncertified run's price over:
    its Ray's (a cluster's, when it joined one), else those of the Ray it would start; None
    when it would join a cluster it has not (nothing was left to run)."""
    return cluster_cpus() or local_cpus(config)


def _report(plan: SweepPlan, state: DriverState) -> dict[str, Any]:
    """The report of every requested run finished (this attempt's and earlier ones'), the sweep
    run's outcome and status; returns the sweep's part of summary.json."""
    keys, tracker = plan.keys, state.tracker
    wanted = {str(k) for k in keys}
    results = [r for r in results_from_mlflow(tracker) if r.key in wanted]
    private = [r for r in results if r.mechanism not in NON_PRIVATE]
    outcome = SweepOutcome(
        requested=len(keys),
        finished=len(results),
        failed=state.failed,
        interrupted=state.interrupted,
        private_not_holding=tuple(r.key for r in private if not r.privacy_holds),
        terminated=state.terminated,
        carrying=len(state.carrying),
        carried=carried_again(results, state.carrying, state.began_ms),
    )
    finished_keys = {r.key for r in results}
    missing = [str(k) for k in keys if str(k) not in finished_keys]
    paths = write_report(
        [r.to_row() for r in results],
        plan.output_dir,
        _report_title(plan),
        outcome=outcome,
        missing=missing,
        data=_data_description(plan),
        cpus=_sweep_cpus(plan.config),
        beyond_limit=state.beyond_limit,
    )
    metrics = {
        "runs": float(len(results)),
        "runs_requested": float(len(keys)),
        "runs_failed": float(len(state.failed)),
        "private_runs_not_certified": float(len(outcome.private_not_holding)),
    }
    tracker.finish_parent(
        paths,
        metrics,
        status=outcome.run_status,
        tags={"outcome": outcome.status, "failure_reason": outcome.reason or "-"},
    )
    return {
        "sweep_id": plan.sweep_id,
        "parent_run_id": state.parent,
        "tracking_uri": plan.tracking_uri,
        "status": outcome.status,
        "terminated": outcome.terminated,
        "reason": outcome.reason,
        "runs_requested": len(keys),
        "runs": len(results),
        "failures": len(state.failed),
        "failed": state.failed,
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
