"""The audits (mechanisms.audit.audits): ``run_audit`` of every mechanism at 95%
confidence with seed 0, its arguments, and conf/audit/*.yaml.

* every mechanism as implemented: eps_lb <= claimed epsilon on every decisive pair;
* known findings (pairs with ``finding``): the mechanism exceeds its claim there, as reported.

The mutants' side of the same runs is in test_mutants.py, the audit's soundness against the
exact epsilon in test_core.py. Default sample sizes keep all of this within a few minutes on
one core; ``-m slow`` reruns it at the audits' larger sizes.
"""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
from omegaconf import OmegaConf

from mechanisms.audit import AUDITS, mechanism_audit, run_audit
from mechanisms.audit.audit_report import CORRECT
from mechanisms.audit.mutants import MUTANTS
from tests.audit.audit_checks import (
    CAUGHT,
    NOT_DETECTABLE,
    check_mechanism,
    check_mutant,
    report_lines,
)
from tests.audit.conftest import DEFAULT_SCOPES

CONF = Path(__file__).resolve().parents[2] / "conf" / "audit"


@pytest.mark.parametrize("mechanism", list(AUDITS))
def test_mechanism_stays_within_its_claim(mechanism, reports_of):
    scope = DEFAULT_SCOPES.get(mechanism)
    # a d >= 5 audit's default run is its scope's pairs, every one decisive (-m slow: all of them)
    check_mechanism(reports_of(mechanism), mechanism, len(scope.dims) if scope else 3)


@pytest.mark.parametrize("mechanism", sorted(DEFAULT_SCOPES))
def test_a_default_scope_keeps_the_correct_variant_and_every_catchable_mutant(mechanism):
    scope = DEFAULT_SCOPES[mechanism]
    names = {m.name for m in MUTANTS if m.mechanism == mechanism}
    caught = {m.name for m in CAUGHT if m.mechanism == mechanism}
    assert CORRECT in scope.variants and caught <= set(scope.variants) <= names | {CORRECT}
    assert set(scope.dims) <= {
        int(p.name.rsplit("_d", 1)[1]) for p in mechanism_audit(mechanism).pairs()
    }


def test_dpsgd_replace_one_claim_holds_on_the_pair_that_broke_the_add_remove_claim(reports_of):
    """The audit found DP-SGD's add/remove claim broken under replacement (eps_lb 1.45 > 1);
    with the replace-one accounting (mechanisms.dpsgd.sgd_accounting, PLD replace-one) the same pair is within."""
    flip = [
        r for r in reports_of("dpsgd_lr") if not r.is_mutant and r.pair == "replace_large_norm_flip"
    ]
    print("\n" + report_lines(flip))
    assert len(flip) == 1 and not flip[0].exceeds_claim


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


def test_a_pairs_settings_replace_the_audited_parameters_for_that_pair_only():
    audit = mechanism_audit("dpsgd_lr")
    pairs = {p.name: p for p in audit.pairs()}
    params = audit.params_for(pairs["replace_large_norm_flip"])
    assert (params.batch_size, params.steps) == (51, 1)
    assert params.clip_norm == audit.params.clip_norm  # the rest is the audited parameters
    assert audit.params.batch_size != 51  # the audits' own parameters are left alone
    opdisc = mechanism_audit("opdisc")
    assert all(opdisc.params_for(p) is opdisc.params for p in opdisc.pairs())  # no settings


@pytest.mark.parametrize("name", sorted(AUDITS))
def test_audit_yaml_mirrors_the_audits(name):
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
    from hydra import compose, initialize_config_dir

    import pipeline.config as config

    config.register()
    with initialize_config_dir(config_dir=str(CONF.parent), version_base=None):
        cfg = compose(config_name="config", overrides=["+audit=opdisc"])
    assert cfg.audit.mechanism == "opdisc" and cfg.audit.samples is None


# --- the larger audit -----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("mechanism", list(AUDITS))
def test_slow_audit(mechanism, reports_of):
    reports = reports_of(mechanism, "slow")
    check_mechanism(reports, mechanism)
    for mutant in CAUGHT:
        if mutant.mechanism == mechanism:
            check_mutant(reports, mutant)
    for mutant in NOT_DETECTABLE:
        if mutant.mechanism == mechanism:
            own = [r for r in reports if r.variant == mutant.name]
            print("\n" + report_lines(own))
            assert not any(r.catches for r in own)
