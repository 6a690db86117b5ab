"""AutoOracle (``oracles.auto``): the oracle contract; it falls back only when a backend cannot
run, and says why (SPEC section 8)."""

from __future__ import annotations

import sys

import pytest

from oracles.auto import AutoOracle
from oracles.base import Status
from oracles.gurobi import ERRNO_SIZE_LIMIT, GurobiOracle, LicenceLimitError
from oracles.mip import SolverUnavailableError
from oracles.registry import make_oracle
from tests.oracles.contract import OracleContract, hard_instance, make_instance
from tests.oracles.fuzz import fuzz_instance
from tests.oracles.licence import require_gurobi_licence


class TestAuto(OracleContract):
    @classmethod
    def make_oracle(cls, **options):
        return make_oracle("auto", **options)


def test_missing_gurobipy_falls_back_to_highs(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)  # makes `import gurobipy` fail
    cert = AutoOracle().solve(make_instance(3)).certificate
    assert cert.backend == "highs" and cert.certified
    assert cert.fallback.startswith("gurobi: gurobipy is not importable (")
    assert cert.fallback.endswith(") -> highs")


def test_no_fallback_when_the_first_backend_runs():
    cert = AutoOracle(prefer=("highs",)).solve(make_instance(4)).certificate
    assert cert.backend == "highs" and cert.fallback is None


def test_every_backend_unavailable_raises_with_the_chain(monkeypatch):
    monkeypatch.setitem(sys.modules, "gurobipy", None)
    with pytest.raises(SolverUnavailableError, match="no backend of \\('gurobi',\\) could run"):
        AutoOracle(prefer=("gurobi",)).solve(make_instance(0))


def test_a_time_limit_is_reported_not_retried_elsewhere():
    """An uncertified answer is returned as it is: no silent retry on another backend."""
    cert = AutoOracle(time_limit=0.2, prefer=("highs", "gurobi")).solve(hard_instance()).certificate
    assert cert.backend == "highs" and cert.fallback is None
    assert cert.status in (Status.TIME_LIMIT, Status.NO_SOLUTION) and not cert.certified


@pytest.mark.parametrize("prefer", [(), ("cplex",), ("highs", "highs")])
def test_prefer_is_validated_with_the_value_quoted(prefer):
    with pytest.raises(ValueError, match="prefer must be distinct names"):
        AutoOracle(prefer=prefer)


def test_options_reach_every_backend():
    oracle = AutoOracle(time_limit=12.0, threads=2, strict_eps=1e-5, prefer=("highs", "gurobi"))
    backends = oracle.backends()
    assert [b.name for b in backends] == ["highs", "gurobi"]
    assert all((b.time_limit, b.threads, b.strict_eps) == (12.0, 2, 1e-5) for b in backends)
    assert AutoOracle(prefer="highs").prefer == ("highs",)


def test_gurobi_over_its_licence_after_the_first_model_is_not_retried_elsewhere(monkeypatch):
    """Band cuts (a second model) over the licence: Gurobi ran, so the answer is its own,
    uncertified, and AutoOracle does not hand the problem to HiGHS (SPEC section 8)."""
    require_gurobi_licence()
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
