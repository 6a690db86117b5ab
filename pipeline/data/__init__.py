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
        splits = load_adult(
            cfg.data_dir,
            balance_seed=cfg.balance_seed,
            cache_dir=cfg.cache_dir,
            download=cfg.download,
            url=cfg.url,
            verify_checksum=cfg.verify_checksum,
        )
        return splits.train, splits.test
    if cfg.name == "adult_records":
        directory, sums = resolve_data_dir(
            cfg.data_dir,
            cache_dir=cfg.cache_dir,
            download=cfg.download,
            url=cfg.url,
            verify_checksum=cfg.verify_checksum,
        )
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
            label=cfg.label,
            positive=cfg.positive,
            negative=cfg.negative,
            categorical=dict(cfg.categorical or {}),
            numeric=dict(cfg.numeric or {}),
            test_source=cfg.test_path,
            test_fraction=cfg.test_fraction,
            split_seed=cfg.split_seed,
            balance=cfg.balance,
            balance_seed=cfg.balance_seed,
            drop_missing=cfg.drop_missing,
            out_of_bounds=cfg.out_of_bounds,
        )
        return splits.train, splits.test
    if cfg.name == "table_records":
        splits = load_table_records(
            cfg.path,
            label=cfg.label,
            positive=cfg.positive,
            categorical=dict(cfg.categorical or {}),
            bins=dict(cfg.bins or {}),
            test_source=cfg.test_path,
            test_fraction=cfg.test_fraction,
            split_seed=cfg.split_seed,
            drop_missing=cfg.drop_missing,
        )
        return splits.train, splits.test
    raise ValueError(f"dataset.name: unknown dataset {cfg.name!r}")
