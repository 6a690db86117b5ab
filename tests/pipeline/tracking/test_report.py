"""The sweep's report (pipeline.tracking.report): the results table's order, the aggregate's defaults
for older records, what is known of a reference, the verdict lines of a partial sweep, and the
files written (test_report_privacy.py and test_report_reference.py cover the proven epsilon and
the uncertified references)."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pandas as pd
import pytest

from pipeline.tracking.report import (
    FEATURES_SHOWN,
    PRIVACY_DOC,
    ReferenceBound,
    aggregate,
    best_accuracy_note,
    beyond_limit_lines,
    figure_1a,
    figure_1b,
    oracle_verdict,
    outcome_lines,
    private_means_frame,
    reference_bound,
    reference_certified,
    results_frame,
    summary_text,
    write_report,
)
from pipeline.sweep.one_run import RunKey
from tests.conftest import REPO
from tests.pipeline.records import result_for


def _row(mechanism="opdisc", eps=1.0, i=0, **changes):
    row = {
        "key": f"{mechanism}/eps={eps}/run={i}",
        "mechanism": mechanism,
        "requested_epsilon": eps,
        "run_index": i,
        "privacy_holds": True,
        "privacy_reason": "",
        "train_accuracy": 0.5 + 0.1 * i,
        "test_accuracy": 0.5,
        "wall_seconds": 1.0 + i,
        "oracle_calls": 1,
        "oracle_max_gap": 0.0,
    }
    return row | changes


def test_results_are_ordered_by_mechanism_epsilon_and_run():
    rows = [
        _row("rspm", 1.0, 1),
        _row("opdisc", 2.0, 0),
        _row("rspm", 0.5, 0),
        _row("opdisc", 1.0, 1),
        _row("opdisc", 1.0, 0),
    ]
    frame = results_frame(rows)
    assert list(zip(frame["mechanism"], frame["requested_epsilon"], frame["run_index"])) == [
        ("opdisc", 1.0, 0),
        ("opdisc", 1.0, 1),
        ("opdisc", 2.0, 0),
        ("rspm", 0.5, 0),
        ("rspm", 1.0, 1),
    ]
    assert frame.index.tolist() == list(range(5))
    assert results_frame([]).empty


def test_aggregate_fills_what_older_records_lack():
    agg = aggregate(results_frame([_row(i=0), _row(i=1), _row("rspm")]))
    opdisc = agg.set_index("mechanism").loc["opdisc"]
    assert opdisc["runs"] == 2 and opdisc["private"] == 2
    assert opdisc["train_acc_mean"] == pytest.approx(0.55)
    assert opdisc["train_acc_sd"] == pytest.approx(0.1 / math.sqrt(2))  # sample sd (ddof 1)
    assert opdisc["wall_median"] == 1.5 and opdisc["wall_max"] == 2.0
    assert math.isnan(opdisc["proven_epsilon"]) and opdisc["calibration"] == "-"
    assert agg.set_index("mechanism").loc["rspm", "train_acc_sd"] == 0.0  # one run: no spread


def test_what_is_known_of_a_reference():
    frame = results_frame(
        [
            _row(
                "erm_01",
                math.inf,
                oracle_certified=False,
                oracle_objective=30.0,
                oracle_bound=20.0,
                train_n=100,
                train_accuracy=0.7,
            )
        ]
    )
    assert not reference_certified(frame, "erm_01")
    assert reference_certified(results_frame([_row("erm_01")]), "erm_01")  # no column: certified
    known = reference_bound(frame, "erm_01")
    assert known == ReferenceBound(30.0, 20.0, 0.7, 0.8) and known.gap == 10.0
    # not a count of training errors: an interval of the objective only
    other = frame.assign(train_accuracy=0.9)
    assert reference_bound(other, "erm_01") == ReferenceBound(30.0, 20.0, None, None)
    assert reference_bound(frame.assign(oracle_bound=math.nan), "erm_01") is None
    two = results_frame(
        [
            _row("erm_01", i=0, oracle_objective=1.0, oracle_bound=0.0),
            _row("erm_01", i=1, oracle_objective=1.0, oracle_bound=0.0),
        ]
    )
    assert reference_bound(two, "erm_01") is None  # several calls: no single interval


def test_a_bound_interval_says_what_is_proven():
    assert (
        ReferenceBound(30.0, -math.inf, None, None).interval()
        == "the optimum lies in [-inf (no bound), 30]"
    )
    assert ReferenceBound(30.0, 20.0, 0.7, 0.8).interval() == (
        "the optimum lies in [20, 30] (training errors); its training accuracy in [0.7000, 0.8000]"
    )


def _outcome(status, failed=None, finished=3, requested=5):
    return SimpleNamespace(
        status=status,
        failed=failed or {},
        finished=finished,
        requested=requested,
        headline=lambda: f"HEADLINE {status}",
    )


def test_a_partial_sweep_says_what_failed_and_what_did_not_run():
    assert outcome_lines(None, []) == []
    assert outcome_lines(_outcome("complete"), []) == ["HEADLINE complete", ""]
    failed = {f"k{i}": f"why {i}" for i in range(12)}
    lines = outcome_lines(_outcome("incomplete", failed, 3, 20), ["k0", "x1", "x2"])
    assert lines[:3] == [
        "HEADLINE incomplete",
        "",
        "3 of 20 requested runs finished; the "
        "tables below cover those only. Rerun the same command to finish the "
        "sweep (finished runs are kept).",
    ]
    assert lines[3] == "- failed: k0: why 0" and lines[12] == "- failed: k9: why 9"
    assert lines[13] == "- ... and 2 more failed runs"
    assert lines[14] == "- not run (2): x1, x2"  # a failed run is not listed again
    many = outcome_lines(_outcome("interrupted"), [f"x{i}" for i in range(11)])
    assert any(
        line.startswith("- not run (11): x0, x1") and line.endswith("x9 ...") for line in many
    )


def test_the_summary_of_no_finished_run_and_of_runs_whose_privacy_fails():
    empty = summary_text(pd.DataFrame(), "T", _outcome("interrupted", finished=0))
    assert empty.startswith("# T\n\nHEADLINE interrupted\n")
    assert empty.endswith("No run finished.\n")
    frame = results_frame([_row(i=0), _row(i=1, privacy_holds=False, privacy_reason="gap")])
    text = summary_text(frame, "T", _outcome("privacy_not_holding", finished=2, requested=2))
    assert "2 of 2 requested runs finished." in text
    assert "Private-mechanism runs whose privacy does NOT hold: 1." in text
    assert "- opdisc/eps=1.0/run=1: gap" in text and "| 1/2 |" in text


def test_an_empty_report_removes_the_figures_of_an_earlier_one(tmp_path):
    paths = write_report([_row(i=0), _row(i=1)], tmp_path, "T")
    assert [p.name for p in paths] == [
        "results.csv",
        "fig1a_accuracy.png",
        "fig1b_runtime.png",
        "summary.md",
    ]
    paths = write_report([], tmp_path, "T")
    assert [p.name for p in paths] == ["results.csv", "summary.md"]
    assert not (tmp_path / "fig1a_accuracy.png").exists()
    assert not (tmp_path / "fig1b_runtime.png").exists()
    assert (tmp_path / "summary.md").read_text().endswith("No run finished.\n")


def test_figure_1b_counts_every_private_run_once(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    frame = results_frame(
        [_row(i=i, wall_seconds=s) for i, s in enumerate((0.0, 0.5, 2.0, 40.0))]
        + [_row("rspm", wall_seconds=3.0), _row("erm_01", wall_seconds=9.0)]
    )
    drawn = []
    original = plt.Axes.hist

    def spy(self, x, *args, **kwargs):
        counts, bins, patches = original(self, x, *args, **kwargs)
        drawn.append((len(x), float(counts[-1].sum())))  # stacked: the top layer is the total
        return counts, bins, patches

    monkeypatch.setattr(plt.Axes, "hist", spy)
    path = figure_1b(frame, tmp_path / "b.png")
    assert path.stat().st_size > 0
    # two mechanisms, five runs in the bins: the non-private reference left out, the fastest
    # run (0 s, drawn at 1 ms) and the slowest inside the edges
    assert drawn == [(2, 5.0)]


# --- what a reviewer reads: no oracle, the gap, the means of Figure 1a, test accuracy ----------


def _smoke_like_rows():
    """Rows as the sweep writes them (RunResult.to_row): DP-SGD and logistic regression call no
    oracle, the exact ERM one (certified), OPDisc one with a gap of floating-point noise."""
    return [
        result_for(RunKey("dpsgd_lr", 1.0, 0)).to_row(),
        result_for(RunKey("logistic_regression", math.inf, 0), holds=False).to_row(),
        result_for(
            RunKey("erm_01", math.inf, 0),
            holds=False,
            oracle_calls=1,
            oracle_max_gap=-1.4210854715202004e-14,
            oracle_objective=51.0,
            oracle_bound=51.0,
            train_n=400,
        ).to_row(),
        result_for(RunKey("opdisc", 1.0, 0), oracle_calls=1, oracle_max_gap=1.1e-13).to_row(),
    ]


def test_a_run_without_an_oracle_call_is_no_oracle_in_results_csv_and_the_summary(tmp_path):
    rows = _smoke_like_rows()
    write_report(rows, tmp_path, "T")
    csv = pd.read_csv(tmp_path / "results.csv").set_index("mechanism")
    assert csv.loc["dpsgd_lr", "oracle_certified"] == "no oracle"
    assert csv.loc["logistic_regression", "oracle_certified"] == "no oracle"
    assert csv.loc["erm_01", "oracle_certified"] == "yes"
    assert csv.loc["erm_01", "oracle_max_gap"] == -1.4210854715202004e-14  # raw, kept
    summary = (tmp_path / "summary.md").read_text()
    assert "| logistic_regression | 0.7500 | - | no oracle | - |" in summary
    assert "| erm_01 | 0.7500 | - | yes | 0 |" in summary  # noise below zero reads 0
    frame = results_frame(rows)
    assert oracle_verdict(frame, "dpsgd_lr") == "no oracle"
    assert oracle_verdict(frame, "erm_01") == "yes"
    # a row of an earlier version: True for a run without an oracle call; shown no oracle too
    old = results_frame([_row("logistic_regression", math.inf, oracle_calls=0)])
    assert oracle_verdict(old.assign(oracle_certified=True), "logistic_regression") == "no oracle"
    assert reference_certified(results_frame(rows), "logistic_regression")  # claims no optimum


def test_the_summary_shows_the_short_gap_never_a_negative_one():
    rows = [
        _row("erm_01", math.inf, oracle_max_gap=-1.4e-14, oracle_certified=True),
        _row("logistic_regression", math.inf, oracle_max_gap=1.1368683772161603e-13),
    ]
    text = summary_text(results_frame(rows), "T")
    assert "| yes | 0 |" in text and "| yes | 1.1e-13 |" in text
    assert "e-14" not in text and "1.137e-13" not in text


def test_figure_1a_means_only_the_runs_whose_privacy_holds(tmp_path, monkeypatch):
    """One OPDisc run at epsilon 1 does not hold: its accuracy (0.1) is a red cross, not a third
    of the mean (it was: 0.5 instead of 0.7)."""
    import matplotlib.pyplot as plt

    rows = [
        _row("opdisc", 1.0, 0, train_accuracy=0.6),
        _row("opdisc", 1.0, 1, train_accuracy=0.8),
        _row("opdisc", 1.0, 2, train_accuracy=0.1, privacy_holds=False),
        _row("opdisc", 2.0, 0, train_accuracy=0.9, privacy_holds=False),  # none holds: no mean
        _row("rspm_gaussian", 1.0, 0, train_accuracy=0.7),
        _row("erm_01", math.inf, 0, train_accuracy=0.95, privacy_holds=False),
    ]
    frame = results_frame(rows)
    means, crosses, lines = {}, [], []
    errorbar, scatter, axhline = plt.Axes.errorbar, plt.Axes.scatter, plt.Axes.axhline

    def spy_errorbar(self, x, y, *args, label=None, **kwargs):
        means[label] = (list(x), list(y), list(kwargs["yerr"]))
        return errorbar(self, x, y, *args, label=label, **kwargs)

    def spy_scatter(self, x, y, *args, **kwargs):
        crosses.extend(zip(x, y))
        return scatter(self, x, y, *args, **kwargs)

    def spy_axhline(self, y=0, *args, **kwargs):
        lines.append(y)
        return axhline(self, y, *args, **kwargs)

    monkeypatch.setattr(plt.Axes, "errorbar", spy_errorbar)
    monkeypatch.setattr(plt.Axes, "scatter", spy_scatter)
    monkeypatch.setattr(plt.Axes, "axhline", spy_axhline)
    figure_1a(frame, tmp_path / "a.png")
    x, y, sd = means["opdisc"]
    assert x == [1.0] and y == pytest.approx([0.7]) and sd == pytest.approx([0.1 * math.sqrt(2)])
    assert means["rspm_gaussian"][1] == [0.7]
    assert sorted(crosses) == [(1.0, 0.1), (2.0, 0.9)]  # every run that does not hold, alone
    assert lines == [0.95]
    kept = private_means_frame(frame)
    assert sorted(kept["train_accuracy"]) == [0.6, 0.7, 0.8, 0.95]  # the reference is its line


def test_a_missing_test_accuracy_is_a_dash_with_its_reason():
    rows = [_row(i=0, test_accuracy=math.nan), _row("erm_01", math.inf, test_accuracy=math.nan)]
    text = summary_text(results_frame(rows), "T")
    assert "nan" not in text
    assert "| 0.5000 ± 0.0000 | - | yes | 1/1 |" in text and "| erm_01 | 0.5000 | - |" in text
    assert "Test accuracy -: the sweep's dataset has no test set." in text
    with_test = summary_text(results_frame([_row(i=0)]), "T")
    assert "| 0.5000 ± 0.0000 | 0.5000 ± 0.0000 | yes | 1/1 |" in with_test
    assert "Test accuracy -" not in with_test


def test_the_accuracy_ceiling_is_said_only_when_it_tells_something_and_not_as_a_linear_best():
    """0.9500 beside a certified exact ERM of 0.8725 read as a contradiction: the ceiling is
    over every labelling of the distinct rows, not over linear classifiers."""
    both = {
        "best_possible_accuracy": 0.95,
        "distinct_rows": 287,
        "distinct_rows_with_both_labels": 19,
    }
    assert best_accuracy_note(both) == (
        "training accuracy at most 0.9500 for any classifier, linear or not (19 of 287 distinct "
        "rows carry both labels; the best linear classifier's is the exact ERM's, erm_01)"
    )
    assert "best possible accuracy" not in best_accuracy_note(both)
    distinct = {
        "best_possible_accuracy": 1.0,
        "distinct_rows": 400,
        "distinct_rows_with_both_labels": 0,
    }
    note = best_accuracy_note(distinct)
    assert "1.0000" not in note and "no two equal rows carry different labels" in note
    older = {"best_possible_accuracy": 0.9, "distinct_rows": 10}  # before the count was there
    assert best_accuracy_note(older).startswith("training accuracy at most 0.9000 for any")


def test_a_synthetic_sweep_reports_its_workload_error_beside_the_real_table(tmp_path):
    rows = [
        _row(
            "fem",
            eps,
            i,
            max_marginal_error=err,
            mean_marginal_error=err / 10,
            privacy_epsilon=eps,
            privacy_delta=1e-9,
        )
        for eps, errors in ((0.3, (0.2, 0.3)), (1.0, (0.1, 0.1)))
        for i, err in enumerate(errors)
    ]
    rows.append(
        _row(
            "real_table",
            math.inf,
            0,
            privacy_holds=False,
            max_marginal_error=0.0,
            mean_marginal_error=0.0,
            test_accuracy=0.85,
            oracle_calls=0,
        )
    )
    paths = write_report(rows, tmp_path, "S")
    assert [p.name for p in paths] == [
        "results.csv",
        "fig1b_runtime.png",
        "fig_synthetic.png",
        "summary.md",
    ]
    assert "max_marginal_error" in pd.read_csv(paths[0]).columns
    text = (tmp_path / "summary.md").read_text()
    assert (
        "| fem | 0.3 | 0.3 | 1e-09 | 2 | 0.2500 ± 0.0707 | 0.02500 | 0.5000 ± 0.0000 | 2/2 |"
        in (text)
    )
    assert (
        "| real_table | - (non-private) | - | - | 1 | 0.0000 ± 0.0000 | 0.00000 | "
        "0.8500 ± 0.0000 | - |" in text
    )
    assert "| test acc (mean ± sd) | private | median s |" in text
    assert "train acc (mean ± sd)" not in text  # no classifier ran
    assert "Private-mechanism runs whose privacy does NOT hold: 0." in text
    write_report([_row(i=0)], tmp_path, "T")  # a classifier sweep in the same place
    assert not (tmp_path / "fig_synthetic.png").exists()


# --- what the tables are of, the certification, the spread, the citation (issue 39, item 11) --


def _data(**changes):
    """The data as summary.json describes it (pipeline.run.summarize), Adult's by default."""
    data = {
        "dataset": "adult",
        "train": {"n": 15682, "d": 3},
        "test": {"n": 15060, "d": 3},
        "feature_names": ["age", "workclass=Private", "hours-per-week"],
        "provenance": {"source": "UCI Adult", "label": "income", "positive": ">50K"},
    }
    return data | changes


