#!/usr/bin/env bash
# The screenshot docs/mlflow-run-list.png: the run list of a smoke sweep in the MLflow UI, in the
# view the sweep stores (pipeline/mlflow_log.py, RUN_LIST_VIEW). Needs chromium (apt-get install
# chromium) and this project on PYTHONPATH. Usage: docs/screenshot_mlflow.sh [OUTPUT_DIR]
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
url=$(python -c "from pipeline.mlflow_log import view_url; print(view_url('http://127.0.0.1:$port', '$experiment'))")
# wide enough that every column of the view shows beside the assistant panel
chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run \
    --disable-background-networking --disable-component-update --disable-sync \
    --user-data-dir="$(mktemp -d)" --window-size=2600,1000 --virtual-time-budget=20000 \
    --screenshot="$out/full.png" "$url" 2>/dev/null
# the run list only, without the assistant panel the UI opens on its right: cut at the gutter
# (a column of the page's background, not white) left of that panel
python -c "
from PIL import Image
full = Image.open('$out/full.png').convert('RGB')
width, height = full.size
def gutter(x):
    return all(600 < sum(full.getpixel((x, y))) < 750 for y in range(200, height - 100, 10))
cut = next((x for x in range(width - 200, width // 2, -1) if gutter(x)), None)
if cut is None:
    raise SystemExit('no gutter left of the assistant panel: is the run list on screen?')
full.crop((0, 0, cut, height)).save('$png', optimize=True)"
echo "$png from $url"
