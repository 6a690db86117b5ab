"""pipeline.run in-process: the outcome of a sweep, the output directory, summary.json, and
``run_sweep_and_report`` with Ray, the sweep and the tracking store faked (tests/pipeline/
test_reliability.py runs it against a real MLflow store)."""

from __future__ import annotations

import dataclasses
import errno
import json
import logging
import math
import os
import signal
import sqlite3
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hydra import compose, initialize_config_dir
from omegaconf import open_dict

import pipeline.sweep.faults as faults
import pipeline.sweep.preflight
import pipeline.sweep.progress
import pipeline.tracking.report
import pipeline.run as run_module
import pipeline.sweep.fan_out
import pipeline.tracking.mlflow_runs
from pipeline.cli import CONFIG_DIR
from pipeline.config import Config, ConfigError, SweepConfig, TrackingConfig, validate
from pipeline.data import load_dataset
from pipeline.data.record import Dataset
from pipeline.data.schema import SyntheticDatasetConfig, TableRecordsConfig
from pipeline.data.table_records import load_table_records
from pipeline.sweep.faults import StorageError
from pipeline.run import SweepOutcome, SweepStatus
from pipeline.settings_schemas import SCHEMAS
from pipeline.sweep.one_run import RunKey, sweep_keys
from pipeline.tracking.mlflow_runs import RunStatus
from tests.pipeline.records import result_for

# --- SweepOutcome ----------------------------------------------------------------------------

NOT_HOLDING = ("opdisc/eps=1/run=0", "opdisc/eps=2/run=0")


@pytest.mark.parametrize(
    "finished, interrupted, not_holding, status",
    [
        (3, True, NOT_HOLDING, "interrupted"),  # interrupted over everything
        (5, True, (), "interrupted"),
        (3, False, NOT_HOLDING, "incomplete"),  # missing runs over a broken guarantee
        (5, False, NOT_HOLDING, "privacy_not_holding"),
        (5, False, (), "complete"),
    ],
)
def test_outcome_status_precedence(finished, interrupted, not_holding, status):
    outcome = SweepOutcome(
        requested=5,
        finished=finished,
        failed={},
        interrupted=interrupted,
        private_not_holding=not_holding,
    )
    assert outcome.status == status and outcome.status is SweepStatus(status)
    assert (outcome.reason == "") == (status == "complete")


@pytest.mark.parametrize(
    "finished, interrupted, not_holding, run_status",
    [
        (5, False, (), "FINISHED"),
        (5, False, NOT_HOLDING, "FINISHED"),  # every run finished; the outcome tag says the rest
        (3, False, (), "FAILED"),
        (3, True, (), "KILLED"),
    ],
)
def test_the_sweep_runs_mlflow_status_follows_its_outcome(
    finished, interrupted, not_holding, run_status
):
    outcome = SweepOutcome(5, finished, {}, interrupted, not_holding)
    assert outcome.run_status is RunStatus(run_status) and str(outcome.run_status) == run_status
    assert json.dumps({"status": outcome.status}) == f'{{"status": "{outcome.status.value}"}}'


def test_an_interrupted_carry_on_says_how_many_uncertified_runs_ran_again():
    """Stopped while carrying on, every run had finished once: "30 of 30 requested runs
    finished, 0 not run" said nothing of the 9 carried runs that had not run again. Now the line
    counts the carried runs logged since this driver began (``carried_again``)."""
    keys = [RunKey("opdisc", 10.0, i) for i in range(4)]
    began = 1_000_000
    results = [
        result_for(keys[0], start_time_ms=began + 5),  # carried, ran again
        result_for(keys[1], start_time_ms=began - 5),  # carried, its earlier attempt's record
        result_for(keys[2], start_time_ms=began + 9),  # not carried (certified before)
        result_for(keys[3], start_time_ms=began),  # carried, ran again at the first instant
    ]
    carrying = (str(keys[0]), str(keys[1]), str(keys[3]))
    assert run_module.carried_again(results, carrying, began) == 2
    outcome = SweepOutcome(30, 30, {}, True, (), terminated=True, carrying=15, carried=6)
    assert outcome.reason == (
        "sweep interrupted by SIGTERM while carrying on: 6 of the 15 uncertified runs ran "
        "again, 9 did not (each keeps its state); rerun the same command to carry on"
    )
    # a carry-on stopped with runs not finished at all: what the fresh sweep says
    assert SweepOutcome(30, 28, {}, True, (), carrying=15, carried=6).reason.startswith(
        "sweep interrupted: 28 of 30 requested runs finished, 2 not run"
    )


def test_outcome_texts_say_what_is_wrong_and_what_to_do():
    interrupted = SweepOutcome(5, 3, {}, True, ())
    assert interrupted.reason == (
        "sweep interrupted: 3 of 5 requested runs finished, 2 not run; "
        "rerun the same command to resume"
    )
    assert interrupted.headline() == f"**INTERRUPTED (partial sweep)**: {interrupted.reason}."
    terminated = SweepOutcome(5, 3, {}, True, (), terminated=True)
    assert terminated.status == "interrupted"
    assert terminated.reason.startswith("sweep interrupted by SIGTERM: 3 of 5 requested runs")

    failed = {"expmech/eps=1/run=0": "ValueError: too large", "opdisc/eps=1/run=0": "X: y"}
    incomplete = SweepOutcome(5, 2, failed, False, ())
    assert incomplete.reason == (
        "3 of 5 requested runs did not finish (2 failed; first: "
        "expmech/eps=1/run=0: ValueError: too large)"
    )
    assert incomplete.headline() == f"**INCOMPLETE (partial sweep)**: {incomplete.reason}."
    assert SweepOutcome(5, 4, {}, False, ()).reason == "1 of 5 requested runs did not finish"

    broken = SweepOutcome(5, 5, {}, False, NOT_HOLDING)
    assert broken.reason == (
        "privacy does not hold for 2 private run(s) (first: opdisc/eps=1/run=0); see summary.md"
    )
    # summary.md lists the runs: its first line does not send the reader to summary.md
    assert broken.headline() == (
        "**PRIVACY DOES NOT HOLD**: privacy does not hold for 2 private run(s) (first: "
        "opdisc/eps=1/run=0) (listed below)."
    )

    complete = SweepOutcome(5, 5, {}, False, ())
    assert complete.headline() == (
        "**Complete**: all 5 requested runs finished and privacy holds for every private run."
    )


