"""The sweep's MLflow side (pipeline.tracking): resuming reads FINISHED children only, once each."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.base import PrivacyClaim, Release
from oracles.base import Certificate, Status
from pipeline.run_record import RunResult
from pipeline.tasks import RunKey
from pipeline.tracking import SweepTracker, default_tracking_uri, results_from_mlflow


class _Data:
    def __init__(self, n: int) -> None:
        self.features = np.ones((n, 2))
        self.labels = np.ones(n, dtype=int)


def _logged(tracker: SweepTracker, key: RunKey) -> RunResult:
    claim = PrivacyClaim(1.0, 1e-5, True, "certified", calibration="proven")
    certificate = Certificate(Status.OPTIMAL, 1.0, 1.0, 0.1, "highs")
    release = Release(key.mechanism, np.array([1.0, 0.0]), claim, certificates=(certificate,))
    result = RunResult.of(key, release, _Data(5), None, wall_seconds=0.5)
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
    assert back.key == done.key and back.privacy_holds and math.isnan(back.test_accuracy)


def test_another_sweep_in_the_same_store_has_its_own_parent(store, tmp_path):
    uri = store
    first = SweepTracker(uri, "shared", tmp_path / "art")
    first.start_parent("a", "sid-a", {})
    _logged(first, RunKey("rspm_gaussian", 1.0, 0))
    second = SweepTracker(uri, "shared", tmp_path / "art")
    assert second.find_parent("sid-b") is None
    assert results_from_mlflow(second) == []