def test_the_summary_names_its_data_label_n_d_and_features(tmp_path):
    write_report([_row(i=0)], tmp_path, "T", data=_data())
    lines = (tmp_path / "summary.md").read_text().splitlines()
    assert lines[2:6] == [
        "Data: adult (UCI Adult); label income (+1: >50K); n = 15,682 training rows, d = 3 "
        "features; 15,060 test rows.",
        "",
        "Features (3): age, workclass=Private, hours-per-week.",
        "",
    ]
    table = _data(
        dataset="table",
        test=None,
        feature_names=[f"x{j}" for j in range(FEATURES_SHOWN + 5)],
        provenance={"label": "default", "positive": "yes"},
    )
    text = summary_text(results_frame([_row(i=0)]), "T", data=table)
    assert (
        "Data: table; label default (+1: yes); n = 15,682 training rows, d = 3 features; no "
        in (text)
    )
    assert f", x{FEATURES_SHOWN - 1}, ... and 5 more (summary.json lists them all)." in text
    records = _data(provenance={"kind": "records", "label": {"attribute": "y", "positive": "1"}})
    assert "label y (+1: 1); n = 15,682 training rows, d = 3 attributes" in summary_text(
        results_frame([]), "T", data=records
    )
    synthetic = _data(dataset="synthetic", provenance={"w_star": [1.0], "label_noise": 0.1})
    assert "label the sign of a linear threshold of the features (w_star in summary.json), " in (
        summary_text(results_frame([]), "T", data=synthetic)
    )
    outcome = SimpleNamespace(headline=lambda: "**Complete**: all.", status="complete")
    first = summary_text(results_frame([]), "T", outcome=outcome, data=_data()).splitlines()
    assert first[2] == "**Complete**: all." and first[4].startswith("Data: adult")  # verdict first


