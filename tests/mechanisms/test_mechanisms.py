"""OPDisc, RSPM, ExpMech and the exact ERM: objectives, releases and privacy claims."""

from __future__ import annotations

import dataclasses
import itertools
import math

import numpy as np

from mechanisms.calibration import rspm_gaussian_sigma
import pytest
from scipy import stats

from mechanisms.base import PrivacyClaim, Release
from mechanisms.estimators import (ExactERMClassifier, ExpMechClassifier, OPDiscClassifier,
                                   RSPMClassifier)  # fmt: skip
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams, opdisc_problem
from mechanisms.rspm import RSPM, RSPMParams, rspm_problem, separator_set
from mechanisms.runner import run
from oracles.base import Solution, Status
from oracles.enumerate import EnumerationOracle, all_objectives
from oracles.objective import MergedRows, zero_one_loss
from pipeline.data.synthetic import make_linear_threshold

ORACLE = EnumerationOracle()


@pytest.fixture(scope="module")
def small():
    return make_linear_threshold(200, 2, groups=(3,), levels=4, seed=3)


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


@pytest.mark.parametrize("d", [1, 2, 3, 4])
def test_separator_property_by_brute_force(d):
    # SPEC section 4: any two distinct w in {-1, 0, 1}^d differ in loss on some element of U
    points, labels = separator_set(d)
    W = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=float)
    losses = np.stack([zero_one_loss(points[k:k + 1], labels[k:k + 1], W)
                       for k in range(len(points))], axis=1)  # fmt: skip
    assert len({tuple(row) for row in losses}) == len(W)  # every w has its own loss pattern


@pytest.mark.parametrize("d", [2, 3])
def test_separator_set_minus_one_element_is_not_a_separator(d):
    points, labels = separator_set(d)
    W = np.array(list(itertools.product((-1, 0, 1), repeat=d)), dtype=float)
    for drop in range(len(points)):
        keep = np.arange(len(points)) != drop
        losses = np.stack([zero_one_loss(points[k:k + 1], labels[k:k + 1], W)
                           for k in np.flatnonzero(keep)], axis=1)  # fmt: skip
        assert len({tuple(row) for row in losses}) < len(W)


def test_rspm_problem_adds_weighted_separator_losses(small):
    rows = small.merged()
    eta = np.random.default_rng(1).normal(0, 3, size=2 * small.d)  # negative weights included
    problem = rspm_problem(rows, eta)
    points, labels = separator_set(small.d)
    W, values = all_objectives(problem)
    for w, value in zip(W[::11], values[::11]):
        sep = np.array([zero_one_loss(points[k:k + 1], labels[k:k + 1], w)
                        for k in range(len(points))])  # fmt: skip
        assert value == pytest.approx(zero_one_loss(small.features, small.labels, w) + eta @ sep)


@pytest.mark.parametrize(
    "mechanism",
    [OPDisc(OPDiscParams(1.0, 1e-4)), RSPM(RSPMParams(1.0, 1e-4)),
     RSPM(RSPMParams(1.0, noise="laplace"))],
    ids=lambda m: m.name,
)  # fmt: skip
def test_release_is_private_only_with_a_certified_argmin(small, mechanism):
    release = run(mechanism, small.features, small.labels, ORACLE, np.random.default_rng(0))
    assert release.privacy.holds and release.certificates[0].certified
    assert "eta" not in release.noise  # the draws are never recorded beside w

    class TimedOut:
        name = "timed-out"

        def solve(self, problem):
            good = ORACLE.solve(problem)
            cert = dataclasses.replace(good.certificate, status=Status.TIME_LIMIT,
                                       bound=good.certificate.objective - 1.0)  # fmt: skip
            return Solution(good.w, cert)

    uncertified = run(mechanism, small.features, small.labels, TimedOut(),
                      np.random.default_rng(0))  # fmt: skip
    assert not uncertified.privacy.holds
    assert "not certified" in uncertified.privacy.reason
    assert uncertified.to_params()["privacy_holds"] is False
    assert uncertified.to_metrics()["privacy_holds"] == 0.0


def test_same_seed_same_release_other_seed_other_noise(small):
    mech = OPDisc(OPDiscParams(0.5, 1e-4))
    a = run(mech, small.features, small.labels, ORACLE, np.random.default_rng(5))
    b = run(mech, small.features, small.labels, ORACLE, np.random.default_rng(5))
    np.testing.assert_array_equal(a.w, b.w)
    noises = {tuple(mech.draw_noise(np.random.default_rng(s), 200, 5)["eta"].value)
              for s in range(3)}  # fmt: skip
    assert len(noises) == 3


