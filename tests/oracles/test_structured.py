"""The structured oracle (``oracles.structured``): exact, and the reference when the shape does
not fit.

* The shared contract (``contract.py``) against enumeration.
* 50 random instances with one-hot groups and continuous columns
  (``pipeline.data.synthetic.make_linear_threshold``), shaped as OPDisc (both signs of
  eta_(d+1), SPEC section 3) and as RSPM (separator rows with Gaussian, hence negative,
  weights, SPEC section 4): 40 small ones (d = 5 to 7, 18 to 74 rows) against brute-force
  enumeration and the reference formulation (``HighsOracle``), 10 medium ones (d = 7 to 10,
  75 to 215 rows) against the reference; same optimal objective to 1e-6. (The reference is not
  infallible: with HighsOracle's feasibility tolerances of 1e-9, HiGHS has certified false
  optima of the reference formulation; a disagreement here is to be settled by enumeration or
  by evaluating both answers exactly.)
* The shape read off the data, the tables against ``Problem.objective`` point by point, scores
  exactly at the margin, and the fallbacks.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanisms.opdisc import OPDiscParams, opdisc_problem
from mechanisms.rspm import rspm_problem
from oracles.base import OBJECTIVE_TOL, Box, IntegerGrid, Problem, Status
from oracles.enumerate import EnumerationOracle, grid_points
from oracles.highs import HighsOracle
from oracles.objective import MergedRows
from oracles.registry import make_oracle
from oracles.structured import StructuredOracle, has_noise
from oracles.structured_milp import table_value
from oracles.structured_shape import decompose, root_bounds
from pipeline.data.synthetic import make_linear_threshold
from tests.oracles.contract import OracleContract, make_instance

#: Group sizes and continuous columns of the random instances, cycled by seed.
SMALL_SHAPES = [((2, 2), 2), ((3, 2), 1), ((2, 2, 2), 1), ((3,), 2), ((4, 2), 1)]
MEDIUM_SHAPES = [((3, 2), 2), ((3, 3), 2), ((2, 2, 2), 2)]


class TestStructured(OracleContract):
    """The contract; the Box instances and the hard instance go to the reference (fallback)."""

    @classmethod
    def make_oracle(cls, **options):
        return StructuredOracle(**options)

    def test_certificate_records_the_backend(self, oracle):
        problem = make_instance(0)
        cert = oracle.solve(problem).certificate
        assert cert.backend == "structured" and cert.fallback is None
        assert cert.threads >= 1 and cert.seconds >= 0.0
        params = cert.to_params()
        assert params["certified"] is True and params["status"] == "optimal"


# --- random instances with one-hot groups and continuous columns -------------------------------


def synthetic_rows(seed: int, n: int, shapes) -> MergedRows:
    groups, n_continuous = shapes[seed % len(shapes)]
    data = make_linear_threshold(n, n_continuous, groups=groups, levels=5, label_noise=0.15,
                                 seed=seed)  # fmt: skip
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
    return StructuredOracle(time_limit=120.0)


def check_exact(problem: Problem, solution, expected: float) -> None:
    cert = solution.certificate
    assert cert.status is Status.OPTIMAL and cert.certified, cert
    assert cert.backend == "structured" and cert.fallback is None, cert
    assert problem.domain.contains(solution.w)
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL, (cert.objective, expected)
    assert cert.objective == problem.objective(solution.w)
    assert cert.bound <= cert.objective + OBJECTIVE_TOL


@pytest.mark.parametrize("seed", range(40))
def test_small_instances_match_enumeration_and_the_reference(oracle, seed):
    problem = small_instance(seed)
    expected = EnumerationOracle().solve(problem).certificate.objective
    check_exact(problem, oracle.solve(problem), expected)
    reference = HighsOracle(time_limit=60.0).solve(problem).certificate
    assert reference.certified and abs(reference.objective - expected) <= OBJECTIVE_TOL


@pytest.mark.parametrize("seed", range(10))
def test_medium_instances_match_the_reference(oracle, seed):
    problem = medium_instance(seed)
    reference = HighsOracle(time_limit=120.0).solve(problem).certificate
    assert reference.certified, reference
    check_exact(problem, oracle.solve(problem), reference.objective)


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
        np.testing.assert_allclose(shape.unary[j], [eta[j] + 0.0, eta[j] + eta[problem.d + j],
                                                    eta[problem.d + j]])  # fmt: skip


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
                value, abs=1e-9)


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
    return Problem(np.hstack([cells, cont]), rng.integers(0, 4, 40), rng.integers(0, 4, 40),
                   IntegerGrid(5, 2, 0.5, 4.0), linear=rng.normal(0, 1, 5),
                   margin=margin)  # fmt: skip


@pytest.mark.parametrize("seed", range(3))
def test_scores_exactly_at_the_margin_dyadic(seed):
    """Dyadic data: scores equal to mu are exact in floating point and count as positive; the
    thresholds are integers, nothing is borderline and the oracle certifies by itself."""
    problem = tie_instance(seed, [0.0, 0.25, 0.5, 0.75], margin=0.25)
    assert decompose(problem, max_combos=4096).dyadic is not None
    expected = EnumerationOracle().solve(problem).certificate.objective
    check_exact(problem, StructuredOracle().solve(problem), expected)


@pytest.mark.parametrize("seed", range(3))
def test_scores_at_the_margin_up_to_rounding(seed):
    """Tenths: 0.1 + 0.2 >= 0.3 but 0.7 - 0.4 < 0.3 in floating point. The answer must still be
    the enumerated minimum (the oracle may hand a gap it cannot close to the reference)."""
    problem = tie_instance(seed, [0.1, 0.2, 0.4, 0.7], margin=0.3)
    shape = decompose(problem, max_combos=4096)
    assert shape.dyadic is None and root_bounds(shape)[1].any()
    expected = EnumerationOracle().solve(problem).certificate.objective
    cert = StructuredOracle().solve(problem).certificate
    assert cert.certified and abs(cert.objective - expected) <= OBJECTIVE_TOL


# --- fallback ---------------------------------------------------------------------------------


def test_box_domain_falls_back_to_the_reference():
    problem = Problem([[1.0, 0.5], [0.5, -1.0]], [1.0, 2.0], [0.0, 1.0], Box(2))
    cert = StructuredOracle().solve(problem).certificate
    # Gurobi when its licence takes the model, else HiGHS (tests/oracles/test_structured_fallback.py)
    assert cert.backend in ("gurobi", "highs") and cert.certified
    assert cert.fallback.startswith("structured: the domain is not an IntegerGrid (Box)")
    assert cert.fallback.endswith(f" -> {cert.backend}")


def test_too_many_combinations_fall_back_to_the_window_or_the_reference():
    """OPDisc's and RSPM's problems go to the window oracle, exact ERM's to the reference."""
    problem = small_instance(0)
    assert has_noise(problem)
    cert = StructuredOracle(max_combos=1, reference=("highs",)).solve(problem).certificate
    assert cert.backend == "window" and cert.certified
    assert "max_combos=1" in cert.fallback and cert.fallback.endswith(" -> window")
    expected = EnumerationOracle().solve(problem).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL
    problem = dataclasses.replace(problem, linear=np.zeros(problem.d), norm_coef=0.0)
    assert not has_noise(problem)
    cert = StructuredOracle(max_combos=1, reference=("highs",)).solve(problem).certificate
    assert cert.backend == "highs" and cert.certified
    assert "max_combos=1" in cert.fallback
    expected = EnumerationOracle().solve(problem).certificate.objective
    assert abs(cert.objective - expected) <= OBJECTIVE_TOL


