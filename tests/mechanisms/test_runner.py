"""The runner (mechanisms.runner): a mechanism's explicit steps, and the release of one argmin."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.opdisc import OPDisc, OPDiscCalibration, OPDiscNoise, OPDiscParams
from mechanisms.release import Secret
from mechanisms.runner import exact_argmin_release, run, solve_sequentially
from oracles.contract.certificate import Certificate, Solution, Status
from oracles.enumerate import EnumerationOracle


class _Recorder:
    """A mechanism with the runner protocol that records what each step received."""

    name = "recorder"

    def __init__(self, refuse: bool = False) -> None:
        self.refuse, self.steps = refuse, []

    def enforce_bounds(self, X, feature_names=None):
        self.steps.append(("enforce_bounds", feature_names))
        if self.refuse:
            raise ValueError("beyond the bound")
        return X

    def draw_noise(self, rng, n, d):
        self.steps.append(("draw_noise", n, d))
        return {"draw": rng.normal()}

    def problems(self, rows, noise):
        self.steps.append(("problems", rows.n))
        return ["p0", "p1"]

    def finish(self, rows, noise, solutions, rng, timings):
        self.steps.append(("finish", list(solutions), sorted(timings)))
        return "release"


def _data():
    X = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])  # two rows merge
    return X, np.array([1, 1, -1])


def test_the_steps_run_in_order_and_the_calls_go_to_solve_many():
    mechanism, X, y = _Recorder(), *_data()
    calls = []

    def solve_many(oracle, problems):
        calls.append((oracle, list(problems)))
        return [f"solution of {p}" for p in problems]

    out = run(
        mechanism,
        X,
        y,
        "an oracle",
        np.random.default_rng(0),
        solve_many=solve_many,
        feature_names=("a", "b"),
    )
    assert out == "release" and calls == [("an oracle", ["p0", "p1"])]
    assert [s[0] for s in mechanism.steps] == ["enforce_bounds", "draw_noise", "problems", "finish"]
    assert mechanism.steps[0] == ("enforce_bounds", ("a", "b"))
    assert mechanism.steps[1] == ("draw_noise", 3, 2)  # n counts every row, merged or not
    assert mechanism.steps[3] == (
        "finish",
        ["solution of p0", "solution of p1"],
        ["prepare", "solve"],
    )


def test_data_beyond_a_bound_are_refused_before_any_noise_is_drawn():
    mechanism, X, y = _Recorder(refuse=True), *_data()
    with pytest.raises(ValueError, match="beyond the bound"):
        run(mechanism, X, y, None, np.random.default_rng(0))
    assert [s[0] for s in mechanism.steps] == ["enforce_bounds"]


def test_the_generator_must_be_explicit():
    X, y = _data()
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        run(_Recorder(), X, y, None, 0)


def test_the_sequential_solve_is_one_call_per_problem_in_order():
    class Echo:
        def solve(self, problem, budget):
            return problem * 2

    assert solve_sequentially(Echo(), [1, 2, 3]) == [2, 4, 6]


def _solution(status: Status, gap: float) -> Solution:
    certificate = Certificate(status, objective=1.0, bound=1.0 - gap, seconds=0.5, backend="x")
    return Solution(w=np.array([1.0, 0.0]), certificate=certificate)


@pytest.mark.parametrize(
    "status, gap, holds", [(Status.OPTIMAL, 0.0, True), (Status.TIME_LIMIT, 0.5, False)]
)
def test_one_argmin_is_private_only_when_certified(status, gap, holds):
    params = OPDiscParams(0.5, 1e-6)
    calibration = OPDiscCalibration(
        rule="paper", proven_epsilon=0.75, proven_delta=1e-6, sigma=2.0, D=1.0, B=1.0, tau=1.0
    )
    noise = OPDiscNoise(calibration, Secret(np.zeros(2)))
    release = exact_argmin_release(
        "opdisc", params, noise, [_solution(status, gap)], {"solve": 0.5}, needs="an exact argmin"
    )
    claim = release.privacy
    assert claim.holds is holds
    # the proven (epsilon, delta) for the noise used, the requested one beside it
    assert (claim.epsilon, claim.delta) == (0.75, 1e-6) and claim.requested_epsilon == 0.5
    assert release.timings["total"] == 0.5 and release.noise["sigma"] == 2.0
    assert claim.calibration == "paper" and "proven_epsilon" not in release.noise


def test_a_real_mechanism_through_the_runner_matches_its_exact_argmin():
    X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.0, 0.0]])
    y = np.array([1, -1, 1, -1])
    release = run(
        OPDisc(OPDiscParams(2.0, 1e-4)), X, y, EnumerationOracle(), np.random.default_rng(1)
    )
    (certificate,) = release.certificates
    assert certificate.certified and release.privacy.holds
    assert release.w.shape == (2,)