def test_exact_erm_is_the_noise_free_optimum(small):
    release = run(ExactERM(), small.features, small.labels, ORACLE, np.random.default_rng(0))
    W, values = all_objectives(opdisc_problem(small.merged(), np.zeros(small.d + 1),
                                              OPDiscParams(1.0, 1e-4)))  # fmt: skip
    assert zero_one_loss(small.features, small.labels, release.w) == values.min()
    assert not release.privacy.holds and release.privacy.epsilon == math.inf


def test_release_records_round_trip(small):
    release = run(RSPM(RSPMParams(0.7, 1e-5)), small.features, small.labels, ORACLE,
                  np.random.default_rng(2))  # fmt: skip
    params, metrics = release.to_params(), release.to_metrics()
    assert params["mechanism"] == "rspm_gaussian" and params["requested_epsilon"] == 0.7
    assert "param.epsilon" not in params  # one name for the requested target
    # the proven calibration (SPEC 10.2), m = 2d = 10
    assert params["noise.sigma"] == pytest.approx(rspm_gaussian_sigma(0.7, 1e-5, 10))
    assert params["noise.calibration"] == "proven" and params["privacy_epsilon"] == 0.7
    assert params["privacy_holds"] is True and params["oracle_backends"] == "enumerate"
    assert all(isinstance(v, float) for v in metrics.values())
    rebuilt = Release(release.mechanism, release.w, release.privacy, release.noise,
                      release.params, release.certificates, release.timings, release.margin)
    assert rebuilt.to_params() == params
    with pytest.raises(ValueError):
        release.w[0] = 3.0
    with pytest.raises(dataclasses.FrozenInstanceError):
        release.mechanism = "x"


def test_every_release_records_the_requested_target_once(small):
    """requested_epsilon / requested_delta beside the proven privacy_epsilon / privacy_delta,
    never also param.epsilon (issue 18)."""
    releases = [run(OPDisc(OPDiscParams(0.5, 1e-5)), small.features, small.labels, ORACLE,
                    np.random.default_rng(0)),
                run_expmech(small.features, small.labels, ExpMechParams(0.5),
                            np.random.default_rng(0))]  # fmt: skip
    for release, delta in zip(releases, (1e-5, 0.0)):
        params = release.to_params()
        assert (params["requested_epsilon"], params["requested_delta"]) == (0.5, delta)
        assert (params["privacy_epsilon"], params["privacy_delta"]) == (0.5, delta)
        assert not {"param.epsilon", "param.delta"} & set(params), release.mechanism


def test_expmech_samples_from_the_exponential_distribution():
    # A tiny instance: the 27 points of {-1,0,1}^3 inside the norm ball; compare the empirical
    # distribution of 20,000 draws with exp(-eps L / 2) by a chi-square test at level 1e-3
    data = make_linear_threshold(12, 3, label_noise=0.2, seed=0)
    params = ExpMechParams(epsilon=1.0, B=1, D=math.sqrt(3))
    rng = np.random.default_rng(11)
    draws = [tuple(run_expmech(data.features, data.labels, params, rng).w) for _ in range(20_000)]
    from mechanisms.opdisc import opdisc_domain
    from oracles.base import Problem

    domain, _ = opdisc_domain(3, 1.0, 1, math.sqrt(3))
    W, losses = all_objectives(Problem.from_rows(data.merged(), domain))
    p = np.exp(-0.5 * (losses - losses.min()))
    p /= p.sum()
    index = {tuple(w): i for i, w in enumerate(W)}
    counts = np.bincount([index[w] for w in draws], minlength=len(W))
    assert stats.chisquare(counts, p * len(draws)).pvalue > 1e-3


def test_expmech_refuses_a_grid_too_large():
    data = make_linear_threshold(20, 12, seed=0)
    with pytest.raises(ValueError, match="enumerable grid"):
        run_expmech(data.features, data.labels, ExpMechParams(1.0, max_points=1000),
                    np.random.default_rng(0))  # fmt: skip


@pytest.mark.parametrize("cls", [OPDiscClassifier, RSPMClassifier, ExactERMClassifier])
def test_estimators_fit_predict_score(small, cls):
    clf = cls(epsilon=2.0, oracle="enumerate", random_state=0).fit(small.features, small.labels)
    assert clf.coef_.shape == (small.d,)
    assert clf.predict(small.features).shape == (small.n,)
    assert 0.0 <= clf.score(small.features, small.labels) <= 1.0
    assert isinstance(clf.release_.privacy, PrivacyClaim)
    assert clf.release_.privacy.delta == pytest.approx(1 / small.n**2) or cls is ExactERMClassifier


