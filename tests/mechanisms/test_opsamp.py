"""OPSamp (``mechanisms.opsamp``; SPEC sections 5 and 10.3).

* Its data bounds (``mechanisms.bounds``): the feature bound x_max behind G is checked on every
  release, refused or clipped on request; and what the other mechanisms' proofs assume about
  the data.
* Its calibration as a release records it (SPEC 10.3: the proven lambda against the paper's,
  gamma against the number of calls) and its parameters, over their whole input space.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from core.objective import MergedRows
from mechanisms.bounds import FeatureBoundError, enforce_feature_bound
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams, lipschitz_constant, surrogate_scale
from mechanisms.opsamp_calibration import opsamp_gamma_m, opsamp_m_floor
from mechanisms.privacy import ApproximateTarget, PrivacyLeakWarning
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.runner import run
from oracles.convex import ConvexOracle
from pipeline.data.synthetic import make_linear_threshold
from tests.mechanisms.input_space import (
    ANY_INT,
    DELTA,
    DELTA_ADULT,
    EPSILON,
    N_ADULT,
    PARAMS_NAMES,
    assert_finite_positive,
    call_or_none,
    derandomized,
    either,
)


class NoOracle:
    """Fails the test if a release gets as far as an oracle call."""

    name = "none"

    def solve(self, problem, budget):
        raise AssertionError("an oracle call on data beyond the bound")


def _opsamp(**kwargs) -> OPSamp:
    """gamma = 1: the fewest oracle calls Lemma 9 allows (m = 7 at d = 3)."""
    return OPSamp(OPSampParams(1.0, 1e-5, gamma=1.0, **kwargs))


def _unit_cube(n=50, d=3, seed=1):
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    return X, np.where(X[:, 0] >= 0.5, 1, -1)


def _refused(mechanism, X, y, **kwargs) -> FeatureBoundError:
    """The refusal of ``run``, checking that it came before any noise was drawn."""
    rng = np.random.default_rng(0)
    state = rng.bit_generator.state
    with pytest.raises(FeatureBoundError) as raised:
        run(mechanism, X, y, NoOracle(), rng, **kwargs)
    assert rng.bit_generator.state == state  # refused before any noise was drawn
    return raised.value


# --- the two reproductions ---------------------------------------------------------------


def test_adult_shaped_data_beyond_x_max_half_is_refused():
    """Every entry in [0, 1], d = 23 (Adult's 20 one-hot and 3 scaled columns) with x_max = 0.5:
    G would be 0.0435 where the data's own constant is 0.087."""
    data = make_linear_threshold(200, 3, groups=(7, 6, 5, 2), seed=0)
    assert data.d == 23 and data.features.min() == 0.0 and data.features.max() == 1.0
    mechanism = _opsamp(x_max=0.5)
    _, S = surrogate_scale(23, -1.0, 1.0, 0.5)
    assert lipschitz_constant(mechanism.params, 23) == pytest.approx(0.0435, abs=1e-4)
    assert 1.0 / S == pytest.approx(0.087, abs=1e-3)  # what the data need

    error = _refused(mechanism, data.features, data.labels, feature_names=data.feature_names)
    first = int(np.flatnonzero(np.abs(data.features[0]) > 0.5)[0])
    assert (error.where.row, error.where.column) == (0, data.feature_names[first])
    assert (error.where.value, error.where.x_max) == (1.0, 0.5)
    assert str(error).startswith(
        f"x_max: row 0, column {data.feature_names[first]!r} is 1.0, "
        "beyond the feature bound |x| <= x_max = 0.5 that OPSamp's "
        "privacy proof assumes ("
    )
    assert str(error).endswith(
        "or set out_of_bounds=clip to clip them (a PrivacyLeakWarning), found 0.5"
    )


def test_one_entry_beyond_x_max_at_d3_is_refused_naming_its_row_and_column():
    X, y = _unit_cube()
    X[7, 1] = 1.5
    error = _refused(_opsamp(), X, y)
    assert str(error) == (
        "x_max: row 7, column 1 is 1.5, beyond the feature bound |x| <= x_max = 1.0 that "
        "OPSamp's privacy proof assumes (1 entry in 1 row); raise x_max to a public bound on the "
        "data, or set out_of_bounds=clip to clip them (a PrivacyLeakWarning), found 1.0"
    )
    named = _refused(_opsamp(), X, y, feature_names=("age", "hours", "gain"))
    assert str(named).startswith("x_max: row 7, column 'hours' is 1.5,")
    assert isinstance(named, ValueError)


def test_the_bound_is_on_the_absolute_value_not_the_sign():
    """The proof needs ||x||_inf <= x_max (G) and ||x||_1 <= d x_max (the range), so negative
    entries down to -x_max are fine, and -1.5 is not."""
    X, y = _unit_cube()
    X = 2 * X - 1  # entries in [-1, 1]
    release = run(_opsamp(), X, y, ConvexOracle(), np.random.default_rng(0))
    assert release.privacy.holds
    X[3, 2] = -1.5
    error = _refused(_opsamp(), X, y)
    assert str(error).startswith("x_max: row 3, column 2 is -1.5,")


# --- clipping on request ------------------------------------------------------------------------


def test_clipping_on_request_warns_and_releases_from_data_within_the_bound():
    X, y = _unit_cube()
    X[7, 1], X[9, 0], X[9, 2] = 1.5, -3.0, 2.0
    given = X.copy()
    clipping = _opsamp(out_of_bounds="clip")
    with pytest.warns(
        PrivacyLeakWarning,
        match=r"OPSamp clipped 3 entries in 2 rows beyond "
        r"x_max = 1.0 to it \(out_of_bounds=clip\), so it ran on data other than "
        r"those given; that it did is read off the private data",
    ):
        release = run(clipping, X, y, ConvexOracle(), np.random.default_rng(4))
    np.testing.assert_array_equal(X, given)  # the caller's array is not changed
    within = np.clip(X, -1.0, 1.0)
    assert within[7, 1] == 1.0 and within[9, 0] == -1.0 and within[9, 2] == 1.0
    # the release is the one made from the clipped data, which the default setting accepts
    reference = run(_opsamp(), within, y, ConvexOracle(), np.random.default_rng(4))
    np.testing.assert_array_equal(release.w, reference.w)
    assert release.privacy.holds and release.params["out_of_bounds"] == "clip"
    with pytest.warns(PrivacyLeakWarning):
        np.testing.assert_array_equal(clipping.enforce_bounds(X), within)


def test_data_within_the_bound_are_used_as_given_without_a_warning(recwarn):
    X, _ = _unit_cube()
    np.testing.assert_array_equal(_opsamp(out_of_bounds="clip").enforce_bounds(X), X)
    assert not [w for w in recwarn if issubclass(w.category, PrivacyLeakWarning)]


def test_out_of_bounds_must_be_error_or_clip():
    with pytest.raises(ValueError, match="out_of_bounds must be 'error' or 'clip', found 'drop'"):
        OPSampParams(1.0, 1e-5, out_of_bounds="drop")
    with pytest.raises(ValueError, match="found 'drop'"):
        enforce_feature_bound(np.full((1, 1), 2.0), 1.0, out_of_bounds="drop", mechanism="x")


# --- every path to an oracle call ----------------------------------------------------------------


def test_problems_refuse_rows_beyond_the_bound_whoever_calls_them():
    """The audit's samplers and the benchmarks build problems without ``run``: the check is also
    where the noise meets the data."""
    X, y = _unit_cube(20, 2)
    X[4] = [0.5, 1.25]
    rows = MergedRows.from_xy(X, y)
    mechanism = _opsamp()
    noise = mechanism.draw_noise(np.random.default_rng(0), rows.n, rows.d)
    with pytest.raises(FeatureBoundError, match=r"^x_max: distinct row \d+, column 1 is 1.25,"):
        mechanism.problems(rows, noise)
    with pytest.warns(PrivacyLeakWarning, match="1 entry in 1 distinct row"):
        problems = _opsamp(out_of_bounds="clip").problems(rows, noise)
    assert len(problems) == noise.calibration.m and all(
        np.abs(p.points).max() <= 1.0 for p in problems
    )


def test_the_zero_one_loss_uses_no_feature_bound():
    """OPSamp's proof does not apply to the 0/1 loss (recorded as not private): x_max is not used,
    so it is not checked."""
    X, _ = _unit_cube()
    X[0, 0] = 7.0
    np.testing.assert_array_equal(_opsamp(loss="zero_one").enforce_bounds(X), X)


# --- what the other mechanisms assume -----------------------------------------------------------


@pytest.mark.parametrize(
    "mechanism",
    [
        OPDisc(OPDiscParams(1.0, 1e-5)),
        RSPM(RSPMParams(1.0, 1e-5)),
        RSPM(RSPMParams(1.0, noise="laplace")),
        ExactERM(),
    ],
    ids=lambda m: m.name,
)
def test_zero_one_loss_mechanisms_assume_no_feature_bound(mechanism):
    """The 0/1 loss is in {0, 1} whatever x is: L is 1-sensitive on any data (SPEC section 2)."""
    X = np.array([[1e6, -3.0], [0.5, 2.0]])
    np.testing.assert_array_equal(mechanism.enforce_bounds(X), X)


def _run_opsamp(X, y):
    return run(_opsamp(), X, y, ConvexOracle(), np.random.default_rng(0))


def _run_expmech(X, y):
    from mechanisms.expmech import ExpMechParams, run_expmech

    return run_expmech(X, y, ExpMechParams(1.0), np.random.default_rng(0))


def _run_dpsgd(X, y):
    from mechanisms.dpsgd import DPSGDParams, run_dpsgd

    return run_dpsgd(X, y, DPSGDParams(1.0, 1e-5, batch_size=2), np.random.default_rng(0))


def _run_logistic(X, y):
    from mechanisms.logistic import run_logistic

    return run_logistic(X, y)


@pytest.mark.parametrize("release", [_run_opsamp, _run_expmech, _run_dpsgd, _run_logistic])
def test_every_mechanism_refuses_labels_outside_plus_minus_one(release):
    """OPSamp's range and Lipschitz arguments use |y| = 1; every mechanism checks it first."""
    X = np.array([[0.5, 1.0], [1.0, 0.0], [0.0, 0.5]])
    with pytest.raises(ValueError, match=r"labels must be -1 or \+1, found \[2\]"):
        release(X, np.array([1, -1, 2]))


# --- the calibration and the parameters (SPEC 10.3) ---------------------------------------------


@pytest.mark.parametrize("eps, ratio_low, ratio_high", [(0.1, 4.2, 4.4), (1.0, 3.7, 3.9)])
def test_opsamp_paper_calibration_proves_several_times_the_epsilon(eps, ratio_low, ratio_high):
    # SPEC 10.3: on Adult the corrected lambda is about 3.8 to 4.3 times the paper's
    paper = OPSamp(OPSampParams(eps, DELTA_ADULT, calibration="paper")).calibrate(N_ADULT, 23)
    proven = OPSamp(OPSampParams(eps, DELTA_ADULT)).calibrate(N_ADULT, 23)
    assert ratio_low < proven.lambda_ / paper.lambda_ < ratio_high
    assert ratio_low * eps < paper.proven_epsilon < ratio_high * eps
    assert proven.proven_epsilon == eps
    assert proven.lambda_sampling == pytest.approx(2 * 23 * 2 * proven.gamma)
    assert paper.lambda_sampling == pytest.approx(4 * 2 * paper.gamma)
    assert proven.lambda_ == pytest.approx(
        proven.lambda_sampling + proven.lambda_stability + proven.lambda_oracle
    )


def test_opsamp_gamma_buys_lambda_with_calls():
    # SPEC 10.3: near gamma = 0.02 the first term (92 gamma) stops mattering; m ~ 30,000
    _, gamma, m = opsamp_gamma_m(ApproximateTarget(1.0, DELTA_ADULT), N_ADULT, 23, 2.0, gamma=0.02)
    assert gamma == 0.02 and m == pytest.approx(30_000, rel=0.05)
    cal = OPSamp(OPSampParams(1.0, DELTA_ADULT, gamma=0.02)).calibrate(N_ADULT, 23)
    assert cal.lambda_sampling == pytest.approx(92 * 0.02)
    assert cal.lambda_stability == pytest.approx(21.6, rel=0.01)
    # m given instead of gamma: the smallest gamma m calls support, and back
    by_m = OPSamp(OPSampParams(1.0, DELTA_ADULT, m=cal.m)).calibrate(N_ADULT, 23)
    assert by_m.m == cal.m and by_m.gamma <= 0.02


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(gamma=0.0), "gamma must be in"),
        (dict(gamma=1.5), "gamma must be in"),
        (dict(m=0), "m must be"),
        (dict(gamma=0.5, m=10), "not both"),
        (dict(calibration="paper_code"), "calibration must be 'proven' or 'paper'"),
    ],
)
def test_opsamp_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        OPSampParams(1.0, 1e-6, **kwargs)


