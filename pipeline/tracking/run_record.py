"""The result of one run: a frozen, typed record, and its MLflow child run both ways.

``RunResult`` is the one definition of a run's result. It is built once, from the release
(``RunResult.of``), and read back once, from the child run that logged it
(``RunResult.from_mlflow``); ``to_tags`` / ``to_params`` / ``to_metrics`` say where each field
goes, and tests/pipeline/tracking/test_run_record.py checks that every field comes back equal, with its
type. What a reviewer sorts or filters by is a column of the run list: the privacy claim and the
run's identity as params, its floats as metrics, its verdicts as tags; the rest of the release
is in release.json (pipeline.tracking.mlflow_log). ``to_row`` is the row of results.csv.

What a reviewer reads is written one way everywhere (the run list, results.csv, summary.md):
``certified_text`` says ``yes``, ``no`` or ``no oracle`` (a run that called no oracle is never
"certified"), and ``gap_text`` shows the largest oracle gap short enough to read whole in a
column of the run list (``1.1e-13``, not ``1.13686837...``), with floating-point noise below
zero shown as ``0``; the raw gap stays in results.csv and in the ``oracle_max_gap`` metric.

One name per value: ``requested_epsilon`` is the sweep grid's target, ``privacy_epsilon`` /
``privacy_delta`` what SPEC section 10's arguments prove for the noise actually drawn.
"""

from __future__ import annotations

import dataclasses
import enum
import math
import time
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from mechanisms.catalog import CATALOG, NON_PRIVATE
from mechanisms.entries import ClassifierScores, Scores
from mechanisms.release import Release
from mechanisms.synthetic.fem import SyntheticRelease
from oracles.contract.certificate import OBJECTIVE_TOL, Certificate
from oracles.contract.stats import CarryStats, TreeStats
from pipeline.tracking.mlflow_log import CHILD_ROLE

