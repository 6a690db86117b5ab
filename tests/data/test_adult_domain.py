"""pipeline.data.adult_domain: Adult's records over a public domain (UCI's documented levels and
fixed bins), checked against the raw files: every value is in the domain, and the coding keeps
what the files say."""

from __future__ import annotations

import numpy as np
import pytest

from pipeline.data.adult_domain import (
    ATTRIBUTES,
    BINS,
    LEVELS,
    adult_domain,
    load_adult_records,
    read_records,
)
from pipeline.data.record import DataError

ROW = (
    "39, State-gov, 77516, Bachelors, 13, Never-married, Adm-clerical, Not-in-family, White, "
    "Male, 2174, 0, 40, United-States, <=50K"
)


def test_the_domain_is_public_and_leaves_out_the_weight_and_the_copy_of_education():
    domain = adult_domain()
    assert "fnlwgt" not in domain.names and "education-num" not in domain.names
    assert domain.names == ATTRIBUTES and domain.names[-1] == "income"
    assert domain.levels[domain.names.index("age")][0] == BINS["age"][0][0]
    assert domain.levels[domain.names.index("native-country")] == LEVELS["native-country"]


def test_a_row_is_coded_by_its_levels_and_bins(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text(
        ROW + "\n" + ROW.replace("<=50K", ">50K.").replace("39, State", "70, State") + "\n"
    )
    domain = adult_domain()
    rows = domain.decode(read_records(path, domain))
    named = [dict(zip(domain.names, r)) for r in rows]
    assert named[0]["age"] == "35-44" and named[1]["age"] == "65+"
    assert named[0]["capital-gain"] == "1-4999" and named[0]["capital-loss"] == "0"
    assert named[0]["hours-per-week"] == "35-40" and named[0]["workclass"] == "State-gov"
    assert named[0]["income"] == "<=50K" and named[1]["income"] == ">50K"  # trailing period


def test_a_value_outside_the_domain_names_the_file_and_the_row(tmp_path):
    path = tmp_path / "adult.data"
    path.write_text(ROW.replace("State-gov", "Moon-gov") + "\n")
    with pytest.raises(DataError, match=r"adult.data: row 0: 'workclass' is 'Moon-gov'"):
        read_records(path, adult_domain())
    path.write_text(ROW.replace(" 40,", " -3,") + "\n")
    with pytest.raises(DataError, match=r"adult.data:1: '-3' is outside every bin"):
        read_records(path, adult_domain())
    path.write_text("39, State-gov\n")
    with pytest.raises(
        DataError, match=r"adult.data:1: expected 15 comma-separated fields, found 2"
    ):
        read_records(path, adult_domain())


def test_the_real_files_lie_in_the_domain(adult_dir):
    records = load_adult_records(adult_dir)
    assert records.train.shape == (32_561, len(ATTRIBUTES))
    assert records.test.shape == (16_281, len(ATTRIBUTES))
    income = records.domain.names.index("income")
    assert np.mean(records.train[:, income] == 1) == pytest.approx(7841 / 32_561)


def test_the_records_dataset_loads_through_the_config(adult_dir):
    from hydra import compose, initialize_config_dir

    from pipeline.cli import CONFIG_DIR
    from pipeline.config import validate
    from pipeline.data import load_dataset

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(
            compose("config", overrides=["dataset=adult_records", f"dataset.data_dir={adult_dir}"])
        )
    train, test = load_dataset(config.dataset)
    assert train.features.shape == (32_561, len(ATTRIBUTES)) and test.n == 16_281
    assert train.feature_names == ATTRIBUTES and train.provenance["kind"] == "records"
    assert train.provenance["domain"]["sex"] == ["Female", "Male"]
    income = ATTRIBUTES.index("income")
    assert ((train.features[:, income] == 1) == (train.labels == 1)).all()
    records = train.records()  # as the synthetic-data mechanisms take it
    assert records.domain == adult_domain() and records.codes.dtype == np.int64
    assert (records.label, records.positive) == (income, 1)
    assert (records.codes == train.features).all()
