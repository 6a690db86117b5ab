"""The benchmarks live outside the installed package (bench/__init__.py): pyproject's package
list takes none of them, and each one its docstring names runs as ``python -m bench.NAME``."""

from __future__ import annotations

import fnmatch
import re
import tomllib
from pathlib import Path

import bench

ROOT = Path(__file__).resolve().parents[2]


def test_no_benchmark_is_installed():
    patterns = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "packages"
    ]["find"]["include"]
    assert not [p for p in patterns if fnmatch.fnmatch("bench", p)]
    assert not [p for p in patterns if fnmatch.fnmatch("bench.same_results", p)]
    assert not (ROOT / "pipeline" / "bench").exists()


def test_every_benchmark_the_package_names_is_a_module_with_a_main():
    named = set(re.findall(r"python -m bench\.(\w+)", bench.__doc__))
    modules = {p.stem for p in (ROOT / "bench").glob("*.py") if p.stem != "__init__"}
    assert named == modules - {"machine"}