# --- the output directory and summary.json ---------------------------------------------------


def test_claiming_a_fresh_directory_writes_the_sweep_marker(tmp_path):
    run_module._claim_output_dir(tmp_path, "aaaa1111")
    assert (tmp_path / ".sweep_id").read_text() == "aaaa1111\n"
    run_module._claim_output_dir(tmp_path, "aaaa1111")  # the same sweep again: a resume
    assert (tmp_path / ".sweep_id").read_text() == "aaaa1111\n"


def test_another_sweeps_directory_is_refused_naming_hydra_run_dir(tmp_path):
    (tmp_path / ".sweep_id").write_text("aaaa1111\n")
    with pytest.raises(ConfigError) as raised:
        run_module._claim_output_dir(tmp_path, "bbbb2222")
    message = str(raised.value)
    assert message.startswith(f"hydra.run.dir: {tmp_path} holds the report of another sweep")
    assert "aaaa1111" in message and "bbbb2222" in message
    assert (tmp_path / ".sweep_id").read_text() == "aaaa1111\n"  # not taken over


def test_an_empty_marker_left_by_a_crash_claims_nothing(tmp_path):
    (tmp_path / ".sweep_id").write_text("")
    run_module._claim_output_dir(tmp_path, "cccc3333")
    assert (tmp_path / ".sweep_id").read_text() == "cccc3333\n"


def test_a_directory_from_before_the_marker_is_known_by_its_summary(tmp_path):
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"sweep": {"sweep_id": "aaaa1111"}}))
    with pytest.raises(ConfigError, match="another sweep \\(aaaa1111"):
        run_module._claim_output_dir(tmp_path, "bbbb2222")
    assert not (tmp_path / ".sweep_id").exists()
    run_module._claim_output_dir(tmp_path, "aaaa1111")
    assert (tmp_path / ".sweep_id").read_text() == "aaaa1111\n"


@pytest.mark.parametrize("content", ['{"dataset": "adult"}', '{"sweep": null}', "{not json"])
def test_a_summary_without_a_sweep_does_not_hold_the_directory(tmp_path, content):
    (tmp_path / "summary.json").write_text(content)
    run_module._claim_output_dir(tmp_path, "bbbb2222")
    assert (tmp_path / ".sweep_id").read_text() == "bbbb2222\n"


def test_write_json_replaces_the_file_and_leaves_no_part_file(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"old": true}')
    run_module._write_json(path, {"where": tmp_path, "n": 3})
    assert json.loads(path.read_text()) == {"where": str(tmp_path), "n": 3}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def test_write_json_that_fails_leaves_the_old_file_whole(tmp_path):
    path = tmp_path / "summary.json"
    path.write_text('{"old": true}')
    circular: dict = {}
    circular["self"] = circular
    with pytest.raises(ValueError):
        run_module._write_json(path, circular)
    assert json.loads(path.read_text()) == {"old": True}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.json"]


def _synthetic(**kwargs) -> SyntheticDatasetConfig:
    return SyntheticDatasetConfig(
        n=kwargs.pop("n", 40), n_continuous=2, groups=[3], levels=3, **kwargs
    )


def test_summarize_describes_the_loaded_data():
    config = Config(dataset=_synthetic(n=50, seed=4))
    summary = run_module.summarize(config)
    train, _ = load_dataset(config.dataset)
    assert summary["dataset"] == "synthetic" and summary["test"] is None
    assert summary["train"] == train.summary() and summary["train"]["n"] == 50
    assert summary["feature_names"] == list(train.feature_names) and len(train.feature_names) == 5
    assert summary["provenance"]["seed"] == 4
    assert summary["load_seconds"] >= 0


