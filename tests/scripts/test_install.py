"""scripts/install.sh: the README's one install command, the one CI runs, and its refusal of a
Python older than the package requires (pip refused 3.10 only after the venv was made)."""

from __future__ import annotations

import os
import re
import subprocess

from tests.conftest import REPO

INSTALL = REPO / "scripts" / "install.sh"


def _install_block() -> list[str]:
    """The commands of the README's "Install" section's first code block."""
    readme = (REPO / "README.md").read_text()
    section = readme.split("## Install", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)```", section, flags=re.DOTALL)
    assert block, "no bash block in the README's Install section"
    return [line.split("#")[0].strip() for line in block.group(1).splitlines() if line.strip()]


def test_the_readme_installs_with_one_command_and_ci_runs_the_same():
    assert _install_block() == ["bash scripts/install.sh && source .venv/bin/activate"]
    ci = (REPO / ".ci" / "run").read_text()
    commands = [line.strip() for line in ci.splitlines() if not line.lstrip().startswith("#")]
    assert 'bash scripts/install.sh "$venv"' in commands
    assert not [c for c in commands if "pip install" in c or "install_baselines" in c], commands


def test_the_readme_states_the_python_the_package_requires():
    pyproject = (REPO / "pyproject.toml").read_text()
    (required,) = re.findall(r'requires-python = ">=(\d+\.\d+)"', pyproject)
    readme = (REPO / "README.md").read_text()
    assert f"Python {required} or newer" in readme
    assert set(re.findall(r"Python (3\.\d+)", readme)) == {required}


def _install_with(python, tmp_path):
    """install.sh into tmp_path/venv with the interpreter script ``python`` (made executable)
    as PYTHON: the finished process and the venv's path."""
    python.chmod(0o755)
    venv = tmp_path / "venv"
    done = subprocess.run(
        ["bash", str(INSTALL), str(venv)],
        env={**os.environ, "PYTHON": str(python)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done, venv


def test_an_older_python_is_refused_before_anything_is_made(tmp_path):
    fake = tmp_path / "python3.10"
    fake.write_text('#!/bin/sh\n[ "$1" = -c ] && echo 3.10 && exit 0\nexit 1\n')
    done, venv = _install_with(fake, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip() == (
        f"error: this project needs Python 3.11 or newer; {fake} is 3.10 (set PYTHON=python3.11)"
    )
    assert not venv.exists()


def test_a_broken_interpreter_is_one_error_line_naming_it(tmp_path):
    """A pyenv shim for a version not installed: it prints its own text and exits 127."""
    shim = tmp_path / "python2"
    shim.write_text(
        '#!/bin/sh\necho "pyenv: python2: command not found" >&2\n'
        'echo "The \\`python2\' command exists in these Python versions:" >&2\nexit 127\n'
    )
    done, venv = _install_with(shim, tmp_path)
    assert done.returncode == 2, done.stderr
    assert done.stderr.splitlines() == [
        f"error: this project needs Python 3.11 or newer; {shim} does not run (exit 127: a "
        "broken interpreter or shim; set PYTHON=python3.11)"
    ], done.stderr
    assert not venv.exists()
