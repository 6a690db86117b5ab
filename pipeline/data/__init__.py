"""Datasets: the frozen record, the Adult loader, any table, and the synthetic generator."""

from __future__ import annotations

from pipeline.data.adult import load_adult, resolve_data_dir
from pipeline.data.adult_domain import load_adult_records, records_datasets
from pipeline.data.record import DataError, Dataset
from pipeline.data.synthetic import make_linear_threshold
from pipeline.data.table import load_table
from pipeline.data.table_records import load_table_records

__all__ = ["DataError", "Dataset", "load_dataset"]


def load_dataset(cfg) -> tuple[Dataset, Dataset | None]:
    """(training set, test set or None) for a dataset config node (pipeline.config)."""
    if cfg.name == "adult":
        splits = load_adult(cfg.data_dir, balance_seed=cfg.balance_seed, **_fetch_options(cfg))
        return splits.train, splits.test
    if cfg.name == "adult_records":
        directory, sums = resolve_data_dir(cfg.data_dir, **_fetch_options(cfg))
        provenance = {"source": "UCI Adult", "directory": str(directory), "sha256": sums}
        return records_datasets(load_adult_records(directory), provenance)
    if cfg.name == "synthetic":
        train = make_linear_threshold(
            cfg.n,
            cfg.n_continuous,
            groups=tuple(cfg.groups),
            label_noise=cfg.label_noise,
            levels=cfg.levels,
            seed=cfg.seed,
        )
        return train, None
    if cfg.name == "table":
        splits = load_table(
            cfg.path,
            negative=cfg.negative,
            numeric=dict(cfg.numeric or {}),
            balance=cfg.balance,
            balance_seed=cfg.balance_seed,
            out_of_bounds=cfg.out_of_bounds,
            **_table_options(cfg),
        )
        return splits.train, splits.test
    if cfg.name == "table_records":
        splits = load_table_records(cfg.path, bins=dict(cfg.bins or {}), **_table_options(cfg))
        return splits.train, splits.test
    raise ValueError(f"dataset.name: unknown dataset {cfg.name!r}")


def _fetch_options(cfg) -> dict:
    """Where Adult's files are read or fetched from (the adult and adult_records datasets)."""
    keys = ("cache_dir", "download", "url", "verify_checksum")
    return {key: getattr(cfg, key) for key in keys}


def _table_options(cfg) -> dict:
    """What the table and table_records datasets read alike: the label, the categorical
    columns, the test split and the rows dropped."""
    return {
        "label": cfg.label,
        "positive": cfg.positive,
        "categorical": dict(cfg.categorical or {}),
        "test_source": cfg.test_path,
        "test_fraction": cfg.test_fraction,
        "split_seed": cfg.split_seed,
        "drop_missing": cfg.drop_missing,
    }
