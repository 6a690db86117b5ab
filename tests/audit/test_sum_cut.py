"""The audit at d >= 5 at any d (mechanisms.audit.sum_cut): ``audit_sum_cut`` and its command line,
on small d and few samples (the figures are not the point here: the wiring is)."""

from __future__ import annotations

import dataclasses

import pytest

from mechanisms.audit.audits import audit_variant, mechanism_audit
from mechanisms.audit.sum_cut import audit_sum_cut, main


def _same(a, b) -> bool:
    return dataclasses.replace(a, seconds=0.0) == dataclasses.replace(b, seconds=0.0)


def test_at_a_registered_d_it_is_the_registrys_audit_of_that_pair():
    audit = mechanism_audit("opdisc_d5")
    registry = audit_variant(
        audit, "correct", audit.make_sampler, samples=400, confidence=0.95, seed=3
    )
    (report,) = audit_sum_cut("opdisc_d5", 23, samples=400, seed=3)
    (same_pair,) = [r for r in registry if r.pair == "sum_cut_d23"]
    assert _same(report, same_pair)


def test_one_report_per_variant_in_order_at_any_d():
    reports = audit_sum_cut(
        "rspm_gaussian_d5", 7, samples=200, confidence=0.9, seed=1, variants=("paper", "correct")
    )
    assert [r.variant for r in reports] == ["paper", "correct"]
    for r in reports:
        assert r.pair == "sum_cut_d7" and r.mechanism == "rspm_gaussian_d5"
        assert (r.claimed_epsilon, r.claimed_delta) == (1.0, 1e-5)
        assert (r.samples, r.confidence, r.seed) == (200, 0.9, 1)
    again = audit_sum_cut(
        "rspm_gaussian_d5", 7, samples=200, confidence=0.9, seed=1, variants=("correct",)
    )
    assert _same(again[0], reports[1])  # a variant's draws do not depend on the others


def test_unknown_variants_and_mechanisms_are_refused_by_name():
    with pytest.raises(
        ValueError,
        match=r"unknown variants \['nope'\] of opdisc_d5; known: "
        r"\['correct', 'paper', 'paper_code'\]",
    ):
        audit_sum_cut("opdisc_d5", 5, samples=100, variants=("correct", "nope"))
    with pytest.raises(ValueError, match="unknown mechanism 'opdisc_d6'"):
        audit_sum_cut("opdisc_d6", 5, samples=100)


def test_the_command_line_prints_a_line_per_variant_and_the_table(capsys):
    main(
        [
            "opdisc_d5",
            "--d",
            "6",
            "--samples",
            "300",
            "--seed",
            "2",
            "--variants",
            "correct",
            "paper",
        ]
    )
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("opdisc_d5[correct] sum_cut_d6 (replace): eps_lb ")
    assert out[1].startswith("opdisc_d5[paper] sum_cut_d6 (replace): eps_lb ")
    assert out[0].endswith(" s") and "300 samples/dataset" in out[0]
    rows = [line for line in out if line.startswith("| opdisc_d5 |")]
    assert [row.split(" | ")[1] for row in rows] == ["correct", "paper"]


@pytest.mark.parametrize(
    "argv, message",
    [
        (["opsamp", "--d", "6"], "invalid choice: 'opsamp'"),
        (["opdisc_d5"], "the following arguments are required: --d"),
    ],
)
def test_bad_command_lines_are_usage_errors(argv, message, capsys):
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2 and message in capsys.readouterr().err
