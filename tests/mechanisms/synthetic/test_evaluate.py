"""mechanisms.synthetic.evaluate: the workload error of a synthetic table and the accuracy of a
classifier trained on it, on tables whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.synthetic.domain import Workload
from mechanisms.synthetic.evaluate import (
    downstream_accuracies,
    downstream_accuracy,
    marginal_errors,
    onehot,
    score_table,
)

SIZES = (2, 3, 2)


def test_marginal_errors_are_the_worst_and_the_mean_cell():
    workload = Workload(SIZES, ((0,),))
    real = np.array([[0, 0, 0], [0, 1, 1], [1, 2, 0], [1, 0, 1]])
    errors = marginal_errors(workload, real, real[:1])
    assert (errors.max, errors.mean) == (0.5, 0.5)
    assert marginal_errors(workload, real, real).max == 0.0


def test_onehot_leaves_the_label_out():
    X = onehot(np.array([[1, 2, 0]]), SIZES, skip=2)
    assert X.tolist() == [[0, 1, 0, 0, 1]]


def test_a_table_that_keeps_the_relation_trains_a_classifier_that_finds_it():
    rng = np.random.default_rng(0)
    a = rng.integers(0, 2, 400)
    b = rng.integers(0, 3, 400)
    table = np.stack([a, b, a], axis=1)  # the label is attribute 0 copied
    assert downstream_accuracy(table[:300], table[300:], SIZES, label=2, positive=1) == 1.0
    shuffled = table.copy()
    shuffled[:, 2] = rng.permutation(shuffled[:, 2])  # the relation destroyed
    accuracy = downstream_accuracy(shuffled[:300], table[300:], SIZES, label=2, positive=1)
    assert accuracy < 0.7


def test_one_class_in_training_predicts_that_class():
    train = np.array([[0, 0, 1], [1, 1, 1]])
    test = np.array([[0, 0, 1], [0, 0, 0], [1, 2, 1], [1, 2, 1]])
    assert downstream_accuracy(train, test, SIZES, label=2, positive=1) == pytest.approx(0.75)


def test_one_fit_scores_every_table_as_separate_fits_do():
    rng = np.random.default_rng(1)
    table = np.stack([rng.integers(0, 2, 300), rng.integers(0, 3, 300)], axis=1)
    table = np.column_stack([table, (table[:, 0] + (rng.random(300) < 0.2)) % 2])
    tests = [table[200:250], table[250:]]
    both = downstream_accuracies(table[:200], tests, SIZES, label=2, positive=1)
    assert both == [downstream_accuracy(table[:200], t, SIZES, 2, 1) for t in tests]


def test_a_table_scores_its_workload_error_and_both_accuracies():
    rng = np.random.default_rng(2)
    real = np.stack([rng.integers(0, k, 400) for k in SIZES], axis=1)
    real[:, 2] = real[:, 0]  # the label copies attribute 0
    workload = Workload.all_k_way(SIZES, 2)
    itself = score_table(real, real, real[:100], workload, label=2, positive=1)
    assert (itself.max_marginal_error, itself.mean_marginal_error) == (0.0, 0.0)
    assert (itself.train_accuracy, itself.test_accuracy) == (1.0, 1.0)
    half = score_table(real[:200], real, None, workload, label=2, positive=1)
    errors = marginal_errors(workload, real, real[:200])
    assert (half.max_marginal_error, half.mean_marginal_error) == (errors.max, errors.mean)
    assert half.max_marginal_error > 0 and np.isnan(half.test_accuracy)
