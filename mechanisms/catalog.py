"""The mechanism catalog: the single registry of the mechanisms, one entry per mechanism.

An entry says, once, everything anyone needs of a mechanism (``mechanisms.entries``):

* its settings: the fields and defaults of the mechanism's own parameter dataclass
  (``OPDiscParams``, ``RSPMParams``, ...) less what a run supplies (epsilon, delta, the margin)
  and what the entry fixes (RSPM's noise). The pipeline turns them into its Hydra schema
  (``pipeline.settings_schemas``), the estimators into their constructor's keywords
  (``mechanisms.estimators``), so a default is written in one place, the mechanism's module;
* how its settings are checked: by building the parameter dataclass, whose ``__post_init__`` is
  the one validation (numbers: ``core.validation``; privacy targets: ``mechanisms.privacy``);
* how to build it for one run and which oracle it asks the caller for (``oracle``: none, the
  caller's configured one, or a named route such as ``convex``);
* whether it is private (the non-private references run once per sweep, not per epsilon);
* its kind, which owns how a run is made, scored and recorded: a ``ClassifierEntry`` (a
  ``mechanisms.release.Release``, a linear classifier trained on (X, y)) or a ``TableEntry`` (a
  ``mechanisms.synthetic.fem.SyntheticRelease``: a table of records over a public domain,
  answering a workload of marginals; docs/synthetic.md).

Adding a mechanism: its module under ``mechanisms/`` (a frozen parameter dataclass, and either
the runner protocol of ``mechanisms.runner`` or a function that runs it whole), and one
``ClassifierEntry`` or ``TableEntry`` below. The sweep's config, the estimators and the audit's
coverage test follow.
"""

from __future__ import annotations

import dataclasses
import typing
from collections import defaultdict
from typing import Any, Callable

import numpy as np

from mechanisms.dpsgd import DPSGDParams, run_dpsgd, tune_dpsgd
from mechanisms.entries import (
    CHECK_TARGET,
    RUN_FIELDS,
    ClassifierEntry,
    Entry,
    Oracles,
    Table,
    TableEntry,
)
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.logistic import LogisticParams, run_logistic
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.release import Release
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.synthetic.baselines import (
    AIMParams,
    MSTParams,
    MWEMParams,
    run_aim,
    run_mst,
    run_mwem,
)
from mechanisms.synthetic.domain import ConjunctionClass
from mechanisms.synthetic.fem import FEMParams, SyntheticRelease, run_fem
from mechanisms.synthetic.reference import RealTableParams, release_real_table
from oracles.routing.routes import CONJUNCTIONS, route_for

# --- how each mechanism runs whole -------------------------------------------------------------


