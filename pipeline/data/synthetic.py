"""Seeded synthetic linear-threshold data for tests and quick runs.

Features: one one-hot block per entry of ``groups`` (each row has exactly one 1 per block),
then ``n_continuous`` columns uniform on [0, 1] (rounded to ``levels`` values when given, which
makes duplicate rows and so merged-row instances). Labels: +1 where <w*, x> is at or above its
median (so the classes are balanced), with each label flipped with probability ``label_noise``.
"""

from __future__ import annotations

import numpy as np

from pipeline.data.record import Dataset


def make_linear_threshold(
    n: int,
    n_continuous: int,
    *,
    groups: tuple[int, ...] = (),
    label_noise: float = 0.1,
    levels: int | None = None,
    seed: int = 0,
) -> Dataset:
    """A seeded dataset of n rows and d = sum(groups) + n_continuous features."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 2:
        raise ValueError(f"n must be an integer >= 2, found {n!r}")
    if n_continuous < 0 or any(g < 2 for g in groups):
        raise ValueError(
            f"n_continuous must be >= 0 and every group size >= 2, found {n_continuous!r} "
            f"and {groups!r}"
        )
    if sum(groups) + n_continuous < 1:
        raise ValueError("the data needs at least one feature")
    if not 0.0 <= label_noise <= 0.5:
        raise ValueError(f"label_noise must be in [0, 0.5], found {label_noise!r}")
    if levels is not None and levels < 2:
        raise ValueError(f"levels must be >= 2 or None, found {levels!r}")

    rng = np.random.default_rng(seed)
    blocks, names = [], []
    for g, size in enumerate(groups):
        blocks.append(np.eye(size)[rng.integers(size, size=n)])
        names += [f"g{g}={k}" for k in range(size)]
    cont = rng.random((n, n_continuous))
    if levels is not None:
        cont = np.round(cont * (levels - 1)) / (levels - 1)
    blocks.append(cont)
    names += [f"x{j}" for j in range(n_continuous)]
    X = np.hstack(blocks)

    w_star = rng.standard_normal(X.shape[1])
    scores = X @ w_star
    y = np.where(scores >= np.median(scores), 1, -1)
    flip = rng.random(n) < label_noise
    y = np.where(flip, -y, y)
    provenance = {
        "source": "synthetic linear threshold",
        "seed": int(seed),
        "groups": list(groups),
        "n_continuous": int(n_continuous),
        "label_noise": float(label_noise),
        "levels": levels,
        "w_star": w_star.round(6).tolist(),
    }
    return Dataset(X, y, tuple(names), provenance)