def test_registered_and_options_checked():
    oracle = make_oracle("structured", time_limit=30.0, threads=1, max_combos=100)
    assert isinstance(oracle, StructuredOracle) and oracle.max_combos == 100
    with pytest.raises(ValueError, match="max_combos"):
        StructuredOracle(max_combos=0)
    with pytest.raises(ValueError, match="time_limit"):
        StructuredOracle(time_limit=0.0)


def all_continuous_rspm(seed: int) -> Problem:
    """RSPM on continuous features only, one row near the margin (issue 11: the structured
    oracle's combinations then have no binary column, and a borderline one must fall back)."""
    rng = np.random.default_rng(seed)
    d, n = int(rng.integers(2, 5)), int(rng.integers(3, 12))
    X = rng.uniform(-1, 1, (n, d))
    k = rng.integers(-1, 2, d)
    k[0] = 1
    x = rng.uniform(-1, 1, d)
    x[0] = 1e-4 + float(rng.choice([0, 1e-12, -1e-12, 1e-9, -1e-9])) - float(x[1:] @ k[1:])
    X, y = np.vstack([X, x]), rng.choice([-1, 1], n + 1)
    data = Problem.from_rows(MergedRows.from_xy(X, y), IntegerGrid(d, 1, 1.0), label="cont")
    return data.with_rows(np.vstack([np.eye(d), -np.eye(d)]), rng.normal(0, 3.0, 2 * d),
                          np.zeros(2 * d))  # fmt: skip


@pytest.mark.parametrize("seed", [86, 123, 149, 163, 183])
def test_all_continuous_borderline_falls_back_instead_of_error(oracle, seed):
    """Seeds where the oracle used to report ERROR from its no-binary-column branch."""
    problem = all_continuous_rspm(seed)
    solution = oracle.solve(problem)
    assert solution.certificate.certified, solution.certificate.message
    expected = EnumerationOracle().solve(problem).certificate.objective
    assert solution.certificate.objective == pytest.approx(expected, abs=OBJECTIVE_TOL)