def test_a_private_rows_certification_is_said_outright():
    rows = [_row("opdisc", 1.0, i, oracle_certified=i != 1, privacy_holds=i != 1) for i in range(3)]
    rows += [_row("rspm_gaussian", 1.0, i, oracle_certified=True) for i in range(2)]
    rows += [_row("dpsgd_lr", 1.0, 0, oracle_calls=0, oracle_certified=None)]
    text = summary_text(results_frame(rows), "T")
    assert "| train acc (mean ± sd) | test acc (mean ± sd) | oracle certified | private |" in text
    assert "| **NO** (1 of 3 runs) | 2/3 |" in text
    assert "| 0.5500 ± 0.0707 | 0.5000 ± 0.0000 | yes | 2/2 |" in text
    assert "| no oracle | 1/1 |" in text


def test_the_test_accuracy_says_how_it_aggregates_and_gives_its_spread():
    rows = [_row("opdisc", 1.0, i, test_accuracy=acc) for i, acc in enumerate((0.6, 0.8))]
    rows.append(_row("erm_01", math.inf, 0, test_accuracy=0.7))
    text = summary_text(results_frame(rows), "T")
    assert "| 0.5500 ± 0.0707 | 0.7000 ± 0.1414 | yes | 2/2 |" in text  # sample sd (ddof 1)
    assert "Accuracies: mean ± sample standard deviation over the row's runs" in text
    assert "one run each:" in text and "| train acc (1 run) | test acc (1 run) |" in text


