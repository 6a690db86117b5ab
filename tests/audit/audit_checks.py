"""What the audit tests of the mechanisms (test_audits.py) and of the mutants (test_mutants.py)
share: the mutants each is expected to catch or not, and the checks of a run's reports."""

from __future__ import annotations

from mechanisms.audit.mutants import MUTANTS

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
