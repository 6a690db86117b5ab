"""A result row as the fields of its MLflow child run, and back: the one mapping, both ways.

``child_fields`` says where each key of a row goes (pipeline.tracking logs it), ``row_from_child``
reads it back from the run (pipeline.tracking.rows_from_mlflow); tests/pipeline/test_tracking.py
checks that every key comes back equal, with its type. What a reviewer sorts or filters by is a
column of the run list: the privacy claim and the run's identity as params, its floats as
metrics, its verdicts as tags; the rest of the release is in release.json (pipeline.mlflow_log).
"""

from __future__ import annotations

import math
import time
from typing import Any

from mechanisms.base import Release
from pipeline.catalog import NON_PRIVATE
from pipeline.mlflow_log import CHILD_ROLE

#: The float fields of a result row logged as metrics of its child run.
ROW_METRICS = ("train_accuracy", "test_accuracy", "wall_seconds", "oracle_seconds",
               "oracle_max_gap", "oracle_objective", "oracle_bound")  # fmt: skip
MAX_TAG = 5000


def child_fields(row: dict[str, Any], release: Release, parent_id: str | None,
                 ) -> tuple[dict[str, str], dict[str, Any], dict[str, float]]:  # fmt: skip
    """(tags, params, metrics) of the child run that records ``row``."""
    tags = {
        "mlflow.parentRunId": parent_id, "role": CHILD_ROLE, "run_key": row["key"],
        "mechanism": row["mechanism"], "privacy_status": row["privacy_status"],
        "privacy_holds": "yes" if row["privacy_holds"] else "no",
        "oracle_certified": "yes" if row["oracle_certified"] else "no",
        "privacy_reason": row["privacy_reason"][:MAX_TAG],
        "backend": row.get("oracle_backends") or "none", "node": str(row.get("node", "")),
    }  # fmt: skip
    if row.get("oracle_fallbacks"):
        tags["oracle_fallback"] = row["oracle_fallbacks"]
    for name in ROW_METRICS:  # MLflow keeps no inf or nan metric: a tag keeps it ('inf')
        if not math.isfinite(float(row[name])):
            tags[f"nonfinite.{name}"] = repr(float(row[name]))
    params = {"privacy_epsilon": row["privacy_epsilon"], "privacy_delta": row["privacy_delta"],
              "calibration": row["calibration"] or "-",
              # the grid's target; the guarantee is privacy_epsilon (proven for the noise, SPEC 10)
              "requested_epsilon": row["requested_epsilon"], "run_index": row["run_index"],
              "oracle_calls": row["oracle_calls"], "train_n": row["train_n"]}  # fmt: skip
    params.update({k: v for k, v in release.to_params().items() if k.startswith("noise.")})
    metrics = {k: float(v) for k, v in release.to_metrics().items()}
    metrics.update({name: float(row[name]) for name in ROW_METRICS})
    return tags, params, {k: v for k, v in metrics.items() if math.isfinite(v)}


def child_times(row: dict[str, Any]) -> tuple[int, int]:
    """(start, end) of the child run in ms: when the run started, and wall_seconds later."""
    start = int(row["start_time_ms"])
    wall = float(row["wall_seconds"])
    return start, (start + round(1000 * wall) if math.isfinite(wall) else int(time.time() * 1000))


def row_from_child(child) -> dict[str, Any]:
    """The result row a FINISHED child run records (the inverse of ``child_fields``)."""
    p, m, t = child.data.params, child.data.metrics, child.data.tags
    calls = int(p.get("oracle_calls", 0))
    certified = t.get("oracle_certified")
    return {
        "key": t.get("run_key"), "mechanism": t.get("mechanism"),
        "start_time_ms": int(child.info.start_time),
        # children logged before the name was requested_epsilon: target_epsilon, epsilon
        "requested_epsilon": float(p.get("requested_epsilon", p.get("target_epsilon",
                                   p.get("epsilon", "nan"))).replace("Infinity", "inf")),
        "run_index": int(p.get("run_index", 0)),
        "privacy_epsilon": float(p.get("privacy_epsilon", "nan").replace("Infinity", "inf")),
        "privacy_delta": float(p.get("privacy_delta", "nan")),
        "calibration": ("" if p.get("calibration") in (None, "None", "null", "-")
                        else p["calibration"]),
        "privacy_holds": t.get("privacy_holds") == "yes",
        # a tag; a param in children logged before it was one
        "privacy_reason": t.get("privacy_reason", p.get("privacy_reason", "")),
        "train_accuracy": _metric(m, t, "train_accuracy", math.nan),
        "test_accuracy": _metric(m, t, "test_accuracy", math.nan),
        "wall_seconds": _metric(m, t, "wall_seconds", math.nan),
        "oracle_seconds": _metric(m, t, "oracle_seconds", 0.0),
        "oracle_calls": calls,
        "oracle_max_gap": _metric(m, t, "oracle_max_gap", 0.0),
        # children logged before these existed: unknown
        "oracle_objective": _metric(m, t, "oracle_objective", math.nan),
        "oracle_bound": _metric(m, t, "oracle_bound", math.nan),
        "train_n": int(p.get("train_n", 0)),
        # child_fields tags a run without an oracle backend 'none'
        "oracle_backends": "" if t.get("backend") == "none" else t.get("backend", ""),
        "oracle_fallbacks": t.get("oracle_fallback", ""),
        "node": t.get("node", ""),
        # children logged before these tags existed: read them off the metrics
        "oracle_certified": (certified == "yes" if certified is not None else
                             calls == 0 or m.get("oracle_certified_fraction") == 1.0),
        "privacy_status": t.get("privacy_status") or privacy_status(
            t.get("mechanism", ""), t.get("privacy_holds") == "yes"),
    }  # fmt: skip


def privacy_status(mechanism: str, holds: bool) -> str:
    """``holds`` / ``does not hold`` for a private mechanism, ``non-private`` for a reference
    (whose ``privacy_holds`` is false by definition, not because a guarantee broke)."""
    if mechanism in NON_PRIVATE:
        return "non-private"
    return "holds" if holds else "does not hold"


def _metric(metrics: dict[str, float], tags: dict[str, str], name: str, default: float) -> float:
    """A row's float as logged: the metric, else its non-finite value's tag, else ``default``
    (children logged before the tag existed)."""
    if name in metrics:
        return float(metrics[name])
    return float(tags.get(f"nonfinite.{name}", default))