def test_run_without_a_sweep_writes_summary_json_in_the_output_dir(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    config = Config(dataset=_synthetic(), output_dir="relative/out")

    def no_sweep(*args, **kwargs):
        raise AssertionError("no sweep configured: nothing to run")

    monkeypatch.setattr(run_module, "run_sweep_and_report", no_sweep)
    summary = run_module.run(config)
    out = tmp_path / "relative" / "out"  # made absolute against the working directory
    assert json.loads((out / "summary.json").read_text()) == json.loads(json.dumps(summary))
    assert "sweep" not in summary and summary["train"]["n"] == 40
    assert sorted(p.name for p in out.iterdir()) == ["summary.json"]  # no lock, no marker


# --- run_sweep_and_report, with Ray, the sweep and MLflow faked ------------------------------


class FakeClient:
    def __init__(self) -> None:
        self.tags: dict[tuple[str, str], str] = {}

    def set_tag(self, run_id: str, key: str, value: str) -> None:
        self.tags[(run_id, key)] = value


class FakeTracker:
    """The SweepTracker calls run_sweep_and_report makes; its "store" is ``rows``."""

    def __init__(self, store, uri, experiment, artifact_dir) -> None:
        self.store, self.uri, self.experiment = store, uri, experiment
        self.client = FakeClient()
        self.parent_id: str | None = None
        self.finished: dict | None = None
        self.unfinished_failed = False
        store.trackers.append(self)

    def find_parent(self, sid: str):
        self.parent_id = self.store.parent
        return self.parent_id

    def check_no_live_driver(self) -> None:
        pass

    def use_datasets(self, name, train, test) -> None:
        self.store.events.append("use_datasets")

    def view_url(self) -> str:
        return "http://127.0.0.1:5000/#/experiments/1/runs"

    def finished_keys(self, carry_on: bool = False) -> set[str]:
        if carry_on:  # an uncertified run is not done: it runs again
            return {r.key for r in self.store.rows if r.oracle_certified is not False}
        return {result.key for result in self.store.rows}

    def time_limit_before(self) -> float | None:
        return None

    def record_time_limit(self, seconds: float) -> None:
        pass

    def heartbeat(self, force: bool = False) -> None:
        pass

    def start_parent(self, sweep_name: str, sid: str, resolved) -> str:
        self.store.events.append("start_parent")
        self.store.parent = self.parent_id = "parent-1"
        return self.parent_id

    def log_child(self, *args, **kwargs) -> str:  # its signature is growing (MLflow datasets)
        self.store.rows.append(args[0] if args else kwargs["result"])
        return "child"

    def log_failed_child(self, key: str, mechanism: str, reason: str) -> None:
        pass

    def close_left_running(self, reason: str) -> int:
        self.store.events.append("close_left_running")
        return 0

    def fail_unfinished_children(self, reason: str | None = None) -> int:
        self.unfinished_failed = True
        return 0

    def finish_parent(self, artifacts, metrics, status="FINISHED", tags=None) -> None:
        self.finished = {
            "artifacts": list(artifacts),
            "metrics": metrics,
            "status": status,
            "tags": tags,
        }


@pytest.fixture
def services(monkeypatch):
    """Ray, the sweep, MLflow and the report faked; ``services.sweep`` is what run_sweep does
    (a function of the todo list and the tracker), ``services.rows`` the store's finished runs."""
    store = types.SimpleNamespace(
        rows=[], parent=None, trackers=[], events=[], reports=[], sweep=None, todo=None
    )

    def init_ray(config):
        store.events.append("init_ray")

    def run_sweep(config, train, test, tracker, todo, prices=None):
        store.todo, store.prices = list(todo), prices
        return store.sweep(todo, tracker)

    def write_report(
        rows, output_dir, title, outcome=None, missing=(), data=None, cpus=None, beyond_limit=()
    ):
        store.reports.append(
            {
                "rows": list(rows),
                "outcome": outcome,
                "missing": list(missing),
                "data": data,
                "cpus": cpus,
                "beyond_limit": list(beyond_limit),
            }
        )
        path = Path(output_dir) / "summary.md"
        path.write_text(outcome.headline() + "\n")
        return [path]

    monkeypatch.setattr(run_module, "init_ray", init_ray)
    monkeypatch.setattr(run_module, "run_sweep", run_sweep)
    monkeypatch.setattr(run_module, "SweepTracker", lambda *args: FakeTracker(store, *args))
    monkeypatch.setattr(run_module, "results_from_mlflow", lambda tracker: list(store.rows))
    monkeypatch.setattr(run_module, "probe_tracking_store", lambda uri: None)
    monkeypatch.setattr(run_module, "write_report", write_report)
    return store


def _sweep_config(out: Path) -> Config:
    mechanisms = {name: SCHEMAS[name]() for name in ("opdisc", "expmech", "logistic_regression")}
    return Config(
        dataset=_synthetic(),
        mechanisms=mechanisms,
        sweep=SweepConfig(name="unit", mechanisms=list(mechanisms), epsilons=[0.5, 1.0], seeds=1),
        tracking=TrackingConfig(tracking_uri=f"sqlite:///{out / 'mlflow.db'}"),
        output_dir=str(out),
    )


def _logging_every_run(holds=lambda key: True, fail=(), stop_after=None):
    """A sweep that logs its runs (all but ``fail``), or is interrupted after ``stop_after``."""

    def sweep(todo, tracker):
        failed = {}
        for i, key in enumerate(todo):
            if i == stop_after:
                raise KeyboardInterrupt
            if str(key) in fail:
                failed[str(key)] = "ValueError: too large"
                continue
            tracker.log_child(result_for(key, holds(key)), "release", {})
        return [], failed

    return sweep


def _parent(services) -> dict:
    (tracker,) = services.trackers
    assert tracker.finished is not None, "the parent run was left RUNNING"
    return tracker.finished


def test_a_complete_sweep_finishes_its_parent_with_its_counts(services, tmp_path):
    config = _sweep_config(tmp_path)
    services.sweep = _logging_every_run()
    result = run_module.run_sweep_and_report(config, tmp_path)
    parent = _parent(services)
    assert parent["status"] == "FINISHED"
    assert parent["tags"] == {"outcome": "complete", "failure_reason": "-"}
    assert parent["metrics"] == {
        "runs": 5.0,
        "runs_requested": 5.0,
        "runs_failed": 0.0,
        "private_runs_not_certified": 0.0,
    }
    assert parent["artifacts"] == [tmp_path / "summary.md"]
    # the dataset inputs are built first; Ray is up before the parent exists
    assert services.events == ["use_datasets", "close_left_running", "init_ray", "start_parent"]
    assert result["status"] == "complete" and result["reason"] == ""
    assert result["runs"] == result["runs_requested"] == 5 and result["missing"] == []
    assert result["parent_run_id"] == "parent-1"
    assert result["tracking_uri"] == config.tracking.tracking_uri
    assert (tmp_path / ".sweep_id").read_text().strip() == result["sweep_id"]
    (report,) = services.reports
    assert report["outcome"].status == "complete" and report["missing"] == []
    data = report[
        "data"
    ]  # what summary.md names its tables by (pipeline.tracking.report.data_lines)
    assert data["dataset"] == "synthetic" and data["train"] == {"n": 40, "d": 5}
    assert data["test"] is None and len(data["feature_names"]) == 5
    assert data["provenance"]["label_noise"] == 0.1


def test_a_broken_guarantee_finishes_the_parent_and_is_counted(services, tmp_path):
    # a reference's privacy_holds is false by definition: it is no private run not certified
    services.sweep = _logging_every_run(
        holds=lambda key: key.mechanism != "logistic_regression" and key.epsilon != 0.5
    )
    result = run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    parent = _parent(services)
    assert parent["status"] == "FINISHED"
    assert parent["tags"]["outcome"] == "privacy_not_holding"
    assert parent["tags"]["failure_reason"] == result["reason"]
    assert result["reason"].startswith("privacy does not hold for 2 private run(s)")
    assert parent["metrics"]["private_runs_not_certified"] == 2.0
    assert result["private_runs_not_certified"] == 2


def test_failed_runs_fail_the_parent_with_the_first_reason(services, tmp_path):
    config = _sweep_config(tmp_path)
    bad = str(sweep_keys(config)[2])
    services.sweep = _logging_every_run(fail={bad})
    result = run_module.run_sweep_and_report(config, tmp_path)
    parent = _parent(services)
    assert parent["status"] == "FAILED"
    assert parent["tags"] == {
        "outcome": "incomplete",
        "failure_reason": (
            f"1 of 5 requested runs did not finish (1 failed; first: {bad}: ValueError: too large)"
        ),
    }
    assert parent["metrics"]["runs"] == 4.0 and parent["metrics"]["runs_failed"] == 1.0
    assert result["failed"] == {bad: "ValueError: too large"} and result["missing"] == [bad]
    assert result["failures"] == 1


def test_an_interrupted_sweep_kills_the_parent_and_reports_what_finished(services, tmp_path):
    config = _sweep_config(tmp_path)
    services.sweep = _logging_every_run(stop_after=2)
    result = run_module.run_sweep_and_report(config, tmp_path)  # no KeyboardInterrupt escapes
    parent = _parent(services)
    assert parent["status"] == "KILLED" and parent["tags"]["outcome"] == "interrupted"
    assert parent["metrics"]["runs"] == 2.0 and parent["metrics"]["runs_requested"] == 5.0
    assert result["status"] == "interrupted" and len(result["missing"]) == 3
    assert not result["terminated"] and services.trackers[0].unfinished_failed
    assert (tmp_path / "summary.md").read_text().startswith("**INTERRUPTED")


def test_sigterm_ends_the_sweep_like_ctrl_c_and_the_handler_is_restored(services, tmp_path):
    # the default handler first: an earlier test may have left the driver's own (cli.entry
    # installs it), which the sweep's would then be indistinguishable from
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    before = signal.getsignal(signal.SIGTERM)

    def sweep(todo, tracker):
        tracker.log_child(result_for(todo[0]), "release", {})
        if signal.getsignal(signal.SIGTERM) in (signal.SIG_DFL, before):
            raise AssertionError("no SIGTERM handler of the sweep's own: a kill would be final")
        os.kill(os.getpid(), signal.SIGTERM)
        raise AssertionError("SIGTERM did not interrupt the sweep")

    services.sweep = sweep
    result = run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    assert result["status"] == "interrupted" and result["runs"] == 1 and result["terminated"]
    assert result["reason"].startswith("sweep interrupted by SIGTERM: 1 of 5")
    assert _parent(services)["status"] == "KILLED"
    assert services.trackers[0].unfinished_failed  # a child half-logged is FAILED, not RUNNING
    assert signal.getsignal(signal.SIGTERM) == before


def test_a_resumed_sweep_runs_only_the_rest_and_counts_only_this_grid(services, tmp_path):
    config = _sweep_config(tmp_path)
    keys = sweep_keys(config)
    # two runs of this grid finished before, and one of another grid in the same store
    services.rows = [
        result_for(keys[0]),
        result_for(keys[1]),
        result_for(RunKey("opdisc", 2.0, 0), holds=False),
    ]
    services.parent = "parent-1"
    services.sweep = _logging_every_run()
    result = run_module.run_sweep_and_report(config, tmp_path)
    assert services.todo == keys[2:]
    parent = _parent(services)
    assert parent["status"] == "FINISHED" and parent["metrics"]["runs"] == 5.0
    assert parent["metrics"]["private_runs_not_certified"] == 0.0  # not a run of this grid
    assert result["status"] == "complete"


def test_nothing_left_to_run_starts_no_ray(services, tmp_path):
    config = _sweep_config(tmp_path)
    services.rows = [result_for(key) for key in sweep_keys(config)]
    services.sweep = _logging_every_run()
    result = run_module.run_sweep_and_report(config, tmp_path)
    assert "init_ray" not in services.events and services.todo == []
    assert result["status"] == "complete" and _parent(services)["status"] == "FINISHED"


def test_carrying_on_with_nothing_uncertified_says_so_and_starts_no_ray(services, tmp_path, caplog):
    config = _sweep_config(tmp_path)
    config = dataclasses.replace(config, oracle=dataclasses.replace(config.oracle, carry_on=True))
    services.rows = [result_for(key) for key in sweep_keys(config)]  # every one certified
    services.sweep = _logging_every_run()
    with caplog.at_level(logging.INFO, logger="pipeline.run"):
        result = run_module.run_sweep_and_report(config, tmp_path)
    said = [r.getMessage() for r in caplog.records if r.name == "pipeline.run"]
    assert any(line.startswith("nothing is left to carry on: ") for line in said), said
    assert not any(line.startswith("carrying on:") for line in said), said
    assert "init_ray" not in services.events and services.todo == []
    assert result["status"] == "complete"


def test_a_carried_on_sweep_prices_its_carried_runs_and_names_those_beyond_the_limit(
    services, tmp_path, caplog, monkeypatch
):
    """Issue 45, item 3: the carried runs' prices (their last attempt's) go to run_sweep, which
    starts them cheapest first, and before any run starts the driver's log and summary.md
    name each carried run that cannot certify within the limit on the sweep's CPUs."""
    monkeypatch.setattr(run_module, "cluster_cpus", lambda: 2)
    config = _sweep_config(tmp_path)
    oracle = dataclasses.replace(config.oracle, carry_on=True, time_limit=60.0)
    config = dataclasses.replace(config, oracle=oracle)
    keys = sweep_keys(config)
    dear, cheap = RunKey("opdisc", 0.5, 0), RunKey("opdisc", 1.0, 0)
    uncertified = {"oracle_calls": 1, "oracle_certified": False}
    services.rows = [result_for(k) for k in keys if k not in (dear, cheap)] + [
        result_for(dear, holds=False, oracle_cpu_seconds_to_certify=5000.0, **uncertified),
        result_for(cheap, holds=False, oracle_cpu_seconds_to_certify=100.0, **uncertified),
    ]
    services.parent = "parent-1"
    services.sweep = _logging_every_run()
    with caplog.at_level(logging.INFO, logger="pipeline.run"):
        run_module.run_sweep_and_report(config, tmp_path)
    assert sorted(services.todo, key=str) == [dear, cheap]
    assert services.prices == {str(dear): 5000.0, str(cheap): 100.0}
    (line,) = services.reports[-1]["beyond_limit"]  # 100 CPU s fits in 60 s on 2 CPUs
    assert line.startswith(f"{dear}: about 83 min of CPU left to certify: it cannot certify ")
    warned = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert line in warned
    said = [r.getMessage() for r in caplog.records]
    assert said.index(line) < said.index(next(m for m in said if m.startswith("MLflow: ")))


def test_the_report_divides_a_price_over_the_sweeps_cpus(services, tmp_path, monkeypatch):
    monkeypatch.setattr(run_module, "cluster_cpus", lambda: 48)  # joined a 48-CPU cluster
    services.sweep = _logging_every_run()
    run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    assert services.reports[-1]["cpus"] == 48
    monkeypatch.setattr(run_module, "cluster_cpus", lambda: None)  # no Ray: the one it starts
    config = _sweep_config(tmp_path)
    config = dataclasses.replace(config, cluster=dataclasses.replace(config.cluster, num_cpus=3))
    run_module.run_sweep_and_report(config, tmp_path)
    assert services.reports[-1]["cpus"] == 3


def test_a_cluster_that_cannot_start_leaves_no_parent(services, tmp_path, monkeypatch):
    def init_ray(config):
        raise pipeline.sweep.preflight.ServiceError("cannot connect to the Ray cluster at x:1")

    monkeypatch.setattr(run_module, "init_ray", init_ray)
    services.sweep = _logging_every_run()
    with pytest.raises(pipeline.sweep.preflight.ServiceError):
        run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    assert "start_parent" not in services.events and services.reports == []


def _with_provenance(monkeypatch, **provenance) -> None:
    def load(cfg):
        train, test = load_dataset(cfg)
        marked = Dataset(
            train.features, train.labels, train.feature_names, {**train.provenance, **provenance}
        )
        return marked, test

    monkeypatch.setattr(run_module, "load_dataset", load)


def test_choices_read_off_the_private_data_are_tagged_on_the_parent(
    services, tmp_path, monkeypatch
):
    leaks = ["age: bounds [17, 90] read off the training rows", "workclass: levels read off"]
    _with_provenance(monkeypatch, privacy_leak_warnings=leaks)
    services.sweep = _logging_every_run()
    run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    (tracker,) = services.trackers
    assert tracker.client.tags == {("parent-1", "privacy_leak_warnings"): " | ".join(leaks)}


def test_a_long_leak_list_is_cut_to_what_a_tag_holds(services, tmp_path, monkeypatch):
    _with_provenance(
        monkeypatch, privacy_leak_warnings=[f"column{i}: " + "x" * 90 for i in range(100)]
    )
    services.sweep = _logging_every_run()
    run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    (tracker,) = services.trackers
    tag = tracker.client.tags[("parent-1", "privacy_leak_warnings")]
    assert len(tag) == 5000 and tag.startswith("column0: xxx")


def test_data_with_no_leaks_gets_no_leak_tag(services, tmp_path):
    services.sweep = _logging_every_run()
    run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)
    (tracker,) = services.trackers
    assert tracker.client.tags == {}


