"""Two sweeps' results compared run by run (bench.same_results)."""

from __future__ import annotations

import math

import pandas as pd

from bench.same_results import differences, main


def _frame(**changes) -> pd.DataFrame:
    rows = {
        "key": ["a/eps=1/run=0", "b/eps=inf/run=0"],
        "train_accuracy": [0.5, 0.75],
        "test_accuracy": [math.nan, 0.5],
        "wall_seconds": [1.0, 2.0],
        "node": ["n1", "n2"],
    }
    return pd.DataFrame(rows | changes)


def test_timing_and_nan_do_not_count_as_differences():
    after = _frame(wall_seconds=[9.0, 9.0], node=["x", "y"])
    assert differences(_frame(), after.iloc[::-1]) == {}  # order of the rows does not matter


def test_a_changed_result_or_column_is_reported():
    assert differences(_frame(), _frame(train_accuracy=[0.5, 0.7])) == {"train_accuracy": 1}
    assert differences(_frame(), _frame(test_accuracy=[0.1, 0.5])) == {"test_accuracy": 1}
    assert differences(_frame(), _frame().drop(columns="test_accuracy")) == {
        "test_accuracy": "missing after"
    }
    assert "key" in differences(_frame(), _frame(key=["a/eps=1/run=0", "c/eps=inf/run=0"]))


def test_the_command_exits_0_only_when_identical(tmp_path, capsys):
    _frame().to_csv(tmp_path / "before.csv", index=False)
    _frame(wall_seconds=[3.0, 4.0]).to_csv(tmp_path / "same.csv", index=False)
    _frame(train_accuracy=[0.0, 0.75]).to_csv(tmp_path / "other.csv", index=False)
    assert main([str(tmp_path / "before.csv"), str(tmp_path / "same.csv")]) == 0
    assert "identical" in capsys.readouterr().out
    assert main([str(tmp_path / "before.csv"), str(tmp_path / "other.csv")]) == 1
    assert "differ: train_accuracy: 1" in capsys.readouterr().out


def test_a_new_column_counts_unless_allowed_and_a_changed_one_always_counts(tmp_path, capsys):
    _frame().to_csv(tmp_path / "before.csv", index=False)
    _frame(positive_rate=[0.2, 0.3]).to_csv(tmp_path / "new.csv", index=False)
    _frame(positive_rate=[0.2, 0.3], train_accuracy=[0.0, 0.75]).to_csv(
        tmp_path / "new_and_other.csv", index=False
    )
    assert main([str(tmp_path / "before.csv"), str(tmp_path / "new.csv")]) == 1
    assert "differ: positive_rate: new after" in capsys.readouterr().out
    assert main([str(tmp_path / "before.csv"), str(tmp_path / "new.csv"), "--allow-new"]) == 0
    out = capsys.readouterr().out
    assert "new after, not compared: positive_rate" in out and "identical" in out
    both = [str(tmp_path / "before.csv"), str(tmp_path / "new_and_other.csv"), "--allow-new"]
    assert main(both) == 1
