"""What every mechanism returns (``mechanisms.release``): the release record, its privacy claim, and
the secret draws that never reach it (SPEC section 8). First through the mechanisms' releases,
then piece by piece."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.privacy import ApproximateTarget
from mechanisms.release import Calibration, Noise, PrivacyClaim, Release, Secret, check_rng
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.rspm_calibration import rspm_gaussian_sigma
from mechanisms.runner import run
from oracles.contract.certificate import OBJECTIVE_TOL, Certificate, Solution, Status
from oracles.convex import ConvexOracle
from oracles.enumerate import EnumerationOracle

ORACLE = EnumerationOracle()


@pytest.mark.parametrize(
    "mechanism",
    [
        OPDisc(OPDiscParams(1.0, 1e-4)),
        RSPM(RSPMParams(1.0, 1e-4)),
        RSPM(RSPMParams(1.0, noise="laplace")),
    ],
    ids=lambda m: m.name,
)
def test_release_is_private_only_with_a_certified_argmin(small, mechanism):
    release = run(mechanism, small.features, small.labels, ORACLE, np.random.default_rng(0))
    assert release.privacy.holds and release.certificates[0].certified
    assert "eta" not in release.noise  # the draws are never recorded beside w

    class TimedOut:
        name = "timed-out"

        def solve(self, problem, budget):
            good = ORACLE.solve(problem, budget)
            cert = dataclasses.replace(
                good.certificate, status=Status.TIME_LIMIT, bound=good.certificate.objective - 1.0
            )
            return Solution(good.w, cert)

    uncertified = run(mechanism, small.features, small.labels, TimedOut(), np.random.default_rng(0))
    assert not uncertified.privacy.holds
    assert "not certified" in uncertified.privacy.reason
    assert uncertified.to_params()["privacy_holds"] is False
    assert uncertified.to_metrics()["privacy_holds"] == 0.0


def test_release_records_round_trip(small):
    release = run(
        RSPM(RSPMParams(0.7, 1e-5)), small.features, small.labels, ORACLE, np.random.default_rng(2)
    )
    params, metrics = release.to_params(), release.to_metrics()
    assert params["mechanism"] == "rspm_gaussian" and params["requested_epsilon"] == 0.7
    assert "param.epsilon" not in params  # one name for the requested target
    # the proven calibration (SPEC 10.2), m = 2d = 10
    assert params["noise.sigma"] == pytest.approx(
        rspm_gaussian_sigma(ApproximateTarget(0.7, 1e-5), 10)
    )
    assert params["calibration"] == "proven" and params["privacy_epsilon"] == 0.7
    assert "noise.calibration" not in params and "noise.proven_epsilon" not in params
    assert params["privacy_holds"] is True and params["oracle_backends"] == "enumerate"
    assert all(isinstance(v, float) for v in metrics.values())
    rebuilt = Release(
        release.mechanism,
        release.w,
        release.privacy,
        release.noise,
        release.params,
        release.certificates,
        release.timings,
        release.margin,
    )
    assert rebuilt.to_params() == params
    with pytest.raises(ValueError):
        release.w[0] = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.mechanism = "x"


def test_every_release_records_the_requested_target_once(small):
    """requested_epsilon / requested_delta beside the proven privacy_epsilon / privacy_delta,
    never also param.epsilon."""
    releases = [
        run(
            OPDisc(OPDiscParams(0.5, 1e-5)),
            small.features,
            small.labels,
            ORACLE,
            np.random.default_rng(0),
        ),
        run_expmech(small.features, small.labels, ExpMechParams(0.5), np.random.default_rng(0)),
    ]
    for release, delta in zip(releases, (1e-5, 0.0)):
        params = release.to_params()
        assert (params["requested_epsilon"], params["requested_delta"]) == (0.5, delta)
        assert (params["privacy_epsilon"], params["privacy_delta"]) == (0.5, delta)
        assert not {"param.epsilon", "param.delta"} & set(params), release.mechanism


def test_bad_data_is_a_clear_error():
    with pytest.raises(ValueError, match=r"labels must be -1 or \+1, found \[0\]"):
        run(
            OPDisc(OPDiscParams(1.0, 1e-5)),
            np.ones((3, 2)),
            np.array([0, 1, 1]),
            ORACLE,
            np.random.default_rng(0),
        )
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        run(OPDisc(OPDiscParams(1.0, 1e-5)), np.ones((3, 2)), np.array([1, 1, -1]), ORACLE, 0)


# --- the secret draws: Secret in the noise, never in a release ---------------------------------


def _draw_mechanisms():
    # OPSamp with 3 calls: delta = 0.1 keeps gamma = sqrt(ln(4d / delta) / 6) <= 1 (Lemma 9)
    return [
        OPDisc(OPDiscParams(1.0, 1e-4)),
        RSPM(RSPMParams(1.0, 1e-4)),
        RSPM(RSPMParams(1.0, noise="laplace")),
        OPSamp(OPSampParams(1.0, 0.1, m=3)),
    ]


@pytest.mark.parametrize("mechanism", _draw_mechanisms(), ids=lambda m: f"{m.name}")
def test_every_draw_is_a_secret_and_no_release_records_one(small, mechanism):
    noise = mechanism.draw_noise(np.random.default_rng(0), small.n, small.d)
    assert isinstance(noise, Noise) and isinstance(noise.calibration, Calibration)
    draws = {f.name: getattr(noise, f.name) for f in dataclasses.fields(noise)}
    draws.pop("calibration")
    assert draws and all(isinstance(v, Secret) for v in draws.values())
    for secret in draws.values():
        shown = repr(secret) + str(secret) + repr(noise)
        assert all(f"{x:.4f}"[:6] not in shown for x in secret.value.ravel()[:3])
    oracle = ConvexOracle() if mechanism.name == "opsamp" else ORACLE
    release = run(mechanism, small.features, small.labels, oracle, np.random.default_rng(0))
    params = release.to_params()
    assert not any(isinstance(v, Secret) or np.ndim(v) != 0 for v in params.values())
    scales = noise.calibration.scales()
    assert scales.items() <= release.noise.items()
    # the proven (epsilon, delta) and the rule are the claim's, recorded once
    assert not {"rule", "proven_epsilon", "proven_delta", "calibration"} & set(release.noise)
    assert params["privacy_epsilon"] == noise.calibration.proven_epsilon
    assert params["calibration"] == noise.calibration.rule


@dataclasses.dataclass(frozen=True)
class _Cal(Calibration):
    sigma: float


@dataclasses.dataclass(frozen=True)
class _Noise(Noise):
    eta: Secret


def test_a_calibration_holds_scalars_only_and_its_scales_leave_out_the_claim():
    cal = _Cal(rule="proven", proven_epsilon=1.0, proven_delta=1e-5, sigma=np.float64(2.5))
    assert cal.scales() == {"sigma": 2.5}
    with pytest.raises(TypeError, match=r"_Cal.sigma must be a scalar, found shape \(3,\)"):
        _Cal(rule="proven", proven_epsilon=1.0, proven_delta=1e-5, sigma=np.ones(3))
    with pytest.raises(dataclasses.FrozenInstanceError):
        cal.sigma = 1.0


def test_a_noise_record_holds_its_draws_as_secrets_only():
    cal = _Cal(rule="proven", proven_epsilon=1.0, proven_delta=1e-5, sigma=2.5)
    assert _Noise(cal, Secret(np.ones(3))).eta.value.shape == (3,)
    with pytest.raises(TypeError, match="_Noise.eta must be a Secret"):
        _Noise(cal, np.ones(3))
    with pytest.raises(TypeError, match="calibration must be a Calibration"):
        _Noise({"sigma": 2.5}, Secret(np.ones(3)))


def test_a_non_scalar_noise_parameter_is_refused_by_a_release():
    with pytest.raises(TypeError, match=r"noise\['eta'\] must be a scalar noise parameter"):
        Release("leaky", np.zeros(2), PrivacyClaim(1.0, 0.0, True, ""), noise={"eta": [1.0]})
    with pytest.raises(TypeError, match=r"noise\['eta'\] must be a scalar.*Secret"):
        Release(
            "leaky", np.zeros(2), PrivacyClaim(1.0, 0.0, True, ""), noise={"eta": Secret([1.0])}
        )


# --- piece by piece -------------------------------------------------------------------------------


def _cert(status=Status.OPTIMAL, objective=3.0, bound=3.0, backend="highs", seconds=1.5):
    return Certificate(status, objective, bound, seconds, backend)


def test_a_secret_shows_its_shape_and_dtype_never_its_values():
    secret = Secret([[123.456, -7.25], [0.5, 99.0]])
    assert isinstance(secret.value, np.ndarray) and secret.value.shape == (2, 2)
    assert repr(secret) == str(secret) == "Secret(shape=(2, 2), dtype=float64)"
    assert f"{secret}" == repr(secret)
    for shown in (repr(secret), str(secret), f"{secret!r}", repr({"eta": secret})):
        assert not any(s in shown for s in ("123", "7.25", "99", "0.5"))
    with pytest.raises(dataclasses.FrozenInstanceError):
        secret.value = np.zeros(2)


@pytest.mark.parametrize("value", [[1.0, 2.0], np.ones(1), np.ones((2, 2)), (0.5,)])
def test_a_release_refuses_an_unwrapped_draw_naming_its_key(value):
    with pytest.raises(
        TypeError, match=r"^noise\['draw'\] must be a scalar noise parameter, found \w+ of shape"
    ):
        Release("m", np.zeros(2), PrivacyClaim(1.0, 0.0, True, ""), noise={"draw": value})


def test_a_release_is_frozen_and_its_weights_a_read_only_copy():
    w = np.array([1.0, -2.0])
    release = Release(
        "m",
        w,
        PrivacyClaim(1.0, 0.0, True, "ok"),
        noise={"sigma": 3.0},
        params={"tau": 1.0},
    )
    w[0] = 9.0  # the caller's array is not the release's
    assert release.w.tolist() == [1.0, -2.0] and release.w.dtype == float
    assert not release.w.flags.writeable
    with pytest.raises(ValueError):
        release.w[1] = 0.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.w = np.zeros(2)
    assert release.noise == {"sigma": 3.0}  # the draw is dropped on construction
    assert isinstance(release.params, dict) and release.certificates == ()


def test_a_release_predicts_with_its_own_margin():
    release = Release("m", [1.0, 0.0], PrivacyClaim(1.0, 0.0, True, ""), margin=0.5)
    X = np.array([[0.5, 7.0], [0.5 - 2**-53, 7.0], [2.0, 0.0]])
    assert release.predict(X).tolist() == [1, -1, 1]  # +1 iff <w, x> >= mu, at mu exactly
    assert release.accuracy(X, np.array([1, 1, 1])) == pytest.approx(2 / 3)


def test_release_metrics_sum_times_and_take_the_largest_gap():
    certs = (_cert(seconds=1.5), _cert(Status.TIME_LIMIT, 5.0, 4.0, seconds=2.0))
    release = Release(
        "m", [0.0], PrivacyClaim(1.0, 0.0, False, ""), certificates=certs, timings={"solve": 3.5}
    )
    assert release.oracle_seconds == 3.5 and release.max_gap == 1.0
    metrics = release.to_metrics()
    assert metrics["oracle_certified_fraction"] == 0.5 and metrics["step_wall_seconds.solve"] == 3.5
    assert metrics["privacy_holds"] == 0.0
    empty = Release("m", [0.0], PrivacyClaim(1.0, 0.0, True, ""))
    assert empty.max_gap == 0.0 and empty.to_metrics()["oracle_certified_fraction"] == 0.0


def test_to_params_takes_the_requested_target_from_the_claim_else_the_params():
    claim = PrivacyClaim(1.2, 1e-6, True, "", requested_epsilon=1.0, requested_delta=1e-6)
    params = Release("m", [0.0], claim, params={"epsilon": 0.3, "delta": 0.1, "B": 2}).to_params()
    assert (params["requested_epsilon"], params["requested_delta"]) == (1.0, 1e-6)
    assert (params["privacy_epsilon"], params["privacy_delta"]) == (1.2, 1e-6)
    assert params["param.B"] == 2 and "param.epsilon" not in params
    bare = PrivacyClaim(0.5, 0.0, True, "")
    params = Release("m", [0.0], bare, params={"epsilon": 0.3, "delta": 0.1}).to_params()
    assert (params["requested_epsilon"], params["requested_delta"]) == (0.3, 0.1)


def test_a_claim_holds_only_when_every_certificate_is_certified():
    good = [_cert(backend="a"), _cert(objective=OBJECTIVE_TOL, bound=0.0, backend="b")]  # edge
    claim = PrivacyClaim.from_certificates(
        1.0, 1e-5, good, needs="the exact argmin", requested_epsilon=0.9, calibration="proven"
    )
    assert claim.holds and claim.reason == "all 2 oracle calls certified (the exact argmin)"
    assert (claim.epsilon, claim.delta) == (1.0, 1e-5)
    assert (claim.requested_epsilon, claim.calibration, claim.requested_delta) == (
        0.9,
        "proven",
        None,
    )
    # a gap just above the tolerance, or a status other than OPTIMAL, is not certified
    loose = _cert(objective=2 * OBJECTIVE_TOL, bound=0.0, backend="loose")
    stopped = _cert(Status.TIME_LIMIT, 4.0, 3.5, backend="stopped")
    claim = PrivacyClaim.from_certificates(1.0, 1e-5, good + [loose, stopped], needs="x")
    assert not claim.holds
    assert claim.reason == (
        "2 of 4 oracle calls not certified (x); first: loose optimal, gap 2e-06"
    )
    inconsistent = _cert(Status.INCONSISTENT, backend="odd")
    assert not PrivacyClaim.from_certificates(1.0, 0.0, [inconsistent], needs="x").holds


def test_a_claim_without_certificates_does_not_hold():
    claim = PrivacyClaim.from_certificates(1.0, 0.0, [], needs="x")
    assert not claim.holds and claim.reason == "no oracle certificate"


def test_check_rng_takes_only_an_explicit_generator():
    rng = np.random.default_rng(0)
    assert check_rng(rng) is rng
    for bad in (None, 0, np.random.RandomState(0), np.random):
        with pytest.raises(TypeError, match=r"^rng must be a numpy\.random\.Generator"):
            check_rng(bad)
