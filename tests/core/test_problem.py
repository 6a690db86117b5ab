"""The problem records (``core.problem``): the domains, the problem and its objective F against a
hand computation, and the refusals of bad records."""

from __future__ import annotations

import math

import numpy as np
import pytest

from core.objective import MIN_MARGIN, MergedRows
from core.problem import Box, IntegerGrid, Problem
from tests.core.problems import small_problem


def test_a_problem_refuses_margins_below_the_minimum():
    with pytest.raises(ValueError, match="margin must be >= 1e-06.*1e-07"):
        Problem(np.ones((1, 2)), [1.0], [0.0], IntegerGrid(2, 1), margin=1e-7)
    Problem(np.ones((1, 2)), [1.0], [0.0], IntegerGrid(2, 1), margin=MIN_MARGIN)


# --- domains -------------------------------------------------------------------------------------


def test_an_integer_grid_lists_its_values_and_tests_membership_at_the_edges():
    grid = IntegerGrid(2, 2, 0.5, norm_sq_max=1.25)
    assert grid.values.tolist() == [-1.0, -0.5, 0.0, 0.5, 1.0]
    assert grid.size_upper_bound == 25
    assert grid.contains([1.0, 0.5])  # ||w||^2 = 1.25: on the norm bound
    assert not grid.contains([1.0, 1.0])  # 2.0 > 1.25
    assert not grid.contains([0.25, 0.0])  # off the grid
    assert not grid.contains([1.5, 0.0])  # beyond B tau
    assert not grid.contains([0.5])  # wrong shape
    assert grid.contains([0.5 + 1e-12, -0.5])  # within the tolerance
    assert IntegerGrid(3, 1).contains([1.0, 1.0, -1.0])  # no norm bound


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(d=0, bound=1), "d must be >= 1, found 0"),
        (dict(d=2, bound=0), "bound must be >= 1, found 0"),
        (dict(d=2, bound=1, step=0.0), "step must be finite and > 0, found 0.0"),
        (dict(d=2, bound=1, step=math.nan), "step must be finite and > 0, found nan"),
        (dict(d=2, bound=1, step=math.inf), "step must be finite and > 0, found inf"),
        (dict(d=2, bound=1, norm_sq_max=-1.0), "norm_sq_max must be finite and >= 0"),
    ],
)
def test_an_integer_grid_refuses_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        IntegerGrid(**kwargs)


def test_a_box_contains_its_faces_within_tolerance_and_refuses_an_empty_box():
    box = Box(2, -0.5, 2.0)
    assert box.contains([-0.5, 2.0]) and box.contains([2.0 + 5e-8, 0.0])
    assert not box.contains([2.0 + 1e-6, 0.0]) and not box.contains([0.0, 0.0, 0.0])
    for bad, match in [
        (dict(d=0), "d must be >= 1"),
        (dict(d=1, lower=1.0, upper=1.0), "upper: must be > lower = 1.0, found 1.0"),
        (dict(d=1, lower=2.0, upper=1.0), "upper: must be > lower = 2.0, found 1.0"),
        (dict(d=1, lower=-math.inf), "lower must be finite"),
    ]:
        with pytest.raises(ValueError, match=match):
            Box(**bad)


# --- the problem and F ---------------------------------------------------------------------------


def test_the_objective_is_the_weighted_loss_plus_the_linear_and_norm_terms():
    # F(w) = sum_u pos_u 1[<w, x_u> < mu] + neg_u 1[<w, x_u> >= mu] + <linear, w>
    #        + norm_coef sqrt(D^2 - ||w||^2), computed by hand at four points
    plain = small_problem()
    assert plain.objective(np.array([0.0, 0.0])) == 2.0 + 0.5 + 4.0
    assert plain.objective(np.array([1.0, 1.0])) == 1.0 - 3.0 + 4.0
    assert plain.objective(np.array([1.0, -2.0])) == 1.0 + 0.5 + 4.0
    noisy = small_problem(linear=[0.5, -1.0], norm_coef=-2.0, norm_radius_sq=6.0)
    w = np.array([1.0, -2.0])  # ||w||^2 = 5, sqrt(6 - 5) = 1
    assert noisy.objective(w) == pytest.approx(5.5 + (0.5 + 2.0) - 2.0)
    positive = small_problem(norm_coef=3.0, norm_radius_sq=5.0)
    assert positive.objective(np.array([0.0, 0.0])) == pytest.approx(6.5 + 3.0 * math.sqrt(5.0))
    assert positive.objective(w) == pytest.approx(5.5)  # on the norm bound: the term is 0


