"""What a child run holds beside its row: dataset, model, release.json, timing, the run list's view.

One sqlite store per module (creating one costs seconds); every test reads the same logged runs.
"""

from __future__ import annotations

import dataclasses
import json
import time

import numpy as np
import pandas as pd
import pytest

from mechanisms.release import PrivacyClaim, Release
from oracles.contract.certificate import Certificate, Status
from oracles.contract.stats import CarryStats
from pipeline.data.record import Dataset
from pipeline.tracking.mlflow_log import (
    CREATED,
    FIRST_WIDTHS,
    LAPTOP_COLUMNS,
    RUN_LIST_VIEW,
    RUN_NAME,
    VERDICTS,
    VIEW_KEY,
    release_json,
    view_url,
)
from pipeline.sweep.one_run import RunKey
from pipeline.tracking.mlflow_runs import SweepTracker, results_from_mlflow
from tests.pipeline.browser import look, mlflow_server
from tests.pipeline.records import classifier_result

MARGIN = 0.25
NAMES = ("age", "hours", "sex=male")


def _dataset(n: int, seed: int) -> Dataset:
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 4, size=(n, 3)) / 4.0  # many scores land exactly on the margin
    y = rng.choice([-1, 1], size=n)
    return Dataset(X, y, NAMES, {"source": "a test", "seed": seed})


def _release() -> Release:
    claim = PrivacyClaim(0.5, 1e-6, True, "certified", calibration="proven")
    certificate = Certificate(Status.OPTIMAL, 3.0, 3.0, 0.01, "highs")
    return Release(
        "opdisc",
        np.array([0.5, -0.25, 0.25]),
        claim,
        noise={"sigma": 2.0},
        params={"tau": 1.0},
        certificates=(certificate,),
        timings={"prepare": 0.5, "solve": 1.5, "total": 2.0},  # of a run of wall_seconds=2.5
        margin=MARGIN,
    )


@pytest.fixture(scope="module")
def logged(tmp_path_factory):
    """A sweep of one child run, logged as the driver does; what the test needs to check it."""
    path = tmp_path_factory.mktemp("mlflow")
    train, test = _dataset(40, 0), _dataset(30, 1)
    tracker = SweepTracker(f"sqlite:///{path / 'mlflow.db'}", "child", path / "art")
    tracker.use_datasets("toy", train, test)
    tracker.start_parent("test", "sid", {"sweep": {"name": "test"}})
    release = _release()
    result = classifier_result(RunKey("opdisc", 0.5, 0), release, train, test, wall_seconds=2.5)
    before = time.time()
    run_id = tracker.log_child(result, release, {"name": "opdisc", "tau": 1.0})
    seconds = time.time() - before
    return {
        "tracker": tracker,
        "run_id": run_id,
        "result": result,
        "release": release,
        "train": train,
        "test": test,
        "logged_at": before,
        "log_seconds": seconds,
    }


def test_the_dataset_is_the_input_of_the_child_and_of_the_parent(logged):
    tracker = logged["tracker"]
    for run_id in (logged["run_id"], tracker.parent_id):
        inputs = tracker.client.get_run(run_id).inputs.dataset_inputs
        by_context = {i.tags[0].value: i.dataset for i in inputs}
        assert set(by_context) == {"train", "test"}
        assert all(d.name == "toy" and len(d.digest) >= 8 for d in by_context.values())
        assert by_context["train"].digest != by_context["test"].digest
        assert json.loads(by_context["train"].profile)["num_rows"] == 40


