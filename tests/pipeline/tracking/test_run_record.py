"""The run-result record: built from a release, logged as an MLflow child run, read back equal."""

from __future__ import annotations

import dataclasses
import math
import types

import numpy as np
import pytest

from mechanisms.entries import ClassifierScores
from mechanisms.release import PrivacyClaim, Release
from mechanisms.synthetic.evaluate import TableScores
from oracles.contract.certificate import Certificate, Status
from oracles.contract.stats import CarryStats, TreeStats
from pipeline.tracking.run_record import (
    COLUMNS,
    METRICS,
    NO_ORACLE,
    PARAMS,
    Certified,
    PrivacyStatus,
    RunResult,
    certified_text,
    gap_text,
    review_gap,
)
from pipeline.sweep.one_run import RunKey
from pipeline.tracking.mlflow_runs import SweepTracker, results_from_mlflow
from tests.pipeline.records import classifier_result


def _certificate(gap: float, backend: str = "highs", fallback: str = "") -> Certificate:
    status = Status.OPTIMAL if gap == 0 else Status.TIME_LIMIT
    bound = 3.0 - gap if math.isfinite(gap) else -math.inf
    return Certificate(
        status=status,
        objective=3.0,
        bound=bound,
        seconds=0.25,
        backend=backend,
        fallback=fallback or None,
        cpu_seconds=0.2,
    )


def _release(certificates, *, epsilon=1.0, holds=True, calibration="proven"):
    claim = PrivacyClaim(
        epsilon,
        1e-5,
        holds,
        "a reason, with: punctuation; and 'quotes'",
        requested_epsilon=1.0,
        requested_delta=1e-5,
        calibration=calibration,
    )
    return Release(
        "opdisc",
        np.array([1.0, -1.0]),
        claim,
        noise={"sigma": 2.5},
        params={"tau": 1.0},
        certificates=tuple(certificates),
        timings={"solve": 0.5},
    )


class _Data:
    """A stand-in for a Dataset: what RunResult.of reads."""

    def __init__(self, n: int) -> None:
        rng = np.random.default_rng(n)
        self.features = rng.integers(0, 2, size=(n, 2)).astype(float)
        self.labels = rng.choice([-1, 1], size=n)


#: A second attempt that certified from scratch on the structured search (issue 45).
CARRIED = CarryStats(
    2,
    3,
    0.904,
    2.5,
    3,
    0.99,
    3.0,
    started_from="from scratch on structured (the kept window state of attempt 1 not needed)",
)

CASES = {
    "private, certified": (RunKey("opdisc", 0.5, 3), [_certificate(0.0)], {}, True),
    "not certified, infinite gap, fallback, no test set": (
        RunKey("rspm_gaussian", 1.0, 0),
        [_certificate(math.inf, fallback="structured: shape -> highs"), _certificate(0.0)],
        {"holds": False},
        False,
    ),
    "reference: epsilon inf, no oracle call, no calibration": (
        RunKey("erm_01", math.inf, 0),
        [],
        {"epsilon": math.inf, "holds": False, "calibration": None},
        True,
    ),
    "an epsilon %g cannot write exactly": (
        RunKey("opdisc", 0.5000001, 1),
        [_certificate(0.0)],
        {},
        True,
    ),
    "a private run without an oracle call": (RunKey("dpsgd_lr", 1.0, 0), [], {}, True),
    "carried on: certified by its second attempt": (
        RunKey("opdisc", 30.0, 0),
        [dataclasses.replace(_certificate(0.0), stats=(CARRIED,))],
        {},
        True,
    ),
    "a gap of floating-point noise below zero": (
        RunKey("rspm_laplace", 0.5, 0),
        [Certificate(Status.OPTIMAL, 162.925506, 162.925506 + 2.842171e-14, 0.1, "highs")],
        {},
        True,
    ),
}


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    """One sqlite store for the module (creating one takes seconds); each case its experiment."""
    return f"sqlite:///{tmp_path_factory.mktemp('records') / 'mlflow.db'}"


