"""`python -m pipeline` as a user runs it: the help and a smoke sweep in a subprocess
(integration), and what the command does with a configured directory, a bad data directory and a
bad value, composed in-process as the entry point composes them (pipeline.cli.main: compose,
``validate``, ``pipeline.run.run``)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from hydra import compose, initialize_config_dir

from pipeline.cli import CONFIG_DIR
from pipeline.config import ConfigError, validate
from pipeline.data import DataError
from tests.conftest import REPO


def _run(args, tmp_path, env_extra=None, timeout=600):
    env = {**os.environ, **(env_extra or {})}
    return subprocess.run(
        [sys.executable, "-m", "pipeline", *args, f"hydra.run.dir={tmp_path / 'out'}"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _config(overrides, out):
    """The validated config of ``python -m pipeline OVERRIDES hydra.run.dir=OUT``."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=overrides))
    config.output_dir = str(out)  # what main takes from hydra.run.dir
    return config


@pytest.mark.integration
def test_help_lists_groups_and_sweeps(tmp_path):
    result = _run(["--help"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "+sweep=adult" in result.stdout
    assert "dataset: adult, credit_card, islr_default, synthetic, table" in result.stdout


@pytest.mark.integration
def test_smoke_sweep_runs_end_to_end(tmp_path):
    result = _run(["+sweep=smoke"], tmp_path)
    assert result.returncode == 0, result.stderr
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["dataset"] == "synthetic"
    assert summary["train"]["n"] == 400 and summary["train"]["d"] == 8


def test_adult_summary_from_configured_directory(tmp_path, adult_dir):
    from pipeline.run import run

    run(_config([f"dataset.data_dir={adult_dir}"], tmp_path / "out"))
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["train"]["n"] == 15_682 and summary["train"]["distinct_rows"] == 2_611


def test_bad_data_directory_is_one_clear_line_and_no_output(tmp_path, monkeypatch):
    from pipeline.run import run

    monkeypatch.setenv("ADULT_DATA_DIR", str(tmp_path / "missing"))  # the default data_dir
    config = _config([], tmp_path / "out")
    with pytest.raises(DataError) as raised:  # main: exit code 2, "error: " + this message
        run(config)
    assert str(raised.value).startswith("Adult data not found")
    assert "\n" not in str(raised.value)
    assert not (tmp_path / "out" / "summary.json").exists()


def test_bad_value_is_rejected_before_running(tmp_path):
    with pytest.raises(ConfigError) as raised:  # main: exit code 2, "error: " + this message
        _config(["+sweep=smoke", "sweep.seeds=-2"], tmp_path / "out")
    assert str(raised.value).startswith("sweep.seeds: must be >= 1, found -2")
    assert not (tmp_path / "out").exists()
