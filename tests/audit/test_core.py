"""Auditing one variant on one neighbouring pair (mechanisms.audit.core): the pairs' checks, the
generator per (seed, variant, pair), ``audit_pair``'s wiring, and the audit's soundness where the
exact epsilon is known (d = 1 Gaussian and Laplace pairs, ExpMech, one-step DP-SGD): eps_lb never
exceeds it (the session's runs at 95% confidence with seed 0, tests/audit/conftest.py).
"""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.audit import AUDITS, NeighbouringPair, mechanism_audit
from mechanisms.audit.core import pair_generator
from mechanisms.audit.mutants import MUTANTS
from mechanisms.audit.samplers import FunctionSampler
from mechanisms.audit.stats import epsilon_lower_bound, per_bound_alpha
from tests.audit.audit_checks import audit_one
from tests.audit.exact import exact_epsilon, expmech_exact_epsilon


def test_pairs_are_neighbours():
    with pytest.raises(ValueError, match="exactly one differing row"):
        NeighbouringPair("bad", np.zeros((2, 1)), [1, 1], np.ones((2, 1)), [1, 1])
    with pytest.raises(ValueError, match="D' = D plus one last row"):
        NeighbouringPair(
            "bad", np.zeros((2, 1)), [1, 1], np.ones((3, 1)), [1, 1, 1], relation="add_remove"
        )
    for name in AUDITS:
        pairs = mechanism_audit(name).pairs()
        assert len(pairs) >= 3 and len({p.name for p in pairs}) == len(pairs)


def test_a_pair_is_frozen_and_checks_its_relation_and_width():
    X0 = np.array([[0.0], [1.0]])
    settings = {"steps": 2}
    pair = NeighbouringPair("p", X0, [1, -1], np.array([[0.0], [-1.0]]), [1, -1], settings=settings)
    assert (pair.n, pair.d) == (2, 1)
    for a in (pair.X0, pair.y0, pair.X1, pair.y1):
        assert not a.flags.writeable
    X0[0, 0] = 5.0
    settings["steps"] = 9
    assert pair.X0[0, 0] == 0.0 and pair.settings == {"steps": 2}  # copies, not views
    added = NeighbouringPair(
        "a", X0[:1], [1], np.vstack([X0[:1], [[1.0]]]), [1, 1], relation="add_remove"
    )
    assert (added.n, len(added.y1)) == (1, 2)
    with pytest.raises(ValueError, match="relation must be one of"):
        NeighbouringPair("r", np.zeros((1, 1)), [1], np.ones((1, 1)), [1], relation="swap")
    with pytest.raises(ValueError, match="the same d, found 1 and 2"):
        NeighbouringPair("w", np.zeros((1, 1)), [1], np.ones((1, 2)), [1])
    with pytest.raises(ValueError, match="exactly one differing row"):  # two rows differ
        NeighbouringPair("two", np.zeros((2, 1)), [1, 1], np.ones((2, 1)), [-1, 1])


def test_each_variant_and_pair_draws_its_own_reproducible_stream():
    first = pair_generator(3, "correct", "flip").random(4)
    np.testing.assert_array_equal(pair_generator(3, "correct", "flip").random(4), first)
    for other in (
        pair_generator(4, "correct", "flip"),
        pair_generator(3, "mutant", "flip"),
        pair_generator(3, "correct", "other"),
    ):
        assert not np.array_equal(other.random(4), first)


_PAIR = NeighbouringPair(
    "flip", np.zeros((1, 1)), np.array([1]), np.zeros((1, 1)), np.array([-1]), finding="a known bug"
)


def _label_cell(X, y, size, rng):
    """Cell 0 on D (label +1), cell 1 on D' (label -1): the datasets are told apart always."""
    return np.full(size, int(y[0] < 0))