@derandomized(120)
@given(
    epsilon=either(EPSILON),
    delta=either(DELTA),
    lower=either(st.floats(-10, 0)),
    upper=either(st.floats(0.01, 10)),
    gamma=st.one_of(st.none(), either(st.floats(1e-3, 1.0))),
    m=st.one_of(st.none(), either(st.integers(1, 10**5), ANY_INT)),
    n=either(st.integers(1, 10**6), ANY_INT),
    d=either(st.integers(1, 100), ANY_INT),
)
def test_opsamp_params_and_calibrate_over_their_input_space(
    epsilon, delta, lower, upper, gamma, m, n, d
):
    params = call_or_none(
        PARAMS_NAMES, OPSampParams, epsilon, delta, lower=lower, upper=upper, gamma=gamma, m=m
    )
    if params is None:
        return
    record = call_or_none(PARAMS_NAMES, OPSamp(params).calibrate, n, d)
    if record is not None:
        for key in ("gamma", "eta", "lambda_", "lambda_proven", "laplace_scale", "proven_epsilon"):
            assert_finite_positive(float(getattr(record, key)))
        assert 0 < record.gamma <= 1 and record.m >= 1


def test_opsamp_params_refuse_an_infinite_box():
    for kwargs in (dict(lower=-math.inf), dict(upper=math.inf), dict(lower=math.nan)):
        with pytest.raises(ValueError, match="(lower|upper) must be finite"):
            OPSampParams(1.0, 1e-6, **kwargs)  # lower=-inf divided by zero in calibrate
    with pytest.raises(ValueError, match="D_inf = upper - lower is not a finite float"):
        OPSampParams(1.0, 1e-6, lower=-1e308, upper=1e308)


@pytest.mark.parametrize("m", [1, 3])
def test_opsamp_m_with_gamma_above_one_is_refused_like_gamma_above_one(m):
    # m = 1 or 3 gave gamma 2.96 or 1.71; Lemma 9 needs gamma <= 1 (SPEC section 5), and
    # gamma = sqrt(ln(4d / delta) / (2m)) <= 1 iff m >= ln(4d / delta) / 2
    delta, d = 1e-6, 23
    floor = math.ceil(math.log(4 * d / delta) / 2)
    assert floor == opsamp_m_floor(delta, d) == 10
    with pytest.raises(ValueError, match=r"m must be >= 8 \(so that gamma"):
        OPSampParams(1.0, delta, m=m)  # the floor at d = 1, known before the data
    params = OPSampParams(1.0, delta, m=9)  # enough at d = 1, not at d = 23
    with pytest.raises(ValueError, match=rf"m must be >= {floor} \(so that gamma .* d=23"):
        OPSamp(params).calibrate(15_682, d)
    record = OPSamp(OPSampParams(1.0, delta, m=floor)).calibrate(15_682, d)
    assert record.m == floor and record.gamma <= 1
    with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], found 1.5"):
        OPSampParams(1.0, delta, gamma=1.5)