def test_run_with_a_sweep_puts_its_result_in_summary_json(services, tmp_path):
    config = _sweep_config(tmp_path)
    services.sweep = _logging_every_run()
    summary = run_module.run(config)
    written = json.loads((tmp_path / "summary.json").read_text())
    assert written["sweep"]["status"] == "complete" and written["sweep"]["runs"] == 5
    assert written["sweep"] == json.loads(json.dumps(summary["sweep"]))
    assert not math.isnan(written["train"]["best_possible_accuracy"])


# --- the data against the mechanisms' bounds (mechanisms.bounds), before anything starts -------


def _opsamp_sweep(out: Path, **opsamp) -> Config:
    config = _sweep_config(out)
    config.mechanisms["opsamp"] = SCHEMAS["opsamp"](**opsamp)
    config.sweep.mechanisms.append("opsamp")
    return config


def test_data_beyond_opsamp_x_max_is_a_one_line_config_error_before_anything_starts(
    services, tmp_path
):
    """The synthetic features are in [0, 1]: x_max = 0.5 is refused naming the setting, the row
    and the feature, with nothing started (no lock, no marker, no Ray, no parent run)."""
    config = _opsamp_sweep(tmp_path, x_max=0.5)
    train, _ = load_dataset(config.dataset)
    services.sweep = _logging_every_run()
    with pytest.raises(ConfigError) as raised:
        run_module.run(config)
    message = str(raised.value)
    row = int(np.flatnonzero((train.features > 0.5).any(axis=1))[0])
    column = train.feature_names[int(np.flatnonzero(train.features[row] > 0.5)[0])]
    assert message.startswith(f"mechanisms.opsamp.x_max: row {row}, column {column!r} is ")
    assert "beyond the feature bound |x| <= x_max = 0.5 that OPSamp's privacy proof" in message
    assert message.endswith(
        "raise mechanisms.opsamp.x_max to a public bound on the data, or set "
        "mechanisms.opsamp.out_of_bounds=clip to clip them (a "
        "PrivacyLeakWarning), found 0.5"
    )
    assert "\n" not in message
    assert services.events == [] and services.trackers == []
    assert not (tmp_path / ".sweep_id").exists()


