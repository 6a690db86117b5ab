"""Helpers shared by the DP-SGD test files (``mechanisms.dpsgd``)."""

from __future__ import annotations

import math

import numpy as np


def toy(n=400, d=5, seed=0):
    """n points uniform in [0, 1]^d labelled by a fixed linear rule with Gaussian noise."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d))
    w = np.array([2.0, -1.0, 1.5, -2.0, 0.5])[:d]
    y = np.where(X @ w + 0.3 * rng.normal(size=n) >= 0, 1, -1)
    return X, y


def replace_one_holds(accountant, eps_replace: float, delta: float) -> bool:
    """Group privacy: add/remove (e, d') gives replace-one (2e, (1 + e^e) d')."""
    half = eps_replace / 2
    return (1 + math.exp(half)) * accountant.get_delta(half) <= delta
