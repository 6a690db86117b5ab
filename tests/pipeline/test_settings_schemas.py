"""The catalog: each mechanism's settings are its parameter dataclass's, and conf/ holds a default
once (only what differs from the schema)."""

from __future__ import annotations

import dataclasses
import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest
from omegaconf import OmegaConf

from mechanisms.catalog import CATALOG, NON_ORACLE, NON_PRIVATE, RUN_FIELDS, SYNTHETIC
from oracles.routing.routes import CONVEX, chain_for
from pipeline.cli import CONFIG_DIR
from pipeline.config import ConfigError, validate
from pipeline.data import Dataset, load_dataset
from pipeline.settings_schemas import SCHEMAS
from pipeline.sweep.one_run import RunKey, mechanism_oracle, run_one, run_release
from tests.pipeline.configs import assert_config_error, compose_config

CONF = Path(CONFIG_DIR)


@pytest.mark.parametrize("name", sorted(CATALOG))
def test_settings_are_the_parameter_dataclass_fields_and_defaults(name):
    entry = CATALOG[name]
    schema = {f.name: f.default for f in dataclasses.fields(SCHEMAS[name])}
    assert schema.pop("name") == name
    params = {
        f.name: f.default
        for f in dataclasses.fields(entry.params)
        if f.name not in RUN_FIELDS and f.name not in entry.fixed
    }
    extra = {n: d for n, _, d in entry.extra}
    assert schema == params | extra


def test_the_composed_defaults_are_the_mechanisms_own():
    """The drift the catalog ends: DP-SGD's clip_norm was 1.0 in code and 2.0 in config."""
    from mechanisms.dpsgd import DPSGDParams
    from mechanisms.opsamp import OPSampParams

    config = validate(compose_config([]))
    assert config.mechanisms["dpsgd_lr"].clip_norm == DPSGDParams(1.0, 1e-5).clip_norm == 2.0
    assert config.mechanisms["opsamp"].beta == OPSampParams(1.0, 1e-5).beta
    assert set(config.mechanisms) == set(CATALOG)


def _schema_defaults(group: str, path: Path) -> dict:
    """The defaults of the schema a conf/<group>/*.yaml extends (its defaults list)."""
    from pipeline.config import (
        AuditConfig,
        ClusterConfig,
        OracleConfig,
        SweepConfig,
        TrackingConfig,
    )
    from pipeline.data.schema import DATASET_SCHEMAS

    node = OmegaConf.load(path)
    (first,) = [d for d in node.defaults if isinstance(d, str) and d.startswith("/schema/")]
    option = first.split("/")[3].split("@")[0]
    schema = {"mechanism": SCHEMAS, "dataset": DATASET_SCHEMAS}.get(group, {}).get(option) or {
        "oracle": OracleConfig,
        "tracking": TrackingConfig,
        "cluster": ClusterConfig,
        "sweep": SweepConfig,
        "audit": AuditConfig,
    }[group]
    return OmegaConf.to_container(OmegaConf.structured(schema), resolve=False)


#: Every config group's options but Hydra's own (its help template has no schema).
OPTIONS = sorted(p for p in CONF.glob("*/*.yaml") if p.parent.name != "hydra")