def test_data_clipped_to_opsamp_x_max_on_request_is_tagged_on_the_parent(
    services, tmp_path, caplog
):
    config = _opsamp_sweep(tmp_path, x_max=0.5, out_of_bounds="clip")
    services.sweep = _logging_every_run()
    result = run_module.run_sweep_and_report(config, tmp_path)
    assert result["status"] == "complete"
    (tracker,) = services.trackers
    tag = tracker.client.tags[("parent-1", "privacy_leak_warnings")]
    assert tag.startswith("mechanisms.opsamp: OPSamp clipped ")
    assert "beyond x_max = 0.5 to it (out_of_bounds=clip)" in tag
    assert "read off the private data and not accounted for" in tag
    assert any("OPSamp clipped" in r.getMessage() for r in caplog.records)


# --- a full or read-only disk under a running sweep, with a real sqlite store -----------------


@pytest.mark.parametrize(
    "fault, said",
    [
        (OSError(errno.ENOSPC, "No space left on device"), "no space left on the device"),
        (OSError(errno.EROFS, "Read-only file system"), "the file system is read-only"),
    ],
)
def test_a_disk_fault_mid_sweep_is_one_line_and_leaves_a_resumable_store(
    fault, said, tmp_path, monkeypatch
):
    import mlflow

    half_logged = []

    def run_sweep(config, train, test, tracker, todo, prices=None):
        run = tracker.client.create_run(  # a child the fault cut off half-way through its logging
            tracker.experiment_id,
            tags={"mlflow.parentRunId": tracker.parent_id, "run_key": str(todo[0])},
        )
        half_logged.append(run.info.run_id)
        raise fault

    monkeypatch.setattr(run_module, "init_ray", lambda config: None)
    monkeypatch.setattr(run_module, "run_sweep", run_sweep)
    config = _sweep_config(tmp_path)
    with pytest.raises(StorageError) as raised:
        run_module.run_sweep_and_report(config, tmp_path)
    message = str(raised.value)
    assert "\n" not in message and message.startswith(f"the sweep stopped: {said} under ")
    assert "0 of 5 runs finished" in message and "rerun the same command to resume" in message
    assert "the sweep run is marked KILLED" in message
    client = mlflow.MlflowClient(config.tracking.tracking_uri)
    runs = client.search_runs(client.get_experiment_by_name("oracle-dp").experiment_id)
    statuses = {r.info.run_id: r.info.status for r in runs}
    assert statuses[half_logged[0]] == "FAILED"  # redone on resume (only FINISHED counts)
    (parent,) = [r for r in runs if r.info.run_id != half_logged[0]]
    assert parent.info.status == "KILLED" and parent.data.tags["failure_reason"].endswith(said)
    assert "RUNNING" not in statuses.values()


