"""The frozen dataset record (pipeline.data.record): read-only copies, its checks, the merged
rows and the summary."""

from __future__ import annotations

import numpy as np
import pytest

from core.objective import zero_one_loss
from pipeline.data.record import DataError, Dataset


def _toy(**changes) -> Dataset:
    base = dict(
        features=[[0.0, 1.0], [0.0, 1.0], [1.0, 0.5], [0.0, 1.0]],
        labels=[1, -1, 1, 1],
        feature_names=["a", "b"],
        provenance={"source": "toy"},
    )
    return Dataset(**(base | changes))


def test_merged_loss_equals_full_loss_on_adult(adult):
    X, y = adult.train.features, adult.train.labels
    merged = adult.train.merged()
    assert merged.n == adult.train.n
    rng = np.random.default_rng(0)
    W = np.vstack([rng.integers(-4, 5, size=(200, 23)), rng.standard_normal((200, 23))])
    np.testing.assert_array_equal(merged.loss(W), zero_one_loss(X, y, W))
    for w in W[:20]:
        assert merged.loss(w) == zero_one_loss(X, y, w)


def test_the_record_holds_read_only_copies():
    X = np.array([[0.0, 1.0], [1.0, 0.0]])
    y = [1, -1]
    prov = {"source": "x"}
    data = Dataset(X, y, ["a", "b"], prov)
    X[0, 0] = 9.0
    prov["source"] = "changed"
    assert data.features[0, 0] == 0.0 and data.provenance == {"source": "x"}
    assert not data.features.flags.writeable and not data.labels.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        data.features[0, 0] = 1.0
    assert data.labels.dtype == np.int8 and data.features.dtype == float
    assert isinstance(data.feature_names, tuple) and (data.n, data.d) == (2, 2)


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"features": [1.0, 2.0, 3.0, 4.0]}, "features must be 2-D, found shape (4,)"),
        ({"labels": [1, -1, 1]}, "labels must have shape (4,), found (3,)"),
        ({"labels": [1, 0, 1, 1]}, "labels must be -1 or +1"),
        ({"feature_names": ["a"]}, "1 feature names for 2 feature columns"),
        ({"features": [[0.0, np.nan], [0, 1], [1, 0], [0, 1]]}, "features must be finite"),
    ],
)
def test_a_malformed_record_is_refused(changes, message):
    with pytest.raises(ValueError) as err:
        _toy(**changes)
    assert message in str(err.value)


def test_merged_rows_count_each_distinct_row_by_label():
    merged = _toy().merged()
    assert (merged.n, merged.n_distinct) == (4, 2)
    by_point = {
        tuple(p): (int(a), int(b)) for p, a, b in zip(merged.points, merged.pos, merged.neg)
    }
    assert by_point == {(0.0, 1.0): (2, 1), (1.0, 0.5): (1, 0)}


def test_summary_counts_classes_and_the_best_possible_accuracy():
    summary = _toy().summary()
    assert summary == {
        "n": 4,
        "d": 2,
        "positives": 3,
        "negatives": 1,
        "distinct_rows": 2,
        "distinct_rows_with_both_labels": 1,
        "best_possible_accuracy": 0.75,  # (0, 1) is seen with both labels: one error at least
        "feature_min": 0.0,
        "feature_max": 1.0,
    }


def test_data_error_is_a_value_error():
    assert issubclass(DataError, ValueError)  # callers that catch ValueError catch it too


def test_records_are_the_codes_over_the_domain_the_provenance_states():
    provenance = {
        "kind": "records",
        "domain": {"a": ["x", "y"], "b": ["no", "yes"]},
        "label": {"attribute": "b", "positive": "yes"},
    }
    data = _toy(features=[[0, 1], [1, 0]], labels=[1, -1], provenance=provenance)
    records = data.records()
    assert records.codes.tolist() == [[0, 1], [1, 0]] and records.codes.dtype == np.int64
    assert records.domain.levels == (("x", "y"), ("no", "yes"))
    assert (records.label, records.positive) == (1, 1)
    with pytest.raises(DataError, match="not records over a public domain"):
        _toy().records()
    renamed = _toy(features=[[0, 1]], labels=[1], feature_names=["b", "a"], provenance=provenance)
    with pytest.raises(DataError, match="are not the columns"):
        renamed.records()
