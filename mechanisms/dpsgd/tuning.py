"""DP-SGD's hyperparameter search (SPEC section 6).

Hyperparameters (C, b, lr) are chosen per (epsilon, delta) by grid search, as in the paper
(``tune_dpsgd``). Selecting by training accuracy reads the private data: that mode warns
(``PrivacyLeakWarning``) and its release says the guarantee does not hold. The accounted mode
runs Papernot & Steinke's repeat-and-select (ICLR 2022; dp-accounting's
``RepeatAndSelectDpEvent``): a random number K of runs, each with a candidate drawn uniformly
from the grid and a noisy score, and the best noisy score wins; the budget covers all of it.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Sequence

import dp_accounting
import numpy as np
from dp_accounting import dp_event

from core.objective import check_data, predict
from core.validation import check_int, check_real, check_type, is_real
from mechanisms.dpsgd.algorithm import DEFAULT_EPOCHS, DPSGDParams, run_dpsgd, train_dpsgd
from mechanisms.dpsgd.sgd_accounting import (
    ACCOUNTANT_DESCRIPTIONS,
    PLD_REPLACE_ONE,
    RDP_GROUP,
    calibrate,
    dpsgd_event,
    rdp_group_epsilon,
)
from mechanisms.privacy import ApproximateTarget, PrivacyError, warn_data_dependent
from mechanisms.release import PrivacyClaim, Release, check_rng

# --- hyperparameter search -----------------------------------------------------------------------


@dataclass(frozen=True)
class DPSGDGrid:
    """The (C, b, lr) candidates of the grid search, all trained for ``epochs``."""

    clip_norms: tuple[float, ...] = (0.5, 1.0, 2.0)
    batch_sizes: tuple[int, ...] = (64, 256)
    learning_rates: tuple[float, ...] = (0.5, 2.0, 8.0)
    epochs: float = DEFAULT_EPOCHS

    def __post_init__(self) -> None:
        for name, check in (
            ("clip_norms", check_real),
            ("batch_sizes", check_int),
            ("learning_rates", check_real),
        ):
            values = getattr(self, name)
            values = (values,) if np.ndim(values) == 0 else tuple(values)
            if not values:
                raise ValueError(f"{name} must not be empty")
            for value in values:
                check(name, value)
            object.__setattr__(self, name, values)
        check_real("epochs", self.epochs)

    def candidates(self) -> list[tuple[float, int, float]]:
        """Every (clip_norm, batch_size, learning_rate), in a fixed order."""
        return list(itertools.product(self.clip_norms, self.batch_sizes, self.learning_rates))

    def params(self, epsilon: float, delta: float, candidate: Sequence[Any]) -> DPSGDParams:
        C, b, lr = candidate
        return DPSGDParams(
            epsilon, delta, clip_norm=C, batch_size=b, learning_rate=lr, epochs=self.epochs
        )


def tune_dpsgd(
    X: Any,
    y: Any,
    target: ApproximateTarget,
    grid: DPSGDGrid | None = None,
    rng: np.random.Generator | None = None,
    *,
    accounted: bool = False,
    mean_runs: float | None = None,
    shape: float = 1.0,
    score_noise_ratio: float = 25.0,
) -> Release:
    """DP-SGD with hyperparameters chosen by grid search for the ``target`` (epsilon, delta).

    ``accounted=False`` (the paper's protocol): every candidate is trained at (epsilon, delta)
    and the one with the best training accuracy is released. Not private: it warns and the
    release's claim does not hold (``params['selection'] == 'unaccounted'``).

    ``accounted=True``: repeat-and-select (``RepeatAndSelectDpEvent``, Papernot & Steinke 2022),
    the whole selection within (epsilon, delta):

    * K ~ the distribution with mean ``mean_runs`` (default: the grid's size) and ``shape``
      (1: geometric, the default; 0: logarithmic; (0, inf): truncated negative binomial;
      inf: Poisson, where K = 0 releases w = 0). All draws of K are >= 1 except Poisson's.
    * each run draws a candidate uniformly from the grid, trains with one shared noise
      multiplier z, and scores itself by its count of correct training predictions plus
      N(0, (score_noise_ratio * z)^2) (sensitivity 1 under add/remove). The best noisy score
      is released with its w.
    * one run's event composes one DP-SGD event per distinct (batch size, steps) of the grid and
      the score's Gaussian event: with one batch size this is exact, with several it bounds the
      run's RDP from above (the RDP of a data-independent choice among mechanisms is at most the
      maximum, hence at most the sum, of theirs), so use one batch size for a tight budget.
      z is calibrated on the whole RepeatAndSelectDpEvent.
    * accounted by ``"rdp_group"`` (``rdp_group_epsilon``), not the PLD accountant: dp-accounting
      0.6.0's ``PLDAccountant`` does not support ``RepeatAndSelectDpEvent`` (its Papernot-Steinke
      bound is stated in RDP), so this path keeps the looser group-privacy route; the release
      records ``noise['accountant'] == 'rdp_group'``.
    """
    X, y = check_data(X, y)
    rng = check_rng(rng)
    check_type("target", target, ApproximateTarget)  # checked when it was built: trusted
    epsilon, delta = target.epsilon, target.delta
    grid = DPSGDGrid() if grid is None else grid
    check_type("grid", grid, DPSGDGrid)
    if not accounted:
        warn_data_dependent(
            "the choice of DP-SGD hyperparameters (clip norm, batch size, learning rate) by "
            "training accuracy over the grid"
        )
        return _tune_unaccounted(X, y, epsilon, delta, grid, rng)
    return _tune_repeat_and_select(
        X,
        y,
        epsilon,
        delta,
        grid,
        rng,
        mean_runs=mean_runs,
        shape=shape,
        score_noise_ratio=score_noise_ratio,
    )


def _tune_unaccounted(X, y, epsilon, delta, grid, rng) -> Release:
    start = time.perf_counter()
    best, best_accuracy = None, -1.0
    for candidate in grid.candidates():
        release = run_dpsgd(X, y, grid.params(epsilon, delta, candidate), rng)
        accuracy = release.accuracy(X, y)
        if accuracy > best_accuracy:
            best, best_accuracy = release, accuracy
    runs = len(grid.candidates())
    claim = PrivacyClaim(
        epsilon,
        delta,
        False,
        f"each of {runs} runs is ({epsilon}, {delta})-DP "
        f"({ACCOUNTANT_DESCRIPTIONS[PLD_REPLACE_ONE]}), but the hyperparameters were selected "
        "by non-private training accuracy: the selection is unaccounted",
        accounted_epsilon=best.privacy.accounted_epsilon,
        requested_epsilon=epsilon,
        requested_delta=delta,
        calibration=PLD_REPLACE_ONE,
    )
    return Release(
        mechanism="dpsgd_tuned",
        w=best.w,
        privacy=claim,
        noise=best.noise,
        params={
            **best.params,
            "selection": "unaccounted",
            "selection_rule": "max training accuracy",
            "candidates": runs,
            "selected_train_accuracy": best_accuracy,
        },
        timings={"total": time.perf_counter() - start},
    )


def repeat_and_select_event(
    noise_multiplier: float,
    configs: Sequence[tuple[float, int]],
    *,
    mean_runs: float,
    shape: float,
    score_noise_ratio: float,
) -> dp_event.DpEvent:
    """The whole accounted search: ``configs`` are the grid's distinct (q, steps)."""
    run = dp_accounting.ComposedDpEvent(
        [dpsgd_event(noise_multiplier, q, steps) for q, steps in configs]
        + [dp_accounting.GaussianDpEvent(score_noise_ratio * noise_multiplier)]
    )
    return dp_event.RepeatAndSelectDpEvent(run, mean_runs, shape)


