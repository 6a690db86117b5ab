"""DP-SGD logistic regression, step by step (SPEC section 6; Abadi et al. 2016).

Loss log(1 + exp(-y <w, x>)), no intercept. Each of T steps:

    B_t      = Poisson sample of the rows, each kept with probability q = b / n
    g_i      = grad of the loss at w_t for i in B_t, clipped:  g_i * min(1, C / ||g_i||_2)
    w_{t+1}  = w_t - lr * (sum_{i in B_t} g_i + N(0, (z C)^2 I_d)) / b

normalized by the EXPECTED batch size b (so the noisy sum's sensitivity stays C). The output is
the average of the iterates w_1..w_T (post-processing). z comes from mechanisms.dpsgd.sgd_accounting.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.special import expit

from core.objective import check_data
from core.validation import check_int, check_not_both, check_real, check_type, require
from mechanisms.dpsgd.sgd_accounting import (
    ACCOUNTANT_DESCRIPTIONS,
    PLD_REPLACE_ONE,
    accounted_epsilon,
    calibrate_noise_multiplier,
    pld_discretization,
)
from mechanisms.privacy import PrivacyError, TargetRecord
from mechanisms.release import PrivacyClaim, Release, check_rng

#: Epochs when neither ``epochs`` nor ``steps`` is given.
DEFAULT_EPOCHS = 5.0

# --- parameters ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DPSGDParams(TargetRecord):
    """A DP-SGD run's privacy target and hyperparameters.

    Give ``epochs`` (T = ceil(epochs * n / batch_size)) or ``steps`` (T), not both; neither
    means ``DEFAULT_EPOCHS``. delta must be > 0 (the Gaussian mechanism has no pure epsilon).
    """

    epsilon: float
    delta: float
    #: C: the sweeps' and the estimator's value (the pipeline's config used 2.0 while this said
    #: 1.0; one default now, here: pipeline.settings_schemas reads it).
    clip_norm: float = 2.0
    batch_size: int = 64
    learning_rate: float = 2.0
    epochs: float | None = None
    steps: int | None = None

    def __post_init__(self) -> None:
        self.hold_target()
        check_real("clip_norm", self.clip_norm)
        check_int("batch_size", self.batch_size)
        check_real("learning_rate", self.learning_rate)
        check_not_both("epochs", self.epochs, "steps", self.steps)
        if self.steps is not None:
            check_int("steps", self.steps)
        else:
            epochs = DEFAULT_EPOCHS if self.epochs is None else self.epochs
            check_real("epochs", epochs)
            object.__setattr__(self, "epochs", float(epochs))

    def check_rows(self, n: int) -> None:
        """The settings against a training set of ``n`` rows: a batch is at most n rows."""
        check_int("n", n)
        require(
            self.batch_size <= n,
            "batch_size",
            f"must be <= n = {n} (the training rows)",
            self.batch_size,
        )

    def sampling_rate(self, n: int) -> float:
        """q = batch_size / n; the batch size may not exceed n."""
        self.check_rows(n)
        return self.batch_size / n

    def num_steps(self, n: int) -> int:
        if self.steps is not None:
            return int(self.steps)
        return max(1, math.ceil(self.epochs * n / self.batch_size))


# --- the algorithm, step by step -----------------------------------------------------------------


def per_example_gradients(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(b, d): grad_w log(1 + exp(-y <w, x>)) = -y sigmoid(-y <w, x>) x, one row per example."""
    return (-y * expit(-y * (X @ w)))[:, None] * X


def clip_and_sum(gradients: np.ndarray, clip_norm: float) -> np.ndarray:
    """sum_i g_i min(1, C / ||g_i||_2): each example contributes a vector of norm <= C."""
    norms = np.linalg.norm(gradients, axis=1)
    factors = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))
    return factors @ gradients


def add_noise(total: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    return total + rng.normal(0.0, std, size=total.shape)


def train_dpsgd(
    X: np.ndarray,
    y: np.ndarray,
    *,
    noise_multiplier: float,
    clip_norm: float,
    batch_size: int,
    learning_rate: float,
    steps: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The T steps of the module docstring; returns the average iterate. No accounting here:
    the caller calibrates ``noise_multiplier`` (``run_dpsgd``, ``tune_dpsgd``)."""
    n, d = X.shape
    y = np.asarray(y, dtype=float)
    q = batch_size / n
    w = np.zeros(d)
    total = np.zeros(d)
    for _ in range(steps):
        batch = rng.random(n) < q  # Poisson sampling
        summed = clip_and_sum(per_example_gradients(X[batch], y[batch], w), clip_norm)
        noisy = add_noise(summed, noise_multiplier * clip_norm, rng)
        w = w - learning_rate * noisy / batch_size
        total += w
    return total / steps


def run_dpsgd(X: Any, y: Any, params: DPSGDParams, rng: np.random.Generator) -> Release:
    """One DP-SGD run calibrated to (params.epsilon, params.delta) by the PLD replace-one
    accountant; the release's noise records the accountant and its discretization, and its
    claim's ``accounted_epsilon`` is the PLD epsilon of the z used."""
    X, y = check_data(X, y)
    rng = check_rng(rng)
    check_type("params", params, DPSGDParams)
    start = time.perf_counter()
    n = len(y)
    q, steps = params.sampling_rate(n), params.num_steps(n)
    discretization = pld_discretization(params.target)
    z = calibrate_noise_multiplier(params.target, q, steps)
    eps = accounted_epsilon(z, q, steps, params.delta, value_discretization_interval=discretization)
    if eps > params.epsilon:  # calibrate guarantees it; a failure here is a bug, never a release
        raise PrivacyError(f"accounted epsilon {eps!r} exceeds the target {params.epsilon!r}")
    calibrated = time.perf_counter()
    w = train_dpsgd(
        X,
        y,
        noise_multiplier=z,
        clip_norm=params.clip_norm,
        batch_size=params.batch_size,
        learning_rate=params.learning_rate,
        steps=steps,
        rng=rng,
    )
    trained = time.perf_counter()
    claim = PrivacyClaim(
        params.epsilon,
        params.delta,
        True,
        f"{ACCOUNTANT_DESCRIPTIONS[PLD_REPLACE_ONE]}, value discretization "
        f"{discretization:.3g}: {steps} Poisson-subsampled Gaussian steps, q={q:.6g}, z={z:.6g}",
        accounted_epsilon=eps,
        requested_epsilon=params.epsilon,
        requested_delta=params.delta,
        calibration=PLD_REPLACE_ONE,
    )
    return Release(
        mechanism="dpsgd_lr",
        w=w,
        privacy=claim,
        noise={
            "noise_multiplier": z,
            "sampling_rate": q,
            "steps": steps,
            "noise_std": z * params.clip_norm,
            "accountant": PLD_REPLACE_ONE,
            "pld_discretization": discretization,
        },
        params=asdict(params),
        timings={
            "calibrate": calibrated - start,
            "train": trained - calibrated,
            "total": trained - start,
        },
    )
