"""bench.synthetic_comparison: the comparison table averages the runs whose privacy
holds, per mechanism and epsilon, and closes with the reference."""

from __future__ import annotations

import math

import pandas as pd

from bench.synthetic_comparison import comparison, main


def _row(mechanism, eps, i, error, holds=True, accuracy=0.75):
    return {
        "key": f"{mechanism}/eps={eps}/run={i}",
        "mechanism": mechanism,
        "requested_epsilon": eps,
        "privacy_epsilon": eps,
        "privacy_holds": holds,
        "max_marginal_error": error,
        "mean_marginal_error": error / 100,
        "train_accuracy": accuracy,
        "test_accuracy": accuracy,
        "wall_seconds": 2.0 + i,
    }


def test_the_table_averages_the_private_runs_and_closes_with_the_reference(tmp_path, capsys):
    rows = [
        _row("fem", 1.0, 0, 0.1),
        _row("fem", 1.0, 1, 0.3),
        _row("fem", 1.0, 2, 0.9, holds=False),  # left out, and said
        _row("mst", 0.3, 0, 0.2),
        _row("real_table", math.inf, 0, 0.0, holds=False, accuracy=0.85),
    ]
    lines = comparison(pd.DataFrame(rows))
    assert lines[2] == "| fem | 1 | 1 | 2 | 0.200 ± 0.141 | 0.00200 | 0.750 ± 0.000 | 2.5 |"
    assert lines[3].startswith("| mst | 0.3 | 0.3 | 1 | 0.200 ± 0.000 |")
    assert lines[4] == "| real_table (non-private) | - | - | 1 | 0.000 | 0.00000 | 0.850 | 2.0 |"
    assert lines[5] == "\n1 runs whose privacy does not hold are left out."
    path = tmp_path / "results.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    assert main([str(path), "--majority", "0.764"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("machine: ") and "accuracy 0.764" in out
    classifiers = tmp_path / "classifiers.csv"
    pd.DataFrame([{"key": "opdisc/eps=1/run=0", "mechanism": "opdisc"}]).to_csv(classifiers)
    assert main([str(classifiers)]) == 2
