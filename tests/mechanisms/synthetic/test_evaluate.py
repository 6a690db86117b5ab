"""mechanisms.synthetic.evaluate: the workload error of a synthetic table, that of a same-size
sample of the real one, the accuracy of a classifier trained on it (regularized, with an
intercept) and its positive rate, on tables whose answers are known."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.synthetic.domain import Workload
from mechanisms.synthetic.evaluate import (
    downstream_accuracies,
    downstream_accuracy,
    marginal_errors,
    onehot,
    positive_rate,
    sample_errors,
    score_table,
    with_intercept,
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
    # the same-size sample of the real table, and the positive rates
    sample = sample_errors(workload, real, 200, np.random.default_rng(0))
    assert (half.sample_max_marginal_error, half.sample_mean_marginal_error) == (
        sample.max,
        sample.mean,
    )
    assert itself.sample_max_marginal_error == 0.0  # every record, once
    assert half.positive_rate == np.mean(real[:200, 2] == 1)
    assert half.real_positive_rate == itself.positive_rate == np.mean(real[:, 2] == 1)


def test_a_sample_larger_than_the_table_takes_every_record_before_any_twice():
    real = np.arange(10)[:, None] % np.array([[2, 5]])
    workload = Workload((2, 5), ((0, 1),))
    assert sample_errors(workload, real, 20, np.random.default_rng(4)).max == 0.0
    assert sample_errors(workload, real, 10, np.random.default_rng(4)).max == 0.0
    assert sample_errors(workload, real, 3, np.random.default_rng(4)).max > 0.0


def test_the_intercept_finds_a_positive_rate_the_features_cannot_explain():
    # one attribute that says nothing, a label positive in 30% of the records: the classifier
    # predicts the majority class
    rng = np.random.default_rng(6)
    noise = rng.integers(0, 2, 1000)
    label = (rng.random(1000) < 0.3).astype(int)
    table = np.stack([noise, label], 1)
    assert downstream_accuracy(table, table, (2, 2), label=1, positive=1) == pytest.approx(
        np.mean(label == 0)
    )
    assert positive_rate(table, 1, 1) == np.mean(label)
    assert with_intercept(np.zeros((2, 1))).tolist() == [[0.0, 1.0], [0.0, 1.0]]
