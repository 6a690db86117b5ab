#!/usr/bin/env bash
# The screenshot docs/mlflow-run-list.png: the run list of a smoke sweep in the MLflow UI, in the
# view the sweep stores (pipeline/tracking/mlflow_log.py, RUN_LIST_VIEW), at 1280 x 800. Needs chromium
# (scripts/install.sh installs it) and this project on PYTHONPATH.
# Usage: docs/screenshot_mlflow.sh [OUTPUT_DIR]
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
out=${1:-$(mktemp -d)}
png="$repo/docs/mlflow-run-list.png"
cd "$repo"
[ -f "$out/mlflow.db" ] || python -m pipeline +sweep=smoke hydra.run.dir="$out" >"$out.log" 2>&1
port=$(python -c "import socket; s = socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
mlflow server --backend-store-uri "sqlite:///$out/mlflow.db" --host 127.0.0.1 --port "$port" \
    >"$out/mlflow-server.log" 2>&1 &
server=$!
trap 'kill "$server" 2>/dev/null || true' EXIT
for _ in $(seq 120); do curl -sf -o /dev/null "http://127.0.0.1:$port/" && break; sleep 1; done
experiment=$(python -c "
from mlflow import MlflowClient
print(MlflowClient('sqlite:///$out/mlflow.db').get_experiment_by_name('oracle-dp').experiment_id)
" 2>/dev/null)
url=$(python -c "from pipeline.tracking.mlflow_log import view_url; print(view_url('http://127.0.0.1:$port', '$experiment'))")
# a laptop's screen, beside MLflow's navigation and its assistant panel (docs/mlflow.md)
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d)" --window-size=1280,800 --virtual-time-budget=20000 \
    --screenshot="$png" "$url" 2>/dev/null
echo "$png from $url"