def test_the_objective_of_a_batch_is_the_objective_of_each_point():
    problem = small_problem(linear=[0.25, -0.75], norm_coef=1.5, norm_radius_sq=5.0)
    W = np.array([[a, b] for a in (-2.0, -1.0, 0.0, 1.0, 2.0) for b in (-1.0, 0.0, 1.0)])
    batch = problem.objective(W)
    assert batch.shape == (len(W),)
    single = [problem.objective(w) for w in W]
    assert all(isinstance(v, float) for v in single)
    np.testing.assert_array_equal(batch, single)


def test_a_problem_freezes_copies_of_its_arrays_and_appends_rows():
    points = np.array([[1.0, 0.0]])
    problem = Problem(points, [1.0], [0.0], IntegerGrid(2, 1))
    points[0, 0] = 9.0
    assert problem.points[0, 0] == 1.0 and not problem.points.flags.writeable
    assert problem.linear.tolist() == [0.0, 0.0] and not problem.linear.flags.writeable
    more = problem.with_rows(np.array([[0.0, 1.0]]), np.array([-2.0]), np.array([0.0]))
    assert more.n_rows == 2 and problem.n_rows == 1
    assert more.pos.tolist() == [1.0, -2.0] and more.domain == problem.domain
    rows = MergedRows.from_xy(np.array([[0.0, 1.0], [0.0, 1.0]]), np.array([1, -1]))
    built = Problem.from_rows(rows, IntegerGrid(2, 1), label="x")
    assert (built.pos.tolist(), built.neg.tolist(), built.label, built.d) == ([1.0], [1.0], "x", 2)


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(points=[[1.0, 0.0, 0.0]], pos=[1.0], neg=[0.0]), r"points must be \(u, 2\)"),
        (
            dict(points=[[1.0, 0.0]], pos=[1.0, 2.0], neg=[0.0]),
            r"pos and neg must have shape \(1,\)",
        ),
        (dict(points=[[np.nan, 0.0]], pos=[1.0], neg=[0.0]), "must be finite"),
        (dict(points=[[1.0, 0.0]], pos=[np.inf], neg=[0.0]), "must be finite"),
        (dict(linear=[1.0]), "linear must be a finite vector of length 2"),
        (dict(linear=[1.0, np.nan]), "linear must be a finite vector of length 2"),
        (dict(norm_coef=math.inf), "norm_coef must be finite"),
        (
            dict(norm_coef=1.0, domain=IntegerGrid(2, 1)),
            "a norm term needs an IntegerGrid domain with a norm bound",
        ),
        (dict(norm_coef=1.0, domain=Box(2)), "a norm term needs an IntegerGrid"),
        (
            dict(norm_coef=1.0, norm_radius_sq=4.0),
            r"norm_radius_sq must be >= the domain's norm "
            r"bound 5\.0, found 4\.0",
        ),
        (dict(norm_coef=1.0), "norm_radius_sq must be >= .* found None"),
        (dict(margin=0.0), "margin must be >= 1e-06"),
        (dict(margin=math.inf), "margin must be >= 1e-06"),
    ],
)
def test_a_problem_refuses_bad_records(kwargs, match):
    with pytest.raises(ValueError, match=match):
        small_problem(**kwargs)


# --- the certificate -----------------------------------------------------------------------------