def test_the_model_predicts_the_labels_of_the_release_at_the_margin_too(logged):
    import mlflow.pyfunc

    mlflow.set_tracking_uri(logged["tracker"].uri)  # another test's tracker may have set another
    release, train = logged["release"], logged["train"]
    model = mlflow.pyfunc.load_model(f"runs:/{logged['run_id']}/model")
    X = np.vstack([train.features, [[0.5, 0.0, 0.0], [0.5, 1.0, 0.5], [0.25, 0.0, 0.5]]])
    on_margin = np.isclose(X @ release.w, MARGIN, rtol=0, atol=1e-12)
    assert on_margin.sum() >= 3  # rows exactly at the margin are +1 (SPEC section 2)
    frame = pd.DataFrame(X, columns=list(NAMES))
    labels = np.asarray(model.predict(frame))
    np.testing.assert_array_equal(labels, release.predict(X))
    assert (labels[on_margin] == 1).all()


def test_the_model_signature_is_the_feature_names_in_and_the_label_out(logged):
    import mlflow
    from mlflow.models import get_model_info

    mlflow.set_tracking_uri(logged["tracker"].uri)
    signature = get_model_info(f"runs:/{logged['run_id']}/model").signature
    assert [(c.name, c.type.name) for c in signature.inputs.inputs] == [
        (name, "double") for name in NAMES
    ]
    assert [(c.name, c.type.name) for c in signature.outputs.inputs] == [("label", "long")]


def test_the_run_lasts_its_wall_time_not_its_logging_time(logged):
    info = logged["tracker"].client.get_run(logged["run_id"]).info
    result = logged["result"]
    assert info.start_time == result.start_time_ms
    assert abs((info.end_time - info.start_time) / 1000 - result.wall_seconds) < 0.002
    # the run ended before its logging began (RunResult.of's default start: wall_seconds ago)
    assert info.end_time <= logged["logged_at"] * 1000 + 2


def test_run_one_records_when_the_run_started_and_its_duration(monkeypatch, tmp_path):
    import pipeline.sweep.one_run

    def slow_release(config, key, train, **kwargs):
        time.sleep(0.3)
        return _release()

    monkeypatch.setattr(pipeline.sweep.one_run, "run_release", slow_release)
    before = time.time()
    result, release = pipeline.sweep.one_run.run_one(
        None, RunKey("opdisc", 0.5, 1), _dataset(10, 2), None
    )
    assert before * 1000 - 1 <= result.start_time_ms <= before * 1000 + 50
    assert 0.3 <= result.wall_seconds < 0.4
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "timing", tmp_path / "art")
    tracker.start_parent("test", "sid", {})
    time.sleep(0.2)  # logged later than the run ended: the record must not say so
    info = tracker.client.get_run(tracker.log_child(result, release, {})).info
    assert abs((info.end_time - info.start_time) / 1000 - result.wall_seconds) < 0.002
    (back,) = results_from_mlflow(tracker)
    assert back.start_time_ms == result.start_time_ms


def test_the_run_list_shows_privacy_and_accuracy_not_every_detail(logged, tmp_path):
    tracker = logged["tracker"]
    child = tracker.client.get_run(logged["run_id"])
    assert not [k for k in child.data.params if k.startswith(("config.", "param."))]
    assert len(child.data.params) <= 8
    path = tracker.client.download_artifacts(logged["run_id"], "release.json", str(tmp_path))
    with open(path) as f:
        record = json.load(f)
    assert record["mechanism_config"] == {"name": "opdisc", "tau": 1.0}
    assert record["release"]["param.tau"] == 1.0 and record["certificates"][0]["certified"]
    # the shared view names columns that the child run has, in the order a reviewer reads them
    experiment = tracker.client.get_experiment(tracker.experiment_id)
    view = json.loads(experiment.tags[f"mlflow.sharedViewState.{VIEW_KEY}"])
    assert view == RUN_LIST_VIEW
    fields = {"params": child.data.params, "metrics": child.data.metrics, "tags": child.data.tags}
    for column in view["selectedColumns"]:
        kind, _, name = column.partition(".")
        assert kind in ("attributes", "duration") or name.strip("`") in fields[kind], column
    assert f"runs?viewStateShareKey={VIEW_KEY}" in tracker.view_url()


