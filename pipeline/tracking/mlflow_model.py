"""The MLflow model of a release: h_w(x) = +1 if <w, x> >= margin else -1 (SPEC section 2).

MLflow's "models from code": ``pipeline.tracking.mlflow_log.log_release_model`` logs this file, not a
pickle, and MLflow runs it when the model is loaded. The model's state is its artifact
``classifier.json`` (the feature names, w and the margin: a few hundred bytes); labels come from
``core.objective.predict``, the one exact scoring rule every accuracy of the sweep uses, so
``mlflow.pyfunc.load_model(...).predict`` and ``Release.predict`` agree on every row, those exactly
at the margin included. Loading needs this project installed (for ``core.objective``).
"""

import json

import mlflow
import numpy as np
import pandas as pd

from core.objective import predict


class LinearThresholdModel(mlflow.pyfunc.PythonModel):
    """Labels in {-1, +1} of a DataFrame whose columns include the feature names."""

    def load_context(self, context) -> None:
        with open(context.artifacts["classifier"]) as f:
            classifier = json.load(f)
        self.feature_names = list(classifier["feature_names"])
        self.w = np.array(classifier["w"], dtype=float)
        self.margin = float(classifier["margin"])

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.Series:
        X = pd.DataFrame(model_input)[self.feature_names].to_numpy(dtype=float)
        return pd.Series(predict(X, self.w, self.margin).astype(np.int64), name="label")


mlflow.models.set_model(LinearThresholdModel())
