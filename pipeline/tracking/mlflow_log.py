"""What a run holds in MLflow beside its result row: its dataset, its model, release.json, a view.

* The dataset, as an MLflow dataset (``mlflow.data``, with its digest): built once per sweep by
  the driver (``dataset_inputs``) and logged as the input of the parent run and of every child
  (context ``train``, and ``test`` when there is a test set), so the run list's Dataset column
  says what each run was trained on.
* The released linear model, as an MLflow model with a signature (the dataset's feature names
  in, the label out): ``mlflow.pyfunc.load_model(f"runs:/{run_id}/model")`` predicts exactly
  ``Release.predict``'s labels (pipeline.tracking.mlflow_model). No input example: an example row would
  publish a row of the private data.
* A synthetic-data run's table, as the artifact ``synthetic.csv`` (the original columns and
  levels) and as the run's output dataset (``log_synthetic_table``); it has no model.
* ``release.json``: the record nobody sorts by (the mechanism's config and parameters, the
  privacy claim's provenance, every oracle certificate), kept out of the run list's columns.
* The run list's view (``RUN_LIST_VIEW``): the columns a reviewer wants first, stored as a
  shared view of the experiment and opened by ``view_url``.

Used by pipeline.tracking.mlflow_runs only; nothing here runs outside the driver.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
import warnings
from pathlib import Path
from typing import Any, Mapping, Sequence

import numpy as np
import pandas as pd

from mechanisms.catalog import CATALOG
from mechanisms.release import Release
from mechanisms.synthetic.domain import Domain
from mechanisms.synthetic.fem import SyntheticRelease
from pipeline.data.record import Dataset

#: The model's name in its run: ``runs:/<run_id>/model``.
MODEL_NAME = "model"
#: A synthetic-data run's table, an artifact of its run.
SYNTHETIC_TABLE = "synthetic.csv"
MODEL_CODE = Path(__file__).with_name("mlflow_model.py")
LABEL = "label"
#: The key of the run list's shared view (``?viewStateShareKey=`` in the UI's URL).
VIEW_KEY = "privacy-accuracy"
#: The child runs' tag that the view filters on (the parent run is tagged ``role = sweep``).
CHILD_ROLE = "run"


def _column(kind: str, name: str) -> str:
    return f"{kind}.`{name}`"  # the UI's column id


#: MLflow's own columns left of the view's, by the UI's column ids: the run's name, and its
#: start time (``Created``, led by the run's status icon), which the UI always shows.
RUN_NAME = _column("attributes", "Run Name")
CREATED = "runDateAndNestInfo"
#: What the run list shows first, in this order: whether the guarantee holds, the proven epsilon,
#: the oracle certificate and the test accuracy (the verdicts, in view at 1280 x 800 beside
#: MLflow's own Run Name and Created columns and its two panels), then the train accuracy, the
#: requested epsilon, the calibration, the gap, and last the duration, the dataset and the model.
#: The gap is the ``oracle_gap`` tag (pipeline.tracking.run_record.gap_text: ``1.1e-13``, ``0``, ``-``
#: without an oracle call), not the raw ``oracle_max_gap`` metric, whose full digits a column
#: cuts to ``1.13686837...`` and whose floating-point noise reads ``-1.4e-14``.
VERDICTS = (
    _column("tags", "privacy_status"),
    _column("params", "privacy_epsilon"),
    _column("tags", "oracle_certified"),
    _column("metrics", "test_accuracy"),
)
RUN_LIST_COLUMNS = VERDICTS + (
    _column("metrics", "train_accuracy"),
    _column("params", "requested_epsilon"),
    _column("params", "calibration"),
    _column("tags", "oracle_gap"),
    "duration",
    _column("attributes", "Dataset"),
    _column("attributes", "Models"),
)
#: The pixels of columns in view right of the rows' checkboxes at 1280 x 800, beside MLflow's
#: navigation on the left and its assistant panel on the right (MLflow 3.17.2 in chromium: the
#: grid shows 698 px, 73 of them the checkboxes). Before, Run Name (190), Created (150),
#: privacy_status and train_accuracy filled it and the rest was cut.
LAPTOP_COLUMNS = 625
#: The widths of what must fit in LAPTOP_COLUMNS. The UI clips a header at its column's edge, so
#: a verdict's name (84 to 91 px in chromium's sans-serif) shows whole in its width plus the 12 px
#: padding on its left; each has 4 px more. Created keeps its status icon (finished, failed,
#: running); Run Name keeps names of up to about 130 px (``opdisc/eps=0.5/run=0`` is 115).
FIRST_WIDTHS = {
    RUN_NAME: 177,
    CREATED: 40,
    _column("tags", "privacy_status"): 100,
    _column("params", "privacy_epsilon"): 107,
    _column("tags", "oracle_certified"): 105,
    _column("metrics", "test_accuracy"): 96,
}
RUN_LIST_VIEW = {
    "searchFilter": f"tags.role = '{CHILD_ROLE}'",  # the children, not their parent
    # sorted by anything but the start time, the UI lists children flat, not folded under the
    # parent; by name, each mechanism's runs are together
    "orderByKey": "tags.`mlflow.runName`",
    "orderByAsc": True,
    "selectedColumns": list(RUN_LIST_COLUMNS),
    # MLflow's own two columns are named here too, for their widths (the UI applies a width to
    # the columns of columnOrder only)
    "columnOrder": [RUN_NAME, CREATED, *RUN_LIST_COLUMNS],
    "columnWidths": {
        **FIRST_WIDTHS,
        _column("metrics", "train_accuracy"): 120,
        _column("params", "requested_epsilon"): 150,
        _column("params", "calibration"): 150,
        _column("attributes", "Dataset"): 240,
        _column("attributes", "Models"): 100,
    },
}


def view_url(server: str, experiment_id: str) -> str:
    """The run list of ``experiment_id`` on the MLflow UI at ``server``, in RUN_LIST_VIEW."""
    return f"{server.rstrip('/')}/#/experiments/{experiment_id}/runs?viewStateShareKey={VIEW_KEY}"


def _source(provenance: Mapping[str, Any]):
    """Where the data came from, as an MLflow dataset source: its files, else its generator."""
    from mlflow.data.code_dataset_source import CodeDatasetSource
    from mlflow.data.dataset_source_registry import resolve_dataset_source

    where = str(provenance.get("directory") or provenance.get("source") or "")
    if where and (re.match(r"https?://", where) or Path(where).exists()):
        uri = where if "://" in where else Path(where).resolve().as_uri()
        with warnings.catch_warnings():  # MLflow registers two local sources, the same class
            warnings.filterwarnings("ignore", ".*can be interpreted in multiple ways", UserWarning)
            return resolve_dataset_source(uri)
    scalars = {k: v for k, v in provenance.items() if isinstance(v, (str, int, float, bool))}
    return CodeDatasetSource(tags=scalars)


def _mlflow_dataset(name: str, data: Dataset):
    """``data`` (features and label) as an MLflow dataset named ``name``, with its digest."""
    import mlflow.data

    frame = pd.DataFrame(data.features, columns=list(data.feature_names))
    frame[LABEL] = data.labels.astype(np.int64)
    return mlflow.data.from_pandas(frame, source=_source(data.provenance), name=name, targets=LABEL)


def dataset_inputs(name: str, train: Dataset, test: Dataset | None) -> list:
    """The run inputs that say what a run was trained (context ``train``) and tested on."""
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    splits = {"train": train} if test is None else {"train": train, "test": test}
    with warnings.catch_warnings():  # the label column holds integers, never missing
        warnings.filterwarnings("ignore", ".*integer column", UserWarning)
        return [
            DatasetInput(
                _mlflow_dataset(name, data)._to_mlflow_entity(),
                [InputTag(MLFLOW_DATASET_CONTEXT, context)],
            )
            for context, data in splits.items()
        ]


def model_signature(feature_names: Sequence[str]):
    """The feature columns (float) in, the label (+1 or -1) out."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec, Schema

    inputs = Schema([ColSpec("double", name) for name in feature_names])
    return ModelSignature(inputs=inputs, outputs=Schema([ColSpec("long", LABEL)]))