def test_the_verdicts_come_first_and_fit_beside_mlflows_own_columns_on_a_laptop():
    """At 1280 x 800 the view showed Run Name, Created, privacy_status and train_accuracy: the
    epsilon, the certificate and the test accuracy were off screen. The verdicts come first now,
    and with MLflow's own two columns they fit the columns' width at 1280 px (the screenshot
    test below checks it in a browser)."""
    view = RUN_LIST_VIEW["selectedColumns"]
    verdicts = [
        "tags.`privacy_status`",
        "params.`privacy_epsilon`",
        "tags.`oracle_certified`",
        "metrics.`test_accuracy`",
    ]
    assert list(VERDICTS) == verdicts and view[:4] == verdicts
    assert RUN_LIST_VIEW["columnOrder"] == [RUN_NAME, CREATED, *view]
    assert list(FIRST_WIDTHS) == [RUN_NAME, CREATED, *verdicts]
    assert sum(RUN_LIST_VIEW["columnWidths"][c] for c in FIRST_WIDTHS) <= LAPTOP_COLUMNS
    assert view.index("metrics.`train_accuracy`") == 4
    assert view[-3:] == ["duration", "attributes.`Dataset`", "attributes.`Models`"]


@pytest.mark.integration
def test_the_view_shows_the_verdicts_at_1280_by_800_beside_mlflows_panels(tmp_path):
    """A laptop's 1280 x 800 in headless Chromium, MLflow's navigation and assistant panel open:
    the run's name, privacy_status, privacy_epsilon, oracle_certified and test_accuracy are in
    view, each header's name whole and the first row's values there. The view before showed
    Run Name, Created, privacy_status and train_accuracy, and cut test_accuracy."""
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "oracle-dp", tmp_path / "art")
    train, test = _dataset(40, 0), _dataset(30, 1)
    tracker.use_datasets("toy", train, test)
    tracker.start_parent("smoke", "sid", {})  # stores the view in the experiment
    for mechanism in ("opdisc", "opsamp", "rspm_gaussian", "rspm_laplace"):
        for epsilon in (0.5, 1.0):
            for run in range(2):  # 16 rows: more than the screen holds
                key, release = RunKey(mechanism, epsilon, run), _release()
                result = classifier_result(key, release, train, test, wall_seconds=2.5)
                tracker.log_child(result, release, {"name": mechanism})
    ids = [RUN_NAME, *VERDICTS]
    screenshot = tmp_path / "run-list-1280x800.png"
    with mlflow_server(tracker.uri, tmp_path) as server:
        url = view_url(server, tracker.experiment_id)
        seen = look(url, ids, 1280, 800, screenshot)
    where = f"{json.dumps(seen, indent=1)}\nsee {screenshot}"
    for column in ids:
        name, value = seen[column]["name"], seen[column]["cell"]
        assert name is not None and value is not None, (
            f"{column} not rendered (the grid leaves out columns out of view): {where}"
        )
        assert all(name["hits"]) and name["whole"], f"the name of {column} is cut: {where}"
        assert value["hits"][0] and value["hits"][1], f"{column}'s value is out of view: {where}"
    run_name = seen[RUN_NAME]["cell"]
    assert run_name["text"] == "opdisc/eps=0.5/run=0" and run_name["whole"], where
    assert seen["tags.`privacy_status`"]["cell"]["text"] == "holds", where


def test_every_time_a_child_run_records_says_its_clock(logged):
    """``time.solve`` 12.75 s beside a 3.7 s duration and ``wall_seconds`` 3.68: every time
    metric names its clock (wall or CPU), and the steps fit in the run's wall seconds."""
    tracker = logged["tracker"]
    metrics = tracker.client.get_run(logged["run_id"]).data.metrics
    times = [k for k in metrics if "seconds" in k or k.startswith("time.")]
    assert times and all("wall_seconds" in k or "cpu_seconds" in k for k in times), times
    assert {"wall_seconds", "oracle_wall_seconds"} <= set(times)  # cpu: nan here, untracked
    steps = {k: v for k, v in metrics.items() if k.startswith("step_wall_seconds.")}
    assert steps and all(v <= metrics["wall_seconds"] for v in steps.values()), (steps, metrics)


