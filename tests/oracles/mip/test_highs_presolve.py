"""HiGHS's MIP presolve certifies false optima: the oracles must not pass them on.

``cases/highs_presolve_false_optimum.json`` (from ``../shared/cases/``) is an OPDisc-shaped
problem, d = 2, 20 rows, on which HiGHS 1.16.0 with its default presolve returns kOptimal at
w = (0, -1) with a dual bound equal to that point's value, while w = (0, -2) is lower by 7.1e-4.
``oracles.mip.highs`` turns the offending reductions off (``PRESOLVE_RULES_OFF``); these tests pin
that down and check that the fuzz suite's parallel-row family (``fuzz.parallel_instance``)
reaches the bug when the reductions are left on, so that its zero count means something.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from core.problem import IntegerGrid, Problem
from oracles.mip.highs import PRESOLVE_RULES_OFF, HighsOracle, highs_lp
from oracles.mip.formulation import build_milp
from oracles.routing.registry import make_oracle
from oracles.contract.stats import MipStats
from tests.oracles.fuzz import Tally, brute_force, judge, parallel_instance
from tests.oracles.limited import limited, on_limits

CASE = Path(__file__).parent.parent / "cases" / "highs_presolve_false_optimum.json"


@dataclass(frozen=True)
class _ComparisonHighs(HighsOracle):
    """HighsOracle with another presolve setting (``mask``: the reductions turned off, None:
    presolve off altogether) and with or without its second opinion: what the oracle would
    answer without its safeguards, for these tests only."""

    mask: int | None = 0
    twice: bool = False

    @property
    def asks_twice(self) -> bool:
        return self.twice

    def solver_options(self, threads: int, tol: float, time_limit: float) -> dict[str, object]:
        options = super().solver_options(threads, tol, time_limit)
        if self.mask is None:
            return {**options, "presolve": "off"}
        return {**options, "presolve_rule_off": self.mask}


#: Seeds of ``parallel_instance`` on which HiGHS 1.16.0 with every presolve reduction on
#: certified a false optimum (measured: 6 of the first 1,300 seeds; these four are fast).
PRESOLVE_BUG_SEEDS = (3, 134, 322, 420)


def load_case() -> tuple[Problem, dict]:
    case = json.loads(CASE.read_text())
    problem = Problem(
        np.array(case["points"]),
        np.array(case["pos"]),
        np.array(case["neg"]),
        IntegerGrid(**case["domain"]),
        linear=np.array(case["linear"]),
        norm_coef=case["norm_coef"],
        norm_radius_sq=case["norm_radius_sq"],
        margin=case["margin"],
        label="highs_presolve_false_optimum",
    )
    return problem, case


def test_the_case_is_what_it_says():
    """The brute force agrees with the case file: its argmin, and the point HiGHS certified
    with presolve on is worse."""
    problem, case = load_case()
    truth = brute_force(problem)
    assert truth.value_at(np.array(case["argmin"])) == truth.minimum
    wrong = truth.value_at(np.array(case["highs_1_16_presolve_on_returns"]))
    assert float(wrong - truth.minimum) == pytest.approx(7.1e-4, rel=0.01)
    assert float(truth.minimum) == pytest.approx(case["argmin_objective"], abs=1e-12)


def test_with_the_reductions_on_highs_certifies_the_wrong_point():
    """The bug this guards against, reproduced (if a HiGHS release fixes it, this test fails:
    re-fuzz that release and then raise the pin in pyproject)."""
    problem, case = load_case()
    solution = on_limits(limited(_ComparisonHighs(mask=0, twice=False), 30.0), problem)
    assert solution.certificate.certified
    assert solution.w.tolist() == case["highs_1_16_presolve_on_returns"]


@pytest.mark.parametrize("name", ["highs", "auto", "structured"])
def test_the_case_certifies_its_true_argmin(name):
    problem, case = load_case()
    solution = on_limits(make_oracle(name, time_limit=30.0), problem)
    cert = solution.certificate
    assert cert.certified, cert.message
    assert solution.w.tolist() == case["argmin"]
    assert cert.objective == pytest.approx(case["argmin_objective"], abs=1e-12)


def test_highs_is_asked_to_turn_the_reductions_off():
    problem, _ = load_case()
    solution = on_limits(limited(HighsOracle(), 30.0), problem)
    assert solution.certificate.stat(MipStats).presolve_rule_off == PRESOLVE_RULES_OFF
    options = HighsOracle().solver_options(1, 1e-7, 10.0)
    assert options["presolve_rule_off"] == PRESOLVE_RULES_OFF


def test_the_rule_bits_mean_what_the_oracle_assumes(capfd):
    """HiGHS prints its rule numbering with ``presolve_rule_logging``; a release that renumbers
    the reductions would make ``PRESOLVE_RULES_OFF`` turn off something else."""
    import highspy  # a dependency: its absence is a failure, not a skip

    problem, _ = load_case()
    milp = build_milp(problem)
    h = highspy.Highs()
    h.setOptionValue("presolve_rule_logging", True)
    h.setOptionValue("log_dev_level", 1)  # the rule table is a developer-level log
    h.passModel(highs_lp(highspy, milp))
    h.run()
    out = capfd.readouterr().out
    expected = {13: "Parallel rows and columns", 15: "Probing", 20: "Dual-fixing probing"}
    for bit, name in expected.items():
        if PRESOLVE_RULES_OFF & (1 << bit):
            assert f"(set bit {bit:2d} = {1 << bit:7d}): {name}" in out, out


def test_the_parallel_family_reaches_the_bug():
    """With the reductions on, the parallel-row instances give false certificates; with the
    oracle's setting, none on the same instances."""
    unsafe, safe = Tally("presolve on"), Tally("highs")
    for seed in PRESOLVE_BUG_SEEDS:
        problem = parallel_instance(seed)
        truth = brute_force(problem)
        judge(
            unsafe,
            seed,
            problem,
            truth,
            on_limits(limited(_ComparisonHighs(mask=0, twice=False), 30.0), problem),
        )
        judge(safe, seed, problem, truth, on_limits(limited(HighsOracle(), 30.0), problem))
    assert unsafe.false == len(PRESOLVE_BUG_SEEDS), unsafe.line()
    assert safe.false == 0, "\n".join(safe.failures)


