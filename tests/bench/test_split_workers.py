"""The split-solve benchmark (pipeline.bench.split_workers) starts its own Ray for each worker
count, so only its command line is tested here, before anything starts: bad options are usage
errors and --help states what it runs. (The split solve itself: tests/pipeline/test_split_solve.py.)
"""

from __future__ import annotations

import pytest

from pipeline.bench.split_workers import main


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--mechanism", "erm"], "argument --mechanism: invalid choice: 'erm'"),
        (["--workers", "two"], "argument --workers: invalid int value: 'two'"),
        (["--sweep-run"], "argument --sweep-run: expected one argument"),
    ],
)
def test_bad_options_are_usage_errors_before_ray_starts(argv, message, capsys):
    with pytest.raises(SystemExit) as err:
        main(argv)
    assert err.value.code == 2 and message in capsys.readouterr().err


def test_help_says_what_it_runs(capsys):
    with pytest.raises(SystemExit) as err:
        main(["--help"])
    out = capsys.readouterr().out
    assert err.value.code == 0
    assert "The split solve with 1 and 2 Ray workers" in out
    assert "--sweep-run R" in out and "--parts" in out