class FullDisk:
    """A disk that a sweep fills (``fill``), simulated as the tests above simulate it (errors
    raised where a full disk raises them): while full, each write of the tracking store fails
    as sqlite's does and the report's files as the OS's ENOSPC; the space comes back when the
    driver's reserve is freed, unless ``stays_full``."""

    WRITES = {"create_run", "set_tag", "set_terminated", "update_run", "log_batch", "log_artifact"}

    def __init__(self, out: Path, stays_full: bool) -> None:
        self.reserve = out / faults.RESERVE_NAME
        self.stays_full = stays_full
        self.filled = self.reserved = False

    def fill(self) -> None:
        self.filled, self.reserved = True, self.reserve.exists()

    @property
    def full(self) -> bool:
        freed = self.reserved and not self.reserve.exists()
        return self.filled and (self.stays_full or not freed)

    def client(self, real):
        disk = self

        class Client:
            def __getattr__(self, name):
                method = getattr(real, name)
                if name not in disk.WRITES:
                    return method

                def write(*args, **kwargs):
                    if disk.full:
                        raise sqlite3.OperationalError("database or disk is full")
                    return method(*args, **kwargs)

                return write

        return Client()

    def install(self, monkeypatch) -> None:
        real_tracker, real_report = run_module.SweepTracker, run_module.write_report
        real_summary = run_module.write_summary

        def tracker(*args):
            made = real_tracker(*args)
            made.client = self.client(made.client)
            return made

        def on_disk(write, name):
            def written(*args, **kwargs):
                if self.full:
                    raise OSError(errno.ENOSPC, "No space left on device", name)
                return write(*args, **kwargs)

            return written

        monkeypatch.setattr(run_module, "SweepTracker", tracker)
        monkeypatch.setattr(run_module, "write_report", on_disk(real_report, "results.csv"))
        monkeypatch.setattr(run_module, "write_summary", on_disk(real_summary, "summary.md"))
        monkeypatch.setattr(run_module, "init_ray", lambda config: None)


def _filling_the_disk(disk: FullDisk, finished: int, seen: dict):
    """run_sweep: ``finished`` runs logged, one child created, then the disk full under it."""
    from pipeline.sweep.one_run import run_one

    def run_sweep(config, train, test, tracker, todo, prices=None):
        reserve = disk.reserve.stat()
        seen["reserved"] = reserve.st_size, reserve.st_blocks * 512
        cheap = [k for k in todo if k.mechanism != "opdisc"][:finished]
        for key in cheap:
            tracker.log_child(*run_one(config, key, train, test), {})
        child = tracker.client.create_run(
            tracker.experiment_id,
            tags={"mlflow.parentRunId": tracker.parent_id, "run_key": str(todo[0])},
        )
        seen["half_logged"] = child.info.run_id
        disk.fill()
        tracker.client.set_terminated(child.info.run_id, status="FINISHED")  # no space: raises
        raise AssertionError("the full disk took a write")

    return run_sweep


def test_a_full_disk_marks_the_sweep_run_killed_and_writes_summary_md(tmp_path, monkeypatch):
    """The store and the output directory on the disk that filled: the space the driver kept
    back is given back, the sweep run is KILLED (as the README says, not RUNNING) and summary.md
    says what finished and why the sweep stopped."""
    disk, seen = FullDisk(tmp_path, stays_full=False), {}
    disk.install(monkeypatch)
    monkeypatch.setattr(run_module, "run_sweep", _filling_the_disk(disk, 2, seen))
    config = _sweep_config(tmp_path)
    with pytest.raises(StorageError) as raised:
        run_module.run_sweep_and_report(config, tmp_path)
    assert seen["reserved"][0] == faults.RESERVE_BYTES
    assert seen["reserved"][1] >= faults.RESERVE_BYTES  # blocks on the disk, not a sparse file
    assert str(raised.value) == (
        f"the sweep stopped: the disk is full under {tmp_path}; 2 of 5 runs finished and are "
        f"kept, the sweep run is marked KILLED, summary.md says so; {faults.HOW_TO_RESUME}"
    )
    runs = {r: (status, tags) for r, status, _, tags in _store_runs(config.tracking.tracking_uri)}
    assert "RUNNING" not in [status for status, _ in runs.values()]
    (parent,) = [(st, tags) for st, tags in runs.values() if tags.get("role") == "sweep"]
    assert parent[0] == "KILLED" and parent[1]["failure_reason"] == "stopped: the disk is full"
    assert runs[seen["half_logged"]][0] == "FAILED"
    summary = (tmp_path / "summary.md").read_text().splitlines()
    assert summary[2] == (
        f"**STOPPED BY THE DISK (partial sweep)**: the sweep stopped: the disk is full under "
        f"{tmp_path}; 2 of 5 requested runs finished, 3 not run; {faults.HOW_TO_RESUME}."
    )
    assert "rerun the same command" in faults.HOW_TO_RESUME
    assert "cannot be moved to another disk" in faults.HOW_TO_RESUME
    assert (tmp_path / "results.csv").exists() and not disk.reserve.exists()


