"""Statistical privacy audit of the mechanisms (DP testers in the style of StatDP, DP-Sniper).

For a mechanism, a pair of neighbouring datasets and many independent releases on each, the
audit chooses an output event on half of the releases and bounds epsilon from below on the
other half with Clopper-Pearson intervals (mechanisms.audit.stats). A bound above the claimed
epsilon refutes the claim; every mechanism must stay below it, every mutant
(mechanisms/audit/mutants.py) must be caught.

    from mechanisms.audit import run_audit, audit_table
    reports = run_audit("opdisc", samples=200_000, confidence=0.95, seed=0, include_mutants=True)
    print(audit_table(reports))
"""

from mechanisms.audit.audit_report import CORRECT, AuditReport, audit_table
from mechanisms.audit.audits import AUDITS, MechanismAudit, mechanism_audit, run_audit
from mechanisms.audit.core import NeighbouringPair, audit_pair

__all__ = [
    "AUDITS",
    "CORRECT",
    "AuditReport",
    "MechanismAudit",
    "NeighbouringPair",
    "audit_pair",
    "audit_table",
    "mechanism_audit",
    "run_audit",
]
