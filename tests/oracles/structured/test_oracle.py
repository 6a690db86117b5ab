"""The structured oracle (``oracles.structured.oracle``): exact, and the reference when the shape does
not fit.

* The shared contract (``contract.py``) against enumeration.
* 50 random instances with one-hot groups and continuous columns
  (``pipeline.data.synthetic.make_linear_threshold``), shaped as OPDisc (both signs of
  eta_(d+1), SPEC section 3) and as RSPM (separator rows with Gaussian, hence negative,
  weights, SPEC section 4): 40 small ones (d = 5 to 7, 18 to 74 rows) and 10 medium ones
  (d = 7 to 10, 75 to 215 rows) against brute-force enumeration (at most 390,625 grid points,
  under a second); same optimal objective to 1e-6. The reference formulation (``HighsOracle``)
  agrees on every fourth small instance (every shape, both mechanisms) in the default run, on
  all 50 with ``-m slow`` (the reference is 95% of the time: 45 s against 4 s; it is fuzzed
  against brute force in ``test_fuzz.py``). (The reference is not infallible: with
  HighsOracle's feasibility tolerances of 1e-9, HiGHS has certified false optima of the
  reference formulation; a disagreement here is to be settled by enumeration or by evaluating
  both answers exactly.)
* The shape read off the data, the tables against ``Problem.objective`` point by point, scores
  exactly at the margin, and the fallbacks.
* The cap is bounding work, not a count of combinations: more than the former cap of 4,096
  combinations (6 continuous columns) stay structured and agree with enumeration, for OPDisc's
  problem with both signs of eta_(d+1); what does not fit still goes to the reference, saying
  why (more work than the budget, from the time limit or ``max_work``). ``slow``: Adult with 5
  and 6 continuous columns certifies by default within the default time limit
  (docs/results/oracles.md has the measurements).
* The paper's Adult instance (SPEC sections 1, 3, 4, 8). Full Adult (n = 15,682, 2,611
  distinct rows): OPDisc and Gaussian RSPM solves, and the exact 0/1 ERM, come out certified
  within the time limit, and the certified w survives a check the oracle does not use: no move
  of one or two coordinates by one grid step inside the domain lowers F (a necessary condition
  for a minimum, evaluated by ``Problem.objective``). The instances chosen are the slowest of
  the benchmark grid (docs/results/oracles.md: OPDisc eps = 1 seed 2, 5.9 s; eps = 0.5
  seed 4, 4.3 s, ``-m slow``; RSPM eps = 1 seed 1, 2.2 s). The balanced n = 4,000 subsample where HiGHS with
  tolerances of 1e-9 certified a false optimum of the reference formulation
  (``oracles.mip.formulation.GRID_FEASIBILITY_TOL``): the reference with its default tolerances and the
  structured oracle certify the same objective, and the structured w encoded into the
  reference MILP is feasible at that objective (``-m slow``: the reference takes about a minute
  there; the default run checks the same on a balanced n = 1,000 subsample).
* The fallback goes through the auto route's rule (SPEC 8): Gurobi solves the
  reference formulation when its licence takes the model, HiGHS when it does not (the licence
  reason in the certificate's ``fallback``), and a backend that ran is never retried
  elsewhere. Both answers are checked against brute force (``tests/oracles/fuzz.py``). The
  Gurobi asserts are skipped only when Gurobi has no licence at all (errno 10009), as
  ``tests/oracles/test_fuzz.py`` does.
"""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pandas as pd
import pytest

from core.objective import MergedRows
from core.problem import Box, IntegerGrid, Problem
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams, opdisc_problem
from mechanisms.rspm import RSPM, RSPMParams, rspm_problem
from oracles.contract.certificate import OBJECTIVE_TOL, HandOff, Status, budget_of, certify
from oracles.contract.budget import Budget, now
from oracles.enumerate import EnumerationOracle, grid_points
from oracles.mip.gurobi import ERRNO_SIZE_LIMIT
from oracles.mip.highs import HighsOracle
from oracles.mip.formulation import SolverUnavailableError, build_milp
from oracles.routing.registry import make_oracle
from oracles.contract.stats import StructuredStats
from oracles.structured.oracle import (
    BOUNDING_SHARE,
    WORK_ENTRIES_PER_SECOND,
    StructuredOracle,
    has_noise,
)
from oracles.structured.milp import table_value
from oracles.structured.shape import ShapeMismatch, bounding_work, decompose, root_bounds
from pipeline.data.adult import CATEGORICAL, COLUMNS, CONTINUOUS, resolve_data_dir
from pipeline.data.synthetic import make_linear_threshold
from pipeline.data.table import load_table
from tests.oracles.oracle_contract import OracleContract, make_instance
from tests.oracles.fuzz import brute_force, fuzz_instance
from tests.oracles.licence import require_gurobi_licence
from tests.oracles.limited import limited, on_limits


