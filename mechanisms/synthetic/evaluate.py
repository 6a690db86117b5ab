"""How well a synthetic table stands in for the real one: its workload error, that of a sample of
the real table of the same size (the error sampling alone makes), the accuracy of a classifier
trained on it, and its positive rate beside the real one. These compare with the private data,
so they are evaluations for the report, never part of a release (docs/synthetic.md, 2.5 and 5).

The classifier is L2-regularized logistic regression with an intercept, as scikit-learn's
default fits it: (1/N) sum_i log(1 + exp(-y_i (<w, x_i> + b))) + ||w||^2 / (2 N) on a table of
N records (C = 1). ``mechanisms.logistic.run_logistic`` fits it on the one-hot features and a
constant column, whose weight is b (its share of the penalty, b^2 / (2 N), moves it by
O(1 / N)).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from mechanisms.logistic import LogisticParams, run_logistic
from mechanisms.synthetic.domain import ConjunctionClass, Workload


@dataclass(frozen=True)
class MarginalErrors:
    """|real - synthetic| over every cell of the workload's marginals (fractions, in [0, 1])."""

    max: float
    mean: float


def marginal_errors(
    workload: Workload | ConjunctionClass, real: np.ndarray, synthetic: np.ndarray
) -> MarginalErrors:
    """The largest and the mean error over the workload's cells; for a ``ConjunctionClass``
    (never listed) the largest over the whole class by its exact search and the mean over its
    k-way marginals' cells."""
    if isinstance(workload, ConjunctionClass):
        largest = workload.max_error(real, synthetic)
        return MarginalErrors(largest.value, workload.mean_error(real, synthetic))
    errors = workload.errors(real, synthetic)
    return MarginalErrors(float(errors.max()), float(errors.mean()))


def sample_errors(
    workload: Workload | ConjunctionClass, real: np.ndarray, size: int, rng: np.random.Generator
) -> MarginalErrors:
    """The workload error of ``size`` records drawn from ``real`` at random (without
    replacement while they last): what sampling alone costs a table of that size."""
    real = np.asarray(real)
    draws = [rng.permutation(len(real)) for _ in range(-(-size // len(real)))]
    return marginal_errors(workload, real, real[np.concatenate(draws)[:size]])


def positive_rate(codes: np.ndarray, label: int, positive: int) -> float:
    """The fraction of records whose attribute ``label`` has the code ``positive``."""
    return float(np.mean(np.asarray(codes)[:, label] == positive))


def with_intercept(features: np.ndarray) -> np.ndarray:
    """The features and a constant column (the intercept's)."""
    return np.hstack([features, np.ones((len(features), 1))])


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
    """Accuracy on each table of ``tests`` of regularized logistic regression with an intercept
    (module docstring) trained once on ``train`` to predict attribute ``label`` (+1 where its
    code is ``positive``) from the others. A training table with one class only predicts that
    class."""
    y_train = np.where(np.asarray(train)[:, label] == positive, 1, -1)
    ys = [np.where(np.asarray(test)[:, label] == positive, 1, -1) for test in tests]
    if len(np.unique(y_train)) == 1:
        return [float(np.mean(y == y_train[0])) for y in ys]
    params = LogisticParams(l2=1.0 / len(y_train), tol=1e-6)
    release = run_logistic(with_intercept(onehot(train, sizes, label)), y_train, params)
    return [
        release.accuracy(with_intercept(onehot(test, sizes, label)), y)
        for test, y in zip(tests, ys)
    ]


def downstream_accuracy(
    train: np.ndarray, test: np.ndarray, sizes: Sequence[int], label: int, positive: int
) -> float:
    """The test accuracy of ``downstream_accuracies`` on one test table."""
    return downstream_accuracies(train, [test], sizes, label, positive)[0]


@dataclass(frozen=True)
class TableScores:
    """A synthetic table measured against the private one (a sweep's row, docs/synthetic.md 5):
    its workload error, the accuracy of logistic regression trained on it, on the real training
    and test records (nan without a test table), the workload error of a sample of the real
    table of the same size, and the table's positive rate beside the real one's (nan where not
    measured)."""

    max_marginal_error: float
    mean_marginal_error: float
    train_accuracy: float
    test_accuracy: float
    sample_max_marginal_error: float = math.nan
    sample_mean_marginal_error: float = math.nan
    positive_rate: float = math.nan
    real_positive_rate: float = math.nan


def score_table(
    synthetic: np.ndarray,
    real_train: np.ndarray,
    real_test: np.ndarray | None,
    workload: Workload,
    label: int,
    positive: int,
    seed: int = 0,
) -> TableScores:
    """``synthetic`` against ``real_train`` (and ``real_test``): TableScores. ``seed`` draws the
    same-size sample of ``real_train``."""
    errors = marginal_errors(workload, real_train, synthetic)
    sample = sample_errors(workload, real_train, len(synthetic), np.random.default_rng(seed))
    tests = [real_train] if real_test is None else [real_train, real_test]
    accuracies = downstream_accuracies(synthetic, tests, workload.sizes, label, positive)
    return TableScores(
        errors.max,
        errors.mean,
        accuracies[0],
        accuracies[1] if len(tests) == 2 else math.nan,
        sample.max,
        sample.mean,
        positive_rate(synthetic, label, positive),
        positive_rate(real_train, label, positive),
    )


__all__ = [
    "MarginalErrors",
    "TableScores",
    "downstream_accuracies",
    "downstream_accuracy",
    "marginal_errors",
    "onehot",
    "positive_rate",
    "sample_errors",
    "score_table",
    "with_intercept",
]
