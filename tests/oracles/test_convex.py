"""The convex oracle for OPSamp (SPEC section 5): the surrogate, the certified gap, sigma."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from core.objective import MergedRows
from core.problem import Box, ConvexProblem, Problem, box_radius, loss_scale, surrogate_value
from oracles.contract.certificate import OracleError, Status
from oracles.contract.budget import Budget
from oracles.convex import ConvexOracle
from oracles.contract.stats import ConvexStats


def _data(n=200, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d)).astype(float)  # binary: many repeated rows
    X[:, -1] = rng.integers(0, 5, size=n) / 4.0  # in [0, 1], still few distinct rows
    y = np.where(X @ np.array([1.0, -1.0, 0.5, 1.0])[:d] + 0.5 * rng.normal(size=n) >= 0.5, 1, -1)
    return X, y


def _sigma(d, seed=1, scale=20.0):
    return np.random.default_rng(seed).exponential(scale, size=d)


@pytest.mark.parametrize("loss", ["logistic", "hinge"])
def test_surrogate_is_in_unit_interval_on_the_box(loss):
    X, y = _data()
    box = Box(4, -1.0, 1.0)
    p = ConvexProblem.from_xy(X, y, np.zeros(4), box, loss=loss)
    R = box_radius(X, box)
    assert R == pytest.approx(np.abs(X).sum(axis=1).max())  # symmetric box: ||x||_1
    vertices = np.array(list(itertools.product([-1.0, 1.0], repeat=4)))
    inside = np.random.default_rng(0).uniform(-1, 1, size=(500, 4))
    values = [
        surrogate_value(p.margins(w), loss=loss, scale=p.scale)
        for w in np.vstack([vertices, inside])
    ]
    values = np.concatenate(values)
    assert values.min() >= 0.0 and values.max() <= 1.0 + 1e-15
    assert values.max() == pytest.approx(1.0)  # the scale is the maximum: attained at a vertex
    assert surrogate_value([-R, R], loss=loss, scale=loss_scale(R, loss))[0] == pytest.approx(1.0)


def test_a_public_scale_is_kept_and_a_too_small_one_refused():
    X, y = _data()
    box = Box(4, -1.0, 1.0)
    public = loss_scale(4.0, "logistic")  # features in [0, 1]: R <= d * max|w_j| = 4
    p = ConvexProblem.from_xy(X, y, np.zeros(4), box, scale=public)
    assert p.scale == public and p.scale_source == "given"
    assert ConvexProblem.from_xy(X, y, np.zeros(4), box).scale_source == "data"
    with pytest.raises(ValueError, match=r"scale must be >= .* found 0.5"):
        ConvexProblem.from_xy(X, y, np.zeros(4), box, scale=0.5)


def test_merged_rows_give_the_same_objective():
    X, y = _data()
    box, sigma = Box(4, -1.0, 2.0), _sigma(4)
    merged = ConvexProblem.from_xy(X, y, sigma, box, scale=10.0)
    full = ConvexProblem(X, y, np.ones(len(y)), sigma, box, scale=10.0)
    assert len(merged.labels) < len(y) and merged.n == full.n == len(y)
    for w in np.random.default_rng(0).uniform(-1, 2, size=(20, 4)):
        assert merged.objective(w) == pytest.approx(full.objective(w), rel=1e-12, abs=1e-14)
        np.testing.assert_allclose(merged.gradient(w), full.gradient(w), atol=1e-14)
    rows = MergedRows.from_xy(X, y)
    assert ConvexProblem.from_rows(rows, sigma, box, scale=10.0).n == len(y)


def test_lipschitz_constant_wrt_l1():
    X, y = _data()
    p = ConvexProblem.from_xy(X, y, np.zeros(4), Box(4, -1.0, 1.0))
    rng = np.random.default_rng(0)
    for _ in range(200):
        w, v = rng.uniform(-1, 1, size=(2, 4))
        diff = np.abs(
            surrogate_value(p.margins(w), scale=p.scale)
            - surrogate_value(p.margins(v), scale=p.scale)
        )
        assert diff.max() <= p.lipschitz_l1 * np.abs(w - v).sum() + 1e-15


@pytest.mark.parametrize("seed", range(4))
def test_the_certified_gap_bounds_the_true_suboptimality(seed):
    X, y = _data(seed=seed)
    box, sigma = Box(4, -1.0, 1.0), _sigma(4, seed=seed + 10, scale=5.0)
    p = ConvexProblem.from_xy(X, y, sigma, box)
    exact = ConvexOracle(tol=1e-13).solve(p, Budget.unlimited())
    f_star = exact.certificate.objective
    assert exact.certificate.bound <= f_star + 1e-15
    # stop early: an honest, larger gap that still bounds f(w) - f(w*)
    rough = ConvexOracle(tol=1e-13, max_iter=2).solve(p, Budget.unlimited())
    c = rough.certificate
    assert c.status is Status.TIME_LIMIT and c.gap > 1e-6
    assert 0.0 <= c.objective - f_star <= c.gap + 1e-12
    assert c.bound <= f_star + 1e-12
    # the gap is what OPSamp uses as alpha, in units of the normalized objective
    assert c.stat(ConvexStats).alpha == c.gap and c.backend == "convex"
    assert box.contains(rough.w) and box.contains(exact.w)


def test_default_tolerance_certifies_on_adult_like_noise(adult):
    rows = adult.train.merged()
    d = rows.d
    box = Box(d, -1.0, 1.0)
    public = loss_scale(float(d), "logistic")  # OPSamp's public bound: features in [0, 1]
    oracle = ConvexOracle()
    for k, eta in enumerate((1e-3, 1e-2, 1.0)):
        sigma = np.random.default_rng(k).exponential(1 / eta, size=d)
        c = oracle.solve(
            ConvexProblem.from_rows(rows, sigma, box, scale=public), Budget.unlimited()
        ).certificate
        assert c.status is Status.OPTIMAL and c.gap <= 1e-6 and c.certified
        assert (
            c.stat(ConvexStats).scale_source == "given"
            and c.stat(ConvexStats).rows == len(rows.points) + 298
        )


def test_sigma_pushes_w_in_its_direction():
    X, y = _data()
    box = Box(4, -1.0, 1.0)
    oracle = ConvexOracle()
    base = oracle.solve(ConvexProblem.from_xy(X, y, np.zeros(4), box), Budget.unlimited()).w
    for j in range(4):
        for sign in (1.0, -1.0):
            sigma = np.zeros(4)
            sigma[j] = sign * 1e4  # <sigma, w>/n dominates the loss (its slope is <= 1/S)
            w = oracle.solve(ConvexProblem.from_xy(X, y, sigma, box), Budget.unlimited()).w
            assert w[j] == (box.upper if sign > 0 else box.lower)
    # a moderate push moves w_j monotonically
    sigma = np.zeros(4)
    sigma[0] = 20.0
    assert (
        oracle.solve(ConvexProblem.from_xy(X, y, sigma, box), Budget.unlimited()).w[0]
        >= base[0] - 1e-9
    )


def test_hinge_lp_is_certified_and_below_every_point():
    X, y = _data()
    box, sigma = Box(4, -1.0, 1.0), _sigma(4, scale=5.0)
    p = ConvexProblem.from_xy(X, y, sigma, box, loss="hinge")
    sol = ConvexOracle(loss="hinge").solve(p, Budget.unlimited())
    c = sol.certificate
    assert c.status is Status.OPTIMAL and c.gap <= 1e-7
    assert c.stat(ConvexStats).bound_kind == "lagrangian_dual"
    points = np.random.default_rng(0).uniform(-1, 1, size=(2000, 4))
    assert all(c.bound <= p.objective(w) + 1e-12 for w in points)
    # any a in [0, 1] gives a valid lower bound (weak duality)
    for a in np.random.default_rng(1).random((50, len(p.labels))):
        assert p.dual_bound(a) <= c.objective + 1e-12


def test_wrong_inputs():
    X, y = _data()
    box = Box(4, -1.0, 1.0)
    with pytest.raises(ValueError, match="loss must be 'logistic' or 'hinge', found 'squared'"):
        ConvexOracle(loss="squared")
    with pytest.raises(ValueError, match="tol must be finite and > 0, found 0.0"):
        ConvexOracle(tol=0.0)
    with pytest.raises(TypeError, match="max_iter must be an integer, found 10.5"):
        ConvexOracle(max_iter=10.5)
    with pytest.raises(ValueError, match=r"sigma must be a finite vector of length 4"):
        ConvexProblem.from_xy(X, y, np.zeros(3), box)
    with pytest.raises(ValueError, match=r"points must be \(rows, 5\)"):
        ConvexProblem.from_xy(X, y, np.zeros(5), Box(5))
    with pytest.raises(TypeError, match="scale must be a real number, found '1'"):
        ConvexProblem.from_xy(X, y, np.zeros(4), box, scale="1")
    rows = MergedRows.from_xy(X, y)
    zero_one = Problem.from_rows(rows, box)
    with pytest.raises(OracleError, match="takes a ConvexProblem"):
        ConvexOracle().solve(zero_one, Budget.unlimited())
    assert math.isfinite(
        ConvexOracle()
        .solve(ConvexProblem.from_xy(X, y, np.zeros(4), box), Budget.unlimited())
        .certificate.gap
    )
