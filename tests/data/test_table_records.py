"""pipeline.data.table_records: any table as records over a public domain, each value coded by
its stated level or public bin, the label an attribute, what is read off the data on record."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import pipeline.data.table_records as table_records_module
from mechanisms.privacy import PrivacyLeakWarning
from pipeline.data.record import DataError
from pipeline.data.table_records import load_table_records

FRAME = pd.DataFrame(
    {
        "age": [18, 29.5, 30, 64, 120, 45],
        "colour": ["red", "green", "red", "blue", "green", "red"],
        "y": ["yes", "no", "no", "yes", "no", "yes"],
    }
)
STATED = {"colour": ["red", "green", "blue"], "y": ["no", "yes"]}


def _load(frame=FRAME, **changes):
    options = dict(
        label="y",
        positive="yes",
        categorical=STATED,
        bins={"age": [0, 30, 65, 120]},
        test_fraction=0.0,
    )
    return load_table_records(frame, **(options | changes))


def test_each_value_is_coded_by_its_stated_level_or_public_bin():
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)  # everything stated: no leak
        train = _load().train
    assert train.feature_names == ("colour", "y", "age")
    assert train.features.tolist() == [
        [0, 1, 0],
        [1, 0, 0],
        [0, 0, 1],  # 30 opens the second bin
        [2, 1, 1],
        [1, 0, 2],  # the last bin is closed: 120 is in it
        [0, 1, 1],
    ]
    assert train.labels.tolist() == [1, -1, -1, 1, -1, 1]
    records = train.records()
    assert records.domain.levels[2] == ("[0, 30)", "[30, 65)", "[65, 120]")
    assert (records.label, records.positive) == (1, 1)
    assert train.provenance["privacy_leak_warnings"] == []


def test_levels_not_stated_are_read_off_the_training_rows_and_said():
    with pytest.warns(PrivacyLeakWarning, match="levels of 'colour'"):
        train = _load(categorical={"colour": None, "y": ["no", "yes"]}).train
    assert train.records().domain.levels[0] == ("blue", "green", "red")
    (leak,) = train.provenance["privacy_leak_warnings"]
    assert "colour" in leak


def test_a_label_not_listed_is_the_first_attribute_and_its_levels_are_read_off():
    with pytest.warns(PrivacyLeakWarning, match="levels of 'y'"):
        train = _load(categorical={"colour": STATED["colour"]}).train
    assert train.feature_names == ("colour", "y", "age")


@pytest.mark.parametrize(
    "changes, message",
    [
        (
            {"bins": {"age": [0, 30, 100]}},
            r"row 4: numeric column 'age' is 120.0, outside its bins",
        ),
        ({"bins": {"age": [30, 0]}}, "bins.age: the public bin edges must be"),
        (
            {"categorical": {"colour": ["red", "green"], "y": ["no", "yes"]}},
            "row 3: column 'colour' has level 'blue'|outside the stated levels",
        ),
        ({"positive": "maybe"}, "one class only|no level 'maybe'"),
        ({"categorical": {"y": ["no", "yes"]}, "bins": {}}, "no attribute but the label"),
    ],
)
def test_a_value_outside_the_public_domain_is_an_error_naming_it(changes, message):
    with pytest.raises(DataError, match=message):
        _load(**changes)


def test_a_test_fraction_splits_the_records_as_the_classifiers_tables_are_split():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame(
        {
            "age": rng.integers(0, 120, 100),
            "colour": rng.choice(STATED["colour"], 100),
            "y": rng.choice(["no", "yes"], 100),
        }
    )
    splits = _load(frame, test_fraction=0.25, split_seed=3)
    assert (splits.train.n, splits.test.n) == (75, 25)
    assert splits.test.provenance["split"] == "test"
    again = _load(frame, test_fraction=0.25, split_seed=3)
    assert (again.test.features == splits.test.features).all()


def test_a_wrong_column_name_is_refused_from_the_header_before_the_table_is_read(
    tmp_path, monkeypatch
):
    """As for the classifiers' tables (test_table.py): the names against the header first."""
    path = tmp_path / "t.csv"
    path.write_text("colour,age,y\nred,30,1\nblue,50,0\n")

    def no_read(source, *args):
        raise AssertionError("the table was read before its header was checked")

    monkeypatch.setattr(table_records_module, "read_complete", no_read)
    with pytest.raises(DataError, match=r"no column 'agee' \(did you mean 'agee' -> 'age'\?\)"):
        load_table_records(path, label="y", positive="1", bins={"agee": [0, 50, 100]})