@pytest.mark.parametrize("cls", [OPDiscClassifier, RSPMClassifier])
def test_estimators_default_to_the_structured_oracle_and_agree_with_enumeration(small, cls):
    fast = cls(epsilon=2.0, random_state=0).fit(small.features, small.labels)
    exact = cls(epsilon=2.0, oracle="enumerate", random_state=0).fit(small.features, small.labels)
    (cert,) = fast.release_.certificates
    assert cert.backend == "structured" and cert.certified and fast.release_.privacy.holds
    # the same seed draws the same noise, so both solve the same problem
    assert cert.objective == pytest.approx(exact.release_.certificates[0].objective, abs=1e-6)


def test_expmech_estimator_and_unfitted_error(small):
    clf = ExpMechClassifier(epsilon=1.0, random_state=0)
    with pytest.raises(RuntimeError, match="not fitted"):
        clf.predict(small.features)
    clf.fit(small.features, small.labels)
    assert clf.release_.privacy.holds and clf.release_.privacy.delta == 0.0


@pytest.mark.parametrize(
    "make, error",
    [(lambda: OPDiscParams(0.0, 1e-5), ValueError), (lambda: OPDiscParams(1.0, 0.0), ValueError),
     (lambda: OPDiscParams(1.0, 1e-5, tau=-1), ValueError),
     (lambda: RSPMParams(1.0, noise="cauchy"), ValueError),
     (lambda: RSPMParams(1.0, 1e-5, margin=1.5), ValueError),
     (lambda: OPDiscParams("1", 1e-5), TypeError)],
)  # fmt: skip
def test_bad_parameters_are_clear_errors(make, error):
    with pytest.raises(error):
        make()


def test_bad_data_is_a_clear_error():
    with pytest.raises(ValueError, match=r"labels must be -1 or \+1, found \[0\]"):
        run(OPDisc(OPDiscParams(1.0, 1e-5)), np.ones((3, 2)), np.array([0, 1, 1]), ORACLE,
            np.random.default_rng(0))  # fmt: skip
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        run(OPDisc(OPDiscParams(1.0, 1e-5)), np.ones((3, 2)), np.array([1, 1, -1]), ORACLE, 0)


def test_merged_rows_validation():
    with pytest.raises(ValueError):
        MergedRows(np.ones((2, 2)), [1, -1], [0, 0])


# --- the secret draws: Secret in the noise, never in a release ---------------------------------


def _draw_mechanisms():
    from mechanisms.opsamp import OPSamp, OPSampParams

    # OPSamp with 3 calls: delta = 0.1 keeps gamma = sqrt(ln(4d / delta) / 6) <= 1 (Lemma 9)
    return [OPDisc(OPDiscParams(1.0, 1e-4)), RSPM(RSPMParams(1.0, 1e-4)),
            RSPM(RSPMParams(1.0, noise="laplace")), OPSamp(OPSampParams(1.0, 0.1, m=3))]


@pytest.mark.parametrize("mechanism", _draw_mechanisms(), ids=lambda m: f"{m.name}")
def test_every_draw_is_a_secret_and_no_release_records_one(small, mechanism):
    from mechanisms.base import Secret
    from oracles.convex import ConvexOracle

    noise = mechanism.draw_noise(np.random.default_rng(0), small.n, small.d)
    draws = {k: v for k, v in noise.items() if isinstance(v, Secret)}
    assert draws and all(np.ndim(v) == 0 for k, v in noise.items() if k not in draws)
    for secret in draws.values():
        shown = repr(secret) + str(secret)
        assert all(f"{x:.4f}"[:6] not in shown for x in secret.value.ravel()[:3])
    oracle = ConvexOracle() if mechanism.name == "opsamp" else ORACLE
    release = run(mechanism, small.features, small.labels, oracle, np.random.default_rng(0))
    params = release.to_params()
    assert not any(isinstance(v, Secret) or np.ndim(v) != 0 for v in params.values())
    assert not any(k.removeprefix("noise.") in draws for k in params)
    assert set(noise) - set(draws) <= set(release.noise) and not set(draws) & set(release.noise)


def test_a_non_scalar_noise_value_that_is_not_secret_is_refused():
    from mechanisms.base import Secret, noise_parameters

    assert noise_parameters({"sigma": 2.0, "eta": Secret(np.ones(3))}) == {"sigma": 2.0}
    with pytest.raises(TypeError, match=r"noise\['eta'\] is neither a scalar nor a Secret"):
        noise_parameters({"sigma": 2.0, "eta": np.ones(3)})
    with pytest.raises(TypeError, match="'eta'"):
        Release("leaky", np.zeros(2), PrivacyClaim(1.0, 0.0, True, ""), noise={"eta": [1.0]})