def structured(**options):
    """The structured route (``oracles.routing.routes``): the search and its hand-overs."""
    return make_oracle("structured", **options)


#: Group sizes and continuous columns of the random instances, cycled by seed.
SMALL_SHAPES = [((2, 2), 2), ((3, 2), 1), ((2, 2, 2), 1), ((3,), 2), ((4, 2), 1)]
MEDIUM_SHAPES = [((3, 2), 2), ((3, 3), 2), ((2, 2, 2), 2)]


class TestStructured(OracleContract):
    """The contract; the Box instances and the hard instance go to the reference (fallback)."""

    @classmethod
    def make_oracle(cls, **options):
        return structured(**options)

    def test_certificate_records_the_backend(self, oracle):
        problem = make_instance(0)
        cert = oracle.solve(problem, oracle.budget()).certificate
        assert cert.backend == "structured" and cert.fallback is None
        assert cert.threads >= 1 and cert.seconds >= 0.0
        params = cert.to_params()
        assert params["certified"] is True and params["status"] == "optimal"


# --- random instances with one-hot groups and continuous columns -------------------------------


def synthetic_rows(seed: int, n: int, shapes) -> MergedRows:
    groups, n_continuous = shapes[seed % len(shapes)]
    data = make_linear_threshold(
        n, n_continuous, groups=groups, levels=5, label_noise=0.15, seed=seed
    )
    return MergedRows.from_xy(data.features, data.labels)


def opdisc_shaped(rows: MergedRows, seed: int, scale: float) -> Problem:
    """OPDisc's problem (paper's W_tau: B = floor(sqrt(d)), D^2 = d); eta_(d+1)'s sign
    alternates with the seed."""
    rng = np.random.default_rng(1000 + seed)
    eta = rng.normal(0.0, scale, rows.d + 1)
    eta[-1] = abs(eta[-1]) * (1.0 if seed % 2 == 0 else -1.0)
    return opdisc_problem(rows, eta, OPDiscParams(1.0, 1e-4))


def rspm_shaped(rows: MergedRows, seed: int, scale: float) -> Problem:
    """RSPM's problem over {-1, 0, 1}^d with 2d separator rows of Gaussian weight."""
    rng = np.random.default_rng(2000 + seed)
    return rspm_problem(rows, rng.normal(0.0, scale, 2 * rows.d))


def small_instance(seed: int) -> Problem:
    rows = synthetic_rows(seed, int(np.random.default_rng(seed).integers(20, 120)), SMALL_SHAPES)
    if seed % 3 == 2:
        return rspm_shaped(rows, seed, scale=0.3 * rows.n)
    return opdisc_shaped(rows, seed, scale=0.2 * rows.n)


def medium_instance(seed: int) -> Problem:
    if seed % 3 == 2:  # d = 10 over {-1, 0, 1}^10
        data = make_linear_threshold(200, 3, groups=(3, 2, 2), levels=6, seed=seed)
        rows = MergedRows.from_xy(data.features, data.labels)
        return rspm_shaped(rows, seed, scale=20.0)
    return opdisc_shaped(synthetic_rows(seed, 120, MEDIUM_SHAPES), seed, scale=15.0)


@pytest.fixture(scope="module")
def oracle() -> StructuredOracle:
    return structured(time_limit=120.0)


def check_exact(problem: Problem, solution, expected: float) -> None:
    cert = solution.certificate
    assert cert.status is Status.OPTIMAL and cert.certified, cert
    assert cert.backend == "structured" and cert.fallback is None, cert
    assert problem.domain.contains(solution.w)
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL, (cert.objective, expected)
    assert cert.objective == problem.objective(solution.w)
    assert cert.bound <= cert.objective + OBJECTIVE_TOL


#: Small instances whose reference solve runs in the default run: every shape (seed % 5) and
#: both mechanisms (seed % 3).
REFERENCE_SMALL_SEEDS = range(0, 40, 4)
#: Enough for the medium instances' grids (at most 5^8 = 390,625 points).
MEDIUM_MAX_POINTS = 400_000