def test_the_summary_and_figure_1a_cite_the_projects_own_privacy_doc(tmp_path, monkeypatch):
    """They cited "SPEC section 10", which a clone does not have; docs/privacy.md is in it and
    has the sections the summary names."""
    import matplotlib.pyplot as plt

    text = summary_text(results_frame([_row(i=0)]), "T")
    assert "SPEC" not in text and PRIVACY_DOC in text
    doc = (REPO / PRIVACY_DOC).read_text()
    for section in ("What a record shows about a guarantee", "How the proven calibrations are"):
        assert f'"{section}' in text and f"## {section}" in doc
    assert "## Epsilon proven: what a report shows" in doc
    assert "| `opdisc`, `rspm_gaussian` |" in doc and "| `dpsgd_lr` |" in doc
    seen = {}
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: seen.setdefault("fig", fig))
    figure_1a(results_frame([_row(i=0)]), tmp_path / "a.png")
    assert seen["fig"].axes[0].get_xlabel() == f"epsilon proven for the noise used ({PRIVACY_DOC})"


def test_an_uncertified_run_says_what_certifying_would_cost():
    from pipeline.tracking.report import to_certify_text

    text = to_certify_text(7200.0, 64)
    assert text.startswith("; to certify: about 2 h of CPU; on 64 CPUs about 112 s")
    assert "longer oracle.time_limit" in text
    assert to_certify_text(30.0, 1) == (
        "; to certify: about 30 s of CPU (carry on: the same command with a longer "
        "oracle.time_limit)"
    )
    assert to_certify_text(float("nan"), 4) == "" and to_certify_text(0.0, 4) == ""


