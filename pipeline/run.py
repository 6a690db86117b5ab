"""What ``python -m pipeline`` does with a validated config."""

from __future__ import annotations

import json
import logging
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
    summary: dict[str, Any] = {
        "dataset": config.dataset.name,
        "train": train.summary(),
        "test": test.summary() if test is not None else None,
        "feature_names": list(train.feature_names),
        "provenance": dict(train.provenance),
        "load_seconds": round(time.perf_counter() - start, 3),
    }
    return summary


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
    if config.sweep is not None:
        summary["sweep"] = {
            "name": config.sweep.name,
            "epsilons": list(config.sweep.epsilons),
            "seeds": config.sweep.seeds,
            "mechanisms": list(config.sweep.mechanisms),
        }
    path = output_dir / "summary.json"
    tmp = path.with_suffix(".json.part")
    tmp.write_text(json.dumps(summary, indent=2, default=str))
    tmp.replace(path)
    log.info("summary written to %s", path)
    return summary