def _reference_agrees(problem: Problem, expected: float, time_limit: float) -> None:
    reference = on_limits(limited(HighsOracle(), time_limit), problem).certificate
    assert reference.certified, reference
    assert abs(reference.objective - expected) <= OBJECTIVE_TOL, (reference.objective, expected)


@pytest.mark.parametrize("seed", range(40))
def test_small_instances_match_enumeration_and_the_reference(oracle, seed):
    problem = small_instance(seed)
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    check_exact(problem, oracle.solve(problem, oracle.budget()), expected)
    if seed in REFERENCE_SMALL_SEEDS:
        _reference_agrees(problem, expected, time_limit=60.0)


@pytest.mark.slow  # the reference on the other 30 small instances (16 s)
@pytest.mark.parametrize("seed", [s for s in range(40) if s not in REFERENCE_SMALL_SEEDS])
def test_the_reference_agrees_on_the_other_small_instances(seed):
    problem = small_instance(seed)
    _reference_agrees(
        problem, EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective, 60.0
    )


@pytest.mark.parametrize("seed", range(10))
def test_medium_instances_match_enumeration(oracle, seed):
    problem = medium_instance(seed)
    expected = (
        EnumerationOracle(max_points=MEDIUM_MAX_POINTS)
        .solve(problem, Budget.unlimited())
        .certificate
    )
    assert expected.certified, expected
    check_exact(problem, oracle.solve(problem, oracle.budget()), expected.objective)


# Seeds 1 and 8: the reference (HiGHS) takes 10 to 20 s on each; 3 to 7 s on the others.
@pytest.mark.slow
@pytest.mark.parametrize("seed", range(10))
def test_medium_instances_match_the_reference(oracle, seed):
    problem = medium_instance(seed)
    reference = HighsOracle().solve(problem, Budget.from_limit(120.0)).certificate
    assert reference.certified, reference
    check_exact(problem, oracle.solve(problem, budget_of(oracle)), reference.objective)


def test_random_instances_cover_both_norm_signs_negative_weights_and_structure():
    problems = [small_instance(s) for s in range(40)] + [medium_instance(s) for s in range(10)]
    opdisc = [p for p in problems if p.norm_coef != 0.0]
    rspm = [p for p in problems if p.domain.bound == 1 and p.norm_coef == 0.0]
    assert any(p.norm_coef > 0 for p in opdisc) and any(p.norm_coef < 0 for p in opdisc)
    assert len(rspm) >= 15 and all(np.any(p.pos < 0) for p in rspm)
    assert max(p.d for p in problems) >= 10
    for p in problems:
        shape = decompose(p, max_combos=4096)
        assert shape.groups and len(shape.cont_cols) >= 1 and shape.n_cells >= 2


# --- the shape and its tables ------------------------------------------------------------------


def test_shape_of_an_rspm_problem():
    """Separator rows become unary costs; one-hot groups and continuous columns are found."""
    problem = rspm_shaped(synthetic_rows(0, 80, [((3, 2), 2)]), 0, scale=10.0)
    shape = decompose(problem, max_combos=4096)
    assert shape.groups == ((0, 1, 2), (3, 4))
    assert shape.binary_cols.tolist() == [0, 1, 2, 3, 4] and shape.cont_cols.tolist() == [5, 6]
    assert shape.cell_of.shape[0] == problem.n_rows - 2 * problem.d  # separators left out
    assert shape.combos.shape == (9, 2)
    # (e_j, +1) costs eta_j iff w_j <= 0; (-e_j, +1) costs eta_(d+j) iff w_j >= 0
    eta = problem.pos[-2 * problem.d :]
    for j in range(problem.d):
        np.testing.assert_allclose(
            shape.unary[j], [eta[j] + 0.0, eta[j] + eta[problem.d + j], eta[problem.d + j]]
        )


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_tables_reproduce_the_objective_at_every_grid_point(seed):
    problem = small_instance(seed)
    shape = decompose(problem, max_combos=4096)
    W = np.vstack(list(grid_points(problem.domain)))
    k = np.round(W / shape.step).astype(np.int64)
    exact = problem.objective(W)
    for kP in shape.combos:
        mine = np.all(k[:, shape.cont_cols] == kP, axis=1)
        f_v = shape.tables(kP)[0][0]
        for row, value in zip(k[mine], exact[mine]):
            assert table_value(shape, kP, row[shape.binary_cols], f_v) == pytest.approx(
                value, abs=1e-9
            )