@pytest.mark.parametrize(
    "seconds, cpus, said",
    [
        # the 1e+02 min: 100 min of CPU, and half of it on the sweep's 2 CPUs
        (6000.0, 2, "about 1.7 h of CPU; on 2 CPUs about 50 min"),
        (100 * 60.0, 1, "about 1.7 h of CPU ("),
        (99 * 60.0, 1, "about 1.6 h of CPU ("),
        (60 * 60.0, 4, "about 60 min of CPU; on 4 CPUs about 15 min"),
        (2.1e7, 64, "about 5,800 h of CPU; on 64 CPUs about 91 h"),
        (4.2e9, 2, "about 1,200,000 h of CPU; on 2 CPUs about 580,000 h"),
        (3.5, 2, "about 3.5 s of CPU; on 2 CPUs about 1.8 s"),
        (0.042, 1, "about 0.042 s of CPU"),
    ],
)
def test_a_price_is_written_out_never_in_scientific_notation(seconds, cpus, said):
    from pipeline.tracking.report import to_certify_text

    text = to_certify_text(seconds, cpus)
    assert text.startswith(f"; to certify: {said}"), text
    assert "e+" not in text and "e-" not in text


def test_summary_md_divides_the_price_over_the_sweeps_cpus_not_this_machines():
    frame = results_frame([_row(privacy_holds=False, oracle_cpu_seconds_to_certify=6000.0)])
    text = summary_text(frame, "Sweep t", cpus=16)  # a cluster's 16 CPUs, on a 2-core driver
    assert "about 1.7 h of CPU; on 16 CPUs about 6.2 min" in text


