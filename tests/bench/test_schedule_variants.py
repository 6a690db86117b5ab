"""bench.schedule_variants: the variants' settings, a run on a tiny table, the summary's verdict
per row, a stopped check resumed without repeating a run, and the public tables' loading."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from bench import schedule_variants
from bench.schedule_variants import (
    TABLES,
    VARIANTS,
    load,
    main,
    run_variant,
    summary,
    variant_params,
)
from mechanisms.synthetic.fem import SHORT_TARGET, FEMParams

TINY_SIZES = (2, 3, 2)


def _tiny(n=300, seed=0):
    rng = np.random.default_rng(seed)
    return rng.integers(0, TINY_SIZES, size=(n, len(TINY_SIZES)))


def test_the_variants_differ_only_in_the_window_and_the_output():
    rounds = FEMParams(0.3, 1e-8).total_rounds
    settings = {
        name: (p.total_rounds, p.query_rounds(), p.output_keep(), p.records_per_round())
        for name in VARIANTS
        for p in [variant_params(0.3, 1e-8, name)]
    }
    samples = FEMParams(0.3, 1e-8).records_per_round()
    assert settings == {
        "all": (rounds, rounds, 1.0, samples),
        "last1": (rounds, 1, 0.5, samples),
        "last10": (rounds, SHORT_TARGET, 0.5, samples),
    }


def test_a_run_on_a_tiny_table_reports_its_schedule_and_error():
    codes = _tiny()  # epsilon 0.01: a game of a few rounds
    row = run_variant(codes, TINY_SIZES, 0.01, "last10", seed=1)
    params = variant_params(0.01, 1.0 / 300**2, "last10")
    assert (row["n"], row["T"], row["samples"]) == (300, params.total_rounds, 100)
    assert 0 < row["max_error"] < 1 and 0 < row["mean_error"] <= row["max_error"]
    again = run_variant(codes, TINY_SIZES, 0.01, "last10", seed=1)  # the seed decides the run
    timing = ("seconds", "loadavg")
    assert {k: v for k, v in again.items() if k not in timing} == {
        k: v for k, v in row.items() if k not in timing
    }


def test_the_summary_says_which_variant_the_rule_picks_and_how_far_from_the_best():
    rows = []
    for T, epsilon in ((50, 0.1), (400, 1.0)):
        for variant, errors in (("all", (0.3, 0.1)), ("last1", (0.2, 0.2)), ("last10", (0.1, 0.1))):
            for seed, error in enumerate(errors):
                rows.append(
                    {"table": "t", "n": 1000, "epsilon": epsilon, "T": T, "samples": 50}
                    | {"variant": variant, "seed": seed, "max_error": error}
                )
    lines = summary(pd.DataFrame(rows))
    assert lines[2].endswith("| 0.100, 0.100 (mean 0.100) | last10 | last10 | 1.00 |")
    assert lines[3].startswith("| t | 1,000 | 1 | 400 | 50 | 0.300, 0.100 (mean 0.200) |")
    assert lines[3].endswith("| last10 | all | 2.00 |")  # T >= 300: the rule answers all


def test_a_stopped_check_resumes_without_repeating_a_run(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(TABLES, "tiny", {})
    monkeypatch.setattr(schedule_variants, "load", lambda name: (_tiny(), TINY_SIZES))
    out = tmp_path / "runs.csv"
    argv = ["--out", str(out), "--tables", "tiny", "--epsilons", "0.01", "--seeds", "0"]
    main([*argv, "--variants", "last1"])
    main([*argv, "--variants", "last1", "last10"])  # last1 is there already
    with out.open() as f:
        runs = [(r["variant"], r["seed"]) for r in csv.DictReader(f)]
    assert runs == [("last1", "0"), ("last10", "0")]
    main(["--summary", str(out)])
    assert "| tiny | 300 | 0.01 |" in capsys.readouterr().out


@pytest.mark.slow
def test_the_public_tables_load_with_their_stated_levels_and_bins():
    for name, spec in TABLES.items():
        codes, sizes = load(name)
        assert len(sizes) >= 6 and len(codes) > 4000
        assert len(sizes) == len(spec["categorical"]) + len(spec["bins"])
        assert ((codes >= 0) & (codes < np.array(sizes))).all()