def test_root_bounds_are_lower_bounds():
    problem = small_instance(5)
    shape = decompose(problem, max_combos=4096)
    bounds, _ = root_bounds(shape)
    W = np.vstack(list(grid_points(problem.domain)))
    k = np.round(W / shape.step).astype(np.int64)
    values = problem.objective(W)
    for i, kP in enumerate(shape.combos):
        mine = np.all(k[:, shape.cont_cols] == kP, axis=1)
        if mine.any():
            assert bounds[i] <= values[mine].min() + 1e-9


def tie_instance(seed: int, values, margin: float) -> Problem:
    rng = np.random.default_rng(seed)
    cells = np.eye(3)[rng.integers(0, 3, 40)]
    cont = rng.choice(values, size=(40, 2))
    return Problem(
        np.hstack([cells, cont]),
        rng.integers(0, 4, 40),
        rng.integers(0, 4, 40),
        IntegerGrid(5, 2, 0.5, 4.0),
        linear=rng.normal(0, 1, 5),
        margin=margin,
    )


@pytest.mark.parametrize("seed", range(3))
def test_scores_exactly_at_the_margin_dyadic(seed):
    """Dyadic data: scores equal to mu are exact in floating point and count as positive; the
    thresholds are integers, nothing is borderline and the oracle certifies by itself."""
    problem = tie_instance(seed, [0.0, 0.25, 0.5, 0.75], margin=0.25)
    assert decompose(problem, max_combos=4096).dyadic is not None
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    check_exact(problem, on_limits(structured(), problem), expected)


@pytest.mark.parametrize("seed", range(3))
def test_scores_at_the_margin_up_to_rounding(seed):
    """Tenths: 0.1 + 0.2 >= 0.3 but 0.7 - 0.4 < 0.3 in floating point. The answer must still be
    the enumerated minimum (the oracle may hand a gap it cannot close to the reference)."""
    problem = tie_instance(seed, [0.1, 0.2, 0.4, 0.7], margin=0.3)
    shape = decompose(problem, max_combos=4096)
    assert shape.dyadic is None and root_bounds(shape)[1].any()
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    cert = on_limits(structured(), problem).certificate
    assert cert.certified and abs(cert.objective - expected) <= OBJECTIVE_TOL


# --- fallback ---------------------------------------------------------------------------------


def test_box_domain_falls_back_to_the_reference():
    problem = Problem([[1.0, 0.5], [0.5, -1.0]], [1.0, 2.0], [0.0, 1.0], Box(2))
    cert = on_limits(structured(), problem).certificate
    # Gurobi when its licence takes the model, else HiGHS (the fallback tests below)
    assert cert.backend in ("gurobi", "highs") and cert.certified
    assert cert.fallback.startswith("structured: the domain is not an IntegerGrid (Box)")
    assert cert.fallback.endswith(f" -> {cert.backend}")


def test_too_many_combinations_fall_back_to_the_window_or_the_reference():
    """OPDisc's and RSPM's problems go to the window oracle, exact ERM's to the reference."""
    problem = small_instance(0)
    assert has_noise(problem)
    cert = on_limits(structured(max_combos=1, reference=("highs",)), problem).certificate
    assert cert.backend == "window" and cert.certified
    assert "max_combos=1" in cert.fallback and cert.fallback.endswith(" -> window")
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL
    problem = dataclasses.replace(problem, linear=np.zeros(problem.d), norm_coef=0.0)
    assert not has_noise(problem)
    cert = on_limits(structured(max_combos=1, reference=("highs",)), problem).certificate
    assert cert.backend == "highs" and cert.certified
    assert "max_combos=1" in cert.fallback
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_registered_and_options_checked():
    oracle = make_oracle("structured", time_limit=30.0, threads=1, max_combos=100)
    assert isinstance(oracle.strategy("structured"), StructuredOracle)
    assert oracle.strategy("structured").max_combos == 100
    with pytest.raises(ValueError, match="max_combos"):
        structured(max_combos=0)
    with pytest.raises(ValueError, match="time_limit"):
        structured(time_limit=0.0)


