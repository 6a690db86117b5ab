"""The layering: oracles import no mechanism (nor Ray, MLflow, Hydra); no module imports another
module's private names (a helper used across modules is public where it belongs)."""

from __future__ import annotations

import ast

import pytest

from tests.conftest import REPO

PACKAGES = ("oracles", "mechanisms", "pipeline")


def _imports(package: str):
    for path in sorted((REPO / package).rglob("*.py")):
        tree = ast.parse(path.read_text(), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                yield path, node.module, [alias.name for alias in node.names]
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    yield path, alias.name, []


def test_oracles_import_no_mechanism_and_no_pipeline_framework():
    forbidden = ("mechanisms", "pipeline", "ray", "mlflow", "hydra")
    bad = [
        (str(p.relative_to(REPO)), module)
        for p, module, _ in _imports("oracles")
        if module.split(".")[0] in forbidden
    ]
    assert bad == []


@pytest.mark.parametrize("package", PACKAGES)
def test_no_private_name_is_imported_across_modules(package):
    bad = [
        (str(p.relative_to(REPO)), module, name)
        for p, module, names in _imports(package)
        if module.split(".")[0] in PACKAGES
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert bad == []


@pytest.mark.parametrize("package", PACKAGES)
def test_imports_go_one_way(package):
    """oracles <- mechanisms <- pipeline, and nothing installed imports the test tree (the audit's
    mutants live in mechanisms/audit/mutants.py)."""
    above = {"oracles": ("mechanisms", "pipeline"), "mechanisms": ("pipeline",), "pipeline": ()}
    forbidden = above[package] + ("tests",)
    bad = [
        (str(p.relative_to(REPO)), module)
        for p, module, _ in _imports(package)
        if module.split(".")[0] in forbidden
    ]
    assert bad == []
    loaded = [
        str(p.relative_to(REPO))
        for p in (REPO / package).rglob("*.py")
        if 'import_module("tests' in p.read_text()
    ]
    assert loaded == []