def test_the_run_list_shows_the_gap_and_the_certificate_as_a_reviewer_reads_them(tmp_path):
    """The gap column is the short ``oracle_gap`` tag: ``0`` for floating-point noise below
    zero, ``1.1e-13`` whole (the raw metric read ``1.13686837...`` cut by the column, and
    ``-1.4e-14``); a run without an oracle call is ``no oracle`` with gap ``-``."""
    view = RUN_LIST_VIEW["selectedColumns"]
    assert "tags.`oracle_gap`" in view and "metrics.`oracle_max_gap`" not in view
    assert view.index("tags.`oracle_certified`") < view.index("tags.`oracle_gap`")
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "gaps", tmp_path / "art")
    tracker.start_parent("test", "sid", {})
    train = _dataset(20, 0)
    noise = Certificate(Status.OPTIMAL, -82.2, -82.2 + 1.4210854715202004e-14, 0.01, "highs")
    tiny = Certificate(Status.OPTIMAL, 3.0, 3.0 - 1.1368683772161603e-13, 0.01, "highs")
    shown = {}
    for i, certificates in enumerate(((noise,), (tiny,), ())):
        release = dataclasses.replace(_release(), certificates=certificates)
        result = classifier_result(RunKey("opdisc", 0.5, i), release, train, None, wall_seconds=0.1)
        run = tracker.client.get_run(tracker.log_child(result, release, {}))
        tags, metrics = run.data.tags, run.data.metrics
        shown[i] = (tags["oracle_gap"], tags["oracle_certified"], metrics.get("oracle_max_gap"))
    assert shown[0] == ("0", "yes", noise.gap)  # the raw gap stays a metric
    assert shown[1] == ("1.1e-13", "yes", tiny.gap)
    assert shown[2] == ("-", "no oracle", 0.0)


def test_a_model_is_logged_when_the_working_directory_was_replaced(logged, tmp_path, monkeypatch):
    """Under `ray job submit` on one machine a joining node extracts the job's directory again:
    the driver's working directory is gone (os.getcwd() fails) though its path exists again."""
    import os

    tracker, release = logged["tracker"], logged["release"]
    result = dataclasses.replace(logged["result"], key="opdisc/eps=0.5/run=1")
    job = tmp_path / "job"
    job.mkdir()
    monkeypatch.chdir(job)
    monkeypatch.setenv("PWD", str(job))
    job.rmdir()  # the driver's directory, removed under it
    job.mkdir()  # ... and extracted again at the same path
    with pytest.raises(FileNotFoundError):
        os.getcwd()
    run_id = tracker.log_child(result, release, {"name": "opdisc", "tau": 1.0})
    assert tracker.client.get_run(run_id).info.status == "FINISHED"
    assert os.getcwd() == str(job)  # back at the job's directory, by its path


def test_release_json_says_which_attempt_certified_and_from_what_beside_its_old_keys():
    carry = CarryStats(
        2, 3, 0.904, 2.5, 3, 0.99, 3.0, started_from="kept state of attempt 1 (2 open nodes)"
    )
    release = _release()
    certificate = dataclasses.replace(release.certificates[0], stats=(carry,))
    record = json.loads(
        release_json(dataclasses.replace(release, certificates=(certificate,)), {"tau": 1.0})
    )
    (written,) = record["certificates"]
    assert written["status"] == "optimal" and written["backend"] == "highs"
    assert written["extra"] == {
        "attempts": 2,
        "carried_nodes": 3,
        "carried_cpu_seconds": 0.904,
        "carried_seconds": 2.5,
        "total_nodes": 3,
        "total_cpu_seconds": 0.99,
        "total_seconds": 3.0,
        "started_from": "kept state of attempt 1 (2 open nodes)",
    }
