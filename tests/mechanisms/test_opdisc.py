"""OPDisc (``mechanisms.opdisc``; SPEC sections 3 and 10.1): the problem it hands the oracle,
its noise, its calibrations as a release records them, its parameters, and the exact ERM."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.objective import zero_one_loss
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams, opdisc_domain, opdisc_problem
from mechanisms.opdisc_calibration import opdisc_delta, opdisc_epsilon, opdisc_sigma_paper
from mechanisms.privacy import ApproximateTarget
from mechanisms.runner import run
from oracles.enumerate import EnumerationOracle, all_objectives
from oracles.routing.registry import make_oracle
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

ORACLE = EnumerationOracle()


def test_opdisc_problem_is_loss_minus_eta_dot_pi(small):
    rows = small.merged()
    rng = np.random.default_rng(0)
    params = OPDiscParams(1.0, 1e-4)
    for sign in (1.0, -1.0):  # both signs of eta_(d+1) (SPEC section 3)
        eta = rng.normal(0, 5, size=small.d + 1)
        eta[-1] = sign * abs(eta[-1])
        problem = opdisc_problem(rows, eta, params)
        W, values = all_objectives(problem)
        D = math.sqrt(small.d)
        for w, value in zip(W[::7], values[::7]):
            pi = np.append(w, math.sqrt(max(D * D - w @ w, 0.0))) / D
            expected = zero_one_loss(small.features, small.labels, w) - eta @ pi
            assert value == pytest.approx(expected, abs=1e-9)


def test_same_seed_same_release_other_seed_other_noise(small):
    mech = OPDisc(OPDiscParams(0.5, 1e-4))
    a = run(mech, small.features, small.labels, ORACLE, np.random.default_rng(5))
    b = run(mech, small.features, small.labels, ORACLE, np.random.default_rng(5))
    np.testing.assert_array_equal(a.w, b.w)
    noises = {tuple(mech.draw_noise(np.random.default_rng(s), 200, 5).eta.value) for s in range(3)}
    assert len(noises) == 3


def test_exact_erm_is_the_noise_free_optimum(small):
    release = run(ExactERM(), small.features, small.labels, ORACLE, np.random.default_rng(0))
    W, values = all_objectives(
        opdisc_problem(small.merged(), np.zeros(small.d + 1), OPDiscParams(1.0, 1e-4))
    )
    assert zero_one_loss(small.features, small.labels, release.w) == values.min()
    assert not release.privacy.holds and release.privacy.epsilon == math.inf


@pytest.mark.parametrize(
    "make, error",
    [
        (lambda: OPDiscParams(0.0, 1e-5), ValueError),
        (lambda: OPDiscParams(1.0, 0.0), ValueError),
        (lambda: OPDiscParams(1.0, 1e-5, tau=-1), ValueError),
        (lambda: OPDiscParams("1", 1e-5), TypeError),
    ],
)
def test_bad_parameters_are_clear_errors(make, error):
    with pytest.raises(error):
        make()


# --- the calibration a release records (SPEC 10.1) ---------------------------------------------


def _tiny():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, size=(30, 3)).astype(float)
    y = np.where(X[:, 0] > 0, 1, -1)
    return X, y


@pytest.mark.parametrize(
    "calibration, factor", [("proven", None), ("paper", 1.0), ("paper_code", 0.5)]
)
def test_opdisc_release_records_the_proven_epsilon(calibration, factor):
    X, y = _tiny()
    mech = OPDisc(OPDiscParams(1.0, 1e-5, calibration=calibration))
    release = run(mech, X, y, make_oracle("enumerate"), np.random.default_rng(1))
    claim = release.privacy
    assert claim.holds and claim.calibration == calibration
    assert (claim.requested_epsilon, claim.requested_delta) == (1.0, 1e-5)
    sigma = release.noise["sigma"]
    if factor is None:
        assert claim.epsilon == 1.0
        assert opdisc_delta(1.0, sigma, d=3, D=math.sqrt(3)) <= 1e-5
    else:
        assert sigma == pytest.approx(
            factor * opdisc_sigma_paper(ApproximateTarget(1.0, 1e-5), 1.0, math.sqrt(3))
        )
        assert claim.epsilon == pytest.approx(opdisc_epsilon(sigma, 1e-5, d=3, D=math.sqrt(3)))
        assert opdisc_delta(claim.epsilon, sigma, d=3, D=math.sqrt(3)) <= 1e-5
    params = release.to_params()
    assert params["privacy_epsilon"] == claim.epsilon
    assert params["requested_epsilon"] == 1.0 and params["calibration"] == calibration


def test_paper_code_opdisc_proves_more_than_requested():
    cal = OPDisc(OPDiscParams(1.0, DELTA_ADULT, calibration="paper_code")).calibrate(23)
    assert cal.proven_epsilon > 2.0  # half of sigma_paper: roughly twice the loss


@derandomized(40)
@given(
    epsilon=either(EPSILON),
    delta=either(DELTA),
    tau=either(st.floats(0.5, 2)),
    B=st.one_of(st.none(), either(st.floats(1, 5))),
    D=st.one_of(st.none(), either(st.floats(1, 10))),
    margin=either(st.floats(1e-6, 0.5)),
    calibration=st.sampled_from(["proven", "paper", "paper_code", "papers", 1]),
    d=either(st.integers(1, 50), ANY_INT),
)
def test_opdisc_params_and_calibrate_over_their_input_space(
    epsilon, delta, tau, B, D, margin, calibration, d
):
    params = call_or_none(
        PARAMS_NAMES,
        OPDiscParams,
        epsilon,
        delta,
        tau=tau,
        B=B,
        D=D,
        margin=margin,
        calibration=calibration,
    )
    if params is None:
        return
    record = call_or_none(PARAMS_NAMES, OPDisc(params).calibrate, d)
    if record is not None:
        assert_finite_positive(record.sigma)
        assert_finite_positive(record.proven_epsilon, zero_ok=True)


def test_the_domain_is_w_tau_with_the_papers_defaults():
    # SPEC section 3: D = sqrt(d), B = floor(sqrt(d)); the grid's bound counts steps of tau
    domain, D = opdisc_domain(5, tau=0.5)
    assert (domain.d, domain.bound, domain.step) == (5, 4, 0.5)
    assert domain.norm_sq_max == pytest.approx(5.0) and D == pytest.approx(math.sqrt(5))
    domain, D = opdisc_domain(3, 1.0, B=2.5, D=1.5)
    assert (domain.bound, domain.norm_sq_max, D) == (2, 2.25, 1.5)
    # B / tau = 0.3 / 0.1 is 2.9999999999999996 in floating point: still 3 steps
    assert opdisc_domain(2, tau=0.1, B=0.3)[0].bound == 3


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d=3, tau=2.0, B=1.0), ValueError, r"B / tau must be >= 1, found B=1\.0, tau=2\.0"),
        (dict(d=0), ValueError, "d must be >= 1, found 0"),
        (dict(d=2.0), TypeError, "d must be an integer, found 2.0"),
        (dict(d=2, D=1e200), ValueError, r"D\^2 is not a finite float > 0"),
    ],
)
def test_the_domain_refuses_what_has_no_grid(kwargs, error, match):
    with pytest.raises(error, match=match):
        opdisc_domain(**kwargs)
