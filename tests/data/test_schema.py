"""Typed schemas of the ``dataset`` config group (pipeline.data.schema): each ``check`` raises
InvalidValue naming its field, and normalizes what it accepts; through the composed config the
error names the full key."""

from __future__ import annotations

import pytest

from core.validation import InvalidValue
from pipeline.data.schema import (
    DATASET_SCHEMAS,
    AdultDatasetConfig,
    AdultRecordsConfig,
    SyntheticDatasetConfig,
    TableDatasetConfig,
    TableRecordsConfig,
)


def test_table_config_errors_name_the_key(tmp_path):
    from hydra import compose, initialize_config_dir

    from pipeline.cli import CONFIG_DIR
    from pipeline.config import ConfigError, validate

    base = [
        "dataset=table",
        f"dataset.path={tmp_path}/x.csv",
        "dataset.label=y",
        "dataset.positive=1",
    ]
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        ok = validate(
            compose(config_name="config", overrides=[*base, "dataset.numeric={a:[0,1],b:null}"])
        )
        assert ok.dataset.numeric == {"a": [0, 1], "b": None}
        with pytest.raises(ConfigError, match=r"dataset.numeric.a: must be \[low, high\]"):
            validate(compose(config_name="config", overrides=[*base, "dataset.numeric={a:[2,1]}"]))
        with pytest.raises(ConfigError, match="dataset.numeric: list at least one feature"):
            validate(compose(config_name="config", overrides=base))


def _table(**changes) -> TableDatasetConfig:
    return TableDatasetConfig(
        **({"path": "t.csv", "label": "y", "positive": "1", "numeric": {"a": [0, 1]}} | changes)
    )


def test_the_schemas_are_registered_under_their_names_with_defaults_that_pass():
    tables = ("table", "table_records")  # their path is mandatory: no default passes
    assert {k: v().name for k, v in DATASET_SCHEMAS.items() if k not in tables} == {
        "adult": "adult",
        "adult_records": "adult_records",
        "synthetic": "synthetic",
    }
    assert DATASET_SCHEMAS["table"] is TableDatasetConfig and _table().name == "table"
    records = TableRecordsConfig(path="t.csv", label="y", positive="1", bins={"a": [0, 1, 2]})
    assert DATASET_SCHEMAS["table_records"] is TableRecordsConfig
    records.check()
    assert TableRecordsConfig.DATA == AdultRecordsConfig.DATA == "records"
    assert TableDatasetConfig.DATA == AdultDatasetConfig.DATA == "features"
    AdultDatasetConfig().check()
    AdultRecordsConfig().check()
    SyntheticDatasetConfig().check()
    _table().check()


@pytest.mark.parametrize(
    "schema, changes, key",
    [
        (AdultDatasetConfig, {"url": ""}, "url"),
        (AdultRecordsConfig, {"url": ""}, "url"),
        (SyntheticDatasetConfig, {"n": 1}, "n"),
        (SyntheticDatasetConfig, {"n_continuous": -1}, "n_continuous"),
        (SyntheticDatasetConfig, {"groups": [3, 1]}, "groups"),
        (SyntheticDatasetConfig, {"label_noise": 0.6}, "label_noise"),
        (SyntheticDatasetConfig, {"levels": 1}, "levels"),
    ],
)
def test_a_value_out_of_range_names_its_field(schema, changes, key):
    with pytest.raises(InvalidValue) as err:
        schema(**changes).check()
    assert err.value.key == key and err.value.value == next(iter(changes.values()))
    SyntheticDatasetConfig(levels=None).check()  # null levels: continuous columns


@pytest.mark.parametrize(
    "changes, key, message",
    [
        ({"path": ""}, "path", "must name a CSV/Parquet file"),
        ({"label": ""}, "label", "must name the label column"),
        ({"test_fraction": 1.0}, "test_fraction", "must be in [0, 1)"),
        ({"out_of_bounds": "drop"}, "out_of_bounds", "must be error or clip"),
        ({"categorical": ["a"]}, "categorical", "must map column names"),
        ({"numeric": {}}, "numeric", "list at least one feature column"),
        ({"categorical": {"a": None}}, "numeric", "columns listed as both categorical and numeric"),
        ({"numeric": {"a": [0, float("inf")]}}, "numeric.a", "must be [low, high] with low < high"),
        ({"numeric": {"a": [True, 2]}}, "numeric.a", "must be [low, high] with low < high"),
        ({"categorical": {"c": ["x", "x"]}}, "categorical.c", "must be a list of distinct levels"),
        ({"categorical": {"c": []}}, "categorical.c", "must be a list of distinct levels"),
    ],
)
def test_table_checks_name_the_field(changes, key, message):
    with pytest.raises(InvalidValue) as err:
        _table(**changes).check()
    assert err.value.key == key and message in err.value.message


def test_table_check_turns_null_column_maps_into_dicts():
    config = _table(categorical=None, numeric={"a": None, "b": (0, 2)})
    config.check()
    assert config.categorical == {} and config.numeric == {"a": None, "b": (0, 2)}
    only_levels = _table(categorical={"c": ["x", "y"]}, numeric=None)
    only_levels.check()
    assert only_levels.numeric == {}


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"bins": {"a": [0]}}, "bins.a: must be >= 2 finite increasing bin edges"),
        ({"bins": {"a": [1, 0]}}, "bins.a: must be >= 2 finite increasing bin edges"),
        ({"bins": [0, 1]}, "bins: must map column names"),
        ({"test_fraction": 1.0}, "test_fraction: must be in"),
    ],
)
def test_a_records_table_refuses_bins_that_are_not_edges(changes, message):
    config = TableRecordsConfig(**({"path": "t.csv", "label": "y", "positive": "1"} | changes))
    with pytest.raises(InvalidValue, match=message):
        config.check()


def test_a_mapping_given_as_quoted_text_names_any_column():
    """Column names Hydra's override grammar cannot spell (non-ASCII letters, '=') come as one
    quoted string of YAML flow text (docs/data.md): its scalars stay text (a level ``no`` is
    not False), bounds and bin edges become numbers, null is None."""
    config = _table(
        numeric="{größe: [0, 250], a=b: [0, 1e3], c: null}",
        categorical="{farbe: [rot, grün], owner: [no, yes]}",
    )
    config.check()
    assert config.numeric == {"größe": [0.0, 250.0], "a=b": [0.0, 1000.0], "c": None}
    assert config.categorical == {"farbe": ["rot", "grün"], "owner": ["no", "yes"]}
    records = TableRecordsConfig(path="t.csv", label="y", positive="1", bins="{größe: [0, 1, 2]}")
    records.check()
    assert records.bins == {"größe": [0.0, 1.0, 2.0]}


@pytest.mark.parametrize(
    "changes, key, message",
    [
        ({"numeric": "{größe: [0, 250]"}, "numeric", "a mapping given as text is YAML flow text"),
        ({"numeric": "[0, 1]"}, "numeric", "must map column names to levels / bounds"),
        ({"numeric": "{größe: [0, x]}"}, "numeric.größe", "must be [low, high] with low < high"),
    ],
)
def test_a_mapping_given_as_text_that_is_not_one_is_refused(changes, key, message):
    with pytest.raises(InvalidValue) as err:
        _table(**changes).check()
    assert err.value.key == key and message in err.value.message