def all_continuous_rspm(seed: int) -> Problem:
    """RSPM on continuous features only, one row near the margin (the structured oracle's
    combinations then have no binary column, and a borderline one must fall back)."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 5)), int(rng.integers(3, 12))
    X = rng.uniform(-1, 1, (n, d))
    k = rng.integers(-1, 2, d)
    k[0] = 1
    x = rng.uniform(-1, 1, d)
    x[0] = 1e-4 + float(rng.choice([0, 1e-12, -1e-12, 1e-9, -1e-9])) - float(x[1:] @ k[1:])
    X, y = np.vstack([X, x]), rng.choice([-1, 1], n + 1)
    data = Problem.from_rows(MergedRows.from_xy(X, y), IntegerGrid(d, 1, 1.0), label="cont")
    return data.with_rows(
        np.vstack([np.eye(d), -np.eye(d)]), rng.normal(0, 3.0, 2 * d), np.zeros(2 * d)
    )


@pytest.mark.parametrize("seed", [86, 123, 149, 163, 183])
def test_all_continuous_borderline_falls_back_instead_of_error(oracle, seed):
    """Seeds where the oracle used to report ERROR from its no-binary-column branch."""
    problem = all_continuous_rspm(seed)
    solution = oracle.solve(problem, oracle.budget())
    assert solution.certificate.certified, solution.certificate.message
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    assert solution.certificate.objective == pytest.approx(expected, abs=OBJECTIVE_TOL)


# --- the cap is bounding work -------------------------------------------------------------------


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


@pytest.mark.parametrize("seed", [0, 1])
def test_more_than_the_former_cap_stays_structured_and_exact(seed):
    problem = wide_problem(seed)
    shape = decompose(problem)
    assert len(shape.cont_cols) == 6 and len(shape.combos) == 4185 > 4096
    cert = on_limits(structured(time_limit=120.0), problem).certificate
    assert cert.backend == "structured" and cert.fallback is None and cert.certified
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_the_budget_comes_from_the_time_limit_and_too_much_work_falls_back():
    work_budget = StructuredOracle().work_budget(Budget.from_limit(600.0))
    assert work_budget == BOUNDING_SHARE * 600.0 * WORK_ENTRIES_PER_SECOND
    assert StructuredOracle().work_budget(Budget.from_limit(1.0)) < work_budget
    problem = wide_problem(0, n=8)  # few rows: the reference certifies it quickly
    shape = decompose(problem)
    work = bounding_work(
        len(shape.combos), len(shape.cell_of), shape.n_cells, shape.max_cell_size, shape.bound
    )
    assert work == len(shape.combos) * (
        len(shape.cell_of) + shape.n_cells * (2 * shape.bound * shape.max_cell_size + 1) + 200
    )
    with pytest.raises(ShapeMismatch, match="more than max_work"):
        decompose(problem, max_work=work / 2)
    assert len(decompose(problem, max_work=work).combos) == 4185
    cert = (
        structured(time_limit=60.0, max_work=work / 2, reference=("highs",))
        .solve(problem, Budget.from_limit(60.0))
        .certificate
    )
    # OPDisc's and RSPM's problems go to the window oracle, exact ERM's to the reference
    backend = "window" if has_noise(problem) else "highs"
    assert cert.backend == backend and "table entries" in cert.fallback and cert.certified
    expected = EnumerationOracle().solve(problem, Budget.unlimited()).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_max_work_is_checked():
    with pytest.raises(ValueError, match="max_work"):
        StructuredOracle(max_work=0)
    assert StructuredOracle(max_combos=None).max_combos is None


def adult_variant(extra: tuple[str, ...], data_dir: str | None):
    """Adult's balanced training set (SPEC section 1) with ``extra`` continuous columns, every
    continuous column divided by its training maximum (through ``pipeline.data.table``)."""
    directory, _ = resolve_data_dir(data_dir)
    frame = pd.read_csv(
        directory / "adult.data", header=None, names=list(COLUMNS), skipinitialspace=True, dtype=str
    )
    columns = list(CONTINUOUS) + list(extra)
    categorical = {c: list(levels) for c, levels in CATEGORICAL}

    def balanced(maxima):
        numeric = {c: [0, float(m)] for c, m in zip(columns, maxima)}
        return load_table(
            frame,
            label="income",
            positive=">50K",
            negative="<=50K",
            categorical=categorical,
            numeric=numeric,
            test_fraction=0.0,
            balance=True,
            balance_seed=0,
        ).train

    # load_adult divides by the maxima over the balanced training rows: a first pass scaled by
    # the whole file's maxima (which bound those rows) recovers them
    scale = np.array([float(pd.to_numeric(frame[c]).max()) for c in columns])
    first = balanced(scale)
    return balanced(np.rint(first.features[:, -len(columns) :] * scale).max(axis=0))


@pytest.mark.slow
@pytest.mark.parametrize(
    "extra", [("age", "education-num"), ("age", "education-num", "fnlwgt")], ids=["d25", "d26"]
)
def test_adult_with_five_and_six_continuous_columns_certifies_by_default(adult_dir, extra):
    train = adult_variant(extra, str(adult_dir))
    rows = MergedRows.from_xy(train.features, train.labels)
    mech = OPDisc(OPDiscParams(1.0, 1.0 / rows.n**2))
    (problem,) = mech.problems(rows, mech.draw_noise(np.random.default_rng(0), rows.n, rows.d))
    cert = on_limits(structured(), problem).certificate  # the defaults: time limit 600 s
    assert cert.backend == "structured" and cert.fallback is None and cert.certified


# --- the paper's Adult instance -------------------------------------------------------------


def balanced_subsample(X: np.ndarray, y: np.ndarray, n: int, seed: int):
    """n rows of (X, y), half of each label (the extra one negative when n is odd), seeded."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == -1)
    half = n // 2
    keep = np.sort(
        np.concatenate(
            [rng.choice(pos, half, replace=False), rng.choice(neg, n - half, replace=False)]
        )
    )
    return X[keep], y[keep]


