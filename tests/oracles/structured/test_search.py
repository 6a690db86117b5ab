"""The compiled search over the binary columns (``oracles.structured.search``) against brute force
over every k_C with the tables' own value (``table_value``), on random small instances: one-hot
groups and binary columns that are not (cells of different sizes), OPDisc's norm term of either
sign, a norm bound without a norm term, RSPM's separator rows without a norm bound; at
thresholds above the minimum, at it (the exact tie: nothing strictly below, so "cutoff") and
below it. A bound that pruned a point it should not have would show as a wrong minimum at the
threshold just above it; every combination of every instance is checked that way."""

from __future__ import annotations

import functools
import itertools

import numpy as np
import pytest

from core.objective import MergedRows
from core.problem import IntegerGrid, Problem
from mechanisms.opdisc import OPDiscParams, opdisc_problem
from mechanisms.rspm import rspm_problem
from oracles.structured import search as structured_search
from oracles.contract.budget import Budget
from oracles.structured.oracle import StructuredOracle
from oracles.structured.milp import build_subproblem, lp_multipliers, table_value
from oracles.structured.search import column_order, search_combination
from oracles.structured.shape import decompose
from pipeline.data.synthetic import make_linear_threshold


def _rows(seed: int, groups=(3, 2), extra_binary: int = 0) -> MergedRows:
    """One-hot ``groups``, one continuous column and ``extra_binary`` random 0/1 columns."""
    data = make_linear_threshold(50, 1, groups=groups, levels=4, seed=seed)
    X = data.features
    if extra_binary:
        rng = np.random.default_rng(seed)
        X = np.hstack([X, rng.integers(0, 2, (X.shape[0], extra_binary)).astype(float)])
    return MergedRows.from_xy(X, data.labels)


def _opdisc(seed: int, sign: float, **rows):
    rows = _rows(seed, **rows)
    eta = np.random.default_rng(seed).normal(0.0, 4.0, rows.d + 1)
    eta[-1] = sign * abs(eta[-1])  # both signs of the norm term (SPEC section 3)
    return opdisc_problem(rows, eta, OPDiscParams(1.0, 1e-4, B=2.0, D=2.5))


def _bounded(seed: int):
    """No norm term; the norm bound D^2 = 6.25 binds."""
    p = _opdisc(seed, 1.0)
    return Problem(p.points, p.pos, p.neg, p.domain, margin=p.margin)


def _rspm(seed: int):
    rows = _rows(seed, groups=(2, 2), extra_binary=1)
    return rspm_problem(rows, np.random.default_rng(seed).normal(0.0, 5.0, 2 * rows.d))


def _unbounded(seed: int):
    """B = 2, no norm bound at all, binary columns of cells of sizes 1 to 3."""
    rows = _rows(seed, groups=(2,), extra_binary=2)
    grid = IntegerGrid(rows.d, 2, 1.0)
    rng = np.random.default_rng(seed)
    p = Problem.from_rows(rows, grid)
    return Problem(p.points, p.pos, p.neg, grid, linear=rng.normal(0.0, 3.0, rows.d))


CASES = {
    "opdisc+": lambda s: _opdisc(s, 1.0),
    "opdisc-": lambda s: _opdisc(s, -1.0),
    "opdisc, cells of sizes": lambda s: _opdisc(s, 1.0, groups=(2,), extra_binary=2),
    "norm bound": _bounded,
    "rspm": _rspm,
    "no bound": _unbounded,
}


def _brute(shape, kP, f_v) -> float:
    """min over every k_C in [-r, r]^C of the tables' value (inf outside the norm bound)."""
    r = shape.reach(shape.cap - shape.combo_norm(kP))
    return min(
        table_value(shape, kP, np.array(kC), f_v)
        for kC in itertools.product(range(-r, r + 1), repeat=len(shape.binary_cols))
    )


def _multipliers(start: str, shape, kP, f_v, seed: int):
    """The shift's starting multipliers: none (zero), the LP relaxation's prices, or random
    ones of the LP's size and larger (any multipliers must give a valid bound)."""
    if start == "zero":
        return None
    lam = lp_multipliers(build_subproblem(shape, kP, f_v), Budget.unlimited())
    assert lam is not None and lam.shape == (shape.n_cells,)
    if start == "random":
        scale = 1.0 + 4.0 * float(np.abs(lam).max(initial=0.0))
        lam = np.random.default_rng(seed).normal(0.0, scale, shape.n_cells)
    return lambda: lam


