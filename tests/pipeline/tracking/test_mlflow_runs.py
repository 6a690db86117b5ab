"""The sweep's MLflow side (pipeline.tracking.mlflow_runs): resuming reads FINISHED children only, once each."""

from __future__ import annotations

import dataclasses
import json
import math

import numpy as np
import pytest

from mechanisms.release import PrivacyClaim, Release
from mechanisms.synthetic.evaluate import TableScores
from mechanisms.synthetic.fem import SyntheticRelease
from oracles.contract.certificate import Certificate, Status
from oracles.contract.stats import CarryStats
from pipeline.data.record import Dataset
from pipeline.tracking.mlflow_log import SYNTHETIC_TABLE
from pipeline.tracking.run_record import RunResult
from pipeline.sweep.one_run import RunKey
from pipeline.tracking.mlflow_runs import (
    SweepTracker,
    default_tracking_uri,
    results_from_mlflow,
    review_hint,
)
from tests.pipeline.records import classifier_result


class _Data:
    def __init__(self, n: int) -> None:
        self.features = np.ones((n, 2))
        self.labels = np.ones(n, dtype=int)


def _logged(tracker: SweepTracker, key: RunKey, certified: bool = True) -> RunResult:
    claim = PrivacyClaim(1.0, 1e-5, certified, "certified", calibration="proven")
    status = Status.OPTIMAL if certified else Status.TIME_LIMIT
    certificate = Certificate(status, 1.0, 1.0 if certified else 0.5, 0.1, "highs")
    release = Release(key.mechanism, np.array([1.0, 0.0]), claim, certificates=(certificate,))
    result = classifier_result(key, release, _Data(5), None, wall_seconds=0.5)
    tracker.log_child(result, release, {})
    return result


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One sqlite store for the module (creating one takes seconds); each test its experiment."""
    path = tmp_path_factory.mktemp("tracking")
    uri = default_tracking_uri(path)
    assert uri.startswith("sqlite:////") and uri.endswith("/mlflow.db")  # absolute
    return uri


def test_a_resumed_sweep_reads_its_finished_runs_and_redoes_the_others(store, tmp_path):
    uri = store
    tracker = SweepTracker(uri, "resume", tmp_path / "art")
    assert results_from_mlflow(tracker) == [] and tracker.finished_keys() == set()
    tracker.start_parent("test", "sid", {"sweep": {"name": "test"}})
    done = _logged(tracker, RunKey("opdisc", 0.5, 0))
    tracker.log_failed_child("opdisc/eps=0.5/run=1", "opdisc", "GurobiError: licence")
    unfinished = tracker.client.create_run(
        tracker.experiment_id,
        tags={"mlflow.parentRunId": tracker.parent_id, "run_key": "opdisc/eps=0.5/run=2"},
    )

    again = SweepTracker(uri, "resume", tmp_path / "art")  # a rerun of the same sweep
    assert again.find_parent("sid") == tracker.parent_id
    assert again.finished_keys() == {done.key}
    # the failed and the unfinished child were deleted: they will be redone, not duplicated
    deleted = again.client.get_run(unfinished.info.run_id).info.lifecycle_stage
    assert deleted == "deleted"
    (back,) = results_from_mlflow(again)
    assert back.key == done.key and back.privacy_holds and math.isnan(back.scores.test_accuracy)


def test_carrying_on_runs_the_uncertified_again_and_keeps_them_until_replaced(store, tmp_path):
    tracker = SweepTracker(store, "carry", tmp_path / "art")
    tracker.start_parent("test", "sid", {"oracle": {"time_limit": 300.0}})
    tracker.record_time_limit(300.0)
    certified = _logged(tracker, RunKey("opdisc", 10.0, 0))
    stopped = _logged(tracker, RunKey("opdisc", 10.0, 1), certified=False)

    again = SweepTracker(store, "carry", tmp_path / "art")
    again.find_parent("sid")
    assert again.time_limit_before() == 300.0
    assert again.finished_keys() == {certified.key, stopped.key}  # not carrying on
    assert again.finished_keys(carry_on=True) == {certified.key}
    (old,) = again._superseded.values()
    assert again.client.get_run(old).info.lifecycle_stage == "active"  # kept until replaced
    carried = _logged(again, RunKey("opdisc", 10.0, 1))  # the run again, now certified
    assert again.client.get_run(old).info.lifecycle_stage == "deleted"
    assert {r.key: r.privacy_holds for r in results_from_mlflow(again)} == {
        certified.key: True,
        carried.key: True,
    }
    again.record_time_limit(1800.0)
    again.record_time_limit(600.0)  # the longest stays
    assert again.time_limit_before() == 1800.0


def test_a_stopped_solves_state_is_kept_as_an_artifact_of_its_run(store, tmp_path):
    state = tmp_path / "carry" / "abc.npz"
    state.parent.mkdir()
    state.write_bytes(b"state")
    tracker = SweepTracker(store, "carry-artifact", tmp_path / "art")
    tracker.start_parent("test", "sid", {})
    key = RunKey("opdisc", 10.0, 0)
    claim = PrivacyClaim(1.0, 1e-5, False, "not certified", calibration="proven")
    kept = CarryStats(1, 0, 0.0, 0.0, 5, 0.1, 0.1, carry=str(state))
    stopped = Certificate(Status.TIME_LIMIT, 2.0, 1.0, 0.1, "window", stats=(kept,))
    gone = Certificate(
        Status.TIME_LIMIT,
        2.0,
        1.0,
        0.1,
        "window",
        stats=(dataclasses.replace(kept, carry="/nowhere"),),
    )
    release = Release("opdisc", np.zeros(2), claim, certificates=(stopped, gone))
    run_id = tracker.log_child(classifier_result(key, release, _Data(5), None, 0.5), release, {})
    names = [f.path for f in tracker.client.list_artifacts(run_id, "carry")]
    assert names == ["carry/abc.npz"]  # a state on another machine's disk is not there


def test_another_sweep_in_the_same_store_has_its_own_parent(store, tmp_path):
    uri = store
    first = SweepTracker(uri, "shared", tmp_path / "art")
    first.start_parent("a", "sid-a", {})
    _logged(first, RunKey("rspm_gaussian", 1.0, 0))
    second = SweepTracker(uri, "shared", tmp_path / "art")
    assert second.find_parent("sid-b") is None
    assert results_from_mlflow(second) == []


def _synthetic(mechanism: str, claim: PrivacyClaim) -> SyntheticRelease:
    return SyntheticRelease(
        mechanism=mechanism,
        records=np.array([[0, 1], [1, 0], [1, 1]]),
        privacy=claim,
        params={"epsilon": 1.0, "delta": 1e-6, "rounds": 3, "round_epsilon": 0.2},
        selections=((0, 1), (2, -1), (0, 1)),
        certificates=(),
        timings={"total": 0.1},
    )


def test_a_synthetic_child_logs_its_table_and_the_reference_never_the_private_one(store, tmp_path):
    provenance = {
        "kind": "records",
        "domain": {"a": ["x", "y"], "label": ["no", "yes"]},
        "label": {"attribute": "label", "positive": "yes"},
    }
    train = Dataset(np.array([[0, 1], [1, 0]]), np.array([1, -1]), ("a", "label"), provenance)
    tracker = SweepTracker(store, "synthetic", tmp_path / "art")
    tracker.use_datasets("records", train, None)
    tracker.start_parent("synth", "sid-synth", {})
    scores = TableScores(0.25, 0.125, 0.5, math.nan)
    private = _synthetic("fem", PrivacyClaim(0.9, 1e-6, True, "zcdp", calibration="zcdp"))
    result = RunResult.of(RunKey("fem", 1.0, 0), private, scores, train.n, 0.5)
    run_id = tracker.log_child(result, private, {"name": "fem"})
    client = tracker.client
    table = client.download_artifacts(run_id, SYNTHETIC_TABLE, str(tmp_path))
    assert open(table).read().splitlines() == ["a,label", "x,yes", "y,no", "y,yes"]
    run = client.get_run(run_id)
    contexts = [i.tags[0].value for i in run.inputs.dataset_inputs]
    assert sorted(contexts) == ["output", "train"]
    assert (
        run.data.params["param.round_epsilon"] == "0.2" and "param.epsilon" not in run.data.params
    )
    assert run.data.metrics["max_marginal_error"] == 0.25
    record = json.loads(
        open(client.download_artifacts(run_id, "release.json", str(tmp_path))).read()
    )
    assert record["selections"] == [[0, 1], [2, -1], [0, 1]] and "w" not in record
    (back,) = results_from_mlflow(tracker)
    np.testing.assert_equal(dataclasses.asdict(back), dataclasses.asdict(result))  # nan == nan
    reference = _synthetic("real_table", PrivacyClaim(math.inf, 0.0, False, "non-private"))
    ref_result = RunResult.of(RunKey("real_table", math.inf, 0), reference, scores, train.n, 0.1)
    ref_id = tracker.log_child(ref_result, reference, {"name": "real_table"})
    assert [a.path for a in client.list_artifacts(ref_id)] == ["release.json"]


# --- where the driver's log says to review the runs --------------------------------------------


def _command(hint: str) -> list[str]:
    """The shell command in a review hint (between backquotes), as arguments."""
    import shlex

    return shlex.split(hint.split("`")[1])


def test_a_tracking_server_is_reviewed_at_its_own_address():
    hint = review_hint("http://mlflow.internal:8080/", "7")
    assert hint == (
        "http://mlflow.internal:8080/#/experiments/7/runs?viewStateShareKey=privacy-accuracy"
    )
    assert ":5000" not in review_hint("https://tracking.example", "7")


def test_a_local_store_is_reviewed_with_a_command_that_opens_it(store, tmp_path, monkeypatch):
    """No server listens on a sqlite store: the driver said "http://127.0.0.1:5000/..." as if
    one did. It names the command that serves it (its port a suggestion) and the page then."""
    tracker = SweepTracker(store, "hint", tmp_path / "art")
    hint = tracker.view_url()
    command = _command(hint)
    assert command[:3] == ["mlflow", "ui", "--backend-store-uri"] and command[4:] == [
        "--port",
        "5000",
    ]
    assert command[3] == store  # absolute: it opens the same store from any directory
    assert hint.endswith(
        f"then open http://127.0.0.1:5000/#/experiments/{tracker.experiment_id}/runs"
        "?viewStateShareKey=privacy-accuracy (another free port: change it in both)"
    )
    # a relative sqlite path (tracking.tracking_uri=sqlite:///runs.db) is the driver's directory's
    monkeypatch.chdir(tmp_path)
    relative = _command(review_hint("sqlite:///runs.db", "1"))[3]
    assert relative == f"sqlite:///{(tmp_path / 'runs.db').resolve().as_posix()}"
    assert relative.startswith("sqlite:////")
    spaced = _command(review_hint(f"sqlite:///{tmp_path / 'a b' / 'mlflow.db'}", "1"))
    assert spaced[3].endswith("/a b/mlflow.db")  # quoted for the shell
    assert _command(review_hint("mlruns", "1"))[3] == (tmp_path / "mlruns").resolve().as_uri()


@pytest.mark.integration
def test_the_suggested_command_serves_the_run_list(store, tmp_path):
    """Run the command the driver logs (on a free port) and open the experiment it names."""
    import json
    import os
    import signal
    import socket
    import subprocess
    import sys
    import time
    import urllib.request
    from pathlib import Path

    tracker = SweepTracker(store, "served", tmp_path / "art")
    command = _command(tracker.view_url())
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    command[command.index("--port") + 1] = port
    command[0] = str(Path(sys.executable).with_name("mlflow"))
    proc = subprocess.Popen(
        command,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        cwd=tmp_path,  # another directory than the driver's
    )
    api = f"http://127.0.0.1:{port}/api/2.0/mlflow/experiments/get?experiment_id="
    try:
        deadline, answer = time.monotonic() + 120, None
        while answer is None and time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(api + tracker.experiment_id, timeout=2) as r:
                    answer = json.load(r)
            except OSError:
                time.sleep(0.5)
        assert answer is not None, "mlflow ui did not answer"
        assert answer["experiment"]["name"] == "served"
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)