@pytest.mark.parametrize("path", OPTIONS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_conf_holds_only_what_differs_from_the_schema(path):
    group = path.parent.name
    node = OmegaConf.to_container(OmegaConf.load(path), resolve=False)
    node.pop("defaults", None)
    node.pop("hydra", None)
    body = node.get(group, node) if group in ("sweep", "audit") else node
    defaults = _schema_defaults(group, path)
    restated = {k: v for k, v in body.items() if k in defaults and defaults[k] == v}
    assert not restated, f"{path} restates schema defaults: {restated}"
    unknown = [k for k in body if k not in defaults and not isinstance(body[k], dict)]
    assert not unknown, f"{path}: keys not in its schema: {unknown}"


def test_each_time_limit_default_is_written_once():
    from oracles.contract.budget import DEFAULT_TIME_LIMIT

    repo = CONF.parent
    text = "\n".join(p.read_text() for p in repo.glob("conf/**/*.yaml"))
    assert not re.search(r"^\s*(time_limit|threads):", text, re.MULTILINE)
    for module in ("oracles", "mechanisms", "pipeline"):
        for path in (repo / module).rglob("*.py"):
            assert "time_limit: float = 600" not in path.read_text(), path
    assert validate(compose_config([])).oracle.time_limit == DEFAULT_TIME_LIMIT


@pytest.mark.parametrize(
    "override, message",
    [
        ("mechanisms.opdisc.tau=-1", "mechanisms.opdisc: tau must be finite and > 0, found -1.0"),
        (
            "mechanisms.opsamp.loss=hinge",
            "mechanisms.opsamp: loss must be 'logistic' or 'zero_one'",
        ),
        (
            "mechanisms.dpsgd_lr.clip_norm=0",
            "mechanisms.dpsgd_lr: clip_norm must be finite and > 0",
        ),
        (
            "mechanisms.rspm_gaussian.calibration=paper_code",
            "mechanisms.rspm_gaussian: calibration must be 'proven' or 'paper'",
        ),
        ("mechanisms.opsamp.m=0", "mechanisms.opsamp: m must be >= 1, found 0"),
        # gamma = sqrt(ln(4d / delta) / (2m)) <= 1 (Lemma 9) needs m >= ln(4 / 1e-6) / 2 at any d
        ("mechanisms.opsamp.m=3", "mechanisms.opsamp: m must be >= 8 (so that gamma"),
        (
            "mechanisms.opsamp.out_of_bounds=drop",
            "mechanisms.opsamp: out_of_bounds must be 'error' or 'clip', found 'drop'",
        ),
        ("mechanisms.opdisc.name=rspm_gaussian", "mechanisms.opdisc.name: must be 'opdisc'"),
    ],
)
def test_a_setting_the_mechanism_refuses_is_a_config_error_naming_it(override, message):
    assert_config_error(["+sweep=smoke", override], message)


def test_settings_pickle_by_reference():
    config = validate(compose_config(["+sweep=smoke"]))
    settings = config.mechanisms["opsamp"]
    blob = pickle.dumps(settings)
    assert b"pipeline.settings_schemas" in blob and pickle.loads(blob) == settings


def test_the_catalog_says_which_oracle_and_how_each_runs():
    assert NON_PRIVATE == {"erm_01", "logistic_regression", "real_table"}
    assert NON_ORACLE == {
        "dpsgd_lr",
        "expmech",
        "logistic_regression",
        "fem",
        "fem_rspm",
        "mst",
        "aim",
        "mwem",
        "real_table",
    }
    assert SYNTHETIC == {"fem", "fem_rspm", "mst", "aim", "mwem", "real_table"}
    config = validate(compose_config(["oracle=highs", "oracle.time_limit=7"]))
    opsamp = config.mechanisms["opsamp"]
    logistic = mechanism_oracle(config.oracle, mechanism=opsamp)
    assert logistic.name == "highs" and chain_for(logistic.name, CONVEX)[0].strategy == "convex"
    assert (
        mechanism_oracle(config.oracle, mechanism=dataclasses.replace(opsamp, loss="zero_one")).name
        == "highs"
    )
    assert mechanism_oracle(config.oracle, mechanism=config.mechanisms["erm_01"]).name == "highs"
    with pytest.raises(ValueError, match="calls no oracle"):
        mechanism_oracle(config.oracle, mechanism=config.mechanisms["dpsgd_lr"])


@pytest.fixture(scope="module")
def tiny():
    config = validate(
        compose_config(
            [
                "+sweep=smoke",
                "dataset.n=80",
                "dataset.n_continuous=1",
                "dataset.groups=[2]",
                "dataset.levels=3",
            ]
        )
    )
    return load_dataset(config.dataset)[0]


@pytest.mark.parametrize(
    "override, mechanism, check",
    [
        # a walk of three parameters from the command line to the release
        (
            "mechanisms.dpsgd_lr.clip_norm=3.5",
            "dpsgd_lr",
            lambda r: (
                r.params["clip_norm"] == 3.5
                and math.isclose(r.noise["noise_std"], r.noise["noise_multiplier"] * 3.5)
            ),
        ),
        (
            "mechanisms.opdisc.calibration=paper",
            "opdisc",
            # the guarantee proven for the paper's sigma, not the target (SPEC 10.1)
            lambda r: r.privacy.calibration == "paper" and r.privacy.epsilon != 1.0,
        ),
        (
            "oracle.time_limit=45",
            "opsamp",
            lambda r: {c.backend for c in r.certificates} == {"convex"},
        ),
        ("margin=0.25", "logistic_regression", lambda r: r.margin == 0.25),
    ],
)
def test_a_setting_reaches_the_release(tiny, override, mechanism, check):
    config = validate(compose_config(["+sweep=smoke", "oracle=enumerate", override]))
    key = RunKey(mechanism, 1.0 if mechanism not in NON_PRIVATE else math.inf, 0)
    release = run_release(config, key, tiny)
    assert check(release), (release.params, dict(release.noise), release.privacy)
    assert np.all(np.isfinite(release.w))


def _records(n: int, seed: int) -> Dataset:
    """n random records over a three-attribute domain, the last the label."""
    domain = {"a": ["x", "y", "z"], "b": ["p", "q"], "label": ["no", "yes"]}
    rng = np.random.default_rng(seed)
    codes = np.stack([rng.integers(0, len(v), n) for v in domain.values()], axis=1)
    provenance = {
        "kind": "records",
        "domain": domain,
        "label": {"attribute": "label", "positive": "yes"},
    }
    return Dataset(codes, np.where(codes[:, 2] == 1, 1, -1), tuple(domain), provenance)


def test_a_synthetic_table_is_made_over_the_records_domain_and_scored_on_the_workload():
    config = validate(
        compose_config(
            [
                "+sweep=synth_adult",
                "sweep.workload_k=2",
                "mechanisms.fem.rounds=3",
                "mechanisms.fem.samples=2",
                "mechanisms.fem.backend=enumerate",
                "mechanisms.fem_rspm.rounds=3",
                "mechanisms.fem_rspm.samples=2",
            ]
        )
    )
    train, test = _records(200, 0), _records(100, 1)
    result, release = run_one(config, RunKey("fem", 1.0, 0), train, test)
    assert release.records.shape == (6, 3) and release.privacy.holds
    assert release.params["rounds"] == 3 and release.params["queries"] == 3 * 2 + 3 * 2 + 2 * 2
    assert {c.backend for c in release.certificates} == {"enumerate"}
    scores = result.scores
    assert (
        0 < scores.max_marginal_error <= 1
        and scores.mean_marginal_error <= scores.max_marginal_error
    )
    assert 0 <= scores.test_accuracy <= 1 and result.privacy_epsilon <= 1.0
    rspm_result, rspm = run_one(config, RunKey("fem_rspm", 1.0, 0), train, test)
    assert rspm.params["query_player"] == "rspm" and rspm.privacy.holds
    assert len(rspm.selection_certificates) == 3 and rspm_result.scores.max_marginal_error > 0
    # its selections, and its data player's answers: one call (one certificate) a round
    assert rspm_result.oracle_calls == 3 + 3
    assert rspm_result.oracle_certified is True
    assert release.params["query_player"] == "expmech"
    reference, table = run_one(config, RunKey("real_table", math.inf, 0), train, test)
    assert (table.records == train.features).all() and reference.scores.max_marginal_error == 0.0
    assert reference.privacy_status == "non-private"


def test_a_synthetic_data_mechanism_refuses_a_backend_it_has_not():
    with pytest.raises(ConfigError, match=r"mechanisms.fem: backend must be one of \['search', "):
        validate(compose_config(["+sweep=synth_adult", "mechanisms.fem.backend=gurobi"]))
