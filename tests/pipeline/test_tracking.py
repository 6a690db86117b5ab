"""One run record, round trip: result row -> MLflow child run -> rows_from_mlflow -> same row."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.base import PrivacyClaim, Release
from oracles.base import Certificate, Status
from pipeline.tasks import RunKey, result_row
from pipeline.tracking import SweepTracker, rows_from_mlflow


def _certificate(gap: float, backend: str = "highs", fallback: str = "") -> Certificate:
    status = Status.OPTIMAL if gap == 0 else Status.TIME_LIMIT
    bound = 3.0 - gap if math.isfinite(gap) else -math.inf
    return Certificate(status=status, objective=3.0, bound=bound, seconds=0.25, backend=backend,
                       fallback=fallback or None)  # fmt: skip


def _release(certificates, *, epsilon=1.0, holds=True, calibration="proven"):
    claim = PrivacyClaim(epsilon, 1e-5, holds, "a reason, with: punctuation; and 'quotes'",
                         requested_epsilon=1.0, requested_delta=1e-5,
                         calibration=calibration)  # fmt: skip
    return Release("opdisc", np.array([1.0, -1.0]), claim, noise={"sigma": 2.5},
                   params={"tau": 1.0}, certificates=tuple(certificates),
                   timings={"solve": 0.5})  # fmt: skip


class _Data:
    """A stand-in for a Dataset: what result_row reads."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(n)
        self.features = rng.integers(0, 2, size=(n, 2)).astype(float)
        self.labels = rng.choice([-1, 1], size=n)


CASES = {
    "private, certified": (RunKey("opdisc", 0.5, 3), [_certificate(0.0)], {}, True),
    "not certified, infinite gap, fallback, no test set": (
        RunKey("rspm_gaussian", 1.0, 0),
        [_certificate(math.inf, fallback="structured: shape -> highs"), _certificate(0.0)],
        {"holds": False}, False),
    "reference: epsilon inf, no oracle call, no calibration": (
        RunKey("erm_01", math.inf, 0), [],
        {"epsilon": math.inf, "holds": False, "calibration": None}, True),
    "an epsilon %g cannot write exactly": (RunKey("opdisc", 0.5000001, 1), [_certificate(0.0)],
                                           {}, True),
}  # fmt: skip


@pytest.mark.parametrize("case", list(CASES))
def test_a_result_row_survives_mlflow(tmp_path, case):
    key, certificates, claim, with_test = CASES[case]
    release = _release(certificates, **claim)
    train, test = _Data(30), (_Data(20) if with_test else None)
    row = result_row(key, release, train, test, wall_seconds=1.5)
    row["node"] = "node-a,node-b"
    tracker = SweepTracker(f"sqlite:///{tmp_path / 'mlflow.db'}", "round-trip", tmp_path / "art")
    tracker.start_parent("test", "sid", {"sweep": {"name": "test"}})
    tracker.log_child(row, release, {"name": key.mechanism, "tau": 1.0})
    (back,) = rows_from_mlflow(tracker)
    assert set(back) == set(row)
    for name, value in row.items():
        assert type(back[name]) is type(value), (name, back[name], value)
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(back[name]), name
        else:
            assert back[name] == value, name
