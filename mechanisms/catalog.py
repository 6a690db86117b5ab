"""The mechanism catalog: the single registry of the mechanisms, one entry per mechanism.

An entry says, once, everything anyone needs of a mechanism:

* its settings: the fields and defaults of the mechanism's own parameter dataclass
  (``OPDiscParams``, ``RSPMParams``, ...) less what a run supplies (epsilon, delta, the margin)
  and what the entry fixes (RSPM's noise). The pipeline turns them into its Hydra schema
  (``pipeline.catalog.settings_schema``), the estimators into their constructor's keywords
  (``mechanisms.estimators``), so a default is written in one place, the mechanism's module;
* how its settings are checked: by building the parameter dataclass, whose ``__post_init__`` is
  the one validation (numbers: ``core.validation``; privacy targets: ``mechanisms.privacy``);
* how to build it for one run and which oracle it needs (``oracle``: ``None`` for a mechanism
  that calls none, ``"configured"`` for the caller's choice, ``"convex"``);
* whether it is private (the non-private references run once per sweep, not per epsilon);
* its kind: a ``classifier`` (a ``mechanisms.release.Release``, a linear classifier trained on
  (X, y)) or ``synthetic`` (a ``mechanisms.synthetic.fem.SyntheticRelease``: a table of records
  over a public domain, answering a workload of marginals; docs/synthetic.md).

Adding a mechanism: its module under ``mechanisms/`` (a frozen parameter dataclass, and either
the runner protocol of ``mechanisms.runner`` or a function that runs it whole), and one
``Entry`` below. The sweep's config, the estimators and the audit's coverage test follow.
"""

from __future__ import annotations

import dataclasses
import typing
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Callable, Mapping, Sequence

import numpy as np

from core.validation import check_choice
from mechanisms.dpsgd import DPSGDParams, run_dpsgd, tune_dpsgd
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.logistic import LogisticParams, run_logistic
from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.release import Release
from mechanisms.rspm import RSPM, RSPMParams
from mechanisms.runner import SolveMany, run, solve_sequentially
from mechanisms.synthetic.baselines import (
    AIMParams,
    MSTParams,
    MWEMParams,
    run_aim,
    run_mst,
    run_mwem,
)
from mechanisms.synthetic.domain import Domain, Workload
from mechanisms.synthetic.fem import FEMParams, SyntheticRelease, run_fem
from mechanisms.synthetic.reference import RealTableParams, release_real_table
from oracles.routing import CONFIGURED

#: What a run supplies to a mechanism's parameters; never a setting.
RUN_FIELDS = ("epsilon", "delta", "margin")
#: The target at which settings are checked before anything runs (``Entry.check``): any valid
#: (epsilon, delta) serves, every check of a setting is independent of them.
CHECK_TARGET = (1.0, 1e-6)
#: What an entry releases (module docstring).
KINDS = ("classifier", "synthetic")


