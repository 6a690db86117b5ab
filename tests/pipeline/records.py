"""Run-result records for tests that fake the runs (pipeline.run_record.RunResult)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from pipeline.run_record import RunResult, privacy_status


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
        train_accuracy=0.75,
        test_accuracy=nan,
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
    )
    return dataclasses.replace(result, **fields)