@pytest.mark.parametrize("shifted", [None, "zero", "lp", "random"])
@pytest.mark.parametrize("seed", [1, 2, 3])
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_combination_matches_brute_force_above_at_and_below_its_minimum(
    case, seed, shifted, monkeypatch
):
    """Plainly (these trees are small), and on the shifted tables from the root on, the shift
    starting from zero, from the LP's prices (``lp_multipliers``) or from random multipliers."""
    if shifted is not None:
        monkeypatch.setattr(structured_search, "PLAIN_NODES", 0)
    problem = CASES[case](seed)
    shape = decompose(problem)
    assert len(shape.binary_cols) >= 3 and shape.n_cells >= 2
    plan = column_order(shape)
    integral = (
        not np.any(problem.linear)
        and problem.norm_coef == 0.0
        and np.all(problem.pos == np.round(problem.pos))
        and np.all(problem.neg == np.round(problem.neg))
    )
    searched = ties = 0
    for kP in shape.combos:
        f_v = shape.tables(kP)[0][0]
        best = _brute(shape, kP, f_v)
        if not np.isfinite(best):
            continue
        searched += 1
        start = _multipliers(shifted, shape, kP, f_v, seed) if shifted is not None else None
        search = functools.partial(search_combination, max_nodes=10**6, multipliers=start)
        for above in (best + 1e-6, best + 1.0, np.inf):
            found = search(shape, plan, kP, f_v, above)
            assert found.outcome == "solved", (kP, found)
            assert found.value == pytest.approx(best, abs=1e-9)
            assert table_value(shape, kP, found.kC, f_v) == pytest.approx(best, abs=1e-9)
        for below in (best - 1e-6, best - 1.0):
            found = search(shape, plan, kP, f_v, below)
            assert found.outcome == "cutoff" and found.kC is None, (kP, below, found)
        found = search(shape, plan, kP, f_v, best)
        if integral:  # sums of integers are exact: the tie is a tie, nothing strictly below
            assert found.outcome == "cutoff" and found.kC is None, (kP, found)
            ties += 1
        elif found.outcome == "solved":  # the search's sums round differently, by an ulp
            assert found.value == pytest.approx(best, rel=1e-14, abs=1e-14)
        else:
            assert found.outcome == "cutoff", found
    assert searched >= 3 and ties == (searched if integral else 0)


def test_a_search_cut_into_chunks_makes_the_same_tree(monkeypatch):
    problem = _opdisc(4, 1.0, groups=(3, 3))
    shape = decompose(problem)
    plan = column_order(shape)
    kP = shape.combos[len(shape.combos) // 2]
    f_v = shape.tables(kP)[0][0]
    whole = search_combination(shape, plan, kP, f_v, np.inf, max_nodes=10**6)
    monkeypatch.setattr(structured_search, "CHUNK", 3)
    cut = search_combination(shape, plan, kP, f_v, np.inf, max_nodes=10**6)
    assert whole.nodes > 10 and (cut.nodes, cut.value) == (whole.nodes, whole.value)
    assert cut.kC.tolist() == whole.kC.tolist()
    assert whole.value == pytest.approx(_brute(shape, kP, f_v), abs=1e-9)
    # a cap below that: unfinished, with the best point found so far (if any) below the start
    short = search_combination(shape, plan, kP, f_v, np.inf, max_nodes=5)
    assert short.outcome == "node_limit" and short.nodes == 5
    expired = search_combination(
        shape, plan, kP, f_v, np.inf, max_nodes=10**6, budget=Budget.from_limit(1e-9)
    )
    assert expired.outcome == "time_limit" and expired.nodes == 0


@pytest.mark.parametrize("seed", range(6))
def test_the_oracle_gives_the_same_answer_with_the_search_with_highs_and_with_both(seed):
    """The search alone, HiGHS alone (``max_search_nodes=0``) and the search handing every
    combination over after a few nodes: the same certified objective."""
    problem = _opdisc(seed, 1.0 if seed % 2 else -1.0, groups=(3, 2), extra_binary=1)
    answers = {}
    for nodes in (10**6, 0, 3):
        solution = StructuredOracle(max_search_nodes=nodes).solve(problem, Budget.from_limit(60))
        cert = solution.certificate
        assert cert.certified and cert.backend == "structured", cert
        answers[nodes] = (cert.objective, cert.stats_dict())
    assert answers[0][0] == pytest.approx(answers[10**6][0], abs=1e-9)
    assert answers[3][0] == pytest.approx(answers[10**6][0], abs=1e-9)
    assert answers[10**6][1]["subproblems"] == 0 and answers[10**6][1]["searched"] > 0
    assert answers[0][1]["searched"] == 0 and answers[0][1]["subproblems"] > 0
    assert answers[3][1]["search_handed"] == answers[3][1]["subproblems"] > 0


def test_max_search_nodes_is_a_count():
    with pytest.raises(ValueError, match="max_search_nodes must be >= 0"):
        StructuredOracle(max_search_nodes=-1)
    with pytest.raises(TypeError, match="max_search_nodes must be an integer"):
        StructuredOracle(max_search_nodes=1.5)
