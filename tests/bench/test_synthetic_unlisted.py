"""bench.synthetic_unlisted: one run measured on a class of conjunctions it never lists, its
figures those of the class's own exact search; without the data it says so and exits 2."""

from __future__ import annotations

import argparse

import numpy as np

from bench.synthetic_unlisted import main, measure
from mechanisms.synthetic.domain import Domain

DOMAIN = Domain(("a", "b", "c"), (("0", "1", "2"), ("0", "1"), ("0", "1", "2", "3")))


def _args(**changes):
    defaults = dict(workload="conjunctions", rounds=None, listed_k=2)
    return argparse.Namespace(**(defaults | changes))


def test_a_run_is_measured_on_the_class_and_records_its_schedule():
    rng = np.random.default_rng(0)
    codes = np.stack([rng.integers(0, k, 300) for k in DOMAIN.sizes], 1)
    row = measure("fem_rspm", codes, DOMAIN, 2, 1.0, 0, _args())
    assert row["conjunctions"] == 9 + 3 * 2 + 3 * 4 + 2 * 4 and row["certified"]
    assert 0 < row["max_error"] <= 1 and row["mean_error"] <= row["max_error"]
    assert row["records"] == row["rounds"] * row["samples"] and row["privacy_holds"]
    assert row["proven_epsilon"] <= 1.0
    stated = measure("fem_rspm", codes, DOMAIN, 2, 1.0, 0, _args(rounds=2, workload="marginals"))
    assert (stated["rounds"], stated["samples"], stated["records"]) == (2, 50, 100)
    assert "witness" not in stated and 0 < stated["max_error"] <= 1


def test_without_the_data_it_says_so(monkeypatch, capsys):
    monkeypatch.delenv("ADULT_DATA_DIR", raising=False)
    assert main(["fem_rspm", "1.0", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --data or ADULT_DATA_DIR")
