"""`python -m pipeline` as a user runs it, in a subprocess."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.conftest import REPO


def _run(args, tmp_path, env_extra=None, timeout=600):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args, f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=timeout,
    )  # fmt: skip


def test_help_lists_groups_and_sweeps(tmp_path):
    result = _run(["--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "+sweep=adult" in result.stdout
    assert "dataset: adult, credit_card, islr_default, synthetic, table" in result.stdout


def test_smoke_sweep_runs_end_to_end(tmp_path):
    result = _run(["+sweep=smoke"], tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dataset"] == "synthetic"
    assert summary["train"]["n"] == 400 and summary["train"]["d"] == 8


def test_adult_summary_from_configured_directory(tmp_path, adult_dir):
    result = _run([f"dataset.data_dir={adult_dir}"], tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["train"]["n"] == 15_682 and summary["train"]["distinct_rows"] == 2_611


def test_bad_data_directory_is_one_clear_line_and_no_output(tmp_path):
    result = _run([], tmp_path, env_extra={"ADULT_DATA_DIR": str(tmp_path / "missing")})
    assert result.returncode == 2
    assert "error: Adult data not found" in result.stderr
    assert "Traceback" not in result.stderr
    assert not (tmp_path / "out" / "summary.json").exists()


def test_bad_value_is_rejected_before_running(tmp_path):
    result = _run(["+sweep=smoke", "sweep.seeds=-2"], tmp_path)
    assert result.returncode == 2
    assert "error: sweep.seeds: must be >= 1, found -2" in result.stderr