def _problem(rows: MergedRows, mechanism: str, eps: float, seed: int) -> Problem:
    n = rows.n
    if mechanism == "opdisc":
        mech = OPDisc(OPDiscParams(eps, 1.0 / n**2))
    else:
        mech = RSPM(RSPMParams(eps, 1.0 / n**2, noise="gaussian"))
    noise = mech.draw_noise(np.random.default_rng(seed), n, rows.d)
    (problem,) = mech.problems(rows, noise)
    return problem


def _no_better_neighbour(problem: Problem, w: np.ndarray) -> None:
    """No w' in the domain differing from w by one grid step in one or two coordinates has a
    lower F (to OBJECTIVE_TOL)."""
    tau, d = problem.domain.step, problem.d
    moves = [np.eye(d)[j] * s for j in range(d) for s in (-1, 1)]
    moves += [
        np.eye(d)[i] * s + np.eye(d)[j] * t
        for i, j in itertools.combinations(range(d), 2)
        for s in (-1, 1)
        for t in (-1, 1)
    ]
    candidates = w[None, :] + tau * np.asarray(moves)
    inside = np.array([problem.domain.contains(c) for c in candidates])
    assert inside.sum() > d  # the check has something to check
    values = problem.objective(candidates[inside])
    best = float(problem.objective(w))
    assert values.min() >= best - OBJECTIVE_TOL, (values.min(), best)


@pytest.fixture(scope="module")
def adult_rows(adult) -> MergedRows:
    train = adult.train
    return MergedRows.from_xy(train.features, train.labels)


# OPDisc at eps = 0.5 seed 4 is a second draw of the same problem shape as eps = 1 seed 2 (the
# slowest of the grid): -m slow, beside the whole grid (test_goal_grid_is_certified_within_...).
@pytest.mark.parametrize(
    "mechanism, eps, seed",
    [("opdisc", 1.0, 2), pytest.param("opdisc", 0.5, 4, marks=pytest.mark.slow), ("rspm", 1.0, 1)],
)
def test_full_adult_is_certified(adult_rows, mechanism, eps, seed):
    problem = _problem(adult_rows, mechanism, eps, seed)
    solution = on_limits(structured(time_limit=120), problem)
    c = solution.certificate
    assert c.certified, c
    assert c.fallback is None and c.backend == "structured"
    assert (
        c.stat(StructuredStats).cells == 174 and c.stat(StructuredStats).continuous_cols == 3
    )  # SPEC section 1
    assert c.objective == pytest.approx(float(problem.objective(solution.w)), abs=1e-9)
    _no_better_neighbour(problem, solution.w)


def test_full_adult_exact_erm_is_certified(adult_rows):
    (problem,) = ExactERM().problems(adult_rows, {})
    solution = on_limits(structured(time_limit=300), problem)
    c = solution.certificate
    assert c.certified, c
    _no_better_neighbour(problem, solution.w)
    # the certified minimum beats the best point the reference found in 60 s (session-1
    # sweep: accuracy 0.7663) and cannot beat the best possible accuracy (SPEC section 1)
    accuracy = 1.0 - c.objective / adult_rows.n
    assert 0.7663 < accuracy < 0.8256