def log_release_model(
    client, experiment_id: str, run_id: str, release: Release, feature_names: Sequence[str]
) -> str:
    """Log ``release``'s classifier as the model of run ``run_id``; returns its model id."""
    import mlflow
    from mlflow.entities import LoggedModelStatus
    from mlflow.models import Model

    claim = release.privacy
    model = client.create_logged_model(
        experiment_id,
        name=MODEL_NAME,
        source_run_id=run_id,
        model_type="linear threshold",
        params={
            "mechanism": release.mechanism,
            "privacy_epsilon": str(claim.epsilon),
            "privacy_delta": str(claim.delta),
            "privacy_holds": str(claim.holds),
            "margin": str(release.margin),
        },
    )
    classifier = {
        "feature_names": list(feature_names),
        "w": [float(v) for v in release.w],
        "margin": float(release.margin),
    }
    requirements = [
        f"mlflow=={mlflow.__version__}",
        f"numpy=={np.__version__}",
        f"pandas=={pd.__version__}",
    ]
    with tempfile.TemporaryDirectory() as tmp, _working_directory(tmp), warnings.catch_warnings():
        # not model_config: MLflow would copy it into the run's params
        path = Path(tmp) / "classifier.json"
        path.write_text(json.dumps(classifier))
        # no input example, on purpose: it would publish a private row
        warnings.filterwarnings("ignore", ".*input example", UserWarning)
        Model.log(
            artifact_path=None,
            name=MODEL_NAME,
            flavor=mlflow.pyfunc,
            run_id=run_id,
            model_id=model.model_id,
            python_model=str(MODEL_CODE),
            artifacts={"classifier": str(path)},
            signature=model_signature(feature_names),
            pip_requirements=requirements,
        )
    client.finalize_logged_model(model.model_id, LoggedModelStatus.READY)
    return model.model_id


