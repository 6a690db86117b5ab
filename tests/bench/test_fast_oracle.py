"""The oracle benchmark (``python -m pipeline.bench.fast_oracle``) on a small Adult subsample:
every row the issue asks for, the side-by-side summary, and clear errors for bad options; and
its pieces on a problem solved by enumeration: the mechanisms it builds, one timed solve, and
the agreement check between two answers."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanisms.opdisc import OPDisc
from mechanisms.rspm import RSPM
from oracles.enumerate import EnumerationOracle
from pipeline.bench.fast_oracle import agreement, balanced_subsample, main, make_mechanism, solve


def test_balanced_subsample_is_balanced_seeded_and_checked():
    y = np.array([1] * 10 + [-1] * 30)
    X = np.arange(40.0)[:, None]
    Xa, ya = balanced_subsample(X, y, 9, seed=3)
    Xb, _ = balanced_subsample(X, y, 9, seed=3)
    assert (ya == 1).sum() == 4 and (ya == -1).sum() == 5
    assert np.array_equal(Xa, Xb) and len(np.unique(Xa)) == 9
    with pytest.raises(ValueError, match="balanced subsample of 22 rows"):
        balanced_subsample(X, y, 22, seed=0)


def test_side_by_side_run_prints_every_solve_and_the_ratio(adult_dir, capsys):
    code = main(
        [
            "--data-dir",
            str(adult_dir),
            "--subsample",
            "300",
            "--epsilons",
            "1.0",
            "--seeds",
            "0",
            "1",
            "--reference",
            "--time-limit",
            "60",
        ]
    )
    out = capsys.readouterr().out
    assert code == 0
    rows = [line.split() for line in out.splitlines() if line.startswith("adult-sub300s0")]
    assert [(r[1], r[4], r[5], r[6]) for r in rows] == [
        ("300", "0", "structured", "optimal"),
        ("300", "0", "reference", "optimal"),
        ("300", "1", "structured", "optimal"),
        ("300", "1", "reference", "optimal"),
    ]
    assert rows[1][-1] == "agree" and rows[3][-1] == "agree"
    assert float(rows[0][7]) == pytest.approx(float(rows[1][7]), abs=1e-6)
    assert "summary structured: 2/2 certified optimal" in out
    assert "ratio reference/structured (wall seconds, same instances, same run)" in out
    assert "agreement: 2/2 instances certified by both" in out
    assert out.count("machine: ") == 2 and "cores" in out


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--subsample", "100000"], "--subsample: a balanced subsample of 100000 rows needs"),
        (["--oracle", "cplex"], "--oracle: unknown oracle 'cplex'"),
    ],
)
def test_bad_options_are_usage_errors(adult_dir, capsys, argv, message):
    with pytest.raises(SystemExit) as err:
        main(["--data-dir", str(adult_dir), *argv])
    assert err.value.code == 2
    assert message in capsys.readouterr().err


def test_the_mechanisms_are_built_at_delta_one_over_n_squared():
    opdisc, rspm = make_mechanism("opdisc", 0.5, 20), make_mechanism("rspm", 2.0, 20)
    assert isinstance(opdisc, OPDisc) and isinstance(rspm, RSPM)
    assert (opdisc.params.epsilon, opdisc.params.delta) == (0.5, 1 / 400)
    assert (rspm.params.epsilon, rspm.params.delta, rspm.params.noise) == (2.0, 1 / 400, "gaussian")


def test_solve_records_the_certificate_and_the_point(tiny_problem):
    run = solve(EnumerationOracle(), "enum", tiny_problem, 1.0, 7)
    assert (run.eps, run.seed, run.method, run.certified, run.status) == (
        1.0,
        7,
        "enum",
        True,
        "optimal",
    )
    assert run.objective == pytest.approx(float(tiny_problem.objective(run.w)))
    assert run.bound == pytest.approx(run.objective) and run.seconds >= 0 and run.cpu >= 0


def test_agreement_says_which_certificate_the_other_point_refutes(tiny_problem):
    best = solve(EnumerationOracle(), "structured", tiny_problem, 1.0, 0)
    ref = dataclasses.replace(best, method="reference")
    assert agreement(tiny_problem, best, ref) == "agree"
    assert (
        agreement(tiny_problem, best, dataclasses.replace(ref, certified=False)) == "same objective"
    )
    worse = dataclasses.replace(ref, objective=best.objective + 1.0, w=np.zeros(2))
    assert agreement(tiny_problem, best, worse) == (
        "DISAGREE: reference's certificate is false, structured's w is feasible and lower by 1"
    )
    assert (
        agreement(tiny_problem, dataclasses.replace(worse, certified=False), best)
        == "differ by 1 (reference not certified)"
    )  # either argument may be the higher one
