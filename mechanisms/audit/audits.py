"""What is audited: each mechanism's claim, its sampler, its pairs; and ``run_audit``.

A mechanism's audited parameters are its catalog entry's (``mechanisms.catalog``) at the claim
(EPSILON, DELTA); every private entry has an audit (tests/mechanisms/test_catalog.py).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable

from core.objective import DEFAULT_MARGIN
from mechanisms.audit.audit_report import CORRECT, AuditReport
from mechanisms.audit.core import NeighbouringPair, audit_pair
from mechanisms.audit.game_sampler import GAME_WORKLOAD, GameSampler, game_pairs
from mechanisms.audit.highdim import SumCutOPDiscSampler, SumCutRSPMSampler, sum_cut_pair
from mechanisms.audit.mutants import MUTANTS
from mechanisms.audit.pairs import (
    dpsgd_pairs,
    expmech_pairs,
    opdisc_pairs,
    opsamp_pairs,
    rspm_pairs,
)
from mechanisms.audit.samplers import (
    DPSGDSampler,
    ExpMechSampler,
    GridArgminSampler,
    OPSampSampler,
    ReleaseSampler,
)
from mechanisms.audit.stats import check_confidence
from mechanisms.catalog import CATALOG
from mechanisms.opdisc import OPDisc
from mechanisms.opsamp import OPSamp
from mechanisms.rspm import RSPM
from mechanisms.synthetic.fem import FEMParams

#: Claimed privacy of every audited mechanism (tiny instances, so the test has power).
EPSILON = 1.0
DELTA = 1e-5


@dataclass(frozen=True)
class MechanismAudit:
    """A mechanism under audit: its parameters (hence its claim), sampler and pairs.

    ``make_sampler(params)`` builds the sampler of the mechanism as implemented; mutants
    (mechanisms/audit/mutants.py) build theirs from the same ``params``. A pair's ``settings``
    replace fields of ``params`` for that pair (DP-SGD's batch size and steps).
    """

    name: str
    params: Any
    epsilon: float
    delta: float
    claim_relation: str
    make_sampler: Callable[[Any], ReleaseSampler]
    pairs: Callable[[], list[NeighbouringPair]]
    #: Samples per dataset of the default audit (CI) and of the slow one.
    default_samples: int
    slow_samples: int

    def params_for(self, pair: NeighbouringPair) -> Any:
        return dataclasses.replace(self.params, **pair.settings) if pair.settings else self.params


def _params(name: str, delta: float = DELTA, **settings: Any) -> Any:
    """The parameters of catalog entry ``name`` (``mechanisms.catalog``) at the audited claim:
    its default settings, ``settings`` changed."""
    entry = CATALOG[name]
    return entry.parameters(entry.default_settings(**settings), EPSILON, delta, DEFAULT_MARGIN)


def _opdisc() -> MechanismAudit:
    return MechanismAudit(
        "opdisc",
        _params("opdisc"),
        EPSILON,
        DELTA,
        "replace",
        lambda p: GridArgminSampler(OPDisc(p)),
        opdisc_pairs,
        200_000,
        4_000_000,
    )


def _rspm(noise: str) -> MechanismAudit:
    name = f"rspm_{noise}"
    params = _params(name)  # the entry fixes the noise (and Laplace's delta = 0)
    return MechanismAudit(
        name,
        params,
        EPSILON,
        params.delta,
        "replace",
        lambda p: GridArgminSampler(RSPM(p)),
        rspm_pairs,
        200_000,
        4_000_000,
    )


def _expmech() -> MechanismAudit:
    return MechanismAudit(
        "expmech",
        _params("expmech"),
        EPSILON,
        0.0,
        "replace",
        ExpMechSampler,
        expmech_pairs,
        400_000,
        10_000_000,
    )


def _dpsgd() -> MechanismAudit:
    params = _params("dpsgd_lr", clip_norm=1.0, batch_size=50, learning_rate=1.0, steps=1)
    return MechanismAudit(
        "dpsgd_lr",
        params,
        EPSILON,
        DELTA,
        "replace",
        DPSGDSampler,
        dpsgd_pairs,
        400_000,
        5_000_000,
    )


def _opsamp() -> MechanismAudit:
    return MechanismAudit(
        "opsamp",
        _params("opsamp"),
        EPSILON,
        DELTA,
        "replace",
        lambda p: OPSampSampler(OPSamp(p)),
        opsamp_pairs,
        100_000,
        1_000_000,
    )


# --- the audit at d >= 5 (SPEC 10.5; mechanisms.audit.highdim) ------------------------------------

#: Dimensions of the sum-cut pairs: the default audit runs all three, so the effect's growth in
#: d shows in one table.
OPDISC_HIGH_DIMS = (5, 23, 100, 200)
RSPM_HIGH_DIMS = (5, 25, 50)


def _sum_cut_audit(name: str, params: Any, make_sampler, dims, default_samples: int):
    """A d >= 5 audit of the (EPSILON, DELTA) replacement claim on the sum-cut pairs at ``dims``
    (``mechanisms.audit.highdim``); the slow audit draws 1,000,000 samples a dataset."""
    return MechanismAudit(
        name,
        params,
        EPSILON,
        DELTA,
        "replace",
        make_sampler,
        lambda: [sum_cut_pair(d) for d in dims],
        default_samples,
        1_000_000,
    )


def _opdisc_high_dim() -> MechanismAudit:
    # B = 1: the grid {-1, 0, 1}^d, with the paper's D = sqrt(d) (SPEC 3); the calibration
    # depends on (d, D, tau) only, so the claim is the one OPDisc makes at that d and D
    return _sum_cut_audit(
        "opdisc_d5",
        _params("opdisc", B=1.0),
        lambda p: SumCutOPDiscSampler(OPDisc(p)),
        OPDISC_HIGH_DIMS,
        40_000,
    )


def _rspm_high_dim() -> MechanismAudit:
    return _sum_cut_audit(
        "rspm_gaussian_d5",
        _params("rspm_gaussian"),
        lambda p: SumCutRSPMSampler(RSPM(p)),
        RSPM_HIGH_DIMS,
        30_000,
    )


# --- the synthetic-data game (docs/synthetic.md; mechanisms.audit.game_sampler) ------------------

#: The game's audited settings: few rounds, so that the whole transcript is strong evidence, and
#: a small perturbation, so that the records follow it closely.
GAME_PARAMS = FEMParams(EPSILON, DELTA, rounds=4, samples=1, noise_scale=0.1)


def _game_audit(name: str, params: FEMParams, statistic: str = "records") -> MechanismAudit:
    """The game's (EPSILON, DELTA) replacement claim on its pairs, read off ``statistic``
    (``mechanisms.audit.game_sampler``: the synthetic table, or one round's selection)."""
    return MechanismAudit(
        name,
        params,
        EPSILON,
        DELTA,
        "replace",
        lambda p: GameSampler(p, GAME_WORKLOAD, statistic=statistic),
        game_pairs,
        200_000,
        2_000_000,
    )


def _fem() -> MechanismAudit:
    return _game_audit("fem", GAME_PARAMS)


def _fem_round() -> MechanismAudit:
    """One round's selection alone (the exponential mechanism at eps0), read off the game's
    transcript: with T = 1 its eps0 is the whole claim."""
    return _game_audit("fem_round", dataclasses.replace(GAME_PARAMS, rounds=1), "selection")


#: The game with RSPM's query player (docs/synthetic.md section 4): its class every conjunction
#: of one literal of the audited universe with both signs (four candidates, m = 3).
RSPM_GAME_PARAMS = dataclasses.replace(GAME_PARAMS, query_player="rspm", max_literals=1)
#: RSPM's selection audited alone: one round, so eps0 is the whole claim.
RSPM_ROUND_PARAMS = dataclasses.replace(RSPM_GAME_PARAMS, rounds=1)


def _fem_rspm() -> MechanismAudit:
    """The whole game with RSPM's query player (T = 4), the synthetic table as the statistic."""
    return _game_audit("fem_rspm", RSPM_GAME_PARAMS)


def _rspm_round() -> MechanismAudit:
    """One round's RSPM selection (docs/synthetic.md section 4), read off the game's transcript."""
    return _game_audit("rspm_round", RSPM_ROUND_PARAMS, "selection")


AUDITS: dict[str, Callable[[], MechanismAudit]] = {
    "opdisc": _opdisc,
    "rspm_gaussian": lambda: _rspm("gaussian"),
    "rspm_laplace": lambda: _rspm("laplace"),
    "expmech": _expmech,
    "dpsgd_lr": _dpsgd,
    "opsamp": _opsamp,
    "opdisc_d5": _opdisc_high_dim,
    "rspm_gaussian_d5": _rspm_high_dim,
    "fem": _fem,
    "fem_round": _fem_round,
    "fem_rspm": _fem_rspm,
    "rspm_round": _rspm_round,
}


def mechanism_audit(name: str) -> MechanismAudit:
    if name not in AUDITS:
        raise ValueError(f"unknown mechanism {name!r}; known: {sorted(AUDITS)}")
    return AUDITS[name]()


def audit_variant(
    audit: MechanismAudit,
    variant: str,
    make_sampler: Callable[[Any], Any],
    *,
    samples: int,
    confidence: float,
    seed: int,
    pairs: list[NeighbouringPair] | None = None,
) -> list[AuditReport]:
    """Every pair of ``audit`` (or ``pairs``) against one variant (the mechanism or a mutant)."""
    return [
        audit_pair(
            make_sampler(audit.params_for(pair)),
            pair,
            mechanism=audit.name,
            variant=variant,
            epsilon=audit.epsilon,
            delta=audit.delta,
            samples=samples,
            confidence=confidence,
            seed=seed,
            claim_relation=audit.claim_relation,
        )
        for pair in (audit.pairs() if pairs is None else pairs)
    ]


def run_audit(
    mechanism: str,
    *,
    samples: int | None,
    confidence: float,
    seed: int,
    include_mutants: bool = False,
) -> list[AuditReport]:
    """Audit ``mechanism`` (a key of AUDITS) on all its pairs; mutants after it if asked.

    ``samples`` releases per dataset and pair (half choose the events, half bound epsilon;
    None: the audit's ``default_samples``);
    each pair's two bounds hold at once with probability >= ``confidence``; ``seed`` fixes
    every draw (each (variant, pair) gets its own generator derived from it).
    """
    audit = mechanism_audit(mechanism)
    samples = audit.default_samples if samples is None else samples
    if isinstance(samples, bool) or not isinstance(samples, int) or samples < 4:
        raise ValueError(f"samples must be an integer >= 4, found {samples!r}")
    check_confidence(confidence)
    options = {"samples": samples, "confidence": confidence, "seed": seed}
    reports = audit_variant(audit, CORRECT, audit.make_sampler, **options)
    if include_mutants:
        for mutant in MUTANTS:
            if mutant.mechanism == mechanism:
                reports += audit_variant(audit, mutant.name, mutant.make, **options)
    return reports
