"""Run-result records for tests that fake the runs (pipeline.tracking.run_record.RunResult)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from mechanisms.catalog import CATALOG
from mechanisms.entries import ClassifierScores, Labelled
from pipeline.tracking.run_record import RunResult, privacy_status


def result_for(key: Any, holds: bool = True, **fields: Any) -> RunResult:
    """A plausible result of run ``key`` (a RunKey) with ``fields`` replaced; its
    ``oracle_certified`` is None (no oracle call) unless ``oracle_calls`` says it called one."""
    nan = math.nan
    result = RunResult(
        key=str(key),
        mechanism=key.mechanism,
        start_time_ms=0,
        requested_epsilon=key.epsilon,
        run_index=key.run_index,
        privacy_epsilon=key.epsilon,
        privacy_delta=1e-5,
        calibration="",
        privacy_holds=holds,
        privacy_reason="",
        wall_seconds=1.0,
        oracle_wall_seconds=0.0,
        oracle_calls=0,
        oracle_max_gap=0.0,
        oracle_objective=nan,
        oracle_bound=nan,
        train_n=10,
        oracle_backends="",
        oracle_fallbacks="",
        node="",
        oracle_certified=True if fields.get("oracle_calls") else None,
        privacy_status=privacy_status(key.mechanism, holds),
        scores=ClassifierScores(0.75, nan),
    )
    return dataclasses.replace(result, **fields)


def classifier_result(
    key: Any, release: Any, train: Any, test: Any, wall_seconds: float, **options: Any
) -> RunResult:
    """The result of a classifier's run ``key`` that released ``release``, scored by its entry on
    ``train`` and ``test`` (datasets, or stand-ins with ``features`` and ``labels``)."""
    entry = CATALOG[key.mechanism]

    def data(dataset: Any) -> Labelled | None:
        return None if dataset is None else Labelled(dataset.features, dataset.labels)

    scores = entry.score(release, data(train), data(test))
    n = len(np.asarray(train.labels))
    return RunResult.of(key, release, scores, n, wall_seconds, **options)
