"""One combination of continuous weights solved exactly (``oracles.structured.milp``): the small
MILP over the binary columns, solved by HiGHS, against brute force over those columns with the
tables' own value (``table_value``) and with the exact objective over the grid, for OPDisc's
exact norm of either sign, a norm bound without a norm term, and no bound at all; and the
incumbent as a cutoff."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.objective import MergedRows
from mechanisms.opdisc import OPDiscParams, opdisc_problem
from mechanisms.rspm import rspm_problem
from oracles.contract.budget import Budget
from oracles.enumerate import grid_points
from oracles.structured.milp import build_subproblem, solve_subproblem, table_value
from oracles.structured.shape import decompose
from pipeline.data.synthetic import make_linear_threshold


def _rows(seed: int) -> MergedRows:
    """One-hot group of 3 (the binary columns, 3 cells) and one continuous column."""
    data = make_linear_threshold(60, 1, groups=(3,), levels=4, seed=seed)
    return MergedRows.from_xy(data.features, data.labels)


def _opdisc(seed: int, sign: float):
    rows = _rows(seed)
    eta = np.random.default_rng(seed).normal(0.0, 3.0, rows.d + 1)
    eta[-1] = sign * abs(eta[-1])  # both signs of the norm term (SPEC section 3)
    return opdisc_problem(rows, eta, OPDiscParams(1.0, 1e-4, B=2.0, D=2.0))


def _erm(seed: int):
    """No norm term, but the norm bound D^2 = 4 still binds some combinations."""
    problem = _opdisc(seed, 1.0)
    return type(problem)(
        problem.points, problem.pos, problem.neg, problem.domain, margin=problem.margin
    )


def _rspm(seed: int):
    """{-1, 0, 1}^d without a norm bound; separator rows of Gaussian (negative) weight."""
    rows = _rows(seed)
    return rspm_problem(rows, np.random.default_rng(seed).normal(0.0, 5.0, 2 * rows.d))


CASES = {
    "opdisc+": lambda s: _opdisc(s, 1.0),
    "opdisc-": lambda s: _opdisc(s, -1.0),
    "erm": _erm,
    "rspm": _rspm,
}


def _brute(shape, kP, f_v) -> float:
    B = shape.bound
    return min(
        table_value(shape, kP, np.array(kC), f_v)
        for kC in itertools.product(range(-B, B + 1), repeat=len(shape.binary_cols))
    )


@pytest.mark.parametrize("seed", [1, 2])
@pytest.mark.parametrize("case", sorted(CASES))
def test_each_combination_solves_to_the_brute_force_minimum(case, seed):
    problem = CASES[case](seed)
    shape = decompose(problem)
    assert len(shape.binary_cols) == 3 and len(shape.cont_cols) == 1 and shape.n_cells >= 2
    W = np.vstack(list(grid_points(problem.domain)))
    K = np.round(W / shape.step).astype(np.int64)
    F = problem.objective(W)
    breakpoints = 0
    for kP in shape.combos:
        f_v, borderline = shape.tables(kP)
        f_v = f_v[0]
        sub = build_subproblem(shape, kP, f_v)
        breakpoints += sub.n_breakpoints
        result = solve_subproblem(sub, cutoff=None, budget=Budget.from_limit(30.0))
        expected = _brute(shape, kP, f_v)
        assert result.outcome == "solved", result
        assert result.value == pytest.approx(expected, abs=1e-6)
        assert result.bound <= result.value + 1e-9
        # the decoded k_C attains it, by the tables' own value
        assert table_value(shape, kP, result.kC, f_v) == pytest.approx(expected, abs=1e-6)
        # and it is the exact minimum of F over the grid points with these continuous weights
        mine = np.all(K[:, shape.cont_cols] == kP, axis=1)
        assert not borderline[0]
        assert result.value == pytest.approx(F[mine].min(), abs=1e-6)
    assert breakpoints > 0  # the cells' step functions were exercised


def test_the_incumbent_as_a_cutoff():
    problem = _opdisc(1, -1.0)
    shape = decompose(problem)
    kP = shape.combos[len(shape.combos) // 2]
    f_v = shape.tables(kP)[0][0]
    sub = build_subproblem(shape, kP, f_v)
    best = _brute(shape, kP, f_v)
    above = solve_subproblem(sub, cutoff=best + 0.5, budget=Budget.from_limit(30.0))
    assert above.outcome == "solved" and above.value == pytest.approx(best, abs=1e-6)
    below = solve_subproblem(sub, cutoff=best - 0.5, budget=Budget.from_limit(30.0))
    # nothing below the cutoff: proven no better than it, and the bound says so
    assert below.outcome == "cutoff" and below.bound == best - 0.5


def test_table_value_is_infinite_outside_the_norm_bound_and_decode_reads_the_one_hot():
    problem = _opdisc(2, 1.0)
    shape = decompose(problem)
    kP = np.array([1])
    f_v = shape.tables(kP)[0][0]
    assert shape.cap == 4
    assert table_value(shape, kP, np.array([2, 0, 0]), f_v) == math.inf  # 1 + 4 > 4
    assert math.isfinite(table_value(shape, kP, np.array([1, 1, 1]), f_v))  # 1 + 3 <= 4
    sub = build_subproblem(shape, kP, f_v)
    assert sub.values.tolist() == [-1, 0, 1]  # |k_j| <= floor(sqrt(4 - 1))
    x = np.zeros(sub.n_cols)
    for j, v in enumerate([1, -1, 0]):
        x[j * len(sub.values) + (v + 1)] = 1.0
    assert sub.decode(x).tolist() == [1, -1, 0]
