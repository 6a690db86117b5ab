"""DP-SGD's hyperparameter search (``mechanisms.dpsgd.tuning``; SPEC section 6): unaccounted (it
warns and claims no privacy) or accounted by repeat-and-select, and its options."""

from __future__ import annotations

import math
import warnings

import dp_accounting
import numpy as np
import pytest
from dp_accounting import rdp

from mechanisms.dpsgd.sgd_accounting import RDP_GROUP, calibrate_noise_multiplier, pld_epsilon
from mechanisms.dpsgd.tuning import (
    DPSGDGrid,
    draw_repetitions,
    repeat_and_select_event,
    tune_dpsgd,
)
from mechanisms.privacy import ApproximateTarget, PrivacyLeakWarning
from tests.mechanisms.dpsgd_helpers import replace_one_holds, toy

SMALL_GRID = DPSGDGrid(
    clip_norms=(1.0, 2.0), batch_sizes=(40,), learning_rates=(1.0, 4.0), epochs=2
)


def test_unaccounted_search_warns_and_does_not_claim_privacy():
    X, y = toy()
    with pytest.warns(PrivacyLeakWarning, match="hyperparameters"):
        r = tune_dpsgd(X, y, ApproximateTarget(1.0, 1e-5), SMALL_GRID, np.random.default_rng(0))
    assert not r.privacy.holds and "unaccounted" in r.privacy.reason
    assert r.params["selection"] == "unaccounted" and r.params["candidates"] == 4
    assert r.params["selected_train_accuracy"] == pytest.approx(r.accuracy(X, y))
    assert (r.params["clip_norm"], r.params["batch_size"], r.params["learning_rate"]) in set(
        SMALL_GRID.candidates()
    )


def _accounted(X, y, grid, mean_runs):
    """The accounted search over ``grid`` at (1, 1e-5) with seed 0."""
    return tune_dpsgd(
        X,
        y,
        ApproximateTarget(1.0, 1e-5),
        grid,
        np.random.default_rng(0),
        accounted=True,
        mean_runs=mean_runs,
    )


def test_accounted_search_is_within_budget_and_does_not_warn():
    X, y = toy()
    with warnings.catch_warnings():
        warnings.simplefilter("error", PrivacyLeakWarning)
        r = _accounted(X, y, SMALL_GRID, mean_runs=3)
    assert r.privacy.holds and r.params["selection"] == "repeat_and_select"
    assert 0.99 <= r.privacy.accounted_epsilon <= 1.0
    assert r.noise["accountant"] == "rdp_group" and "RdpAccountant" in r.privacy.reason
    z = r.noise["noise_multiplier"]
    # the accounted epsilon is the replace-one epsilon of the whole repeat-and-select event
    event = repeat_and_select_event(
        z,
        [(40 / len(y), math.ceil(2 * len(y) / 40))],
        mean_runs=3,
        shape=1.0,
        score_noise_ratio=25.0,
    )
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    assert replace_one_holds(accountant, r.privacy.accounted_epsilon, 1e-5)
    assert not replace_one_holds(accountant, r.privacy.accounted_epsilon * (1 - 1e-4), 1e-5)
    # the selection costs budget: more noise than a single run at the same epsilon (same route)
    single = calibrate_noise_multiplier(
        ApproximateTarget(1.0, 1e-5), 40 / len(y), math.ceil(2 * len(y) / 40), accountant=RDP_GROUP
    )
    assert z > single
    # why this path stays on RDP + group privacy: the PLD accountant refuses the event
    with pytest.raises(dp_accounting.UnsupportedEventError, match="RepeatAndSelectDpEvent"):
        pld_epsilon(event, 1e-5, 1e-3)
    assert r.noise["runs"] >= 1


def test_several_batch_sizes_are_accounted_conservatively():
    X, y = toy()
    one = _accounted(X, y, SMALL_GRID, mean_runs=2)
    two = _accounted(X, y, DPSGDGrid((1.0,), (40, 80), (1.0,), epochs=2), mean_runs=2)
    assert two.noise["noise_multiplier"] > one.noise["noise_multiplier"]
    assert two.privacy.accounted_epsilon <= 1.0


@pytest.mark.parametrize("shape, mean", [(1.0, 4.0), (0.0, 4.0), (0.5, 4.0), (math.inf, 4.0)])
def test_repetitions_have_the_accounted_distribution(shape, mean):
    rng = np.random.default_rng(0)
    draws = np.array([draw_repetitions(mean, shape, rng) for _ in range(20_000)])
    # the sampled mean is at most the accounted mean; 20,000 draws: standard error < 0.05,
    # so a 0.2 tolerance fails with probability < 1e-4
    assert draws.mean() == pytest.approx(mean, abs=0.2)
    if shape != math.inf:
        assert draws.min() >= 1


def test_search_rejects_bad_options():
    X, y = toy()
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="mean_runs must be >= 1, found 0.5"):
        tune_dpsgd(
            X, y, ApproximateTarget(1.0, 1e-5), SMALL_GRID, rng, accounted=True, mean_runs=0.5
        )
    with pytest.raises(ValueError, match="shape must be >= 0 .* found -1.0"):
        tune_dpsgd(X, y, ApproximateTarget(1.0, 1e-5), SMALL_GRID, rng, accounted=True, shape=-1.0)
    with pytest.raises(TypeError, match="grid must be DPSGDGrid, found dict"):
        tune_dpsgd(X, y, ApproximateTarget(1.0, 1e-5), {"clip_norms": (1.0,)}, rng)
    with pytest.raises(ValueError, match="batch_sizes must be >= 1, found 0"):
        DPSGDGrid(batch_sizes=(0,))
    with pytest.raises(ValueError, match="clip_norms must not be empty"):
        DPSGDGrid(clip_norms=())
    with pytest.raises(TypeError, match="numpy.random.Generator"):
        tune_dpsgd(X, y, ApproximateTarget(1.0, 1e-5), SMALL_GRID)
    # the target is the one checked type: a bare epsilon is refused by name, a bad one by it
    with pytest.raises(TypeError, match="^target must be ApproximateTarget, found float$"):
        tune_dpsgd(X, y, 1.0, SMALL_GRID, rng)
    with pytest.raises(ValueError, match=r"^epsilon must be finite and > 0, found -1\.0$"):
        tune_dpsgd(X, y, ApproximateTarget(-1.0, 1e-5), SMALL_GRID, rng)
