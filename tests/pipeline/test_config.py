"""Config composition: the schemas reject bad types, unknown keys and bad values by name."""

from __future__ import annotations

import dataclasses
import re
import time

import pytest
from hydra.errors import ConfigCompositionException
from omegaconf.errors import ConfigAttributeError, ValidationError

from pipeline.config import Config, ConfigError, sweep_id, validate
from pipeline.data.schema import AdultDatasetConfig, SyntheticDatasetConfig
from tests.pipeline.configs import assert_config_error, compose_config


def test_default_config_is_adult_without_sweep():
    config = validate(compose_config([]))
    assert isinstance(config, Config)
    assert isinstance(config.dataset, AdultDatasetConfig)
    assert config.sweep is None


def test_a_validated_config_is_read_only_to_its_leaves():
    """Hydra writes the schemas while it composes, ``check`` while it normalizes; once
    ``validate`` returns, a write anywhere in the tree is refused (pipeline.read_only)."""
    config = validate(compose_config(["+sweep=smoke"]))
    writes = [
        (config, "margin", 2.0),
        (config.oracle, "threads", 3),
        (config.sweep, "seeds", 9),
        (config.tracking, "experiment", "x"),
        (config.cluster, "cpus_per_task", 4),
        (config.dataset, "name", "x"),
        (config.mechanisms["opdisc"], "name", "x"),
    ]
    for record, name, value in writes:
        before = getattr(record, name)
        with pytest.raises(dataclasses.FrozenInstanceError, match=f"'{name}' of "):
            setattr(record, name, value)
        assert getattr(record, name) == before
    changed = dataclasses.replace(config, output_dir="/elsewhere")  # a changed copy
    assert changed.output_dir == "/elsewhere" and config.output_dir is None


def test_smoke_sweep_switches_to_synthetic():
    config = validate(compose_config(["+sweep=smoke"]))
    assert isinstance(config.dataset, SyntheticDatasetConfig)
    assert config.sweep.name == "smoke" and config.sweep.seeds >= 1


def test_adult_sweep_is_the_paper_grid():
    config = validate(compose_config(["+sweep=adult"]))
    assert isinstance(config.dataset, AdultDatasetConfig)
    assert config.sweep.epsilons == [0.1, 0.3, 0.5, 0.7, 1.0]
    assert config.sweep.seeds == 15
    assert config.sweep.privacy_delta is None  # 1/n^2, SPEC section 9
    # the paper's instance is certified by the structured oracle, not the reference
    assert config.oracle.name == "structured"


@pytest.mark.parametrize("name", ["structured", "auto", "highs", "gurobi", "enumerate", "window"])
def test_every_oracle_option_composes_and_builds(name):
    from pipeline.sweep.one_run import mechanism_oracle

    config = validate(compose_config([f"oracle={name}", "oracle.time_limit=5"]))
    assert config.oracle.name == name
    oracle = mechanism_oracle(config.oracle)
    assert oracle.name == name


@pytest.mark.parametrize("name", ["structured", "window"])
def test_oracle_parts_run_the_window_search_on_that_many_ray_workers(name):
    from pipeline.distributed.ray_search import RaySearch
    from pipeline.sweep.one_run import mechanism_oracle

    config = validate(compose_config([f"oracle={name}", "oracle.parts=4", "oracle.threads=2"]))
    search = mechanism_oracle(config.oracle).strategy("window")  # the route's window search
    assert isinstance(search.executor, RaySearch)
    assert search.executor.fixed == 3 and not search.executor.grow  # worker 0 and 3 extras
    assert search.executor.cpus_per_task == 2  # a worker holds the CPUs of the oracle's threads
    plain = mechanism_oracle(validate(compose_config([f"oracle={name}"])).oracle).strategy("window")
    assert isinstance(plain.executor, RaySearch)  # idle CPUs, no config
    assert plain.executor.fixed == 0 and plain.executor.grow