@pytest.mark.parametrize("case", list(CASES))
def test_a_result_survives_mlflow(store, tmp_path, case):
    key, certificates, claim, with_test = CASES[case]
    release = _release(certificates, **claim)
    train, test = _Data(30), (_Data(20) if with_test else None)
    result = dataclasses.replace(
        classifier_result(key, release, train, test, wall_seconds=1.5), node="node-a,node-b"
    )
    tracker = SweepTracker(store, f"round-trip {case}", tmp_path / "art")
    tracker.start_parent("test", "sid", {"sweep": {"name": "test"}})
    run_id = tracker.log_child(result, release, {"name": key.mechanism, "tau": 1.0})
    # its name in MLflow's run list is the console's label (a reference's says what it is)
    assert tracker.client.get_run(run_id).info.run_name == key.label
    (back,) = results_from_mlflow(tracker)
    fields = [
        (f.name, getattr(result, f.name), getattr(back, f.name))
        for f in dataclasses.fields(RunResult)
    ]
    assert type(back.scores) is type(result.scores) is ClassifierScores
    fields += [
        (f"scores.{k}", v, getattr(back.scores, k))
        for k, v in dataclasses.asdict(result.scores).items()
    ]
    for name, value, read in fields:
        assert type(read) is type(value), (name, read, value)
        if isinstance(value, float) and math.isnan(value):
            assert math.isnan(read), name
        elif name != "scores":
            assert read == value, name


def test_every_field_has_one_place_in_the_child_run():
    """A field is a param, a metric or a tag (verdicts and identity), never two of them."""
    release = _release([_certificate(0.0)])
    result = classifier_result(RunKey("opdisc", 0.5, 3), release, _Data(30), _Data(20), 1.5)
    params, metrics, tags = result.to_params(), result.to_metrics(), result.to_tags("p")
    assert set(params) == set(PARAMS)
    assert set(metrics) == set(METRICS) | {"train_accuracy", "test_accuracy"}  # its scores
    assert not set(params) & set(metrics)
    assert not any(name.endswith("marginal_error") for name in tags)  # a classifier has none
    assert tags["run_key"] == "opdisc/eps=0.5/run=3" and tags["privacy_holds"] == "yes"
    assert tags["mlflow.parentRunId"] == "p" and tags["backend"] == "highs"


def test_a_non_finite_float_is_a_tag_not_a_metric():
    release = _release([_certificate(math.inf), _certificate(0.0)], holds=False)
    result = classifier_result(RunKey("rspm_gaussian", 1.0, 0), release, _Data(30), None, 1.5)
    assert math.isnan(result.scores.test_accuracy) and math.isinf(result.oracle_max_gap)
    assert "test_accuracy" not in result.to_metrics()
    assert "oracle_max_gap" not in result.to_metrics()
    tags = result.to_tags(None)
    assert tags["nonfinite.test_accuracy"] == "nan"
    assert tags["nonfinite.oracle_max_gap"] == "inf"
    assert tags["privacy_status"] == "does not hold"


def test_a_reference_is_non_private_and_claims_no_certificate_without_an_oracle_call():
    release = _release([], epsilon=math.inf, holds=False, calibration=None)
    result = classifier_result(RunKey("erm_01", math.inf, 0), release, _Data(30), None, 0.1)
    assert result.privacy_status is PrivacyStatus.NON_PRIVATE and result.oracle_certified is None
    assert result.to_tags(None)["privacy_status"] == "non-private"
    assert result.calibration == "" and result.to_params()["calibration"] == "-"


@pytest.mark.parametrize("mechanism", ["dpsgd_lr", "logistic_regression", "expmech"])
def test_a_run_without_an_oracle_call_is_no_oracle_everywhere(mechanism):
    """Never "yes" (it was, as if every one of its zero oracle answers were certified): the
    run list's tag, results.csv's row, and the gap it does not have."""
    release = _release([], holds=mechanism != "logistic_regression")
    result = classifier_result(RunKey(mechanism, 1.0, 0), release, _Data(30), None, 0.1)
    assert result.oracle_certified is None
    assert result.to_tags(None)["oracle_certified"] == NO_ORACLE
    assert result.to_row()["oracle_certified"] == NO_ORACLE
    assert result.to_tags(None)["oracle_gap"] == "-"
    certified = classifier_result(
        RunKey("opdisc", 1.0, 0), _release([_certificate(0.0)]), _Data(30), None, 0.1
    )
    assert (
        certified.to_tags(None)["oracle_certified"]
        == "yes"
        == certified.to_row()["oracle_certified"]
    )
    failed = classifier_result(
        RunKey("opdisc", 1.0, 0), _release([_certificate(2.0)]), _Data(30), None, 0.1
    )
    assert failed.to_tags(None)["oracle_certified"] == "no" == failed.to_row()["oracle_certified"]


