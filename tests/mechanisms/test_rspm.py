"""RSPM (``mechanisms.rspm``; SPEC sections 4 and 10.2): the separator set, the problem it hands
the oracle, the calibrations as a release records them, and its parameters."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.objective import zero_one_loss
from mechanisms.rspm import RSPM, RSPMParams, rspm_problem, separator_set
from oracles.enumerate import all_objectives
from tests.mechanisms.input_space import (
    ANY_INT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    PARAMS_NAMES,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
)


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_separator_property_by_brute_force(d):
    # SPEC section 4: any two distinct w in {-1, 0, 1}^d differ in loss on some element of U
    points, labels = separator_set(d)
    W = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=float)
    losses = np.stack(
        [zero_one_loss(points[k : k + 1], labels[k : k + 1], W) for k in range(len(points))], axis=1
    )
    assert len({tuple(row) for row in losses}) == len(W)  # every w has its own loss pattern


@pytest.mark.parametrize("d", [2, 3])
def test_separator_set_minus_one_element_is_not_a_separator(d):
    points, labels = separator_set(d)
    W = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=float)
    for drop in range(len(points)):
        keep = np.arange(len(points)) != drop
        losses = np.stack(
            [zero_one_loss(points[k : k + 1], labels[k : k + 1], W) for k in np.flatnonzero(keep)],
            axis=1,
        )
        assert len({tuple(row) for row in losses}) < len(W)


def test_rspm_problem_adds_weighted_separator_losses(small):
    rows = small.merged()
    eta = np.random.default_rng(1).normal(0, 3, size=2 * small.d)  # negative weights included
    problem = rspm_problem(rows, eta)
    points, labels = separator_set(small.d)
    W, values = all_objectives(problem)
    for w, value in zip(W[::11], values[::11]):
        sep = np.array(
            [zero_one_loss(points[k : k + 1], labels[k : k + 1], w) for k in range(len(points))]
        )
        assert value == pytest.approx(zero_one_loss(small.features, small.labels, w) + eta @ sep)


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda: RSPMParams(1.0, noise="cauchy"), ValueError),
        (lambda: RSPMParams(1.0, 1e-5, margin=1.5), ValueError),
    ],
)
def test_bad_parameters_are_clear_errors(make, error):
    with pytest.raises(error):
        make()


def test_rspm_paper_release_records_the_proven_epsilon():
    cal = RSPM(RSPMParams(1.0, DELTA_ADULT, calibration="paper")).calibrate(23)
    assert cal.proven_epsilon == pytest.approx(0.567, rel=0.01)
    lap = RSPM(RSPMParams(1.0, noise="laplace")).calibrate(23)
    assert lap.proven_epsilon == 1.0 and lap.laplace_scale == 92.0


@derandomized(12)
@given(
    epsilon=either(EPSILON),
    delta=either(DELTA),
    margin=either(st.floats(1e-6, 0.99)),
    noise=st.sampled_from(["gaussian", "laplace", "cauchy"]),
    d=either(st.integers(1, 4), ANY_INT),
)
def test_rspm_params_and_calibrate_over_their_input_space(epsilon, delta, margin, noise, d):
    params = call_or_none(PARAMS_NAMES, RSPMParams, epsilon, delta, noise=noise, margin=margin)
    if params is None:
        return
    record = call_or_none(PARAMS_NAMES, RSPM(params).calibrate, d)
    if record is not None:
        assert_finite_positive(record.sigma if noise == "gaussian" else record.laplace_scale)