def test_a_disk_still_full_leaves_the_sweep_run_to_the_next_start(tmp_path, monkeypatch):
    """When even the space kept back does not make the store take a write, the sweep run stays
    RUNNING and the line says so; the next start, with space, closes it (KILLED, then
    resumed) and finishes the sweep, with no run left RUNNING."""
    disk, seen = FullDisk(tmp_path, stays_full=True), {}
    disk.install(monkeypatch)
    monkeypatch.setattr(run_module, "run_sweep", _filling_the_disk(disk, 1, seen))
    config = _sweep_config(tmp_path)
    with pytest.raises(StorageError) as raised:
        run_module.run_sweep_and_report(config, tmp_path)
    assert "the sweep run could not be marked (the store takes no writes), summary.md could " in (
        str(raised.value)
    )
    disk.filled = False  # space freed
    monkeypatch.setattr(
        run_module, "run_sweep", lambda config, train, test, tracker, todo, prices=None: ([], {})
    )
    result = run_module.run_sweep_and_report(config, tmp_path)
    assert result["runs"] == 1 and result["status"] == "incomplete"
    runs = _store_runs(config.tracking.tracking_uri)
    assert "RUNNING" not in [status for _, status, _, _ in runs]
    (parent,) = [tags for _, _, _, tags in runs if tags.get("role") == "sweep"]
    assert parent["lost_driver"].startswith("left RUNNING by a driver that ended without closing")
    assert (tmp_path / "summary.md").read_text().splitlines()[2].startswith("**INCOMPLETE")


def _store_runs(uri: str) -> list[tuple[str, str, str, dict[str, str]]]:
    """Every run in a sqlite store, deleted ones too (MLflow's search leaves those out), as
    (run id, status, lifecycle stage, tags)."""
    import sqlite3

    with sqlite3.connect(uri.removeprefix("sqlite:///")) as db:
        runs = db.execute("select run_uuid, status, lifecycle_stage from runs").fetchall()
        tags: dict[str, dict[str, str]] = {}
        for run_id, key, value in db.execute("select run_uuid, key, value from tags"):
            tags.setdefault(run_id, {})[key] = value
    return [(run_id, status, stage, tags.get(run_id, {})) for run_id, status, stage in runs]


def _as_left_by_kill_9(config: Config, out: Path) -> tuple[str, int]:
    """The store and lock file as a driver killed with ``kill -9`` leaves them: its sweep run
    RUNNING and naming it, a child half-logged (RUNNING), the lock file naming it; returns the
    child's id and the dead driver's pid."""
    import socket
    import subprocess

    from mlflow import MlflowClient

    dead = subprocess.Popen(["true"])
    dead.wait()  # a pid that is gone, as a driver's after kill -9
    client = MlflowClient(config.tracking.tracking_uri)
    experiment = client.get_experiment_by_name("oracle-dp").experiment_id
    (parent,) = client.search_runs([experiment], "tags.role = 'sweep'")
    parent_id = parent.info.run_id
    client.update_run(parent_id, status="RUNNING")
    client.set_tag(parent_id, "driver", f"{socket.gethostname()}:{dead.pid}")
    child = client.create_run(
        experiment, tags={"mlflow.parentRunId": parent_id, "run_key": "opdisc/eps=0.5/run=0"}
    )
    holder = {
        "host": socket.gethostname(),
        "pid": dead.pid,
        "sweep_id": parent.data.tags["sweep_id"],
        "started": "2024-01-01 00:00:00",
    }
    (out / ".driver.lock").write_text(json.dumps(holder))
    return child.info.run_id, dead.pid


def test_the_next_driver_closes_what_a_killed_driver_left_running(tmp_path, monkeypatch, caplog):
    """kill -9 of a driver left its sweep run and a half-logged child RUNNING; the rerun resumed
    the sweep run but deleted the child as it was, RUNNING in mlflow.db for good. The next
    driver closes both first, with a reason that names the dead driver (its lock file's)."""
    monkeypatch.setattr(run_module, "init_ray", lambda config: None)
    monkeypatch.setattr(
        run_module, "run_sweep", lambda config, train, test, tracker, todo, prices=None: ([], {})
    )
    config = _sweep_config(tmp_path)
    run_module.run_sweep_and_report(config, tmp_path)  # creates the store and the sweep run
    child, pid = _as_left_by_kill_9(config, tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipeline.run"):
        run_module.run_sweep_and_report(config, tmp_path)
    runs = {
        run_id: (status, stage, tags)
        for run_id, status, stage, tags in _store_runs(config.tracking.tracking_uri)
    }
    assert [r for r, (status, _, _) in runs.items() if status == "RUNNING"] == []
    status, stage, tags = runs[child]
    assert (status, stage) == ("FAILED", "deleted")  # closed, then deleted to be redone
    assert tags["failure_reason"].startswith(
        f"left RUNNING by a driver that ended without closing it (pid {pid} on "
    )
    assert (
        "kill -9, out of memory or a full disk); closed by the next driver"
        in tags["failure_reason"]
    )
    (parent,) = [tags for _, _, tags in runs.values() if tags.get("role") == "sweep"]
    assert parent["lost_driver"] == tags["failure_reason"]  # kept by the resumed sweep run
    assert any(
        "closed 2 run(s) left RUNNING by a driver that is gone" in r.getMessage()
        for r in caplog.records
    )
    run_module.run_sweep_and_report(config, tmp_path)  # nothing left: nothing closed
    assert sum("closed" in r.getMessage() for r in caplog.records) == 1


def test_a_fault_that_is_not_the_disks_is_raised_as_it_is(tmp_path, monkeypatch):
    def run_sweep(config, train, test, tracker, todo, prices=None):
        raise RuntimeError("a bug")

    monkeypatch.setattr(run_module, "init_ray", lambda config: None)
    monkeypatch.setattr(run_module, "run_sweep", run_sweep)
    with pytest.raises(RuntimeError, match="^a bug$"):
        run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)


def test_an_output_directory_that_cannot_be_written_runs_nothing(tmp_path, monkeypatch):
    def lease(output_dir, sid):
        raise PermissionError(errno.EACCES, "Permission denied", str(output_dir / ".driver.lock"))

    monkeypatch.setattr(run_module, "DirectoryLock", lease)
    with pytest.raises(
        StorageError,
        match=r"cannot be written: permission denied \(.*\.driver\.lock\); nothing was run",
    ):
        run_module.run_sweep_and_report(_sweep_config(tmp_path), tmp_path)