def test_certified_text_reads_every_way_it_was_written():
    for value in (True, "True", "yes", np.True_):
        assert certified_text(value) == "yes"
    for value in (False, "False", "no", np.False_):
        assert certified_text(value) == "no"
    for value in (None, math.nan, NO_ORACLE, "-"):
        assert certified_text(value) == NO_ORACLE
    with pytest.raises(ValueError, match="oracle_certified"):
        certified_text("maybe")
    # an enum whose values are the texts results.csv and the tags have always held
    assert [str(c) for c in (certified_text(True), certified_text(False), NO_ORACLE)] == [
        "yes",
        "no",
        "no oracle",
    ]
    assert certified_text("yes") is Certified.YES and f"{Certified.NO_ORACLE}" == "no oracle"


def test_the_gap_a_reviewer_reads_is_short_and_noise_below_zero_is_zero():
    # floating-point noise of objective - bound: 0, however it is signed
    assert gap_text(-1.4210854715202004e-14) == "0" == gap_text(-2.842171e-14) == gap_text(0.0)
    assert review_gap(-1.4e-14) == 0.0 and review_gap(-1e-3) == -1e-3  # beyond it: shown
    # a positive gap is never 0, and reads whole in a narrow column (not 1.13686837...)
    assert gap_text(1.1368683772161603e-13) == "1.1e-13"
    assert gap_text(1.4049703e-09) == "1.4e-09" and review_gap(1e-15) == 1e-15
    assert gap_text(4564.0) == "4564" and gap_text(2.5) == "2.5" and gap_text(0.25) == "0.25"
    assert gap_text(math.inf) == "inf" and gap_text(-1e-3) == "-0.001"
    assert gap_text(0.0, oracle_calls=0) == "-"  # no oracle call: no gap
    assert all(len(gap_text(g)) <= 9 for g in (1.1368683772161603e-13, 8.11351e-13, 123456.7))


def test_the_run_list_shows_the_short_gap_and_results_csv_keeps_the_raw_one():
    noise = Certificate(Status.OPTIMAL, 3.0, 3.0 + 1.4210854715202004e-14, 0.1, "highs")
    tiny = Certificate(Status.OPTIMAL, 3.0, 3.0 - 1.1368683772161603e-13, 0.1, "highs")
    for certificate, shown in ((noise, "0"), (tiny, "1.1e-13")):
        result = classifier_result(
            RunKey("opdisc", 1.0, 0), _release([certificate]), _Data(30), None, 0.1
        )
        assert result.to_tags(None)["oracle_gap"] == shown
        assert result.to_row()["oracle_max_gap"] == certificate.gap  # raw, as it was
        assert result.to_metrics()["oracle_max_gap"] == certificate.gap


def test_a_child_logged_by_an_earlier_version_reads_back():
    """Children logged before requested_epsilon, the verdict tags and the gap metrics existed."""
    run = types.SimpleNamespace(
        info=types.SimpleNamespace(start_time=1_000),
        data=types.SimpleNamespace(
            params={
                "target_epsilon": "0.5",
                "run_index": "2",
                "privacy_epsilon": "Infinity",
                "privacy_delta": "1e-05",
                "calibration": "None",
                "oracle_calls": "1",
                "train_n": "30",
                "privacy_reason": "old reason",
            },
            metrics={"train_accuracy": 0.75, "oracle_certified_fraction": 1.0},
            tags={
                "run_key": "opdisc/eps=0.5/run=2",
                "mechanism": "opdisc",
                "privacy_holds": "yes",
                "backend": "none",
            },
        ),
    )
    result = RunResult.from_mlflow(run)
    assert result.requested_epsilon == 0.5 and math.isinf(result.privacy_epsilon)
    assert result.calibration == "" and result.privacy_reason == "old reason"
    assert result.oracle_certified and result.privacy_status is PrivacyStatus.HOLDS
    assert result.oracle_backends == "" and math.isnan(result.scores.test_accuracy)
    assert result.scores.train_accuracy == 0.75
    assert result.oracle_wall_seconds == 0.0 and math.isnan(result.oracle_objective)
    assert math.isnan(result.oracle_cpu_seconds)  # not measured before the field existed
    run.data.metrics["oracle_seconds"] = 2.5  # the name before it said which clock
    assert RunResult.from_mlflow(run).oracle_wall_seconds == 2.5
    del run.data.metrics["oracle_seconds"]
    # tagged "yes" by a version that called a run without an oracle call certified
    run.data.params["oracle_calls"] = "0"
    run.data.tags["oracle_certified"] = "yes"
    assert RunResult.from_mlflow(run).oracle_certified is None


