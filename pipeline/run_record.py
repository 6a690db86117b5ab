"""The result of one run: a frozen, typed record, and its MLflow child run both ways.

``RunResult`` is the one definition of a run's result. It is built once, from the release
(``RunResult.of``), and read back once, from the child run that logged it
(``RunResult.from_mlflow``); ``to_tags`` / ``to_params`` / ``to_metrics`` say where each field
goes, and tests/pipeline/test_run_record.py checks that every field comes back equal, with its
type. What a reviewer sorts or filters by is a column of the run list: the privacy claim and the
run's identity as params, its floats as metrics, its verdicts as tags; the rest of the release
is in release.json (pipeline.mlflow_log). ``to_row`` is the row of results.csv.

One name per value: ``requested_epsilon`` is the sweep grid's target, ``privacy_epsilon`` /
``privacy_delta`` what SPEC section 10's arguments prove for the noise actually drawn.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import dataclass
from typing import Any

from mechanisms.base import Release
from mechanisms.catalog import NON_PRIVATE
from pipeline.data.record import Dataset
from pipeline.mlflow_log import CHILD_ROLE

#: The float fields logged as metrics of the child run.
METRICS = (
    "train_accuracy",
    "test_accuracy",
    "wall_seconds",
    "oracle_seconds",
    "oracle_max_gap",
    "oracle_objective",
    "oracle_bound",
)
#: The fields logged as params (the run's identity and its privacy claim).
PARAMS = (
    "privacy_epsilon",
    "privacy_delta",
    "calibration",
    "requested_epsilon",
    "run_index",
    "oracle_calls",
    "train_n",
)
MAX_TAG = 5000


def privacy_status(mechanism: str, holds: bool) -> str:
    """``holds`` / ``does not hold`` for a private mechanism, ``non-private`` for a reference
    (whose ``privacy_holds`` is false by definition, not because a guarantee broke)."""
    if mechanism in NON_PRIVATE:
        return "non-private"
    return "holds" if holds else "does not hold"


@dataclass(frozen=True)
class RunResult:
    """One run of the sweep, summarized (the fields are the columns of results.csv)."""

    #: ``mechanism/eps=E/run=I`` (pipeline.tasks.RunKey): the sweep's resume key.
    key: str
    mechanism: str
    #: When the run started, in ms since the epoch (its child run starts then).
    start_time_ms: int
    #: The grid's target; the guarantee is ``privacy_epsilon`` (SPEC section 10).
    requested_epsilon: float
    run_index: int
    privacy_epsilon: float
    privacy_delta: float
    #: The calibration rule of the noise ("" for a mechanism without one).
    calibration: str
    privacy_holds: bool
    privacy_reason: str
    train_accuracy: float
    #: nan without a test set.
    test_accuracy: float
    wall_seconds: float
    oracle_seconds: float
    oracle_calls: int
    oracle_max_gap: float
    #: The one oracle call's [bound, objective] (the minimum lies there); nan for several.
    oracle_objective: float
    oracle_bound: float
    train_n: int
    oracle_backends: str
    oracle_fallbacks: str
    #: The Ray node the run ran on ("" outside Ray).
    node: str
    #: Every oracle answer the release rests on certified optimal (true with no oracle call):
    #: a non-private reference is the exact optimum only when this holds.
    oracle_certified: bool
    #: ``privacy_status(mechanism, privacy_holds)``.
    privacy_status: str

    @classmethod
    def of(
        cls,
        key: Any,
        release: Release,
        train: Dataset,
        test: Dataset | None,
        wall_seconds: float,
        started: float | None = None,
        node: str = "",
    ) -> RunResult:
        """The result of run ``key`` (a pipeline.tasks.RunKey) that released ``release``.

        ``started``: when the run began (seconds since the epoch; default: ``wall_seconds`` ago).
        """
        certificates = release.certificates
        if started is None:
            started = time.time() - wall_seconds
        one = certificates[0] if len(certificates) == 1 else None
        return cls(
            key=str(key),
            mechanism=key.mechanism,
            start_time_ms=int(round(started * 1000)),
            requested_epsilon=float(key.epsilon),
            run_index=int(key.run_index),
            privacy_epsilon=float(release.privacy.epsilon),
            privacy_delta=float(release.privacy.delta),
            calibration=release.privacy.calibration or "",
            privacy_holds=bool(release.privacy.holds),
            privacy_reason=release.privacy.reason,
            train_accuracy=release.accuracy(train.features, train.labels),
            test_accuracy=(
                release.accuracy(test.features, test.labels) if test is not None else math.nan
            ),
            wall_seconds=float(wall_seconds),
            oracle_seconds=release.oracle_seconds,
            oracle_calls=len(certificates),
            oracle_max_gap=float(release.max_gap),
            oracle_objective=float(one.objective) if one is not None else math.nan,
            oracle_bound=float(one.bound) if one is not None else math.nan,
            train_n=int(len(train.labels)),
            oracle_backends=",".join(sorted({c.backend for c in certificates})),
            oracle_fallbacks=";".join(sorted({c.fallback for c in certificates if c.fallback})),
            node=node,
            oracle_certified=all(c.certified for c in certificates),
            privacy_status=privacy_status(key.mechanism, release.privacy.holds),
        )

    def to_row(self) -> dict[str, Any]:
        """The row of results.csv: every field, by name."""
        return dataclasses.asdict(self)

    # --- the child run ---------------------------------------------------------------------

    def to_tags(self, parent_id: str | None) -> dict[str, str]:
        """Verdicts and identity as tags; a non-finite metric (MLflow keeps none) as a tag."""
        tags = {
            "mlflow.parentRunId": parent_id,
            "role": CHILD_ROLE,
            "run_key": self.key,
            "mechanism": self.mechanism,
            "privacy_status": self.privacy_status,
            "privacy_holds": "yes" if self.privacy_holds else "no",
            "oracle_certified": "yes" if self.oracle_certified else "no",
            "privacy_reason": self.privacy_reason[:MAX_TAG],
            "backend": self.oracle_backends or "none",
            "node": self.node,
        }
        if self.oracle_fallbacks:
            tags["oracle_fallback"] = self.oracle_fallbacks
        for name in METRICS:
            value = getattr(self, name)
            if not math.isfinite(value):
                tags[f"nonfinite.{name}"] = repr(float(value))
        return tags

    def to_params(self) -> dict[str, Any]:
        params = {name: getattr(self, name) for name in PARAMS}
        params["calibration"] = self.calibration or "-"  # MLflow keeps no empty param
        return params

    def to_metrics(self) -> dict[str, float]:
        """The finite float fields (a non-finite one is a tag, ``to_tags``)."""
        metrics = {name: float(getattr(self, name)) for name in METRICS}
        return {k: v for k, v in metrics.items() if math.isfinite(v)}

    def times(self) -> tuple[int, int]:
        """(start, end) of the child run in ms: when the run started, and wall_seconds later."""
        wall = self.wall_seconds
        end = (
            self.start_time_ms + round(1000 * wall)
            if math.isfinite(wall)
            else int(time.time() * 1000)
        )
        return self.start_time_ms, end

    @classmethod
    def from_mlflow(cls, run: Any) -> RunResult:
        """The result a FINISHED child run records (the inverse of the ``to_*`` methods).

        Children logged by earlier versions read back too: the defaults below are theirs.
        """
        p, m, t = run.data.params, run.data.metrics, run.data.tags
        calls = int(p.get("oracle_calls", 0))
        certified = t.get("oracle_certified")

        def number(name: str, default: float) -> float:
            if name in m:
                return float(m[name])
            return float(t.get(f"nonfinite.{name}", default))

        def param(name: str, *older: str) -> float:
            for key in (name, *older):  # names before requested_epsilon: target_epsilon, epsilon
                if key in p:
                    return float(p[key].replace("Infinity", "inf"))
            return math.nan

        mechanism = t.get("mechanism", "")
        holds = t.get("privacy_holds") == "yes"
        return cls(
            key=t.get("run_key", ""),
            mechanism=mechanism,
            start_time_ms=int(run.info.start_time),
            requested_epsilon=param("requested_epsilon", "target_epsilon", "epsilon"),
            run_index=int(p.get("run_index", 0)),
            privacy_epsilon=param("privacy_epsilon"),
            privacy_delta=param("privacy_delta"),
            calibration=(
                "" if p.get("calibration") in (None, "None", "null", "-") else p["calibration"]
            ),
            privacy_holds=holds,
            # a tag; a param in children logged before it was one
            privacy_reason=t.get("privacy_reason", p.get("privacy_reason", "")),
            train_accuracy=number("train_accuracy", math.nan),
            test_accuracy=number("test_accuracy", math.nan),
            wall_seconds=number("wall_seconds", math.nan),
            oracle_seconds=number("oracle_seconds", 0.0),
            oracle_calls=calls,
            oracle_max_gap=number("oracle_max_gap", 0.0),
            oracle_objective=number("oracle_objective", math.nan),
            oracle_bound=number("oracle_bound", math.nan),
            train_n=int(p.get("train_n", 0)),
            oracle_backends="" if t.get("backend") == "none" else t.get("backend", ""),
            oracle_fallbacks=t.get("oracle_fallback", ""),
            node=t.get("node", ""),
            # children logged before these tags existed: read them off the metrics
            oracle_certified=(
                certified == "yes"
                if certified is not None
                else calls == 0 or m.get("oracle_certified_fraction") == 1.0
            ),
            privacy_status=t.get("privacy_status") or privacy_status(mechanism, holds),
        )


def release_fields(release: Release) -> tuple[dict[str, Any], dict[str, float]]:
    """(params, metrics) of the child run that come from the release itself, not the result:
    its scalar noise parameters (``noise.*``) and its timings and certificate summary."""
    params = {f"noise.{k}": v for k, v in release.noise.items()}  # scalars only (Release)
    metrics = {k: float(v) for k, v in release.to_metrics().items()}
    return params, {k: v for k, v in metrics.items() if math.isfinite(v)}
