#!/usr/bin/env bash
# The synthetic-data baselines' library (mechanisms/synthetic/baselines.py), after
#   pip install -e ".[baselines]"
# which brings everything it imports. smartnoise-sql 1.0.10 pins pandas<3, and smartnoise-synth
# 1.0.8 requires opacus (so torch) and pac-synth for its other synthesizers; MST, AIM and MWEM import
# none of them and run on pandas 3, so both go in without their requirements. pip then lists
# their unmet requirements (pandas<3, opacus, pac-synth, and graphviz, which smartnoise-sql imports
# only to draw a query) when it checks the environment: expected.
set -euo pipefail

python -m pip install --no-deps "smartnoise-synth==1.0.8" "smartnoise-sql==1.0.10"

# The three synthesizers import, and nothing they brought displaced the project's pins.
python - <<'PY'
from importlib import metadata

try:
    from snsynth.aim import AIMSynthesizer  # noqa: F401
    from snsynth.mst import MSTSynthesizer  # noqa: F401
    from snsynth.mwem import MWEMSynthesizer  # noqa: F401
except ImportError as err:
    raise SystemExit(f'{err}: install the extra first, pip install -e ".[baselines]"')
for dist in ("smartnoise-synth", "mbi", "opendp", "pandas", "numpy"):
    print(dist, metadata.version(dist))
PY
