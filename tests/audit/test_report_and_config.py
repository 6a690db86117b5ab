"""AuditReport records, the markdown table, run_audit's arguments, pairs, and conf/audit/*.yaml."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from pipeline.audit import (AUDITS, AuditReport, NeighbouringPair, audit_table, mechanism_audit,
                            run_audit)  # fmt: skip

CONF = Path(__file__).resolve().parents[2] / "conf" / "audit"


def _report(**changes) -> AuditReport:
    base = dict(
        mechanism="opdisc", variant="correct", pair="flip", relation="replace",
        claimed_epsilon=1.0, claimed_delta=1e-5, eps_lb_forward=0.25, eps_lb_backward=0.5,
        samples=1000, confidence=0.95, seed=3, event_forward="{w=(0)}", event_backward="s >= 1",
        count_forward_d=10, count_forward_d_prime=2, count_backward_d_prime=7,
        count_backward_d=1, seconds=0.5,
    )  # fmt: skip
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


def test_run_audit_checks_its_arguments():
    with pytest.raises(ValueError, match="unknown mechanism 'nope'"):
        run_audit("nope", samples=100, confidence=0.95, seed=0)
    with pytest.raises(ValueError, match="samples must be an integer >= 4, found 2"):
        run_audit("opdisc", samples=2, confidence=0.95, seed=0)
    with pytest.raises(ValueError, match="confidence must be in"):
        run_audit("opdisc", samples=100, confidence=95, seed=0)


def test_run_audit_is_reproducible_and_order_free():
    a = run_audit("expmech", samples=2_000, confidence=0.95, seed=4, include_mutants=True)
    b = run_audit("expmech", samples=2_000, confidence=0.95, seed=4, include_mutants=True)
    strip = [dataclasses.replace(r, seconds=0.0) for r in a]
    assert strip == [dataclasses.replace(r, seconds=0.0) for r in b]
    assert {r.variant for r in a} == {"correct", "without_half"}


def test_pairs_are_neighbours():
    with pytest.raises(ValueError, match="exactly one differing row"):
        NeighbouringPair("bad", np.zeros((2, 1)), [1, 1], np.ones((2, 1)), [1, 1])
    with pytest.raises(ValueError, match="D' = D plus one last row"):
        NeighbouringPair("bad", np.zeros((2, 1)), [1, 1], np.ones((3, 1)), [1, 1, 1],
                         relation="add_remove")  # fmt: skip
    for name in AUDITS:
        pairs = mechanism_audit(name).pairs()
        assert len(pairs) >= 3 and len({p.name for p in pairs}) == len(pairs)


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_yaml_mirrors_the_registry(name):
    path = CONF / f"{name}.yaml"
    text = path.read_text()
    assert text.startswith("# @package _global_\n")
    node = OmegaConf.load(path)
    audit = mechanism_audit(name)
    # only what differs from the schema (pipeline.config.AuditConfig): conf/ holds a default once
    assert OmegaConf.to_container(node.audit) == {"mechanism": name}
    assert audit.default_samples >= 4  # what samples: null means (run_audit)
    assert list(node.defaults) == ["/schema/audit/audit@audit"]
    # every key is a keyword argument of run_audit (the pipeline passes the node through)
    keywords = set(inspect.signature(run_audit).parameters)
    assert set(node.audit) <= keywords


def test_audit_yaml_composes_with_the_registered_schema():
    import pipeline.config as config

    from hydra import compose, initialize_config_dir

    config.register()
    with initialize_config_dir(config_dir=str(CONF.parent), version_base=None):
        cfg = compose(config_name="config", overrides=["+audit=opdisc"])
    assert cfg.audit.mechanism == "opdisc" and cfg.audit.samples is None
