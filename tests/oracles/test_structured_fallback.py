"""The structured oracle's fallback goes through AutoOracle's rule (issue 19, item 3; SPEC 8).

Gurobi solves the reference formulation when its licence takes the model, HiGHS when it does
not (the licence reason in the certificate's ``fallback``), and a backend that ran is never
retried elsewhere. Both answers are checked against brute force (``tests/oracles/fuzz.py``).
The Gurobi asserts are skipped only when Gurobi has no licence at all (errno 10009), as
``tests/oracles/test_fuzz.py`` does.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from oracles.base import OBJECTIVE_TOL, IntegerGrid, Problem, Status
from oracles.gurobi import ERRNO_SIZE_LIMIT, GurobiOracle, LicenceLimitError
from oracles.mip import SolverUnavailableError, build_milp
from oracles.objective import MergedRows
from oracles.structured import StructuredOracle, has_noise
from tests.oracles.fuzz import brute_force, fuzz_instance
from tests.oracles.licence import require_gurobi_licence

#: Gurobi's pip licence (SPEC section 8).
LICENCE_LIMIT = 2000


def _large_instance(seed: int = 0, n: int = 1100) -> Problem:
    """Exact 0/1 ERM with d = 3 continuous columns over a 5^3 grid: brute force is cheap, but
    n distinct rows make the reference model exceed the licence (2 rows per active row)."""
    rng = np.random.default_rng(seed)
    X = np.round(rng.uniform(-1, 1, size=(n, 3)), 3)
    y = np.where(X @ np.array([1.0, -0.5, 0.25]) + rng.normal(0, 0.3, n) >= 0.1, 1, -1)
    rows = MergedRows.from_xy(X, y)
    return Problem.from_rows(rows, IntegerGrid(3, 2, 1.0), margin=0.1, label="large")


def _assert_exact(problem: Problem, solution) -> None:
    truth = brute_force(problem)
    cert = solution.certificate
    assert cert.certified, cert
    assert float(truth.value_at(solution.w) - truth.minimum) <= OBJECTIVE_TOL
    assert abs(cert.objective - float(truth.minimum)) <= 1e-9 * max(1.0, abs(cert.objective))


def erm_instance(seed: int) -> Problem:
    """The fuzz's OPDisc instance ``seed`` without its noise: exact 0/1 ERM, whose fallback is
    the reference (no noise for the window oracle to prune by)."""
    problem = fuzz_instance(seed)
    return dataclasses.replace(problem, linear=np.zeros(problem.d), norm_coef=0.0)


@pytest.mark.parametrize("seed", [0, 4, 8, 12])
def test_a_fallback_within_the_licence_is_solved_by_gurobi(seed):
    require_gurobi_licence()
    problem = erm_instance(seed)
    assert not has_noise(problem)
    milp = build_milp(problem)
    assert milp.n_cols <= LICENCE_LIMIT and milp.n_rows <= LICENCE_LIMIT
    solution = StructuredOracle(time_limit=60.0, max_combos=1).solve(problem)
    cert = solution.certificate
    # the premise: these instances have more than one combination, so max_combos=1 falls back
    assert cert.fallback is not None, cert
    assert cert.backend == "gurobi", cert
    assert cert.fallback.startswith("structured: ") and cert.fallback.endswith(" -> gurobi")
    assert "max_combos=1" in cert.fallback
    _assert_exact(problem, solution)


def test_a_fallback_over_the_licence_is_solved_by_highs_with_the_licence_reason():
    require_gurobi_licence()
    problem = _large_instance()
    milp = build_milp(problem)
    assert milp.n_rows > LICENCE_LIMIT  # the premise: Gurobi's licence refuses this model
    solution = StructuredOracle(time_limit=120.0, max_combos=1).solve(problem)
    cert = solution.certificate
    assert cert.backend == "highs", cert
    assert cert.fallback.startswith("structured: ")
    assert f"-> gurobi: errno {ERRNO_SIZE_LIMIT} (licence limit: " in cert.fallback
    assert cert.fallback.endswith(" -> highs")
    _assert_exact(problem, solution)


def test_the_same_problem_on_either_backend_certifies_the_same_minimum():
    require_gurobi_licence()
    problem = erm_instance(4)
    on_gurobi = StructuredOracle(max_combos=1, reference=("gurobi",)).solve(problem)
    on_highs = StructuredOracle(max_combos=1, reference=("highs",)).solve(problem)
    assert on_gurobi.certificate.fallback is not None  # the premise: a fallback happened
    assert on_gurobi.certificate.backend == "gurobi" and on_highs.certificate.backend == "highs"
    assert abs(on_gurobi.certificate.objective - on_highs.certificate.objective) <= OBJECTIVE_TOL
    _assert_exact(problem, on_gurobi)
    _assert_exact(problem, on_highs)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])  # OPDisc, OPDisc, RSPM, near-margin OPDisc
def test_a_noisy_problem_without_the_shape_goes_to_the_window_oracle(seed):
    problem = fuzz_instance(seed)
    assert has_noise(problem)
    solution = StructuredOracle(time_limit=60.0, max_combos=1).solve(problem)
    cert = solution.certificate
    assert cert.backend == "window", cert
    assert cert.fallback.startswith("structured: ") and cert.fallback.endswith(" -> window")
    _assert_exact(problem, solution)


def test_the_fallback_gets_the_time_left_and_the_threads(monkeypatch):
    """Options reach the fallback: the remaining time (not the whole limit) and the threads."""
    from oracles import auto

    seen = []

    class Recorder:
        name = "highs"

        def __init__(self, *, time_limit, threads, strict_eps):
            seen.append((time_limit, threads))

        def solve(self, problem):
            raise SolverUnavailableError("recorded")

    monkeypatch.setitem(auto.BACKENDS, "highs", Recorder)
    oracle = StructuredOracle(time_limit=50.0, threads=2, max_combos=1, reference=("highs",))
    with pytest.raises(SolverUnavailableError, match="recorded"):
        oracle.fallback(fuzz_instance(1), "test", start=__import__("time").perf_counter() - 20)
    ((time_limit, threads),) = seen[-1:]
    assert threads == 2 and 29.0 < time_limit <= 30.0


def test_a_time_limited_fallback_is_reported_not_retried(monkeypatch):
    """A backend that ran and did not certify is the answer (SPEC 8): HiGHS is never asked."""
    from oracles import auto
    from oracles.base import certify

    class Stops:
        name = "gurobi"

        def __init__(self, **options):
            pass

        def solve(self, problem):
            return certify(problem, np.zeros(problem.d), status=Status.TIME_LIMIT,
                           bound=-1e9, seconds=1.0, backend="gurobi")  # fmt: skip

    class Never(Stops):
        def solve(self, problem):
            raise AssertionError("retried on another backend")

    monkeypatch.setitem(auto.BACKENDS, "gurobi", Stops)
    monkeypatch.setitem(auto.BACKENDS, "highs", Never)
    cert = StructuredOracle(max_combos=1).fallback(fuzz_instance(1), "test", start=0.0)
    cert = cert.certificate
    assert cert.backend == "gurobi" and cert.status is Status.TIME_LIMIT and not cert.certified
    assert cert.fallback == "structured: test -> gurobi"


@pytest.mark.parametrize("reference", [(), ("cplex",), ("highs", "highs")])
def test_reference_is_validated(reference):
    with pytest.raises(ValueError, match="prefer must be distinct names"):
        StructuredOracle(reference=reference)


def test_gurobi_over_its_licence_after_the_first_model_is_not_retried_elsewhere(monkeypatch):
    """Band cuts (a second model) over the licence: Gurobi ran, so the answer is its own,
    uncertified, and AutoOracle does not hand the problem to HiGHS (SPEC section 8)."""
    require_gurobi_licence()
    from oracles.auto import AutoOracle

    problem = fuzz_instance(7)  # Gurobi needs a second model (band cuts) on this one
    assert GurobiOracle().solve(problem).certificate.extra["band_rounds"] == 2
    real = GurobiOracle._run
    calls = []

    def run(self, gp, milp, time_limit):
        calls.append(milp.n_cols)
        if len(calls) > 1:
            raise LicenceLimitError(ERRNO_SIZE_LIMIT, 2001, 2001)
        return real(self, gp, milp, time_limit)

    monkeypatch.setattr(GurobiOracle, "_run", run)
    cert = AutoOracle(time_limit=30.0).solve(problem).certificate
    assert len(calls) == 2
    assert cert.backend == "gurobi" and cert.fallback is None
    assert cert.status is Status.ERROR and not cert.certified
    assert "took the model over Gurobi's licence" in cert.message