def test_a_row_has_every_kinds_columns_and_nan_in_another_kinds():
    """results.csv is one table for both kinds: a classifier's row has no marginal error, a
    synthetic table's has one; the columns, in order, are COLUMNS either way."""
    release = _release([_certificate(0.0)])
    classifier = classifier_result(RunKey("opdisc", 0.5, 3), release, _Data(30), _Data(20), 1.5)
    row = classifier.to_row()
    assert tuple(row) == COLUMNS and math.isnan(row["max_marginal_error"])
    assert row["train_accuracy"] == classifier.scores.train_accuracy
    table = dataclasses.replace(
        classifier, mechanism="fem", scores=TableScores(0.25, 0.125, 0.75, math.nan)
    )
    row = table.to_row()
    assert tuple(row) == COLUMNS and row["max_marginal_error"] == 0.25
    assert table.to_metrics()["mean_marginal_error"] == 0.125
    assert table.to_tags(None)["nonfinite.test_accuracy"] == "nan"


def test_a_run_records_what_its_attempts_spent_and_what_certifying_would_cost():
    from oracles.contract.certificate import Certificate, Status
    from pipeline.tracking.run_record import cpu_seconds_to_certify, total_cpu_seconds

    certified = Certificate(Status.OPTIMAL, 1.0, 1.0, 2.0, "window", cpu_seconds=2.0)
    carried = Certificate(
        Status.TIME_LIMIT,
        2.0,
        1.0,
        300.0,
        "window",
        cpu_seconds=290.0,
        stats=(
            CarryStats(2, 10, 300.0, 310.0, 20, 590.0, 610.0),
            TreeStats("deadline", 4e8, 1e8, 9e8, 0.1, 4e5, "about 4e8 nodes left"),
        ),
    )
    assert total_cpu_seconds((certified, carried)) == 592.0
    assert cpu_seconds_to_certify((certified, carried)) == 1000.0  # 4e8 nodes at 4e5 a second
    assert cpu_seconds_to_certify((certified,)) == 0.0 and total_cpu_seconds(()) == 0.0
    unknown = Certificate(Status.TIME_LIMIT, 2.0, 1.0, 60.0, "highs")  # no tree to estimate
    assert math.isnan(cpu_seconds_to_certify((unknown,)))


def test_a_run_carried_on_says_which_attempt_ended_it_from_what_and_the_cpu_of_all():
    first = Certificate(Status.OPTIMAL, 3.0, 3.0, 0.1, "highs", cpu_seconds=0.1)
    certified = dataclasses.replace(_certificate(0.0), stats=(CARRIED,))
    stopped = Certificate(
        Status.TIME_LIMIT,
        3.0,
        1.0,
        0.5,
        "window",
        cpu_seconds=0.25,
        stats=(CarryStats(3, 9, 1.0, 2.0, 12, 1.25, 2.5, started_from="kept state of attempt 2"),),
    )
    release = _release([first, certified, stopped])
    result = classifier_result(RunKey("opdisc", 30.0, 0), release, _Data(30), None, 1.5)
    assert result.oracle_attempts == (
        "attempt 2 certified: from scratch on structured (the kept window state of attempt 1 "
        "not needed); 0.99 CPU s over 2 attempts | attempt 3 not certified: kept state of "
        "attempt 2; 1.25 CPU s over 3 attempts"
    )
    # every attempt's CPU: this attempt's (the certificate's) and the ones before (carried)
    assert result.oracle_total_cpu_seconds == 0.1 + (0.2 + 0.904) + (0.25 + 1.0)
    assert result.to_row()["oracle_attempts"] == result.oracle_attempts
    assert result.to_tags(None)["oracle_attempts"] == result.oracle_attempts
    alone = classifier_result(RunKey("opdisc", 30.0, 0), _release([first]), _Data(30), None, 1.5)
    assert alone.oracle_attempts == "" and "oracle_attempts" not in alone.to_tags(None)
