"""The audit's result record and its markdown table (mechanisms.audit.audit_report)."""

from __future__ import annotations

import pytest

from mechanisms.audit import AuditReport, audit_table


def _report(**changes) -> AuditReport:
    base = dict(
        mechanism="opdisc",
        variant="correct",
        pair="flip",
        relation="replace",
        claimed_epsilon=1.0,
        claimed_delta=1e-5,
        eps_lb_forward=0.25,
        eps_lb_backward=0.5,
        samples=1000,
        confidence=0.95,
        seed=3,
        event_forward="{w=(0)}",
        event_backward="s >= 1",
        count_forward_d=10,
        count_forward_d_prime=2,
        count_backward_d_prime=7,
        count_backward_d=1,
        seconds=0.5,
    )
    return AuditReport(**(base | changes))


def test_report_round_trips_through_params_and_metrics():
    report = _report(finding="a bug", claim_relation="add_remove")
    params, metrics = report.to_params(), report.to_metrics()
    assert metrics["audit.eps_lb"] == 0.5 and metrics["audit.exceeds_claim"] == 0.0
    assert all(isinstance(v, float) for v in metrics.values())
    assert AuditReport.from_record(params, metrics) == report


def test_report_validation_names_the_field():
    with pytest.raises(ValueError, match="eps_lb_forward must be finite and >= 0, found -1"):
        _report(eps_lb_forward=-1.0)
    with pytest.raises(ValueError, match="samples must be >= 2"):
        _report(samples=1)


def test_table_has_one_row_per_report_and_the_verdicts():
    reports = [
        _report(),
        _report(variant="mutant_a", eps_lb_forward=2.0),
        _report(variant="mutant_a", pair="other"),
        _report(variant="mutant_b"),
        _report(pair="bug", eps_lb_backward=3.0, finding="known"),
    ]
    table = audit_table(reports)
    rows = [line for line in table.splitlines() if line.startswith("| opdisc")]
    assert len(rows) == 5
    assert rows[0].endswith("| ok |")
    assert rows[1].endswith("| **caught** |") and rows[2].endswith("| caught (other pair) |")
    assert rows[3].endswith("| NOT caught |")
    assert rows[4].endswith("| VIOLATION (finding) |")
    assert "| (1, 1e-05) |" in rows[0] and "| 0.250 | 0.500 | 1,000 |" in rows[0]
    assert "confidence 0.95" in table


def test_verdict_properties_follow_the_claim_its_relation_and_findings():
    within = _report()
    assert within.eps_lb == 0.5 and not within.exceeds_claim and not within.is_mutant
    assert within.eval_samples == 500 and _report(samples=7).eval_samples == 4
    above = _report(variant="m", eps_lb_forward=1.5)
    assert above.eps_lb == 1.5 and above.exceeds_claim and above.is_mutant and above.catches
    # a pair outside the claim's relation, or with a known finding, is not decisive
    other_relation = _report(variant="m", eps_lb_forward=1.5, relation="add_remove")
    assert not other_relation.in_claim_scope and not other_relation.catches
    assert not _report(variant="m", eps_lb_forward=1.5, finding="bug").catches
    assert not _report(eps_lb_forward=1.5).catches  # the mechanism itself is never "caught"
    # exactly at the claim is within it
    assert not _report(eps_lb_forward=1.0, eps_lb_backward=1.0).exceeds_claim


def test_table_marks_a_mutant_on_a_finding_pair_and_an_empty_table_has_only_the_header():
    table = audit_table([_report(variant="m", finding="bug", eps_lb_forward=2.0)])
    assert table.splitlines()[2].endswith("| n/a (finding) |")
    header = audit_table([_report()]).splitlines()[:2]
    assert audit_table([]).splitlines() == header and header[1] == "|" + "---|" * 9
    both = audit_table([_report(), _report(confidence=0.99)])
    assert "confidence 0.95, 0.99 per pair" in both


def test_report_rejects_a_confidence_outside_0_1_and_a_non_finite_bound():
    with pytest.raises(ValueError, match=r"confidence must be in \(0, 1\), found 1.0"):
        _report(confidence=1.0)
    with pytest.raises(ValueError, match="eps_lb_backward must be finite"):
        _report(eps_lb_backward=float("inf"))


def test_line_states_the_bounds_the_claim_and_a_known_finding():
    line = _report(pair="bug", eps_lb_backward=3.0, finding="known").line()
    assert line.startswith(
        "opdisc[correct] bug (replace): eps_lb 0.250 / 3.000 vs claimed "
        "(1, 1e-05) -> EXCEEDS (known finding); 1000 samples/dataset"
    )
    assert line.endswith("counts 10/2, 7/1")
    assert "-> within;" in _report().line()