@dataclass(frozen=True)
class Entry:
    """One mechanism of the catalog (see the module docstring)."""

    name: str
    doc: str
    #: The mechanism's parameter dataclass: its fields and defaults are the settings.
    params: type
    #: Builds the mechanism object (``mechanisms.runner`` protocol) from its parameters; for a
    #: mechanism that calls an oracle.
    build: Callable[[Any], Any] | None = None
    #: Runs the mechanism whole; for the others. A classifier: (params, settings, X, y, rng) ->
    #: Release; a synthetic-data mechanism: (params, settings, codes, domain, workload, rng,
    #: oracle) -> SyntheticRelease.
    run: Callable[..., Release | SyntheticRelease] | None = None
    private: bool = True
    #: Parameter fields the entry sets itself (left out of the settings).
    fixed: Mapping[str, Any] = field(default_factory=dict)
    #: Settings that are not fields of ``params``: (name, type, default).
    extra: tuple[tuple[str, Any, Any], ...] = ()
    #: The oracle it needs, from its settings: None, "configured" or an oracle's name.
    oracle: Callable[[Any], str | None] = lambda settings: None
    kind: str = "classifier"

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"{self.name}: kind must be one of {KINDS}, found {self.kind!r}")
        if self.kind == "synthetic" and self.run is None:
            raise ValueError(f"{self.name}: a synthetic-data mechanism runs whole (run=)")

    def setting_fields(self) -> list[tuple[str, Any, Any]]:
        """(name, type, default) of every setting, the parameter dataclass's first."""
        out = []
        hints = typing.get_type_hints(self.params)
        for f in dataclasses.fields(self.params):
            if f.name in RUN_FIELDS or f.name in self.fixed:
                continue
            if f.default is dataclasses.MISSING:
                raise TypeError(
                    f"{self.params.__name__}.{f.name} has no default: a setting needs one"
                )
            out.append((f.name, hints[f.name], f.default))
        return out + list(self.extra)

    def parameters(self, settings: Any, epsilon: float, delta: float, margin: float) -> Any:
        """The mechanism's parameters for one run (its ``__post_init__`` checks them)."""
        names = {f.name for f in dataclasses.fields(self.params)}
        run = {"epsilon": epsilon, "delta": delta, "margin": margin}
        kwargs = {k: v for k, v in run.items() if k in names}
        kwargs.update({n: getattr(settings, n) for n, _, _ in self.setting_fields() if n in names})
        kwargs.update(self.fixed)
        return self.params(**kwargs)

    def check(self, settings: Any, margin: float) -> None:
        """ValueError or TypeError, naming the setting, for a setting the mechanism refuses."""
        self.parameters(settings, *CHECK_TARGET, margin)
        for name, hint, _ in self.extra:  # the extra settings' choices (the others: params)
            if typing.get_origin(hint) is typing.Literal:
                check_choice(name, getattr(settings, name), typing.get_args(hint))

    def check_rows(self, settings: Any, margin: float, n: int) -> None:
        """InvalidValue, naming the setting, for a setting that a training set of ``n`` rows
        cannot take (the parameters' ``check_rows``, where they have one: DP-SGD's batch)."""
        check_rows = getattr(self.parameters(settings, *CHECK_TARGET, margin), "check_rows", None)
        if check_rows is not None:
            check_rows(n)

    def default_settings(self, **changes: Any) -> SimpleNamespace:
        """The settings with their defaults, ``changes`` applied (a TypeError names an unknown
        one)."""
        settings = {name: default for name, _, default in self.setting_fields()}
        unknown = sorted(set(changes) - set(settings))
        if unknown:
            raise TypeError(f"{self.name}: unknown settings {unknown}; known: {sorted(settings)}")
        return SimpleNamespace(**(settings | changes))

    def release(
        self,
        settings: Any,
        epsilon: float,
        delta: float,
        margin: float,
        X: np.ndarray,
        y: np.ndarray,
        rng: np.random.Generator,
        *,
        oracle: Callable[[str], Any] | None = None,
        solve_many: SolveMany = solve_sequentially,
        feature_names: Sequence[str] | None = None,
        domain: Domain | None = None,
        workload: Workload | None = None,
    ) -> Release | SyntheticRelease:
        """One run, by the one path every mechanism takes: its parameters from ``settings`` and
        the run's target (checked as they are built), then the mechanism on (X, y) with the
        explicit generator ``rng``.

        ``oracle(name)`` builds the oracle the entry needs (``self.oracle(settings)``: an
        oracle's name or ``"configured"``, the caller's choice); a mechanism that needs none runs
        whole. ``solve_many`` runs the oracle calls (``mechanisms.runner``: a loop, or Ray
        tasks); ``feature_names`` name the columns in a refusal of data beyond a bound.

        A synthetic-data mechanism takes X as level codes over the public ``domain`` and answers
        the public ``workload`` (y is unused: the label is one of the attributes).
        """
        params = self.parameters(settings, epsilon, delta, margin)
        if self.kind == "synthetic":
            if domain is None or workload is None:
                raise ValueError(
                    f"{self.name} makes a synthetic table: it needs records over a public domain "
                    "and a workload (domain=, workload=)"
                )
            return self.run(params, settings, X, domain, workload, rng, oracle)
        if self.run is not None:
            return self.run(params, settings, X, y, rng)
        needed = self.oracle(settings)
        if oracle is None:
            raise ValueError(f"{self.name} needs an oracle ({needed}): pass oracle=")
        return run(
            self.build(params),
            X,
            y,
            oracle(needed),
            rng,
            solve_many=solve_many,
            feature_names=feature_names,
        )


