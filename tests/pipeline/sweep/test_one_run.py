"""pipeline.sweep.one_run: the oracle a run gets, built with the configured options; the order a sweep
starts its runs in."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest
from hydra import compose, initialize_config_dir

from pipeline.sweep import one_run
from core.problem import ConvexProblem
from pipeline.cli import CONFIG_DIR
from pipeline.config import validate
from pipeline.data.record import Dataset


def _config(overrides):
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        return validate(compose(config_name="config", overrides=["+sweep=smoke", *overrides]))


@pytest.mark.parametrize(
    "mechanism", ["opdisc", "rspm_gaussian", "rspm_laplace", "opsamp", "erm_01"]
)
def test_oracle_options_reach_every_oracle_mechanism(mechanism):
    config = _config(["oracle=highs", "oracle.time_limit=120", "oracle.threads=2"])
    oracle = one_run.mechanism_oracle(config.oracle, mechanism=config.mechanisms[mechanism])
    assert oracle.time_limit == 120 and oracle.threads == 2
    assert oracle.name == "highs"  # OPSamp's surrogate: the table's convex row, on any route


def test_time_limit_reaches_the_convex_oracle_of_an_opsamp_run():
    config = _config(["oracle.time_limit=120"])
    seen = []

    def solve_many(oracle, problems):
        seen.append((oracle, problems[0]))
        raise StopIteration  # the oracle the run's calls go to is all this test needs

    rng = np.random.default_rng(0)
    train = Dataset(
        features=rng.integers(0, 2, size=(20, 3)).astype(float),
        labels=rng.choice([-1, 1], size=20),
        feature_names=("a", "b", "c"),
    )
    with pytest.raises(StopIteration):
        one_run.run_release(
            config, one_run.RunKey("opsamp", 1.0, 0), train, threads=3, solve_many=solve_many
        )
    ((oracle, problem),) = seen
    assert isinstance(problem, ConvexProblem)
    assert oracle.time_limit == 120 and oracle.threads == 3
    assert oracle.solve(problem, oracle.budget()).certificate.backend == "convex"


def test_each_opsamp_run_checks_its_data_naming_the_feature():
    """Every run checks the data against x_max (mechanisms.runner.run), not only the sweep's
    preflight: a refusal names the dataset's feature, before any oracle is called."""
    from mechanisms.bounds import FeatureBoundError

    config = _config(["mechanisms.opsamp.x_max=0.5"])
    X = np.full((6, 3), 0.25)
    X[4, 2] = 0.75
    train = Dataset(features=X, labels=np.array([1, -1] * 3), feature_names=("a", "b", "c"))
    with pytest.raises(FeatureBoundError, match=r"^x_max: row 4, column 'c' is 0.75, beyond"):
        one_run.run_release(config, one_run.RunKey("opsamp", 1.0, 0), train)


def test_a_reference_is_labelled_as_one_and_keeps_its_key():
    reference = one_run.RunKey("erm_01", math.inf, 0)
    assert str(reference) == "erm_01/eps=inf/run=0"  # the key of existing sweeps, unchanged
    assert reference.label == "erm_01 (non-private reference)"
    assert one_run.RunKey("opdisc", 0.5, 1).label == "opdisc/eps=0.5/run=1"
    assert one_run.run_label("erm_01", str(reference)) == reference.label


def test_a_sweeps_window_searches_keep_their_states_in_its_output_directory(tmp_path):
    config = dataclasses.replace(_config(["oracle=structured"]), output_dir=str(tmp_path))
    assert one_run.carry_directory(config) == str(tmp_path.absolute() / "carry")
    oracle = one_run.SweepOracles(config.oracle, 1, one_run.carry_directory(config)).configured()
    assert oracle.strategy("window").carry == str(tmp_path.absolute() / "carry")
    assert one_run.carry_directory(dataclasses.replace(config, output_dir=None)) is None
    highs = one_run.oracle_for(config.oracle, "highs", 1, one_run.carry_directory(config))
    assert "window" not in highs.strategies  # no window search: no state to keep
    assert (
        highs.carry == oracle.carry == one_run.carry_directory(config)
    )  # but every attempt counts
    conjunctions = one_run.oracle_for(config.oracle, "conjunctions_search", 1, str(tmp_path))
    assert conjunctions.carry is None  # not a mechanism's problem: nothing to count


def test_a_sweep_starts_a_run_of_every_cell_in_turn():
    keys = [one_run.RunKey("a", 1.0, i) for i in range(3)] + [
        one_run.RunKey("a", 2.0, i) for i in range(2)
    ]
    keys += [one_run.RunKey("erm_01", math.inf, 0)] + [
        one_run.RunKey("b", 1.0, i) for i in range(2)
    ]
    order = one_run.launch_order(keys)
    assert sorted(map(str, order)) == sorted(map(str, keys))  # every run once
    assert [str(k) for k in order[:4]] == [
        "a/eps=1/run=0",
        "a/eps=2/run=0",
        "erm_01/eps=inf/run=0",  # the reference in the first round
        "b/eps=1/run=0",
    ]
    assert [str(k) for k in order[4:]] == [
        "a/eps=1/run=1",
        "a/eps=2/run=1",
        "b/eps=1/run=1",
        "a/eps=1/run=2",
    ]
    assert one_run.launch_order([]) == []


def test_a_carried_on_sweep_starts_its_cheapest_run_to_certify_first():
    """Issue 45, item 3: the runs with a price (CPU seconds left to certify) cheapest first,
    ties in launch order, then those without a price (not measured, never finished) in
    launch order."""
    keys = [one_run.RunKey("opdisc", 10.0, i) for i in range(3)]
    keys += [one_run.RunKey("rspm_gaussian", 10.0, i) for i in range(3)]
    prices = {
        "opdisc/eps=10/run=0": 5.8 * 3600,  # the sweep: hours, minutes, minutes
        "opdisc/eps=10/run=1": 13 * 60,
        "rspm_gaussian/eps=10/run=0": 5 * 60,
        "rspm_gaussian/eps=10/run=1": math.nan,  # its search was too short to price
        "rspm_gaussian/eps=10/run=2": 13 * 60,  # a tie: launch order (rspm run 2 after opdisc 1)
    }
    order = [str(k) for k in one_run.carry_order(keys, prices)]
    assert order == [
        "rspm_gaussian/eps=10/run=0",
        "opdisc/eps=10/run=1",
        "rspm_gaussian/eps=10/run=2",
        "opdisc/eps=10/run=0",
        "rspm_gaussian/eps=10/run=1",  # no price: in launch order (round-robin over cells)
        "opdisc/eps=10/run=2",
    ]
    # without prices it is the launch order, and every run appears once whatever the prices
    assert one_run.carry_order(keys, {}) == one_run.launch_order(keys)
    rng = np.random.default_rng(0)
    for _ in range(20):
        drawn = {str(k): float(rng.exponential(100)) for k in keys if rng.random() < 0.7}
        ordered = one_run.carry_order(keys, drawn)
        assert sorted(map(str, ordered)) == sorted(map(str, keys))
        priced = [drawn[str(k)] for k in ordered if str(k) in drawn]
        assert priced == sorted(drawn.values())
        assert all(str(k) in drawn for k in ordered[: len(drawn)])
