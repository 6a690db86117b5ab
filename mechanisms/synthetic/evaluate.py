"""How well a synthetic table stands in for the real one: its workload error and the accuracy of
a classifier trained on it. These compare with the private data, so they are evaluations for the
report, never part of a release (docs/synthetic.md, section 2.5)."""

from __future__ import annotations

import math
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


def downstream_accuracies(
    train: np.ndarray,
    tests: Sequence[np.ndarray],
    sizes: Sequence[int],
    label: int,
    positive: int,
) -> list[float]:
    """Accuracy on each table of ``tests`` of logistic regression (mechanisms.logistic) trained
    once on ``train`` to predict attribute ``label`` (+1 where its code is ``positive``) from the
    others. A training table with one class only predicts that class."""
    y_train = np.where(np.asarray(train)[:, label] == positive, 1, -1)
    ys = [np.where(np.asarray(test)[:, label] == positive, 1, -1) for test in tests]
    if len(np.unique(y_train)) == 1:
        return [float(np.mean(y == y_train[0])) for y in ys]
    release = run_logistic(onehot(train, sizes, label), y_train)
    return [release.accuracy(onehot(test, sizes, label), y) for test, y in zip(tests, ys)]


def downstream_accuracy(
    train: np.ndarray, test: np.ndarray, sizes: Sequence[int], label: int, positive: int
) -> float:
    """The test accuracy of ``downstream_accuracies`` on one test table."""
    return downstream_accuracies(train, [test], sizes, label, positive)[0]


@dataclass(frozen=True)
class TableScores:
    """A synthetic table measured against the private one (a sweep's row, docs/synthetic.md 3):
    its workload error, and the accuracy of logistic regression trained on it, on the real
    training and test records (nan without a test table)."""

    max_marginal_error: float
    mean_marginal_error: float
    train_accuracy: float
    test_accuracy: float


def score_table(
    synthetic: np.ndarray,
    real_train: np.ndarray,
    real_test: np.ndarray | None,
    workload: Workload,
    label: int,
    positive: int,
) -> TableScores:
    """``synthetic`` against ``real_train`` (and ``real_test``): TableScores."""
    errors = marginal_errors(workload, real_train, synthetic)
    tests = [real_train] if real_test is None else [real_train, real_test]
    accuracies = downstream_accuracies(synthetic, tests, workload.sizes, label, positive)
    return TableScores(
        errors.max, errors.mean, accuracies[0], accuracies[1] if len(tests) == 2 else math.nan
    )


__all__ = [
    "MarginalErrors",
    "TableScores",
    "downstream_accuracies",
    "downstream_accuracy",
    "marginal_errors",
    "onehot",
    "score_table",
]