# --- how each mechanism runs whole -------------------------------------------------------------


def _run_dpsgd(
    params: DPSGDParams, settings: Any, X: np.ndarray, y: np.ndarray, rng: np.random.Generator
) -> Release:
    if settings.tune:
        return tune_dpsgd(
            X, y, params.epsilon, params.delta, rng=rng, accounted=settings.tune_accounted
        )
    return run_dpsgd(X, y, params, rng)


def _run_expmech(params: ExpMechParams, settings: Any, X, y, rng) -> Release:
    return run_expmech(X, y, params, rng)


def _run_logistic(params: LogisticParams, settings: Any, X, y, rng) -> Release:
    return run_logistic(X, y, params)


def _run_fem(
    params: FEMParams, settings: Any, codes, domain: Domain, workload: Workload, rng, oracle
) -> SyntheticRelease:
    if oracle is None:
        raise ValueError("fem needs the data player's oracle: pass oracle=")
    return run_fem(codes, workload, params, rng, oracle(f"conjunctions_{settings.backend}"))


def _baseline(run_baseline: Callable[..., SyntheticRelease]) -> Callable[..., SyntheticRelease]:
    """A library's synthesizer (mechanisms.synthetic.baselines) as a catalog entry runs it."""

    def run_entry(params, settings, codes, domain, workload, rng, oracle) -> SyntheticRelease:
        return run_baseline(codes, domain, params, rng, workload)

    return run_entry


def _run_real_table(params, settings, codes, domain, workload, rng, oracle) -> SyntheticRelease:
    return release_real_table(codes)


def _configured(settings: Any) -> str:
    return CONFIGURED


def _opsamp_oracle(settings: Any) -> str:
    return "convex" if settings.loss == "logistic" else CONFIGURED


