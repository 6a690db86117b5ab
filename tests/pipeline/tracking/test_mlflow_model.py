"""The MLflow model of a release (pipeline.tracking.mlflow_model), in-process: loaded from the artifact
``classifier.json`` that pipeline.tracking.mlflow_log writes, it labels rows by the exact rule of
core.objective.predict, those exactly at the margin included, selecting the features by name.
(Logging and loading it through MLflow: tests/pipeline/tracking/test_mlflow_log.py.)"""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from core.objective import predict
from pipeline.tracking.mlflow_model import LinearThresholdModel


def _model(tmp_path, w, margin, names=("a", "b")) -> LinearThresholdModel:
    path = tmp_path / "classifier.json"
    path.write_text(json.dumps({"feature_names": list(names), "w": list(w), "margin": margin}))
    model = LinearThresholdModel()
    model.load_context(SimpleNamespace(artifacts={"classifier": str(path)}))
    return model


def test_the_artifact_is_the_models_state(tmp_path):
    model = _model(tmp_path, [0.5, -1.0], 0.25)
    assert model.feature_names == ["a", "b"] and model.margin == 0.25
    np.testing.assert_array_equal(model.w, [0.5, -1.0])


def test_labels_are_the_exact_rule_at_the_margin_too(tmp_path):
    margin = 1e-4
    model = _model(tmp_path, [1.0, 1.0], margin)
    X = np.array(
        [
            [margin, 0.0],
            [margin / 2, margin / 2],
            [0.0, 0.0],
            [0.3, -0.3 + 1e-12],
            [0.7, 0.1],
            [0.1, -0.2],
        ]
    )
    labels = model.predict(None, pd.DataFrame(X, columns=["a", "b"]))
    assert labels.name == "label" and labels.dtype == np.int64
    np.testing.assert_array_equal(labels, predict(X, np.array([1.0, 1.0]), margin))
    assert labels.tolist()[:3] == [1, 1, -1]  # >= margin is +1; w = 0 scores say -1


def test_features_are_taken_by_name_whatever_the_frames_columns(tmp_path):
    model = _model(tmp_path, [2.0, -1.0], 0.0, names=("x", "y"))
    frame = pd.DataFrame({"y": [1.0, 0.0], "extra": [9.0, 9.0], "x": [0.0, 1.0]})
    assert model.predict(None, frame).tolist() == [-1, 1]  # 2x - y: -1 then 2
    with pytest.raises(KeyError):
        model.predict(None, frame.drop(columns="y"))