# n = 4,000 seed 0 is the instance where tight tolerances certified a false optimum; the
# reference takes HiGHS about a minute on it (50 s on seed 1), so the default run checks the
# same agreement on a balanced n = 1,000 subsample (a few seconds).
@pytest.mark.parametrize(
    "n, seed",
    [
        (1000, 0),
        pytest.param(4000, 0, marks=pytest.mark.slow),
        pytest.param(4000, 1, marks=pytest.mark.slow),
    ],
)
def test_reference_agrees_where_tight_tolerances_certified_a_false_optimum(adult, n, seed):
    from oracles.mip.highs import HighsOracle
    from oracles.mip.formulation import build_milp

    X, y = balanced_subsample(adult.train.features, adult.train.labels, n, 0)
    rows = MergedRows.from_xy(X, y)
    problem = _problem(rows, "opdisc", 0.5, seed)
    fast = on_limits(structured(time_limit=120), problem)
    reference = on_limits(limited(HighsOracle(), 300), problem)
    assert fast.certificate.certified and reference.certificate.certified
    assert fast.certificate.objective == pytest.approx(reference.certificate.objective, abs=1e-6)
    milp = build_milp(problem)
    x = milp.encode(fast.w)
    assert milp.max_violation(x) == 0.0
    assert milp.objective_value(x) == pytest.approx(fast.certificate.objective, abs=1e-6)


@pytest.mark.slow  # a time-goal benchmark (50 s); test_full_adult_is_certified stays in the default run
@pytest.mark.parametrize("mechanism", ["opdisc", "rspm"])
def test_goal_grid_is_certified_within_the_time_goal(adult_rows, mechanism):
    """The time goal on full Adult: eps {0.1, 0.5, 1.0} x noise seeds 0-4 all certified, the
    median time to certificate at most 60 s and the slowest at most 10 minutes (measured: median
    1.05 s and max 5.7 s for OPDisc, 0.22 s and 2.2 s for RSPM, on 2 cores)."""
    import statistics

    seconds = []
    for eps in (0.1, 0.5, 1.0):
        for seed in range(5):
            problem = _problem(adult_rows, mechanism, eps, seed)
            c = on_limits(structured(time_limit=600), problem).certificate
            assert c.certified, (eps, seed, c)
            seconds.append(c.seconds)
    assert statistics.median(seconds) <= 60 and max(seconds) <= 600, seconds


# --- the fallback goes through the auto route's rule ------------------------------------------


#: Gurobi's pip licence (SPEC section 8).
LICENCE_LIMIT = 2000