#: The float fields of every run logged as metrics of the child run (its scores' fields are
#: metrics too: ``Scores``).
METRICS = (
    "wall_seconds",
    "oracle_wall_seconds",
    "oracle_cpu_seconds",
    "oracle_max_gap",
    "oracle_objective",
    "oracle_bound",
    "oracle_total_cpu_seconds",
    "oracle_cpu_seconds_to_certify",
)
#: The columns of results.csv, in order: the run's fields and every kind's scores (a run has
#: nan in the columns of another kind's scores).
COLUMNS = (
    "key",
    "mechanism",
    "start_time_ms",
    "requested_epsilon",
    "run_index",
    "privacy_epsilon",
    "privacy_delta",
    "calibration",
    "privacy_holds",
    "privacy_reason",
    "train_accuracy",
    "test_accuracy",
    "wall_seconds",
    "oracle_wall_seconds",
    "oracle_calls",
    "oracle_max_gap",
    "oracle_objective",
    "oracle_bound",
    "train_n",
    "oracle_backends",
    "oracle_fallbacks",
    "node",
    "oracle_certified",
    "privacy_status",
    "max_marginal_error",
    "mean_marginal_error",
    "oracle_cpu_seconds",
    "sample_max_marginal_error",
    "sample_mean_marginal_error",
    "positive_rate",
    "real_positive_rate",
    "oracle_total_cpu_seconds",
    "oracle_cpu_seconds_to_certify",
    "oracle_attempts",
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


class Certified(enum.StrEnum):
    """``oracle_certified`` as it is shown (results.csv, the report, a child run's tag): every
    oracle call certified optimal, not every one, or no oracle call at all."""

    YES = "yes"
    NO = "no"
    NO_ORACLE = "no oracle"


#: ``oracle_certified`` of a run that called no oracle, wherever it is shown.
NO_ORACLE = Certified.NO_ORACLE


def certified_text(certified: Any) -> Certified:
    """``yes`` / ``no`` / ``no oracle``: ``certified`` as RunResult holds it (None: no oracle
    call), or as a results.csv or an older record wrote it (``True``, ``"False"``, ``"yes"``)."""
    if certified is None or (isinstance(certified, float) and math.isnan(certified)):
        return NO_ORACLE
    text = str(certified).strip().lower()
    if text in ("yes", "true", "1", "1.0"):
        return Certified.YES
    if text in ("no", "false", "0", "0.0"):
        return Certified.NO
    if text in (NO_ORACLE, "-", "", "none", "nan"):
        return NO_ORACLE
    raise ValueError(f"oracle_certified: {certified!r} is none of yes, no, {NO_ORACLE}")


def review_gap(gap: float) -> float:
    """The largest oracle gap as a reviewer reads it: a negative gap within the certificate's
    tolerance (``oracles.contract.certificate.OBJECTIVE_TOL``) is the floating-point noise of objective - bound
    and reads 0. Any positive gap, however small, and a negative one beyond the tolerance (a
    bound above the objective: worth a look) are kept as they are."""
    gap = float(gap)
    return 0.0 if -OBJECTIVE_TOL <= gap < 0.0 else gap


def gap_text(gap: float, oracle_calls: int = 1) -> str:
    """The largest oracle gap, short enough to read whole in a narrow column: ``0``,
    ``1.1e-13`` (two digits below 1), ``4564`` (four digits from 1 up), ``inf``; ``-`` for a
    run without an oracle call (it has no gap)."""
    if not oracle_calls:
        return "-"
    gap = review_gap(gap)
    if gap == 0.0:
        return "0"
    if not math.isfinite(gap):
        return repr(gap)  # inf, -inf, nan
    return f"{gap:.2g}" if abs(gap) < 1.0 else f"{gap:.4g}"


class PrivacyStatus(enum.StrEnum):
    """A run's ``privacy_status`` as shown (results.csv, a child run's tag, the sweep's lines)."""

    HOLDS = "holds"
    DOES_NOT_HOLD = "does not hold"
    #: a reference, whose ``privacy_holds`` is false by definition, not because a guarantee broke
    NON_PRIVATE = "non-private"


def privacy_status(mechanism: str, holds: bool) -> PrivacyStatus:
    """``holds`` / ``does not hold`` for a private mechanism, ``non-private`` for a reference
    (whose ``privacy_holds`` is false by definition, not because a guarantee broke)."""
    if mechanism in NON_PRIVATE:
        return PrivacyStatus.NON_PRIVATE
    return PrivacyStatus.HOLDS if holds else PrivacyStatus.DOES_NOT_HOLD


@dataclass(frozen=True)
class RunResult:
    """One run of the sweep, summarized (the fields are the columns of results.csv)."""

    #: ``mechanism/eps=E/run=I`` (pipeline.sweep.one_run.RunKey): the sweep's resume key.
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
    #: The run's wall-clock seconds, less the time its oracle tasks queued for a CPU (their own
    #: seconds instead): its child run's duration. Its steps: the release's
    #: ``step_wall_seconds.*`` metrics (``mechanisms.release.STEP_WALL``).
    wall_seconds: float
    #: The oracle calls' wall-clock seconds (``Certificate.seconds``), summed.
    oracle_wall_seconds: float
    oracle_calls: int
    #: The raw largest gap objective - bound (can be -1e-14: floating-point noise); what a
    #: reviewer reads is ``gap_text`` (the run list's ``oracle_gap`` tag, summary.md).
    oracle_max_gap: float
    #: The one oracle call's [bound, objective] (the minimum lies there); nan for several.
    oracle_objective: float
    oracle_bound: float
    train_n: int
    oracle_backends: str
    oracle_fallbacks: str
    #: The Ray node the run ran on ("" outside Ray).
    node: str
    #: Every oracle answer the release rests on certified optimal; None for a run that called
    #: no oracle (shown ``no oracle``, never ``yes``: ``certified_text``). A non-private
    #: reference with an oracle call is the exact optimum only when this is True.
    oracle_certified: bool | None
    #: ``privacy_status(mechanism, privacy_holds)``.
    privacy_status: PrivacyStatus
    #: How the release did, as its entry's kind scores it (``mechanisms.entries``): a
    #: classifier's train and test accuracy (nan without a test set); a synthetic table's
    #: largest and mean absolute error over the sweep's workload of marginals (fractions, in
    #: [0, 1]; mechanisms.synthetic.evaluate) and the train and test accuracy of logistic
    #: regression trained on the table.
    scores: Scores
    #: The CPU seconds the run's oracle calls got beside their wall seconds
    #: (``oracles.contract.certificate.Certificate.cpu_seconds``): far below ``oracle_wall_seconds`` times the
    #: threads, the solves shared their CPUs with other work. 0 without an oracle call.
    oracle_cpu_seconds: float = math.nan
    #: The CPU seconds its solves got over every attempt (a solve carried on from a stopped one
    #: counts the attempts before it: ``oracles.window.checkpoint``); ``oracle_cpu_seconds`` is this one's.
    oracle_total_cpu_seconds: float = math.nan
    #: What certifying what did not certify would still cost, in CPU seconds: each uncertified
    #: window search's estimated tree left at the nodes a CPU second it ran at
    #: (``oracles.window.tree_size``); 0 when every answer certified, nan when not known.
    oracle_cpu_seconds_to_certify: float = math.nan
    #: How a solve carried on over attempts ended (``attempts_text``): which attempt, certified
    #: or not, from what, and the CPU of all its attempts; "" when every solve was a first
    #: attempt. A tag of the child run.
    oracle_attempts: str = ""

    @classmethod
    def of(
        cls,
        key: Any,
        release: Release | SyntheticRelease,
        scores: Scores,
        train_n: int,
        wall_seconds: float,
        started: float | None = None,
        node: str = "",
    ) -> RunResult:
        """The result of run ``key`` (a pipeline.sweep.one_run.RunKey) that released ``release``, scored
        ``scores`` (its entry's ``score``, pipeline.sweep.one_run.score), trained on ``train_n`` rows.

        ``started``: when the run began (seconds since the epoch; default: ``wall_seconds`` ago).
        """
        certificates = release.oracle_answers  # a game's selections and its data player's
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
            wall_seconds=float(wall_seconds),
            oracle_wall_seconds=release.oracle_seconds,
            oracle_calls=len(certificates),
            oracle_max_gap=float(release.max_gap),
            oracle_objective=float(one.objective) if one is not None else math.nan,
            oracle_bound=float(one.bound) if one is not None else math.nan,
            train_n=int(train_n),
            oracle_backends=",".join(sorted({c.backend for c in certificates})),
            oracle_fallbacks=";".join(sorted({c.fallback for c in certificates if c.fallback})),
            node=node,
            oracle_certified=all(c.certified for c in certificates) if certificates else None,
            privacy_status=privacy_status(key.mechanism, release.privacy.holds),
            scores=scores,
            oracle_cpu_seconds=release.oracle_cpu_seconds,
            oracle_total_cpu_seconds=total_cpu_seconds(certificates),
            oracle_cpu_seconds_to_certify=cpu_seconds_to_certify(certificates),
            oracle_attempts=attempts_text(certificates),
        )

    def to_row(self) -> dict[str, Any]:
        """The row of results.csv: every field, by name; ``oracle_certified`` as it is shown
        everywhere (``yes``, ``no``, ``no oracle``)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        fields |= dataclasses.asdict(self.scores)
        fields["oracle_certified"] = certified_text(self.oracle_certified)
        return {name: fields.get(name, math.nan) for name in COLUMNS}

    def metric_values(self) -> dict[str, float]:
        """Every float logged as a metric: the run's (``METRICS``) and its scores' fields."""
        values = {name: float(getattr(self, name)) for name in METRICS}
        return dataclasses.asdict(self.scores) | values

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
            "oracle_certified": certified_text(self.oracle_certified),
            # the run list's gap column: short, and 0 for noise below zero (the raw value is
            # the metric oracle_max_gap)
            "oracle_gap": gap_text(self.oracle_max_gap, self.oracle_calls),
            "privacy_reason": self.privacy_reason[:MAX_TAG],
            "backend": self.oracle_backends or "none",
            "node": self.node,
        }
        if self.oracle_fallbacks:
            tags["oracle_fallback"] = self.oracle_fallbacks
        if self.oracle_attempts:
            tags["oracle_attempts"] = self.oracle_attempts[:MAX_TAG]
        for name, value in self.metric_values().items():
            if not math.isfinite(value):
                tags[f"nonfinite.{name}"] = repr(float(value))
        return tags

    def to_params(self) -> dict[str, Any]:
        params = {name: getattr(self, name) for name in PARAMS}
        params["calibration"] = self.calibration or "-"  # MLflow keeps no empty param
        return params

    def to_metrics(self) -> dict[str, float]:
        """The finite float fields (a non-finite one is a tag, ``to_tags``)."""
        return {k: float(v) for k, v in self.metric_values().items() if math.isfinite(v)}

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
            wall_seconds=number("wall_seconds", math.nan),
            # named oracle_seconds before it said which clock
            oracle_wall_seconds=number("oracle_wall_seconds", number("oracle_seconds", 0.0)),
            oracle_calls=calls,
            oracle_max_gap=number("oracle_max_gap", 0.0),
            oracle_objective=number("oracle_objective", math.nan),
            oracle_bound=number("oracle_bound", math.nan),
            train_n=int(p.get("train_n", 0)),
            oracle_backends="" if t.get("backend") == "none" else t.get("backend", ""),
            oracle_fallbacks=t.get("oracle_fallback", ""),
            node=t.get("node", ""),
            oracle_certified=_certified(calls, t.get("oracle_certified"), m),
            privacy_status=PrivacyStatus(t["privacy_status"])
            if t.get("privacy_status")
            else privacy_status(mechanism, holds),
            scores=_scores_from(mechanism, number),
            oracle_cpu_seconds=number("oracle_cpu_seconds", math.nan),
            oracle_total_cpu_seconds=number("oracle_total_cpu_seconds", math.nan),
            oracle_cpu_seconds_to_certify=number("oracle_cpu_seconds_to_certify", math.nan),
            oracle_attempts=t.get("oracle_attempts", ""),
        )


def total_cpu_seconds(certificates) -> float:
    """The CPU seconds the solves got over all their attempts (``RunResult``): each solve's
    own (its whole route's) and what the problem's earlier attempts spent, whatever route
    ended them (``CarryStats.carried_cpu_seconds``)."""
    if not certificates:
        return 0.0
    return float(sum(c.cpu_seconds + _carried_cpu_seconds(c) for c in certificates))


def _carried_cpu_seconds(c: Certificate) -> float:
    """What the earlier attempts of a carried-on solve spent (0: none)."""
    carry = c.stat(CarryStats)
    return carry.carried_cpu_seconds if carry is not None else 0.0


def attempts_text(certificates) -> str:
    """How each solve carried on over attempts ended (``CarryStats``, written by a route with a
    carry directory: ``oracles.routing.routes.account``), e.g. "attempt 2 certified: kept state
    of attempt 1 (12 open nodes, bound 3.2); 0.99 CPU s over 2 attempts"; the solves of a run
    joined by " | "; "" for a run whose solves were all first attempts (nothing to say)."""
    said = []
    for c in certificates:
        carry = c.stat(CarryStats)
        if carry is None or carry.attempts <= 1 or carry.started_from is None:
            continue
        verdict = "certified" if c.certified else "not certified"
        said.append(
            f"attempt {carry.attempts} {verdict}: {carry.started_from}; "
            f"{carry.total_cpu_seconds:.3g} CPU s over {carry.attempts} attempts"
        )
    return " | ".join(said)


def cpu_seconds_to_certify(certificates) -> float:
    """The estimated CPU seconds left to certify every uncertified answer (``RunResult``)."""
    left = 0.0
    for c in certificates:
        if c.certified:
            continue
        tree = c.stat(TreeStats)
        if tree is None:
            return math.nan
        left += tree.cpu_seconds()  # nan without a rate
    return left


def _certified(calls: int, tag: str | None, metrics: Mapping[str, float]) -> bool | None:
    """``oracle_certified`` as a child run records it: None without an oracle call, whatever an
    earlier version tagged (``yes``); read off the metrics in children logged before the tag."""
    if calls == 0:
        return None
    if tag is not None:
        return tag == Certified.YES
    return metrics.get("oracle_certified_fraction") == 1.0


def _scores_from(mechanism: str, number: Callable[[str, float], float]) -> Scores:
    """The scores of ``mechanism``'s kind read back from a child run's metrics (``number(name,
    default)``); a classifier's for a name no longer in the catalog."""
    kind = CATALOG[mechanism].SCORES if mechanism in CATALOG else ClassifierScores
    return kind(**{f.name: number(f.name, math.nan) for f in dataclasses.fields(kind)})


def release_fields(release: Release | SyntheticRelease) -> tuple[dict[str, Any], dict[str, float]]:
    """(params, metrics) of the child run that come from the release itself, not the result:
    what its entry's kind records of it (``release_params``: a classifier's scalar noise
    parameters ``noise.*``, a synthetic table's game parameters ``param.*``), and the timings
    and certificate summary."""
    params = CATALOG[release.mechanism].release_params(release)
    metrics = {k: float(v) for k, v in release.to_metrics().items()}
    return params, {k: v for k, v in metrics.items() if math.isfinite(v)}