def _run_dpsgd(
    params: DPSGDParams, settings: Any, X: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> Release:
    if settings.tune:
        return tune_dpsgd(X, y, params.target, rng=rng, accounted=settings.tune_accounted)
    return run_dpsgd(X, y, params, rng)


def _run_expmech(params: ExpMechParams, settings: Any, X, y, rng) -> Release:
    return run_expmech(X, y, params, rng)


def _run_logistic(params: LogisticParams, settings: Any, X, y, rng) -> Release:
    return run_logistic(X, y, params)


def _run_fem(params: FEMParams, settings: Any, table: Table, rng, oracle) -> SyntheticRelease:
    """The game on the table's workload; on a class of conjunctions (never listed) RSPM selects
    over that class: its max_literals is the class's."""
    if isinstance(table.workload, ConjunctionClass) and params.query_player == "rspm":
        params = dataclasses.replace(params, max_literals=table.workload.max_literals)
    return run_fem(table.codes, table.workload, params, rng, oracle)


def _baseline(run_baseline: Callable[..., SyntheticRelease]) -> Callable[..., SyntheticRelease]:
    """A library's synthesizer (mechanisms.synthetic.baselines) as a catalog entry runs it."""

    def run_entry(params, settings, table: Table, rng, oracle) -> SyntheticRelease:
        return run_baseline(table.codes, table.domain, params, rng, table.workload)

    return run_entry


def _run_real_table(params, settings, table: Table, rng, oracle) -> SyntheticRelease:
    return release_real_table(table.codes)


# --- which oracle each asks for ----------------------------------------------------------------


def _configured(settings: Any, oracles: Oracles) -> Any:
    return oracles.configured()


def _data_player(settings: Any, oracles: Oracles) -> Any:
    """The synthetic-data game's data player: the conjunction oracle of its ``backend``."""
    return oracles.route(route_for(CONJUNCTIONS, backend=settings.backend))


CATALOG: dict[str, Entry] = {
    e.name: e
    for e in [
        ClassifierEntry(
            "opdisc",
            "OPDisc (SPEC section 3): W_tau; B and D null mean the paper's floor(sqrt(d)) "
            "and sqrt(d); calibration proven (SPEC 10.1), paper or paper_code.",
            OPDiscParams,
            build=OPDisc,
            oracle=_configured,
        ),
        ClassifierEntry(
            "rspm_gaussian",
            "Gaussian RSPM over {-1, 0, 1}^d (SPEC section 4, 10.2).",
            RSPMParams,
            build=RSPM,
            fixed={"noise": "gaussian"},
            oracle=_configured,
        ),
        ClassifierEntry(
            "rspm_laplace",
            "Laplace RSPM over {-1, 0, 1}^d: pure epsilon-DP (SPEC section 4).",
            RSPMParams,
            build=RSPM,
            fixed={"noise": "laplace", "delta": 0.0},
            oracle=_configured,
        ),
        ClassifierEntry(
            "opsamp",
            "OPSamp (SPEC section 5) over the box [lower, upper]^d; the logistic loss "
            "uses the convex oracle, zero_one the configured MIP oracle.",
            OPSampParams,
            build=OPSamp,
            # the logistic loss's surrogate goes to the convex solver on every route, the
            # zero_one loss's problem to the route's own chain (oracles.routing.routes's table)
            oracle=_configured,
        ),
        ClassifierEntry(
            "dpsgd_lr",
            "DP-SGD logistic regression (SPEC section 6). tune: choose (clip_norm, "
            "batch_size, learning_rate) on the data as the paper did (not private unless "
            "tune_accounted).",
            DPSGDParams,
            run=_run_dpsgd,
            extra=(("tune", bool, False), ("tune_accounted", bool, False)),
        ),
        ClassifierEntry(
            "expmech",
            "The exponential mechanism over OPDisc's grid (small d only).",
            ExpMechParams,
            run=_run_expmech,
        ),
        ClassifierEntry(
            "erm_01",
            "Non-private exact 0/1 ERM over OPDisc's grid (SPEC section 7).",
            ExactERM,
            build=lambda erm: erm,
            fixed={"name": "erm_01"},
            private=False,
            oracle=_configured,
        ),
        ClassifierEntry(
            "logistic_regression",
            "Non-private logistic regression without intercept (SPEC section 7).",
            LogisticParams,
            run=_run_logistic,
            private=False,
        ),
        TableEntry(
            "fem",
            "Private synthetic data: the exponential mechanism over the workload against "
            "follow-the-perturbed-leader (docs/synthetic.md). backend: the data player's oracle, "
            "search (exact, compiled), highs or enumerate (small domains).",
            FEMParams,
            run=_run_fem,
            oracle=_data_player,
            fixed={
                "query_player": "expmech",
                "max_literals": 3,
                "separator": "binary",
                "public_table": None,
            },
            lists_workload=True,
            extra=(("backend", typing.Literal["search", "highs", "enumerate"], "search"),),
        ),
        TableEntry(
            "fem_rspm",
            "Private synthetic data, oracle-efficient: each round's query is selected by "
            "Laplace RSPM over every conjunction of at most max_literals literals (on "
            "sweep.workload=conjunctions: the workload's class), solved exactly, its rounds "
            "from its noise (docs/synthetic.md 4.8); the data player as in fem.",
            FEMParams,
            run=_run_fem,
            oracle=_data_player,
            fixed={"query_player": "rspm", "public_table": None},
            extra=(("backend", typing.Literal["search", "highs", "enumerate"], "search"),),
        ),
        TableEntry(
            "mst",
            "Baseline: smartnoise-synth's MST (private-pgm), calibrated to replace-one "
            "neighbours (docs/synthetic.md); needs the baselines extra.",
            MSTParams,
            run=_baseline(run_mst),
        ),
        TableEntry(
            "aim",
            "Baseline: smartnoise-synth's AIM on the workload's marginals, calibrated to "
            "replace-one neighbours; rounds null is the library's 16 x attributes (slow: about "
            "30 s a round on Adult's 3-way workload); needs the baselines extra.",
            AIMParams,
            run=_baseline(run_aim),
        ),
        TableEntry(
            "mwem",
            "Baseline: smartnoise-synth's MWEM over public groups of attributes (at most "
            "max_cells cells each), calibrated to replace-one neighbours; needs the baselines "
            "extra.",
            MWEMParams,
            run=_baseline(run_mwem),
        ),
        TableEntry(
            "real_table",
            "Non-private reference of synthetic data: the private training table itself.",
            RealTableParams,
            run=_run_real_table,
            private=False,
        ),
    ]
}

#: The references: they run once per sweep (epsilon recorded as inf), not per epsilon.
NON_PRIVATE = frozenset(name for name, e in CATALOG.items() if not e.private)
#: Mechanisms that run whole, not through ``mechanisms.runner.run``.
NON_ORACLE = frozenset(name for name, e in CATALOG.items() if e.runs_whole)


def _by_kind() -> dict[type, frozenset[str]]:
    names: dict[type, set[str]] = defaultdict(set)
    for name, entry in CATALOG.items():
        names[type(entry)].add(name)
    return {kind: frozenset(members) for kind, members in names.items()}


#: The entries' names, by kind of entry (``ClassifierEntry``, ``TableEntry``).
BY_KIND = _by_kind()
#: The synthetic-data mechanisms: they take records over a public domain, not (X, y).
SYNTHETIC = BY_KIND[TableEntry]


def build_mechanism(settings: Any, epsilon: float, delta: float, margin: float) -> Any:
    """The mechanism object of an oracle-based mechanism (runner protocol) for one run."""
    entry = CATALOG[settings.name]
    if getattr(entry, "build", None) is None:
        raise ValueError(f"{settings.name!r} is not an oracle-based mechanism")
    return entry.build(entry.parameters(settings, epsilon, delta, margin))


__all__ = [
    "BY_KIND",
    "CATALOG",
    "CHECK_TARGET",
    "ClassifierEntry",
    "Entry",
    "NON_ORACLE",
    "NON_PRIVATE",
    "RUN_FIELDS",
    "SYNTHETIC",
    "TableEntry",
    "build_mechanism",
]