def _large_instance(seed: int = 0, n: int = 1100) -> Problem:
    """Exact 0/1 ERM with d = 3 continuous columns over a 5^3 grid: brute force is cheap, but
    n distinct rows make the reference model exceed the licence (2 rows per active row). The
    labels follow a linear rule but for a little noise: HiGHS certifies it in 1 to 2 s (with
    noise 0.3, 5 to 10 s)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-1, 1, size=(n, 3)), 3)
    y = np.where(X @ np.array([1.0, -0.5, 0.25]) + rng.normal(0, 0.1, n) >= 0.1, 1, -1)
    rows = MergedRows.from_xy(X, y)
    return Problem.from_rows(rows, IntegerGrid(3, 2, 1.0), margin=0.1, label="large")


def _assert_exact(problem: Problem, solution) -> None:
    truth = brute_force(problem)
    cert = solution.certificate
    assert cert.certified, cert
    assert float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL
    assert abs(cert.objective - float(truth.minimum)) <= 1e-9 * max(1.0, abs(cert.objective))


def erm_instance(seed: int) -> Problem:
    """The fuzz's OPDisc instance ``seed`` without its noise: exact 0/1 ERM, whose fallback is
    the reference (no noise for the window oracle to prune by)."""
    problem = fuzz_instance(seed)
    return dataclasses.replace(problem, linear=np.zeros(problem.d), norm_coef=0.0)


@pytest.mark.parametrize("seed", [0, 4, 8, 12])
def test_a_fallback_within_the_licence_is_solved_by_gurobi(seed):
    require_gurobi_licence()
    problem = erm_instance(seed)
    assert not has_noise(problem)
    milp = build_milp(problem)
    assert milp.n_cols <= LICENCE_LIMIT and milp.n_rows <= LICENCE_LIMIT
    solution = on_limits(structured(time_limit=60.0, max_combos=1), problem)
    cert = solution.certificate
    # the premise: these instances have more than one combination, so max_combos=1 falls back
    assert cert.fallback is not None, cert
    assert cert.backend == "gurobi", cert
    assert cert.fallback.startswith("structured: ") and cert.fallback.endswith(" -> gurobi")
    assert "max_combos=1" in cert.fallback
    _assert_exact(problem, solution)


def test_a_fallback_over_the_licence_is_solved_by_highs_with_the_licence_reason():
    require_gurobi_licence()
    problem = _large_instance()
    milp = build_milp(problem)
    assert milp.n_rows > LICENCE_LIMIT  # the premise: Gurobi's licence refuses this model
    solution = on_limits(structured(time_limit=120.0, max_combos=1), problem)
    cert = solution.certificate
    assert cert.backend == "highs", cert
    assert cert.fallback.startswith("structured: ")
    assert f"-> gurobi: errno {ERRNO_SIZE_LIMIT} (licence limit: " in cert.fallback
    assert cert.fallback.endswith(" -> highs")
    _assert_exact(problem, solution)


def test_the_same_problem_on_either_backend_certifies_the_same_minimum():
    require_gurobi_licence()
    problem = erm_instance(4)
    on_gurobi = on_limits(structured(max_combos=1, reference=("gurobi",)), problem)
    on_highs = on_limits(structured(max_combos=1, reference=("highs",)), problem)
    assert on_gurobi.certificate.fallback is not None  # the premise: a fallback happened
    assert on_gurobi.certificate.backend == "gurobi" and on_highs.certificate.backend == "highs"
    assert abs(on_gurobi.certificate.objective - on_highs.certificate.objective) <= OBJECTIVE_TOL
    _assert_exact(problem, on_gurobi)
    _assert_exact(problem, on_highs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])  # OPDisc, OPDisc, RSPM, near-margin OPDisc
def test_a_noisy_problem_without_the_shape_goes_to_the_window_oracle(seed):
    problem = fuzz_instance(seed)
    assert has_noise(problem)
    solution = on_limits(structured(time_limit=60.0, max_combos=1), problem)
    cert = solution.certificate
    assert cert.backend == "window", cert
    assert cert.fallback.startswith("structured: ") and cert.fallback.endswith(" -> window")
    _assert_exact(problem, solution)


class _Records:
    """A reference backend that records the budget it gets and cannot run."""

    name = "highs"

    def __init__(self):
        self.seen = []

    def solve(self, problem, budget):
        self.seen.append((budget.left(), budget.threads))
        raise SolverUnavailableError("recorded")


def test_the_fallback_gets_the_time_left_and_the_threads():
    """The budget reaches the reference: the time left (not the whole limit) and the threads."""
    recorder = _Records()
    route = structured(time_limit=50.0, threads=2, max_combos=1, reference=("highs",))
    route = dataclasses.replace(route, strategies={**route.strategies, "highs": recorder})
    budget = Budget(now() + 30.0, threads=2, seconds=50.0)  # 20 s already spent
    with pytest.raises(SolverUnavailableError, match="recorded"):
        route.solve(erm_instance(1), budget)
    ((left, threads),) = recorder.seen
    assert threads == 2 and 29.0 < left <= 30.0


def test_a_time_limited_fallback_is_reported_not_retried():
    """A backend that ran and did not certify is the answer (SPEC 8): HiGHS is never asked."""

    class Stops:
        name = "gurobi"

        def solve(self, problem, budget):
            return certify(
                problem,
                np.zeros(problem.d),
                status=Status.TIME_LIMIT,
                bound=-1e9,
                seconds=1.0,
                backend="gurobi",
            )

    class Never(Stops):
        name = "highs"

        def solve(self, problem, budget):
            raise AssertionError("retried on another backend")

    route = structured(max_combos=1)
    strategies = {**route.strategies, "gurobi": Stops(), "highs": Never()}
    route = dataclasses.replace(route, strategies=strategies)
    cert = route.solve(erm_instance(1), route.budget()).certificate
    assert cert.backend == "gurobi" and cert.status is Status.TIME_LIMIT and not cert.certified
    assert cert.fallback.startswith("structured: ") and cert.fallback.endswith(" -> gurobi")


def test_the_strategy_alone_hands_a_problem_without_the_shape_on():
    """The structured search builds no other oracle: without the shape it raises HandOff
    (the routing table decides who solves it)."""
    with pytest.raises(HandOff, match="max_combos=1"):
        StructuredOracle(max_combos=1).solve(erm_instance(1), Budget.unlimited())


@pytest.mark.parametrize("reference", [(), ("cplex",), ("highs", "highs")])
def test_reference_is_validated(reference):
    with pytest.raises(ValueError, match="prefer must be distinct names"):
        structured(reference=reference)
