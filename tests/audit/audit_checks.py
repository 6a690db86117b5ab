"""What the audit tests of the mechanisms (test_audits.py) and of the mutants (test_mutants.py)
share: the mutants each is expected to catch or not, and the checks of a run's reports; and the
one-pair audit the unit tests (test_core.py, test_stats.py) run."""

from __future__ import annotations

from mechanisms.audit.core import audit_pair
from mechanisms.audit.mutants import MUTANTS
from tests.audit.conftest import CONFIDENCE

CAUGHT = [m for m in MUTANTS if not m.undetectable]
#: Mutants shown within the claim by the exact epsilon of every d = 1 replacement; those of the
#: audit at d >= 5 are checked in tests/audit/test_highdim.py.
NOT_DETECTABLE = [
    m for m in MUTANTS if m.undetectable and m.mechanism in ("opdisc", "rspm_gaussian")
]


def report_lines(reports) -> str:
    return "\n".join(r.line() for r in reports)


def check_mechanism(reports, mechanism, min_decisive=3):
    own = [r for r in reports if not r.is_mutant]
    print("\n" + report_lines(own))
    decisive = len({r.pair for r in own if r.decisive})
    assert decisive >= min_decisive, f"at least {min_decisive} decisive pairs, found {decisive}"
    broken = [r for r in own if r.decisive and r.exceeds_claim]
    assert not broken, f"{mechanism} exceeds its claim:\n{report_lines(broken)}"


def check_mutant(reports, mutant):
    own = [r for r in reports if r.variant == mutant.name]
    print("\n" + report_lines(own))
    assert own, f"no reports for mutant {mutant.name}"
    assert any(r.catches for r in own), (
        f"mutant {mutant.mechanism}/{mutant.name} not caught:\n" + report_lines(own)
    )


#: What a unit test's one-pair audit claims and draws unless the test says otherwise.
AUDIT_DEFAULTS = {"mechanism": "m", "variant": "v", "epsilon": 1.0, "delta": 0.0, "seed": 0}


def audit_one(sampler, pair, samples, **named):
    """``audit_pair`` at the tests' confidence (conftest.CONFIDENCE) with AUDIT_DEFAULTS for what
    ``named`` leaves out: the unit tests vary the sampler, the sample size and what they assert."""
    return audit_pair(
        sampler, pair, samples=samples, confidence=CONFIDENCE, **(AUDIT_DEFAULTS | named)
    )