def test_summary_md_that_cannot_be_written_leaves_the_last_one_whole(tmp_path, monkeypatch):
    """A write that fails half-way (a full disk; here a text the encoder refuses once the file
    is open) leaves the summary.md before it, never an empty one, and no temporary file."""
    from pipeline.tracking import report

    frame = results_frame([_row()])
    report.write_summary(frame, tmp_path, "Sweep t")
    before = (tmp_path / "summary.md").read_text()
    monkeypatch.setattr(report, "summary_text", lambda *args: "# Sweep t\n\udc80 cut here")
    with pytest.raises(UnicodeEncodeError):
        report.write_summary(frame, tmp_path, "Sweep t")
    assert (tmp_path / "summary.md").read_text() == before and before.startswith("# Sweep t")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["summary.md"]


def test_a_carried_run_that_cannot_certify_within_the_limit_gets_its_price_and_what_would():
    """Issue 45, item 3: before a carried-on sweep starts, one line for each carried run whose
    price exceeds the limit on all the sweep's CPUs, the dearest first; none for the others."""
    prices = {
        "opdisc/eps=10/run=0": 5.8 * 3600,  # 20,880 CPU s
        "opdisc/eps=10/run=1": 13 * 60,  # 780 CPU s: within 900 s on 1 CPU
        "rspm_gaussian/eps=10/run=0": 1900.0,  # within 900 s on 3 CPUs, not on 2
        "rspm_gaussian/eps=10/run=1": math.nan,  # no price: no line
    }
    lines = beyond_limit_lines(prices, 900.0, 2)
    assert lines == [
        "opdisc/eps=10/run=0: about 5.8 h of CPU left to certify: it cannot certify within "
        "oracle.time_limit=900 s on 2 CPUs; oracle.time_limit=11000 would on 2 CPUs, or 24 CPUs "
        "at 900 s",
        "rspm_gaussian/eps=10/run=0: about 32 min of CPU left to certify: it cannot certify "
        "within oracle.time_limit=900 s on 2 CPUs; oracle.time_limit=950 would on 2 CPUs, or 3 "
        "CPUs at 900 s",
    ]
    # what each line says would do, does: the limit on those CPUs, the CPUs at that limit
    for key, line in zip(["opdisc/eps=10/run=0", "rspm_gaussian/eps=10/run=0"], lines):
        limit = float(line.split("oracle.time_limit=")[2].split()[0])
        cpus = int(line.split(", or ")[1].split()[0])
        assert limit * 2 >= prices[key] and cpus * 900 >= prices[key]
        assert (cpus - 1) * 900 < prices[key]
    assert len(beyond_limit_lines(prices, 900.0, 24)) == 0
    assert len(beyond_limit_lines(prices, 900.0, None)) == 2  # 1 CPU: 1900 > 900 as well
    text = summary_text(results_frame([_row(i=0)]), "T", beyond_limit=lines)
    assert "Carried on: 2 run(s) could not certify within oracle.time_limit" in text
    assert f"- {lines[0]}" in text and f"- {lines[1]}" in text
    assert "Carried on" not in summary_text(results_frame([_row(i=0)]), "T")
    assert f"- {lines[0]}" in summary_text(pd.DataFrame(), "T", beyond_limit=lines)


def test_the_summary_says_which_attempt_ended_a_carried_run_and_from_what():
    said = (
        "attempt 2 certified: kept state of attempt 1 (12 open nodes, bound 3.2); "
        "0.99 CPU s over 2 attempts"
    )
    rows = [_row(i=i, oracle_attempts=said if i == 1 else "") for i in range(3)]
    frame = results_frame(rows)
    text = summary_text(frame, "t")
    assert (
        "Carried on over attempts: 1 run(s) (the attempt that ended each, from what, and the "
        "CPU of all its attempts):\n- opdisc/eps=1.0/run=1: " + said
    ) in text
    many = results_frame([_row(i=i, oracle_attempts=said) for i in range(12)])
    assert "- ... and 2 more (results.csv, oracle_attempts)" in summary_text(many, "t")
    # a results.csv written before the column, or with no run carried on: not a word
    assert "Carried on over" not in summary_text(results_frame([_row()]), "t")
    assert "Carried on over" not in summary_text(results_frame(rows[:1]), "t")
