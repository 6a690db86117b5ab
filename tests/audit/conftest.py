"""The default audit runs once per session; its table is printed at the end of the run."""

from __future__ import annotations

import logging

import pytest

from mechanisms.audit import audit_table, mechanism_audit, run_audit

#: Fixed seed and confidence of the test audits (STYLE: statistical tests state their error).
SEED = 0
CONFIDENCE = 0.95

_REPORTS: dict[tuple[str, str], list] = {}

# dp-accounting's RDP accountant logs a warning per excluded order when it calibrates q = 1/2
# (DP-SGD pairs): harmless here (it only drops orders), and it would bury the audit's figures
logging.getLogger("absl").setLevel(logging.ERROR)


def audit_reports(mechanism: str, scale: str = "default") -> list:
    """run_audit(mechanism, mutants included) at the audits' default (or slow) sample size,
    once per session."""
    key = (mechanism, scale)
    if key not in _REPORTS:
        audit = mechanism_audit(mechanism)
        samples = audit.default_samples if scale == "default" else audit.slow_samples
        _REPORTS[key] = run_audit(
            mechanism, samples=samples, confidence=CONFIDENCE, seed=SEED, include_mutants=True
        )
    return _REPORTS[key]


@pytest.fixture(scope="session")
def reports_of():
    return audit_reports


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    for scale in ("default", "slow"):
        reports = [r for (m, s), rs in _REPORTS.items() if s == scale for r in rs]
        if reports:
            terminalreporter.write_sep("=", f"privacy audit ({scale} sample sizes, seed {SEED})")
            terminalreporter.write_line(audit_table(reports))
