"""mechanisms.entries: the two kinds of catalog entry, each owning how its run is made, scored
and recorded, and the one typed request of a run."""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from mechanisms.catalog import CATALOG
from mechanisms.entries import (
    ClassifierEntry,
    ClassifierScores,
    Labelled,
    Request,
    Table,
    TableEntry,
)
from mechanisms.logistic import LogisticParams
from mechanisms.synthetic.domain import Domain, Workload
from mechanisms.synthetic.evaluate import TableScores, score_table
from mechanisms.synthetic.reference import RealTableParams


class _Named:
    """Oracles that answer with what was asked: ``configured`` or the route's name."""

    def configured(self) -> str:
        return "configured"

    def route(self, name: str) -> str:
        return name


def _labelled(n: int = 40) -> Labelled:
    rng = np.random.default_rng(3)
    X = rng.integers(0, 2, size=(n, 2)).astype(float)
    return Labelled(X, np.where(X[:, 0] > 0, 1, -1), ("a", "b"))


def _table(n: int = 60, seed: int = 3) -> Table:
    rng = np.random.default_rng(seed)
    domain = Domain(("a", "b", "c"), (("x", "y"), ("p", "q", "r"), ("no", "yes")))
    codes = np.stack([rng.integers(0, k, n) for k in domain.sizes], axis=1)
    return Table(codes, domain, Workload.all_k_way(domain.sizes, 2), label=2, positive=1)


def _request(entry, data, **changes) -> Request:
    return Request(
        entry.default_settings(**changes), 1.0, 1e-4, 1e-4, data, np.random.default_rng(0)
    )


def test_a_request_is_one_frozen_record():
    request = _request(CATALOG["logistic_regression"], _labelled())
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.epsilon = 2.0
    assert request.oracles is None and request.solve_many is not None


def test_a_classifier_entry_either_builds_or_runs_whole():
    with pytest.raises(ValueError, match="x: a classifier entry either builds"):
        ClassifierEntry("x", "", LogisticParams)
    with pytest.raises(ValueError, match="x: a classifier entry either builds"):
        ClassifierEntry("x", "", LogisticParams, build=print, run=print)
    with pytest.raises(ValueError, match="x: a synthetic-data mechanism runs whole"):
        TableEntry("x", "", RealTableParams)


def test_an_entry_asks_the_callers_oracles_for_the_one_it_needs():
    opsamp = CATALOG["opsamp"]
    logistic = opsamp.default_settings(loss="logistic")
    assert opsamp.oracle_of(logistic, _Named()) == "configured"  # the table picks convex
    assert opsamp.oracle_of(opsamp.default_settings(loss="zero_one"), _Named()) == "configured"
    assert CATALOG["erm_01"].oracle_of(CATALOG["erm_01"].default_settings(), _Named()) == (
        "configured"
    )
    fem = CATALOG["fem"]
    settings = fem.default_settings(backend="enumerate")
    assert fem.oracle_of(settings, _Named()) == "conjunctions_enumerate"
    with pytest.raises(ValueError, match="'dpsgd_lr' calls no oracle"):
        CATALOG["dpsgd_lr"].oracle_of(CATALOG["dpsgd_lr"].default_settings(), _Named())
    with pytest.raises(ValueError, match="fem needs an oracle"):
        fem.oracle_of(settings, None)


def test_a_classifier_is_scored_by_its_accuracy_and_records_its_noise_and_weights():
    entry, train = CATALOG["logistic_regression"], _labelled()
    release = entry.release(_request(entry, train))
    test = Labelled(train.X[:10], -train.y[:10])
    scores = entry.score(release, train, test)
    assert scores == ClassifierScores(
        release.accuracy(train.X, train.y), release.accuracy(test.X, test.y)
    )
    assert scores.test_accuracy == 1.0 - release.accuracy(train.X[:10], train.y[:10])
    assert math.isnan(entry.score(release, train, None).test_accuracy)
    assert entry.headline(scores) == f"acc {scores.train_accuracy:.3f}"
    assert entry.release_params(release) == {f"noise.{k}": v for k, v in release.noise.items()}
    assert entry.transcript(release) == {"w": release.w.tolist()}


def test_a_table_is_scored_on_the_workload_and_records_its_transcript():
    entry, train, test = CATALOG["real_table"], _table(), _table(30, seed=4)
    release = entry.release(_request(entry, train))
    scores = entry.score(release, train, test)
    assert scores == score_table(
        release.records, train.codes, test.codes, train.workload, train.label, train.positive
    )
    assert scores.max_marginal_error == 0.0  # the real table answers its own workload exactly
    assert math.isnan(entry.score(release, train, None).test_accuracy)
    assert entry.headline(scores) == "max marginal error 0.000"
    assert "param.epsilon" not in entry.release_params(release)
    assert entry.transcript(release) == {"selections": [list(s) for s in release.selections]}


@pytest.mark.parametrize(
    "name, scores",
    [
        ("opdisc", ClassifierScores(0.8, math.nan)),
        ("fem", TableScores(0.25, 0.125, 0.75, 0.5)),
    ],
)
def test_scores_read_back_field_by_field(name, scores):
    logged = {k: float(v) for k, v in dataclasses.asdict(scores).items()}  # new floats
    back = CATALOG[name].scores_from(logged.__getitem__)
    assert type(back) is type(scores)
    np.testing.assert_equal(dataclasses.asdict(back), dataclasses.asdict(scores))


def test_an_entry_takes_its_kinds_data_from_a_dataset():
    class Records:  # a pipeline.data.Dataset's records over a public domain
        def __init__(self, table: Table) -> None:
            self.codes, self.domain = table.codes, table.domain
            self.label, self.positive = table.label, table.positive

    class Dataset:
        features, labels, feature_names = _labelled().X, _labelled().y, ("a", "b")

        def records(self):
            return Records(_table())

    labelled = CATALOG["opdisc"].data(Dataset(), workload=None)
    assert labelled.feature_names == ("a", "b") and (labelled.y == _labelled().y).all()
    table = CATALOG["fem"].data(Dataset(), lambda domain: Workload.all_k_way(domain.sizes, 1))
    assert table.workload.sizes == table.domain.sizes and (table.codes == _table().codes).all()
    assert (table.label, table.positive) == (2, 1)
