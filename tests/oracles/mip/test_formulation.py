"""The reference formulation (``oracles.mip.formulation``), checked point by point without a solver.

For every point w of small grids, the canonical assignment ``encode(w)`` must be feasible and
its MILP objective must equal F(w) (SPEC sections 2 and 3): the formulation's feasible set and
objective agree with the exact rule everywhere, for both signs of the norm term. A solver then
only has to find the best assignment.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from core.problem import Box, IntegerGrid, Problem
from oracles.enumerate import all_objectives, grid_points
from oracles.mip.formulation import (
    BOX_POSITIVE_GUARD,
    FormulationError,
    attainable_square_sums,
    build_milp,
    default_point,
    row_score_range,
)
from tests.oracles.oracle_contract import N_INSTANCES, box_instance, edge_instances, make_instance


def _check_every_point_encodes(problem):
    """Every grid point w of ``problem`` encodes to a feasible x of its MILP with objective
    f(w); the MILP and the (w, x) pairs."""
    milp = build_milp(problem)
    W, F = all_objectives(problem)
    encoded = []
    for w, f in zip(W, F):
        x = milp.encode(w)
        assert milp.max_violation(x) <= 1e-12
        assert milp.objective_value(x) == pytest.approx(f, abs=1e-9)
        encoded.append((w, x))
    return milp, encoded


@pytest.mark.parametrize("seed", range(0, N_INSTANCES, 2))
def test_every_grid_point_encodes_feasibly_with_objective_f(seed):
    milp, encoded = _check_every_point_encodes(make_instance(seed))
    for w, x in encoded:
        np.testing.assert_array_equal(milp.decode_w(x), w)


@pytest.mark.parametrize("case", sorted(edge_instances()))
def test_edge_cases_encode_with_objective_f(case):
    _check_every_point_encodes(edge_instances()[case])


@settings(max_examples=40, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.integers(1, 3),
    bound=st.integers(1, 3),
    step=st.sampled_from([1.0, 0.5, 0.1]),
    norm_fraction=st.floats(0.0, 1.2),
    norm_coef=st.sampled_from([0.0, 7.5, -7.5]),
)
def test_formulation_is_exact_on_random_grids(seed, d, bound, step, norm_fraction, norm_coef):
    """Property: feasible set and objective equal W_tau and F (SPEC section 3), norm sign free."""
    rng = np.random.default_rng(seed)
    full = d * (bound * step) ** 2
    domain = IntegerGrid(d, bound, step, norm_fraction * full)
    n = int(rng.integers(0, 12))
    X = np.round(rng.uniform(-1, 1, (n, d)), 2)
    problem = Problem(
        X,
        rng.normal(0, 2, n),
        rng.normal(0, 2, n),
        domain,
        linear=rng.normal(0, 2, d),
        norm_coef=norm_coef,
        norm_radius_sq=domain.norm_sq_max * 1.25 + 0.5 if norm_coef else None,
    )
    milp = build_milp(problem)
    inside = np.vstack(list(grid_points(domain)))
    for w in inside:
        x = milp.encode(w)
        assert milp.max_violation(x) <= 1e-12
        assert milp.objective_value(x) == pytest.approx(problem.objective(w), abs=1e-9)
    # a grid point outside the norm bound has no feasible assignment (its norm row fails)
    all_k = np.stack(np.meshgrid(*[np.arange(-bound, bound + 1)] * d), -1).reshape(-1, d)
    outside = [w for w in step * all_k if float(w @ w) > domain.norm_sq_max + 1e-9]
    for w in outside[:20]:
        assert milp.max_violation(milp.encode(w)) > 1e-6


def test_norm_table_reads_sqrt_of_the_slack_for_both_signs():
    """SPEC section 3: t_m carries norm_coef * sqrt(D^2 - tau^2 m), exact for either sign."""
    domain = IntegerGrid(2, 2, 0.5, 1.0)
    for norm_coef in (3.0, -3.0):
        problem = Problem(np.zeros((0, 2)), [], [], domain, norm_coef=norm_coef, norm_radius_sq=2.0)
        milp = build_milp(problem)
        np.testing.assert_array_equal(milp.norm_values, [0, 1, 2, 4])  # sums of 2 squares <= 4
        expected = norm_coef * np.sqrt(2.0 - 0.25 * milp.norm_values)
        np.testing.assert_allclose(milp.cost[milp.norm_cols], expected)


def test_norm_bound_without_norm_term_is_one_row_or_none():
    X = np.array([[1.0, -1.0]])
    bounded = Problem(X, [1.0], [0.0], IntegerGrid(2, 2, 1.0, 3.0))
    loose = Problem(X, [1.0], [0.0], IntegerGrid(2, 2, 1.0, 100.0))
    free = Problem(X, [1.0], [0.0], IntegerGrid(2, 2, 1.0))
    sizes = [build_milp(p).n_rows for p in (bounded, loose, free)]
    assert sizes[0] == sizes[1] + 1 == sizes[2] + 1
    assert all(len(build_milp(p).norm_cols) == 0 for p in (bounded, loose, free))


def test_attainable_square_sums_match_brute_force():
    for d, bound, cap in ((1, 3, 20), (2, 2, 8), (3, 2, 12), (4, 1, 3)):
        ks = np.stack(np.meshgrid(*[np.arange(-bound, bound + 1)] * d), -1).reshape(-1, d)
        sums = np.unique((ks**2).sum(axis=1))
        np.testing.assert_array_equal(attainable_square_sums(d, bound, cap), sums[sums <= cap])


def test_big_m_ranges_contain_every_score():
    """L_u <= <w, x_u> <= U_u on the whole domain (the per-row big-M, module docstring)."""
    for seed in range(0, N_INSTANCES, 3):
        problem = make_instance(seed)
        low, high = row_score_range(problem)
        scores = problem.points @ np.vstack(list(grid_points(problem.domain))).T
        assert np.all(scores >= low[:, None] - 1e-12) and np.all(scores <= high[:, None] + 1e-12)
    box = Box(2, -0.5, 2.0)
    problem = Problem(np.array([[1.0, -2.0], [0.5, 0.0]]), [1.0, 1.0], [0.0, 0.0], box)
    low, high = row_score_range(problem)
    corners = np.array([[a, b] for a in (box.lower, box.upper) for b in (box.lower, box.upper)])
    scores = problem.points @ corners.T
    np.testing.assert_allclose(low, scores.min(axis=1))
    np.testing.assert_allclose(high, scores.max(axis=1))


def test_big_m_uses_the_norm_bound_when_tighter():
    problem = Problem(np.array([[1.0, 1.0, 1.0]]), [1.0], [0.0], IntegerGrid(3, 4, 1.0, 3.0))
    low, high = row_score_range(problem)
    assert high[0] == pytest.approx(3.0) and low[0] == pytest.approx(-3.0)  # sqrt(3) * sqrt(3)


def test_rows_decided_by_the_domain_get_no_variable():
    box = Box(2, 0.5, 1.0)  # every score of a nonnegative row is >= 0.5 * sum(x)
    problem = Problem(
        np.array([[0.0, 0.0], [1.0, 1.0], [1.0, -1.0], [2.0, 3.0]]),
        [1.0, 2.0, 4.0, 8.0],
        [16.0, 32.0, 64.0, 8.0],
        box,
    )
    milp = build_milp(problem)
    # row 0: x = 0 < mu always -> -1 (pays pos); row 1: score >= 1 -> +1 (pays neg);
    # row 2: undecided -> z; row 3: pos = neg -> no z, pays 8 either way
    np.testing.assert_array_equal(milp.z_fixed, [0, 1, -1, -2])
    assert (milp.z_cols >= 0).tolist() == [False, False, True, False]
    assert milp.offset == pytest.approx(1.0 + 32.0 + 4.0 + 8.0)
    assert milp.n_rows == 2


def test_the_grid_keeps_every_point_the_box_excludes_the_band():
    """On a grid eps_u is half a proven gap, so a score mu - 5e-7 stays feasible (SPEC section 8);
    on a Box the fixed strict_eps band is excluded (the documented limitation)."""
    mu = 1e-4
    X = np.array([[mu - 5e-7, 1.0]])
    problem = Problem(X, [1.0], [0.0], IntegerGrid(2, 1), margin=mu)
    milp = build_milp(problem, strict_eps=1e-6)
    assert milp.row_eps.tolist() == [pytest.approx(2.5e-7)]
    for w in ([1.0, 0.0], [-1.0, 0.0], [0.0, 1.0], [1.0, -1.0]):
        assert milp.max_violation(milp.encode(np.array(w))) == 0
    box = Problem(X, [1.0], [0.0], Box(2, 0.0, 1.0), margin=mu)
    box_milp = build_milp(box, strict_eps=1e-6)
    assert box_milp.max_violation(box_milp.encode(np.array([1.0, 0.0]))) > 0


def test_margin_gaps_are_proven_lower_bounds():
    """G_u <= mu - (largest grid score below mu), checked exactly by enumeration."""
    from fractions import Fraction

    from oracles.mip.margin_band import margin_gaps
    from tests.oracles.fuzz import fuzz_instance

    for seed in range(40):
        problem = fuzz_instance(seed)
        gaps = margin_gaps(problem, np.arange(problem.n_rows))
        W = np.vstack(list(grid_points(problem.domain)))
        mu = Fraction(problem.margin)
        for u, x in enumerate(problem.points):
            below = [
                mu - s
                for s in (
                    sum((Fraction(a) * Fraction(b) for a, b in zip(x, w)), Fraction(0)) for w in W
                )
                if s < mu
            ]
            if below:
                assert Fraction(gaps[u]) <= min(below), (seed, u)


def test_band_cuts_keep_every_grid_point_feasible():
    """A cut is valid for every grid point with its exact labels (``oracles.mip.margin_band``)."""
    from oracles.mip.margin_band import band_cut
    from tests.oracles.fuzz import fuzz_instance

    for seed in range(12):
        problem = fuzz_instance(seed)
        W = np.vstack(list(grid_points(problem.domain)))
        active = np.flatnonzero(build_milp(problem).z_cols >= 0)
        rng = np.random.default_rng(seed)
        cuts = tuple({band_cut(problem, int(u), W[rng.integers(len(W))]) for u in active})
        milp = build_milp(problem, band_cuts=cuts)
        for w in W:
            x = milp.encode(w)
            assert milp.max_violation(x) <= 1e-9, (seed, w)
            assert milp.objective_value(x) == pytest.approx(problem.objective(w), abs=1e-9)


def test_box_uses_a_positive_guard_and_the_grid_does_not():
    assert build_milp(box_instance(0)).positive_guard == BOX_POSITIVE_GUARD
    assert build_milp(make_instance(0)).positive_guard == 0.0
    assert build_milp(box_instance(0), positive_guard=0.0).positive_guard == 0.0


def test_sizes_of_the_adult_shaped_model():
    """d = 23, B = 4, D^2 = 23 (SPEC section 3): 23 w, 207 b, 24 t and one z per active row."""
    rng = np.random.default_rng(0)
    X = (rng.uniform(size=(50, 23)) < 0.2).astype(float)
    X[0] = 0.0
    problem = Problem(
        X,
        np.ones(50),
        np.zeros(50),
        IntegerGrid(23, 4, 1.0, 23.0),
        norm_coef=-1.0,
        norm_radius_sq=23.0,
    )
    milp = build_milp(problem)
    stats = milp.stats()
    assert len(milp.norm_cols) == 24
    assert stats["n_active_rows"] == 49
    assert stats["n_cols"] == 23 + 207 + 24 + 49
    assert stats["n_rows"] == 2 * 23 + 2 + 2 * 49
    assert stats["n_integer"] == 207 + 24 + 49


def test_default_point_is_in_the_domain():
    for domain in (IntegerGrid(2, 1), Box(2, 0.5, 1.0), Box(2, -2.0, -1.0), Box(1)):
        problem = Problem(np.zeros((0, domain.d)), [], [], domain)
        assert domain.contains(default_point(problem))


def test_build_rejects_bad_epsilons():
    problem = make_instance(0)
    with pytest.raises(FormulationError, match="-1"):
        build_milp(problem, strict_eps=-1.0)
    with pytest.raises(FormulationError, match="nan"):
        build_milp(problem, positive_guard=float("nan"))
