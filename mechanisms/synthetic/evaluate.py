"""How well a synthetic table stands in for the real one: its workload error and the accuracy of
a classifier trained on it. These compare with the private data, so they are evaluations for the
report, never part of a release (docs/synthetic.md, section 2.5)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mechanisms.logistic import run_logistic
from mechanisms.synthetic.domain import Workload


@dataclass(frozen=True)
class MarginalErrors:
    """|real - synthetic| over every cell of the workload's marginals (fractions, in [0, 1])."""

    max: float
    mean: float


def marginal_errors(workload: Workload, real: np.ndarray, synthetic: np.ndarray) -> MarginalErrors:
    errors = workload.errors(real, synthetic)
    return MarginalErrors(float(errors.max()), float(errors.mean()))


def onehot(codes: np.ndarray, sizes: Sequence[int], skip: int | None = None) -> np.ndarray:
    """The one-hot encoding of records (one row each), every attribute but ``skip`` (a label)."""
    columns = [
        (np.asarray(codes)[:, a, None] == np.arange(k)).astype(float)
        for a, k in enumerate(sizes)
        if a != skip
    ]
    return np.hstack(columns)


def downstream_accuracy(
    train: np.ndarray, test: np.ndarray, sizes: Sequence[int], label: int, positive: int
) -> float:
    """Test accuracy of logistic regression (mechanisms.logistic) trained on ``train`` to
    predict attribute ``label`` (+1 where its code is ``positive``) from the others. A training
    table with one class only predicts that class."""
    y_train = np.where(np.asarray(train)[:, label] == positive, 1, -1)
    y_test = np.where(np.asarray(test)[:, label] == positive, 1, -1)
    if len(np.unique(y_train)) == 1:
        return float(np.mean(y_test == y_train[0]))
    release = run_logistic(onehot(train, sizes, label), y_train)
    return release.accuracy(onehot(test, sizes, label), y_test)


__all__ = ["MarginalErrors", "downstream_accuracy", "marginal_errors", "onehot"]
