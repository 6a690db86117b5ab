"""Adult as a table of records over a public domain, for private synthetic data.

docs/synthetic.md section 1 needs every attribute's levels stated in advance. Here they are UCI's
documented levels (adult.names), "?" included where UCI marks a value missing, and public bins for
the numeric columns; nothing is read off the data. fnlwgt (a survey weight) and education-num (a
copy of education) are left out. The income label is an attribute like the others: a synthetic
table carries it, and a classifier trained on the synthetic table predicts it.

The training records are every row of adult.data, the test records every row of adult.test
(pipeline.data.adult reads and checks the files; this module only codes their rows).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from mechanisms.synthetic.domain import Domain
from pipeline.data.adult import (
    CATEGORICAL,
    COLUMNS,
    FILES,
    NEGATIVE_LABEL,
    POSITIVE_LABEL,
    raw_rows,
)
from pipeline.data.record import DataError, Dataset, records_provenance

#: Numeric columns and their public bins: (label, low, high) with low <= value < high.
BINS = {
    "age": (
        ("17-24", 0, 25),
        ("25-34", 25, 35),
        ("35-44", 35, 45),
        ("45-54", 45, 55),
        ("55-64", 55, 65),
        ("65+", 65, float("inf")),
    ),
    "capital-gain": (("0", 0, 1), ("1-4999", 1, 5000), ("5000+", 5000, float("inf"))),
    "capital-loss": (("0", 0, 1), ("1-1999", 1, 2000), ("2000+", 2000, float("inf"))),
    "hours-per-week": (
        ("<35", 0, 35),
        ("35-40", 35, 41),
        ("41-50", 41, 51),
        ("51+", 51, float("inf")),
    ),
}

#: UCI's documented levels (adult.names), "?" where a value may be missing.
LEVELS = {
    "workclass": (
        "Private",
        "Self-emp-not-inc",
        "Self-emp-inc",
        "Federal-gov",
        "Local-gov",
        "State-gov",
        "Without-pay",
        "Never-worked",
        "?",
    ),
    "education": (
        "Bachelors",
        "Some-college",
        "11th",
        "HS-grad",
        "Prof-school",
        "Assoc-acdm",
        "Assoc-voc",
        "9th",
        "7th-8th",
        "12th",
        "Masters",
        "1st-4th",
        "10th",
        "Doctorate",
        "5th-6th",
        "Preschool",
    ),
    "occupation": (
        "Tech-support",
        "Craft-repair",
        "Other-service",
        "Sales",
        "Exec-managerial",
        "Prof-specialty",
        "Handlers-cleaners",
        "Machine-op-inspct",
        "Adm-clerical",
        "Farming-fishing",
        "Transport-moving",
        "Priv-house-serv",
        "Protective-serv",
        "Armed-Forces",
        "?",
    ),
    "native-country": (
        "United-States",
        "Cambodia",
        "England",
        "Puerto-Rico",
        "Canada",
        "Germany",
        "Outlying-US(Guam-USVI-etc)",
        "India",
        "Japan",
        "Greece",
        "South",
        "China",
        "Cuba",
        "Iran",
        "Honduras",
        "Philippines",
        "Italy",
        "Poland",
        "Jamaica",
        "Vietnam",
        "Mexico",
        "Portugal",
        "Ireland",
        "France",
        "Dominican-Republic",
        "Laos",
        "Ecuador",
        "Taiwan",
        "Haiti",
        "Columbia",
        "Hungary",
        "Guatemala",
        "Nicaragua",
        "Scotland",
        "Thailand",
        "Yugoslavia",
        "El-Salvador",
        "Trinadad&Tobago",
        "Peru",
        "Hong",
        "Holand-Netherlands",
        "?",
    ),
    # the four the classifier encoding one-hots, with its level order (pipeline.data.adult)
    **dict(CATEGORICAL),
    "income": (NEGATIVE_LABEL, POSITIVE_LABEL),
}

#: The attributes, in the file's column order.
ATTRIBUTES = tuple(c for c in COLUMNS if c in LEVELS or c in BINS)


def adult_domain() -> Domain:
    levels = [LEVELS[a] if a in LEVELS else tuple(b[0] for b in BINS[a]) for a in ATTRIBUTES]
    return Domain(ATTRIBUTES, tuple(levels))


def _level(attribute: str, value: str) -> str:
    if attribute in BINS:
        number = float(value)
        for label, low, high in BINS[attribute]:
            if low <= number < high:
                return label
        raise ValueError(f"{value!r} is outside every bin of {attribute!r}")
    return value.rstrip(".") if attribute == "income" else value


@dataclass(frozen=True)
class AdultRecords:
    domain: Domain
    train: np.ndarray  # (n, attributes) level codes of adult.data
    test: np.ndarray  # of adult.test


def read_records(path: Path, domain: Domain) -> np.ndarray:
    """The rows of one raw Adult file as level codes; a malformed row or a value outside the
    public domain is a DataError naming the file and the line."""
    index = [COLUMNS.index(a) for a in domain.names]
    rows = []
    for lineno, fields in raw_rows(path):
        try:
            rows.append(tuple(_level(a, fields[i]) for a, i in zip(domain.names, index)))
        except ValueError as e:
            raise DataError(f"{path}:{lineno}: {e}") from None
    try:
        return domain.encode(rows)
    except ValueError as e:
        raise DataError(f"{path}: {e}") from None


def load_adult_records(directory: Path) -> AdultRecords:
    """adult.data and adult.test in ``directory`` (pipeline.data.adult.resolve_data_dir finds
    it), coded over the public domain."""
    domain = adult_domain()
    train, test = (read_records(Path(directory) / name, domain) for name in FILES)
    return AdultRecords(domain, train, test)


def records_datasets(records: AdultRecords, provenance: dict) -> tuple[Dataset, Dataset]:
    """The records as (training, test) Datasets: the features are the level codes of every
    attribute (income included), the labels income as -1 / +1, and the provenance carries the
    public domain (``domain``: each attribute's levels) and the label (``Dataset.records``)."""
    income = records.domain.names.index("income")
    common = {
        **provenance,
        **records_provenance(records.domain, "income", POSITIVE_LABEL),
    }
    out = []
    for split, codes in (("train", records.train), ("test", records.test)):
        labels = np.where(codes[:, income] == 1, 1, -1)
        out.append(Dataset(codes, labels, records.domain.names, {**common, "split": split}))
    return out[0], out[1]


__all__ = [
    "ATTRIBUTES",
    "AdultRecords",
    "BINS",
    "LEVELS",
    "adult_domain",
    "load_adult_records",
    "records_datasets",
]