@contextlib.contextmanager
def _working_directory(path: str):
    """Run in ``path``, then return to the working directory, by its path.

    MLflow's model saving reads the working directory (``Path.cwd()``). Under ``ray job submit``
    the driver's directory is the job's copy of the working directory, which a node joining on
    the same machine extracts again while the driver runs: the old directory is gone and
    ``os.getcwd()`` fails. Its path is there again, so the driver goes back to it by name, else
    to the system's temporary directory.
    """
    before = os.environ.get("PWD")
    try:
        before = os.getcwd()
    except FileNotFoundError:
        pass
    os.chdir(path)
    try:
        yield
    finally:
        try:
            os.chdir(before or tempfile.gettempdir())
        except OSError:
            os.chdir(tempfile.gettempdir())


def release_json(release: Release | SyntheticRelease, mechanism_cfg: Mapping[str, Any]) -> str:
    """release.json: what was run and everything the release rests on, in full (a classifier's
    weights; a synthetic table's private transcript, the query and sign each round selected)."""
    record = {
        "mechanism_config": dict(mechanism_cfg),
        "release": release.to_params(),
        "metrics": release.to_metrics(),
    }
    record |= CATALOG[release.mechanism].transcript(release)  # its kind's: weights, selections
    record["certificates"] = [
        c.to_params() | {"extra": _scalars(c.stats_dict())} for c in release.certificates
    ]
    return json.dumps(record, indent=1, default=_json_value)


def _scalars(extra: Mapping[str, Any]) -> dict[str, Any]:
    """A certificate's stats (``Certificate.stats_dict``) as numbers and words (what its search
    spent and did, its cost to certify, where its state is kept), under release.json's
    ``extra`` as always: the lists some records hold are left out."""
    return {k: v for k, v in extra.items() if isinstance(v, (bool, int, float, str))}


def synthetic_frame(release: SyntheticRelease, domain: Domain) -> pd.DataFrame:
    """The synthetic table with the original columns and levels (not the level codes)."""
    return pd.DataFrame(domain.decode(release.records), columns=list(domain.names))


def log_synthetic_table(client, run_id: str, release: SyntheticRelease, domain: Domain) -> None:
    """The synthetic table as the run's artifact ``SYNTHETIC_TABLE`` and as its output dataset.

    MLflow 3 records outputs of a run for models only, so the table is logged as a dataset of
    the run with context ``output`` (the run list's Dataset column shows it beside the input),
    its source the artifact. Never called for the real-table reference: its "table" is the
    private training data, which the tracking store must not hold a copy of.
    """
    import mlflow.data
    from mlflow.entities import DatasetInput, InputTag
    from mlflow.utils.mlflow_tags import MLFLOW_DATASET_CONTEXT

    frame = synthetic_frame(release, domain)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / SYNTHETIC_TABLE
        frame.to_csv(path, index=False)
        client.log_artifact(run_id, str(path))
    uri = f"{client.get_run(run_id).info.artifact_uri.rstrip('/')}/{SYNTHETIC_TABLE}"
    with warnings.catch_warnings():  # as in _source: two local sources, the same class
        warnings.filterwarnings("ignore", ".*can be interpreted in multiple ways", UserWarning)
        dataset = mlflow.data.from_pandas(
            frame, source=uri, name=f"{release.mechanism} synthetic table"
        )
    output = DatasetInput(dataset._to_mlflow_entity(), [InputTag(MLFLOW_DATASET_CONTEXT, "output")])
    client.log_inputs(run_id, datasets=[output])


def _json_value(value: Any) -> Any:
    return value.item() if isinstance(value, np.generic) else str(value)