CATALOG: dict[str, Entry] = {
    e.name: e
    for e in [
        Entry(
            "opdisc",
            "OPDisc (SPEC section 3): W_tau; B and D null mean the paper's floor(sqrt(d)) "
            "and sqrt(d); calibration proven (SPEC 10.1), paper or paper_code.",
            OPDiscParams,
            build=OPDisc,
            oracle=_configured,
        ),
        Entry(
            "rspm_gaussian",
            "Gaussian RSPM over {-1, 0, 1}^d (SPEC section 4, 10.2).",
            RSPMParams,
            build=RSPM,
            fixed={"noise": "gaussian"},
            oracle=_configured,
        ),
        Entry(
            "rspm_laplace",
            "Laplace RSPM over {-1, 0, 1}^d: pure epsilon-DP (SPEC section 4).",
            RSPMParams,
            build=RSPM,
            fixed={"noise": "laplace", "delta": 0.0},
            oracle=_configured,
        ),
        Entry(
            "opsamp",
            "OPSamp (SPEC section 5) over the box [lower, upper]^d; the logistic loss "
            "uses the convex oracle, zero_one the configured MIP oracle.",
            OPSampParams,
            build=OPSamp,
            oracle=_opsamp_oracle,
        ),
        Entry(
            "dpsgd_lr",
            "DP-SGD logistic regression (SPEC section 6). tune: choose (clip_norm, "
            "batch_size, learning_rate) on the data as the paper did (not private unless "
            "tune_accounted).",
            DPSGDParams,
            run=_run_dpsgd,
            extra=(("tune", bool, False), ("tune_accounted", bool, False)),
        ),
        Entry(
            "expmech",
            "The exponential mechanism over OPDisc's grid (small d only).",
            ExpMechParams,
            run=_run_expmech,
        ),
        Entry(
            "erm_01",
            "Non-private exact 0/1 ERM over OPDisc's grid (SPEC section 7).",
            ExactERM,
            build=lambda erm: erm,
            fixed={"name": "erm_01"},
            private=False,
            oracle=_configured,
        ),
        Entry(
            "logistic_regression",
            "Non-private logistic regression without intercept (SPEC section 7).",
            LogisticParams,
            run=_run_logistic,
            private=False,
        ),
        Entry(
            "fem",
            "Private synthetic data: the exponential mechanism over the workload against "
            "follow-the-perturbed-leader (docs/synthetic.md). backend: the data player's oracle, "
            "highs or enumerate (small domains).",
            FEMParams,
            run=_run_fem,
            fixed={"query_player": "expmech", "max_literals": 3, "separator": "binary"},
            extra=(("backend", typing.Literal["highs", "enumerate"], "highs"),),
            kind="synthetic",
        ),
        Entry(
            "fem_rspm",
            "Private synthetic data, oracle-efficient: each round's query is selected by "
            "Laplace RSPM over every conjunction of at most max_literals literals, solved "
            "exactly (docs/synthetic.md); the data player as in fem.",
            FEMParams,
            run=_run_fem,
            fixed={"query_player": "rspm"},
            extra=(("backend", typing.Literal["highs", "enumerate"], "highs"),),
            kind="synthetic",
        ),
        Entry(
            "mst",
            "Baseline: smartnoise-synth's MST (private-pgm), calibrated to replace-one "
            "neighbours (docs/synthetic.md); needs the baselines extra.",
            MSTParams,
            run=_baseline(run_mst),
            kind="synthetic",
        ),
        Entry(
            "aim",
            "Baseline: smartnoise-synth's AIM on the workload's marginals, calibrated to "
            "replace-one neighbours; rounds null is the library's 16 x attributes (slow: about "
            "30 s a round on Adult's 3-way workload); needs the baselines extra.",
            AIMParams,
            run=_baseline(run_aim),
            kind="synthetic",
        ),
        Entry(
            "mwem",
            "Baseline: smartnoise-synth's MWEM over public groups of attributes (at most "
            "max_cells cells each), calibrated to replace-one neighbours; needs the baselines "
            "extra.",
            MWEMParams,
            run=_baseline(run_mwem),
            kind="synthetic",
        ),
        Entry(
            "real_table",
            "Non-private reference of synthetic data: the private training table itself.",
            RealTableParams,
            run=_run_real_table,
            private=False,
            kind="synthetic",
        ),
    ]
}

#: The references: they run once per sweep (epsilon recorded as inf), not per epsilon.
NON_PRIVATE = frozenset(name for name, e in CATALOG.items() if not e.private)
#: Mechanisms that run whole, not through ``mechanisms.runner.run``.
NON_ORACLE = frozenset(name for name, e in CATALOG.items() if e.run is not None)
#: The synthetic-data mechanisms: they take records over a public domain, not (X, y).
SYNTHETIC = frozenset(name for name, e in CATALOG.items() if e.kind == "synthetic")


def build_mechanism(settings: Any, epsilon: float, delta: float, margin: float) -> Any:
    """The mechanism object of an oracle-based mechanism (runner protocol) for one run."""
    entry = CATALOG[settings.name]
    if entry.build is None:
        raise ValueError(f"{settings.name!r} is not an oracle-based mechanism")
    return entry.build(entry.parameters(settings, epsilon, delta, margin))


__all__ = [
    "CATALOG",
    "CHECK_TARGET",
    "KINDS",
    "NON_ORACLE",
    "NON_PRIVATE",
    "RUN_FIELDS",
    "SYNTHETIC",
    "Entry",
    "build_mechanism",
]