#: A parallel-row instance on which HiGHS with ``PRESOLVE_RULES_OFF`` alone (probing on)
#: certified F = 18.60 where the minimum is 15.31 (measured: 1 of 5,300 such instances).
RULES_ALONE_FALSE_SEED = 211


def test_the_second_opinion_catches_what_the_rules_alone_miss():
    problem = parallel_instance(RULES_ALONE_FALSE_SEED)
    truth = brute_force(problem)
    alone = limited(_ComparisonHighs(mask=PRESOLVE_RULES_OFF, twice=False), 30.0)
    first = alone.solve(problem, alone.budget())
    assert first.certificate.certified
    assert float(truth.value_at(first.w) - truth.minimum) > 3.0  # the false certificate
    solution = on_limits(limited(HighsOracle(), 30.0), problem)
    cert = solution.certificate
    assert not cert.certified and cert.status.value == "inconsistent", cert.message
    assert "refuted" in cert.message
    assert truth.value_at(solution.w) == truth.minimum  # the refuting point is the argmin here


def test_a_confirmed_certificate_records_both_bounds():
    problem, case = load_case()
    cert = on_limits(limited(HighsOracle(), 30.0), problem).certificate
    assert cert.certified
    assert cert.stat(MipStats).second_opinion_bound >= cert.objective - 1e-6
    assert cert.bound == min(
        cert.stat(MipStats).first_bound, cert.stat(MipStats).second_opinion_bound
    )