def draw_repetitions(mean_runs: float, shape: float, rng: np.random.Generator) -> int:
    """K from the distribution of ``RepeatAndSelectDpEvent(mean_runs, shape)``.

    The success probability gamma is solved from the mean from above, so the sampled mean is at
    most ``mean_runs`` and the accountant (which uses a gamma from below) stays conservative.
    """
    if shape == math.inf:
        return int(rng.poisson(mean_runs))
    if mean_runs == 1:
        return 1
    if shape == 1:
        return int(rng.geometric(1.0 / mean_runs))
    gamma = _tnb_gamma(mean_runs, shape)
    if shape == 0:
        return int(rng.logseries(1.0 - gamma))
    while True:  # truncated negative binomial: condition NB(shape, gamma) on K >= 1
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


def _tnb_mean(gamma: float, shape: float) -> float:
    if shape == 0:
        return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
    return shape * (1.0 / gamma - 1.0) / (1.0 - gamma**shape)


def _tnb_gamma(mean: float, shape: float) -> float:
    lo, hi = 0.0, min(1.0, 2.0 * (shape + 1.0) / mean)  # mean decreases in gamma
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2.0
        if _tnb_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
    return hi


def _tune_repeat_and_select(
    X, y, epsilon, delta, grid, rng, *, mean_runs, shape, score_noise_ratio
) -> Release:
    candidates = grid.candidates()
    mean_runs = float(len(candidates)) if mean_runs is None else mean_runs
    check_real("mean_runs", mean_runs)
    if mean_runs < 1:
        raise ValueError(f"mean_runs must be >= 1, found {mean_runs!r}")
    if not is_real(shape):
        raise TypeError(f"shape must be a real number, found {shape!r}")
    if not shape >= 0:
        raise ValueError(f"shape must be >= 0 (inf: Poisson), found {shape!r}")
    check_real("score_noise_ratio", score_noise_ratio)
    start = time.perf_counter()
    n = len(y)
    runs_params = [grid.params(epsilon, delta, c) for c in candidates]
    configs = sorted({(p.sampling_rate(n), p.num_steps(n)) for p in runs_params})

    def make_event(z: float) -> dp_event.DpEvent:
        return repeat_and_select_event(
            z, configs, mean_runs=mean_runs, shape=shape, score_noise_ratio=score_noise_ratio
        )

    z = calibrate(make_event, epsilon, delta, epsilon_of=rdp_group_epsilon)
    eps = rdp_group_epsilon(make_event(z), delta)
    if eps > epsilon:
        raise PrivacyError(f"accounted epsilon {eps!r} exceeds the target {epsilon!r}")
    calibrated = time.perf_counter()

    runs = draw_repetitions(mean_runs, shape, rng)
    score_std = score_noise_ratio * z
    best_w, best_score, best = np.zeros(X.shape[1]), -math.inf, None
    for _ in range(runs):
        candidate = candidates[int(rng.integers(len(candidates)))]
        params = grid.params(epsilon, delta, candidate)
        w = train_dpsgd(
            X,
            y,
            noise_multiplier=z,
            clip_norm=params.clip_norm,
            batch_size=params.batch_size,
            learning_rate=params.learning_rate,
            steps=params.num_steps(n),
            rng=rng,
        )
        correct = int(np.count_nonzero(predict(X, w) == y))  # the reported rule (SPEC 2)
        score = correct + rng.normal(0.0, score_std)
        if score > best_score:
            best_w, best_score, best = w, score, params
    finished = time.perf_counter()
    claim = PrivacyClaim(
        epsilon,
        delta,
        True,
        f"{ACCOUNTANT_DESCRIPTIONS[RDP_GROUP]}; the PLD accountant does not support "
        f"RepeatAndSelectDpEvent: repeat-and-select over {runs} runs (mean {mean_runs:g}, "
        f"shape {shape:g}), "
        f"candidates uniform over {len(candidates)}, noisy-count scores (std {score_std:.4g}), "
        f"shared z={z:.6g}",
        accounted_epsilon=eps,
        requested_epsilon=epsilon,
        requested_delta=delta,
        calibration=RDP_GROUP,
    )
    chosen = asdict(best) if best is not None else {}
    noise = {
        "noise_multiplier": z,
        "score_noise_std": score_std,
        "mean_runs": mean_runs,
        "shape": shape,
        "runs": runs,
        "accountant": RDP_GROUP,
    }
    if best is not None:
        noise |= {
            "sampling_rate": best.sampling_rate(n),
            "steps": best.num_steps(n),
            "noise_std": z * best.clip_norm,
        }
    return Release(
        mechanism="dpsgd_tuned",
        w=best_w,
        privacy=claim,
        noise=noise,
        params={
            **chosen,
            "epsilon": epsilon,
            "delta": delta,
            "selection": "repeat_and_select",
            "selection_rule": "max noisy count of correct training predictions",
            "candidates": len(candidates),
            "selected_noisy_score": best_score if best is not None else None,
        },
        timings={
            "calibrate": calibrated - start,
            "train": finished - calibrated,
            "total": finished - start,
        },
    )
