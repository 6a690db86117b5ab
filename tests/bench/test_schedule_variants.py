"""bench.schedule_variants: the variants' settings, a run on a tiny table, the summary's verdict
per row, a stopped check resumed without repeating a run, and the public tables' loading."""

from __future__ import annotations

import csv

import numpy as np
import pandas as pd
import pytest

from bench import schedule_variants
from bench.schedule_variants import (
    ADOPT_WORST,
    T_RULE_ROUNDS,
    TABLES,
    VARIANTS,
    candidate_rule,
    disagrees,
    load,
    main,
    rule_check,
    run_variant,
    summary,
    t_rule,
    variant_params,
)
from mechanisms.synthetic.fem import (
    SAMPLES,
    SHORT_SAMPLES,
    SHORT_TARGET,
    FEMParams,
)

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
    samples = SHORT_SAMPLES  # T < T_RULE_ROUNDS: the T rule's records a round
    assert rounds < T_RULE_ROUNDS
    assert settings == {
        "all": (rounds, rounds, 1.0, samples),
        "last1": (rounds, 1, 0.5, samples),
        "last10": (rounds, SHORT_TARGET, 0.5, samples),
        "every": (rounds, rounds, 1.0, SAMPLES),
        "window": (rounds, SHORT_TARGET, 0.5, SHORT_SAMPLES),
    }


def test_the_candidate_rule_compares_the_selections_precision_with_the_windows_sampling():
    n, queries, epsilon = 20_000, 3_000, 1.0
    regime, alpha, eps_w = candidate_rule(n, queries, epsilon, 1 / n**2)
    eps0 = FEMParams(epsilon, 1 / n**2).round_epsilon()
    assert alpha == pytest.approx(2 * np.log(6_000) / (eps0 * n), rel=1e-12)
    # 2|Q| exp(-2 W s eps_W^2) = 1: Hoeffding's bound, union over the candidates
    assert 6_000 * np.exp(-2 * SHORT_TARGET * SHORT_SAMPLES * eps_w**2) == pytest.approx(1.0)
    assert regime == ("every" if alpha < eps_w else "window")
    # fewer rows: a coarser selection, the window; many more: every round
    assert candidate_rule(2_000, queries, epsilon, 1 / 2_000**2)[0] == "window"
    assert candidate_rule(500_000, queries, 0.1, 1 / 500_000**2)[0] == "every"
    assert (t_rule(T_RULE_ROUNDS - 1), t_rule(T_RULE_ROUNDS)) == ("window", "every")


def test_the_rules_disagree_on_a_small_table_in_a_long_game_only():
    sizes = (2, 3, 2, 4, 5)
    assert FEMParams(3.0, 1 / 4_000**2).total_rounds >= T_RULE_ROUNDS
    assert disagrees(4_000, sizes, 3.0)  # T rule: every round; alpha coarse: the window
    assert not disagrees(4_000, sizes, 0.1)  # both the window


def _check_rows(every, window, n=4_000, epsilon=3.0, queries=500):
    T = FEMParams(epsilon, 1 / n**2).total_rounds
    rows = []
    for variant, errors in (("every", every), ("window", window)):
        for seed, error in enumerate(errors):
            rows.append(
                {"table": f"t{n}", "n": n, "epsilon": epsilon, "T": T, "samples": 50}
                | {"variant": variant, "seed": seed, "max_error": error, "queries": queries}
            )
    return rows


def test_the_rule_check_adopts_the_candidate_only_by_the_stated_criterion():
    # n = 4,000 at epsilon 3: the T rule plays every round, the candidate the window
    assert candidate_rule(4_000, 500, 3.0, 1 / 4_000**2)[0] == "window"
    wins = rule_check(pd.DataFrame(_check_rows((0.2, 0.2), (0.1, 0.1))))
    assert wins[2].endswith("| every | window | 0.50 |") and wins[-1].endswith("adopt it.")
    loses = rule_check(pd.DataFrame(_check_rows((0.1, 0.1), (0.1, 0.1 * 2 * ADOPT_WORST))))
    assert loses[-1].endswith("keep the T rule.")
    # a game where the rules agree is not part of the check
    agree = pd.DataFrame(_check_rows((0.2,), (0.1,), n=4_000, epsilon=0.1))
    assert rule_check(agree)[-1].startswith("\nThe candidate is better in 0 of 0 games")


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
        assert len(sizes) >= 5 and len(codes) > 4000
        assert len(sizes) == len(spec["categorical"]) + len(spec["bins"])
        assert ((codes >= 0) & (codes < np.array(sizes))).all()


def test_disagreements_skips_the_games_where_the_rules_agree(tmp_path, monkeypatch):
    monkeypatch.setitem(TABLES, "tiny", {})
    monkeypatch.setattr(schedule_variants, "load", lambda name: (_tiny(), TINY_SIZES))
    monkeypatch.setattr(schedule_variants, "disagrees", lambda n, sizes, eps: eps == 0.02)
    out = tmp_path / "runs.csv"
    argv = ["--out", str(out), "--tables", "tiny", "--epsilons", "0.01", "0.02", "--seeds", "0"]
    main([*argv, "--variants", "every", "--disagreements"])
    with out.open() as f:
        assert [(r["epsilon"], r["variant"]) for r in csv.DictReader(f)] == [("0.02", "every")]
