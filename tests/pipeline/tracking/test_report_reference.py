"""An uncertified exact ERM reference is shown as a bound interval, never as the exact ceiling
(the summary gives its gap and [bound, value]; Figure 1a, a band)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tests.pipeline.test_reliability import _row


def _erm(certified: bool, *, n=1000, value=466.0, bound=380.25):
    row = _row(
        "erm_01", math.inf, 0, 1 - value / n, holds=False, certified=certified, gap=value - bound
    )
    row.update(oracle_objective=value, oracle_bound=bound, train_n=n)
    return row


def _rows(reference):
    rows = [_row("opdisc", 1.0, i, 0.75) for i in range(3)]
    return rows + [reference]


def test_the_summary_gives_an_uncertified_reference_as_a_gap_and_an_interval(tmp_path):
    from pipeline.tracking.report import write_report

    write_report(_rows(_erm(False)), tmp_path, "t")
    summary = (tmp_path / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("| erm_01 |"))
    assert (
        "**NO**: a feasible point, not the exact optimum; gap 85.75: the optimum lies in "
        "[380.25, 466] (training errors); its training accuracy in [0.5340, 0.6198]" in line
    )


def test_a_certified_reference_is_the_exact_value(tmp_path):
    from pipeline.tracking.report import reference_label, results_frame, write_report

    rows = _rows(_erm(True, bound=466.0))
    write_report(rows, tmp_path, "t")
    summary = (tmp_path / "summary.md").read_text()
    line = next(x for x in summary.splitlines() if x.startswith("| erm_01 |"))
    assert "| yes |" in line and "gap" not in line.split("| yes |")[0]
    assert reference_label(results_frame(rows), "erm_01") == "erm_01 (non-private)"


def test_without_a_proven_bound_the_accuracy_interval_reaches_one(tmp_path):
    from pipeline.tracking.report import reference_bound, results_frame

    known = reference_bound(results_frame(_rows(_erm(False, bound=-math.inf))), "erm_01")
    assert known.accuracy_high == 1.0 and known.gap == math.inf
    assert known.interval().startswith("the optimum lies in [-inf (no bound), 466]")


def test_figure_1a_draws_an_uncertified_reference_as_a_band_not_a_ceiling(tmp_path, monkeypatch):
    import matplotlib.pyplot as plt

    from pipeline.tracking.report import figure_1a, results_frame

    seen = {}
    monkeypatch.setattr(plt.Figure, "savefig", lambda fig, *a, **k: seen.setdefault("fig", fig))
    figure_1a(results_frame(_rows(_erm(False))), tmp_path / "f.png")
    ax = seen["fig"].axes[0]
    labels = [h.get_label() for h in ax.get_legend().legend_handles]
    band = [p for p in ax.patches if "optimum accuracy in" in p.get_label()]
    assert len(band) == 1
    y0, height = band[0].get_y(), band[0].get_height()  # axhspan: y in data coordinates
    assert (y0, y0 + height) == pytest.approx((0.534, 0.61975))
    assert "erm_01 NOT certified (gap 85.75): optimum accuracy in [0.5340, 0.6198]" in labels
    assert "erm_01 feasible point (not the optimum)" in labels
    assert not any(label == "erm_01 (non-private)" for label in labels)  # never the ceiling
    line = next(x for x in ax.lines if x.get_label().startswith("erm_01 feasible"))
    assert np.allclose(line.get_ydata(), 0.534) and line.get_color() == "red"


def test_a_record_without_the_bound_fields_keeps_the_old_flag(tmp_path):
    """Children logged before the fields existed: flagged, with the gap, no interval."""
    from pipeline.tracking.report import reference_bound, reference_label, results_frame

    row = _row("erm_01", math.inf, 0, 0.534, holds=False, certified=False, gap=4564.0)
    frame = results_frame(_rows(row))
    assert reference_bound(frame, "erm_01") is None
    assert "NOT certified: gap 4564" in reference_label(frame, "erm_01")