def test_audit_pair_bounds_a_deterministic_release_from_its_counts():
    sampler = FunctionSampler(
        _label_cell, kind="discrete", grid_function=lambda d: np.array([[0.0], [1.0]])
    )
    report = audit_one(sampler, _PAIR, 101, claim_relation="add_remove")
    total = 101 - 101 // 2  # the second half bounds; the first half chose the events
    assert report.eval_samples == total
    assert (report.count_forward_d, report.count_forward_d_prime) == (total, 0)
    assert (report.count_backward_d_prime, report.count_backward_d) == (total, 0)
    alpha = per_bound_alpha(0.95)
    expected = float(epsilon_lower_bound(total, 0, total, 0.0, alpha))
    assert report.eps_lb_forward == pytest.approx(expected) and expected > 1.0
    assert report.eps_lb_backward == pytest.approx(expected)
    assert report.event_forward == "{w=(0)}" and report.event_backward == "{w=(1)}"
    assert report.pair == "flip" and report.relation == "replace"
    assert report.claim_relation == "add_remove"
    assert report.finding == "a known bug" and not report.decisive


def test_audit_pair_finds_nothing_when_the_release_ignores_the_data():
    sampler = FunctionSampler(lambda X, y, size, rng: rng.normal(size=size))
    report = audit_one(sampler, _PAIR, 2_000, delta=1e-5, seed=1)
    # the same law on D and D': eps_lb > 0.5 needs a Clopper-Pearson bound to fail, which at
    # 95% confidence happens with probability <= 5% (and never for this fixed seed)
    assert report.eps_lb < 0.5
    with pytest.raises(ValueError, match="samples must be >= 4, found 3"):
        audit_one(sampler, _PAIR, 3)


# --- soundness against the exact epsilon (the session's audit runs) ------------------------------


@pytest.mark.parametrize("mechanism", ["opdisc", "rspm_gaussian", "rspm_laplace"])
def test_audit_never_exceeds_the_exact_epsilon_on_d1_pairs(mechanism, reports_of):
    audit = mechanism_audit(mechanism)
    samplers = {"correct": audit.make_sampler(audit.params)}
    samplers |= {m.name: m.make(audit.params) for m in MUTANTS if m.mechanism == mechanism}
    pairs = {p.name: p for p in audit.pairs() if p.d == 1}
    lines = []
    for report in reports_of(mechanism):
        sampler = samplers[report.variant]
        if report.pair not in pairs or not hasattr(sampler, "mechanism"):
            continue
        try:
            truth = exact_epsilon(sampler.mechanism, pairs[report.pair], audit.delta)
        except AssertionError:  # a mutant whose data change is not a noise shift
            continue
        lines.append(f"{report.line()}; exact epsilon {truth:.3f}")
        assert report.eps_lb <= truth + 1e-9, lines[-1]
    print("\n" + "\n".join(lines))
    assert lines


def test_expmech_audit_never_exceeds_the_exact_epsilon(reports_of):
    audit = mechanism_audit("expmech")
    samplers = {"correct": audit.make_sampler(audit.params)}
    samplers |= {m.name: m.make(audit.params) for m in MUTANTS if m.mechanism == "expmech"}
    pairs = {p.name: p for p in audit.pairs()}
    for report in reports_of("expmech"):
        truth = expmech_exact_epsilon(samplers[report.variant], pairs[report.pair])
        print(f"{report.line()}; exact epsilon {truth:.3f}")
        assert report.eps_lb <= truth


def test_dpsgd_audit_never_exceeds_the_exact_epsilon_of_one_step_pairs(reports_of):
    """One-step pairs have an exactly computable epsilon: the audit stays below it, and the
    findings' exact epsilons say how far the claim is off."""
    from tests.audit.exact import dpsgd_exact_epsilon

    audit = mechanism_audit("dpsgd_lr")
    pairs = {p.name: p for p in audit.pairs() if p.settings.get("steps") == 1}
    lines = []
    for report in reports_of("dpsgd_lr"):
        if report.is_mutant or report.pair not in pairs:
            continue
        pair = pairs[report.pair]
        forward, backward = dpsgd_exact_epsilon(
            audit.make_sampler(audit.params_for(pair)), pair, audit.delta
        )
        lines.append(f"{report.line()}; exact epsilon {forward:.3f} / {backward:.3f}")
        assert report.eps_lb_forward <= forward and report.eps_lb_backward <= backward, lines[-1]
        assert max(forward, backward) <= audit.epsilon, lines[-1]  # the claim is exact-checked
    print("\n" + "\n".join(lines))
    assert len(lines) == 1