def test_a_workload_k_beyond_the_records_attributes_is_refused_before_anything_starts(
    services, tmp_path
):
    """``sweep.workload_k=99`` on records of 3 attributes: one ConfigError in the driver, beside
    the other data checks, with nothing started (before, every run failed on it)."""
    frame = pd.DataFrame(
        {"a": ["x", "y"] * 10, "b": [str(i % 3) for i in range(20)], "y": ["0", "1"] * 10}
    )
    splits = load_table_records(frame, label="y", positive="1", categorical={"a": None, "b": None})
    mechanisms = {"mst": SCHEMAS["mst"]()}
    config = Config(
        dataset=TableRecordsConfig(path="t.csv", label="y", positive="1"),
        mechanisms=mechanisms,
        sweep=SweepConfig(name="unit", mechanisms=["mst"], epsilons=[1.0], workload_k=99),
        tracking=TrackingConfig(tracking_uri=f"sqlite:///{tmp_path / 'mlflow.db'}"),
        output_dir=str(tmp_path),
    )
    services.sweep = _logging_every_run()
    with pytest.raises(ConfigError) as raised:
        run_module.run_sweep_and_report(config, tmp_path, (splits.train, splits.test))
    assert str(raised.value) == (
        "sweep.workload_k: must be <= the 3 attributes of the records (a, b, y), found 99"
    )
    assert services.events == [] and services.trackers == []
    assert not (tmp_path / ".sweep_id").exists()


def test_a_task_larger_than_this_machine_is_refused_before_the_data_load(
    services, tmp_path, monkeypatch
):
    """``oracle.threads=1000`` on a Ray of our own: refused from the CPUs it will have, before
    the data load and before Ray starts."""
    config = _sweep_config(tmp_path)
    config = dataclasses.replace(config, oracle=dataclasses.replace(config.oracle, threads=1000))

    def no_load(cfg):
        raise AssertionError("the data were loaded before the CPU check")

    monkeypatch.setattr(run_module, "load_dataset", no_load)
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError) as raised:
        run_module.run(config)
    assert str(raised.value) == (
        "oracle.threads: an oracle call is a Ray task of 1000 CPUs, more than the 2 CPUs of this "
        "machine, so it could never start; give oracle.threads=2 or fewer (or a cluster with a "
        "node that large), found 1000"
    )
    assert services.events == []


def test_a_task_larger_than_the_clusters_largest_node_is_refused_before_the_parent(
    services, tmp_path, monkeypatch
):
    """Joining a cluster, its nodes are counted once connected: refused before the parent run
    exists and any task starts, and the directory's claim is given back, so that the fixed
    command (another sweep id) can use it."""
    config = _sweep_config(tmp_path)
    cluster = dataclasses.replace(config.cluster, address="127.0.0.1:6379", cpus_per_task=8)
    config = dataclasses.replace(config, cluster=cluster)
    monkeypatch.setattr(run_module, "largest_node_cpus", lambda: 4)
    services.sweep = _logging_every_run()
    with pytest.raises(ConfigError) as raised:
        run_module.run_sweep_and_report(config, tmp_path)
    assert str(raised.value).startswith(
        "cluster.cpus_per_task: a run without oracle is a Ray task of 8 CPUs, more than the 4 "
        "CPUs of the largest node of the Ray cluster, so it could never start; "
    )
    assert "start_parent" not in services.events and "init_ray" in services.events
    assert not (tmp_path / ".sweep_id").exists()
    fits = dataclasses.replace(config.cluster, cpus_per_task=4)  # fits: the sweep runs
    config = dataclasses.replace(config, cluster=fits)
    assert run_module.run_sweep_and_report(config, tmp_path)["status"] == "complete"


def test_a_table_sweeps_folder_id_is_its_logged_sweep_id_and_an_edited_file_another(
    services, tmp_path
):
    table = tmp_path / "t.csv"
    table.write_text("x,y\n" + "".join(f"{i % 10 / 10},{i % 2}\n" for i in range(40)))
    overrides = [
        "+sweep=table",
        f"dataset.path={table}",
        "dataset.label=y",
        "dataset.positive=1",
        "dataset.numeric={x: [0, 1]}",
        "sweep.mechanisms=[logistic_regression]",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        cfg = compose("config", overrides=overrides, return_hydra_config=True)
        folder = Path(cfg.hydra.run.dir).name
    with open_dict(cfg):
        del cfg["hydra"]
    config = dataclasses.replace(validate(cfg), output_dir=str(tmp_path / "out"))
    services.sweep = _logging_every_run()
    logged = run_module.run_sweep_and_report(config, tmp_path / "out")["sweep_id"]
    assert folder == f"sweep-table-{logged[:8]}"  # README: ID, the sweep_id's first 8 digits

    table.write_text(table.read_text() + "0.5,1\n")  # an edited file: another sweep, elsewhere
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        edited = compose("config", overrides=overrides, return_hydra_config=True)
        assert Path(edited.hydra.run.dir).name not in (folder, "sweep-table-invalid")


def test_slow_loading_and_planning_say_so_until_the_plan(services, tmp_path, monkeypatch, caplog):
    monkeypatch.setattr(pipeline.sweep.progress, "PHASE_EVERY", 0.05)
    config = _sweep_config(tmp_path)

    def slow_load(dataset):
        time.sleep(0.3)
        return load_dataset(dataset)

    def slow_datasets(self, name, train, test):
        time.sleep(0.3)

    monkeypatch.setattr(run_module, "load_dataset", slow_load)
    monkeypatch.setattr(FakeTracker, "use_datasets", slow_datasets)
    services.sweep = _logging_every_run()
    caplog.set_level(logging.INFO)
    run_module.run(config)
    lines = [r.getMessage() for r in caplog.records]
    plan = next(i for i, line in enumerate(lines) if line.startswith("sweep unit: 5 runs"))
    loading = [i for i, line in enumerate(lines) if line.startswith("still loading and encoding")]
    planning = [
        i
        for i, line in enumerate(lines)
        if line.startswith("still planning sweep unit (")
        and line.endswith("s): describing the data for MLflow")
    ]
    assert loading and planning, lines
    assert max(loading) < min(planning) and max(planning) < plan  # none after the plan
    assert "(synthetic)" in lines[loading[0]]
