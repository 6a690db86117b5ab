#!/usr/bin/env bash
# Everything this project needs, in one command, from a clone (README, "Install"):
#   bash scripts/install.sh [VENV]     (VENV: default the clone's .venv; made if it does not exist)
# 1. a virtualenv of Python 3.11 or newer ($PYTHON, default python3; an older one is refused);
# 2. the package with its extras: pip install -e ".[test,datasets,baselines]";
# 3. the synthetic-data baselines' library without its pins (scripts/install_baselines.sh);
# 4. the browser of the MLflow view's screenshot test (tests/pipeline/tracking/test_mlflow_log.py):
#    Debian's chromium, with apt-get when run as root and no chromium is on the PATH;
#    otherwise it says what to install (the test skips without it, and fails under CI).
# It ends with the seconds it took. .ci/run installs with this same command.
set -euo pipefail
venv=${1:+$(realpath -m "$1")}  # as the caller names it; by default the clone's .venv
cd "$(dirname "$0")/.."
venv=${venv:-$(pwd)/.venv}
python=${PYTHON:-python3}
started=$(date +%s)

if ! command -v "$python" >/dev/null; then
    echo "error: this project needs Python 3.11 or newer; no $python here (set PYTHON=python3.11)" >&2
    exit 2
fi
# a broken interpreter (a pyenv shim with no such version, exit 127) says so in one line, not
# with the shim's own text
rc=0
version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])' 2>/dev/null) || rc=$?
if [ "$rc" != 0 ] || ! [[ "$version" =~ ^[0-9]+\.[0-9]+$ ]]; then
    echo "error: this project needs Python 3.11 or newer; $python does not run (exit $rc: a" \
        "broken interpreter or shim; set PYTHON=python3.11)" >&2
    exit 2
fi
if [ "$(printf '%s\n' 3.11 "$version" | sort -V | head -1)" != 3.11 ]; then
    echo "error: this project needs Python 3.11 or newer; $python is $version (set PYTHON=python3.11)" >&2
    exit 2
fi
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install -e ".[test,datasets,baselines]"
PATH="$(cd "$venv/bin" && pwd):$PATH" bash scripts/install_baselines.sh

browser=${CHROMIUM:-$(command -v chromium || command -v chromium-browser || true)}
if [ -z "$browser" ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
    browser=$(command -v chromium)
fi
if [ -n "$browser" ]; then
    echo "browser for the view's screenshot test: $browser"
else
    echo "no chromium: install your system's chromium package (Debian: apt-get install" \
        "chromium) for the MLflow view's screenshot test, or set CHROMIUM=/path/to/it"
fi
echo "installed in $(($(date +%s) - started)) s into $venv: source $venv/bin/activate"