@pytest.mark.parametrize(
    "override, message",
    [
        ("oracle.parts=0", "oracle.parts: must be >= 1, found 0"),
        (
            "oracle=highs oracle.parts=2",
            "oracle.parts: must be 1 unless oracle.name is structured or window or portfolio, found 2",
        ),
    ],
)
def test_oracle_parts_are_checked(override, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        validate(compose_config(override.split()))


def test_overrides_reach_the_typed_config():
    config = validate(compose_config(["+sweep=smoke", "dataset.n=123", "sweep.epsilons=[0.2]"]))
    assert config.dataset.n == 123 and config.sweep.epsilons == [0.2]


def test_wrong_type_names_the_field():
    with pytest.raises(ConfigCompositionException) as err:
        compose_config(["+sweep=smoke", "dataset.n=abc"])
    cause = err.value.__cause__
    assert isinstance(cause, ValidationError)
    assert "Value 'abc' of type 'str' could not be converted to Integer" in str(cause)
    assert "full_key: dataset.n" in str(cause)


def test_unknown_key_names_the_field():
    with pytest.raises(ConfigCompositionException) as err:
        compose_config(["dataset.nn=3"])
    assert isinstance(err.value.__cause__, ConfigAttributeError)
    assert "full_key: dataset.nn" in str(err.value.__cause__)
    assert "Key 'nn' not in 'AdultDatasetConfig'" in str(err.value.__cause__)


def test_unknown_option_lists_the_options():
    with pytest.raises(Exception) as err:
        compose_config(["dataset=nope"])
    assert "Could not find 'dataset/nope'" in str(err.value)


@pytest.mark.parametrize(
    "overrides, message",
    [
        (
            ["+sweep=smoke", "sweep.epsilons=[0.5,-1]"],
            "sweep.epsilons: every epsilon must be finite and > 0, found [0.5, -1.0]",
        ),
        (["+sweep=smoke", "sweep.epsilons=[]"], "sweep.epsilons: must list at least one epsilon"),
        (
            ["+sweep=smoke", "sweep.epsilons=[0.5,1e308]"],
            "sweep.epsilons: every epsilon must be <= 9.22e+09 (a run's key and noise seed take "
            "it in units of 1e-9, as an integer below 2**63); too large to compute with, found "
            "1e+308",
        ),
        (["+sweep=smoke", "sweep.seeds=0"], "sweep.seeds: must be >= 1, found 0"),
        (["+sweep=smoke", "sweep.privacy_delta=1.5"], "sweep.privacy_delta: must be in (0, 1)"),
        (["+sweep=smoke", "dataset.label_noise=0.9"], "dataset.label_noise: must be in [0, 0.5]"),
        (["margin=0"], "margin: must be > 0, found 0.0"),
        (["cluster.num_cpus=0"], "cluster.num_cpus: must be >= 1 or null, found 0"),
        (
            ["oracle.name=cplex"],
            "oracle.name: must be structured, auto, highs, gurobi, enumerate, window, portfolio, found 'cplex'",
        ),
    ],
)
def test_bad_values_name_the_field(overrides, message):
    assert_config_error(overrides, message)


def test_the_largest_epsilon_is_taken_and_keeps_its_seed_below_the_references():
    from pipeline.config import MAX_EPSILON

    config = validate(compose_config(["+sweep=smoke", f"sweep.epsilons=[{MAX_EPSILON!r}]"]))
    assert config.sweep.epsilons == [MAX_EPSILON] and round(MAX_EPSILON * 1e9) <= 2**63
    with pytest.raises(ConfigError, match="sweep.epsilons: every epsilon must be <= 9.22e"):
        validate(compose_config(["+sweep=smoke", "sweep.epsilons=[1e10]"]))


def test_a_grid_beyond_max_runs_is_refused_with_its_count_in_a_second():
    """``sweep.seeds=100000000`` planned for minutes in 1.6 GB; the grid's count is refused
    when the config is checked, before any key of it exists."""
    start = time.perf_counter()
    with pytest.raises(ConfigError) as raised:
        validate(compose_config(["+sweep=smoke", "sweep.seeds=100000000"]))
    assert time.perf_counter() - start < 5
    assert str(raised.value) == (
        "sweep.seeds: the grid holds 1,200,000,002 runs (6 private mechanism(s) x 2 epsilon(s) "
        "x 100,000,000 seeds, + 2 reference(s)), more than sweep.max_runs=10,000; lower "
        "sweep.seeds (or the epsilons, the mechanisms), or raise sweep.max_runs, found 100000000"
    )
    big = validate(compose_config(["+sweep=smoke", "sweep.seeds=2000", "sweep.max_runs=24002"]))
    assert big.sweep.runs() == 24_002 == 6 * 2 * 2000 + 2


def test_the_run_count_is_the_number_of_keys_and_max_runs_is_not_the_sweeps_identity():
    from pipeline.sweep.one_run import sweep_keys

    config = validate(compose_config(["+sweep=smoke", "sweep.seeds=3"]))
    assert config.sweep.runs() == len(sweep_keys(config)) == 6 * 2 * 3 + 2
    resolved = dataclasses.asdict(config)
    raised = dataclasses.asdict(
        validate(compose_config(["+sweep=smoke", "sweep.seeds=3", "sweep.max_runs=99"]))
    )
    assert sweep_id(resolved) == sweep_id(raised)


def test_the_time_limit_and_carrying_on_are_not_the_sweeps_identity():
    # the same command with a longer limit, or oracle.carry_on, carries the sweep on in its own
    # directory (docs/privacy.md, "Carrying on"); the oracle itself is part of it
    base = sweep_id(dataclasses.asdict(validate(compose_config(["+sweep=smoke"]))))
    longer = ["+sweep=smoke", "oracle.time_limit=1800", "oracle.carry_on=true"]
    assert sweep_id(dataclasses.asdict(validate(compose_config(longer)))) == base
    other = sweep_id(
        dataclasses.asdict(validate(compose_config(["+sweep=smoke", "oracle=window"])))
    )
    assert other != base


def test_oracle_estimate_is_on_by_default_and_not_the_sweeps_identity():
    config = validate(compose_config(["+sweep=smoke"]))
    off = validate(compose_config(["+sweep=smoke", "oracle.estimate=false"]))
    assert config.oracle.estimate is True and off.oracle.estimate is False
    assert sweep_id(dataclasses.asdict(config)) == sweep_id(dataclasses.asdict(off))
