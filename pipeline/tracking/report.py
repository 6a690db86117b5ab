"""The sweep's report: results table, Figure 1a and 1b (SPEC section 9), a short summary; for
synthetic tables, their workload error and downstream accuracy (docs/synthetic.md).

Written for a reviewer: summary.md says first what its tables are of (the dataset, its label,
n, d, the features); a run that called no oracle is ``no oracle``, never certified, and a
private row says outright whether its oracle answers were certified; a gap is ``gap_text``'s
short form (floating-point noise below zero is 0); each accuracy column says how it aggregates
the runs (mean ± sample sd); a test accuracy the runs do not have (no test set) is ``-`` with
the reason; a mean of Figure 1a is over the runs whose privacy holds (the others are drawn one
by one, as red crosses). What "epsilon proven" means is cited from docs/privacy.md, which ships
with the code (SPEC.md, whose section 10 holds the proofs, does not).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import pandas as pd

from mechanisms.catalog import BY_KIND, NON_PRIVATE
from mechanisms.entries import ClassifierEntry, TableEntry
from pipeline.tracking.run_record import NO_ORACLE, Certified, certified_text, gap_text

#: What summary.md shows for a test accuracy the runs do not have.
NO_TEST = "-"
#: Feature names summary.md lists; past them it counts the rest (summary.json lists them all).
FEATURES_SHOWN = 40
#: Where a reader of summary.md finds what "epsilon proven" means and how it is computed.
PRIVACY_DOC = "docs/privacy.md"


def results_frame(rows: Sequence[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(list(rows))
    if frame.empty:
        return frame
    return frame.sort_values(["mechanism", "requested_epsilon", "run_index"]).reset_index(drop=True)


def sample_sd(values: pd.Series) -> float:
    """The sample standard deviation of a group's runs; 0 for a single run."""
    return float(np.std(values, ddof=1)) if len(values) > 1 else 0.0


def aggregate(frame: pd.DataFrame) -> pd.DataFrame:
    """Per (mechanism, requested epsilon): runs, the largest (epsilon, delta) proven for them
    (SPEC 10), mean/sd accuracy, time, and how many were private."""
    frame = frame.copy()
    for name in ("privacy_epsilon", "privacy_delta"):
        if name not in frame:
            frame[name] = math.nan
    for name in ("max_marginal_error", "mean_marginal_error"):  # records of a classifier sweep
        if name not in frame:
            frame[name] = math.nan
    if "calibration" not in frame:
        frame["calibration"] = ""
    frame["calibration"] = frame["calibration"].fillna("").astype(str)
    grouped = frame.groupby(["mechanism", "requested_epsilon"], dropna=False)
    out = grouped.agg(
        runs=("train_accuracy", "size"),
        proven_epsilon=("privacy_epsilon", "max"),
        proven_delta=("privacy_delta", "max"),
        calibration=("calibration", lambda s: ",".join(sorted(set(s) - {""})) or "-"),
        train_acc_mean=("train_accuracy", "mean"),
        train_acc_sd=("train_accuracy", sample_sd),
        test_acc_mean=("test_accuracy", "mean"),
        test_acc_sd=("test_accuracy", sample_sd),
        wall_median=("wall_seconds", "median"),
        wall_max=("wall_seconds", "max"),
        private=("privacy_holds", "sum"),
        max_error_mean=("max_marginal_error", "mean"),
        max_error_sd=("max_marginal_error", sample_sd),
        mean_error_mean=("mean_marginal_error", "mean"),
    )
    return out.reset_index()


def reference_certified(frame: pd.DataFrame, name: str) -> bool:
    """Whether no oracle answer of the reference ``name`` failed to be certified optimal (true
    for a reference that called no oracle: it claims no optimum)."""
    part = frame[frame["mechanism"] == name]
    if "oracle_certified" not in part:
        return True
    return all(certified_text(v) != Certified.NO for v in part["oracle_certified"])


def oracle_verdict(frame: pd.DataFrame, name: str) -> Certified:
    """``yes``, ``no`` or ``no oracle`` for the runs of ``name`` (``no`` if any run's is)."""
    return runs_verdict(frame[frame["mechanism"] == name])


def runs_verdict(part: pd.DataFrame) -> Certified:
    """``yes``, ``no`` or ``no oracle`` for the runs ``part`` (``no`` if any run's is)."""
    called = None  # unknown in a record without oracle_calls
    if "oracle_calls" in part and len(part):
        called = int(part["oracle_calls"].max()) > 0
    if called is False:
        return NO_ORACLE
    texts = {certified_text(v) for v in part.get("oracle_certified", [])}
    if Certified.NO in texts:
        return Certified.NO
    return Certified.YES if called or Certified.YES in texts else NO_ORACLE


def certification_text(part: pd.DataFrame) -> str:
    """A private row's oracle certification, said outright: ``yes`` (every oracle answer of
    every run certified optimal), ``**NO** (k of n runs)`` (privacy does not hold for those:
    docs/privacy.md), or ``no oracle`` (a mechanism that calls none)."""
    verdict = runs_verdict(part)
    if verdict != Certified.NO:
        return str(verdict)
    not_certified = sum(certified_text(v) == Certified.NO for v in part["oracle_certified"])
    return f"**NO** ({not_certified} of {len(part)} runs)"


def label_text(provenance: dict[str, Any]) -> str:
    """The label and its positive class, as the data's provenance records them."""
    label = provenance.get("label")
    if isinstance(label, dict):  # records: the label is one of the attributes
        return f"{label.get('attribute')} (+1: {label.get('positive')})"
    if label:
        return f"{label} (+1: {provenance.get('positive')})"
    if "w_star" in provenance:  # pipeline.data.synthetic
        return (
            "the sign of a linear threshold of the features (w_star in summary.json), flipped "
            f"with probability {provenance.get('label_noise')}"
        )
    return "not recorded"


def data_lines(data: dict[str, Any] | None) -> list[str]:
    """What summary.md's tables are of: the dataset, its label, n, d and the feature names
    (``data``: as summary.json describes the data, its ``dataset``, ``train``, ``test``,
    ``feature_names`` and ``provenance``)."""
    if not data:
        return []
    train, test = data["train"], data.get("test")
    provenance = data.get("provenance") or {}
    unit = "attributes" if provenance.get("kind") == "records" else "features"
    source = provenance.get("source")
    name = (
        f"{data['dataset']} ({source})" if source and source != data["dataset"] else data["dataset"]
    )
    names = [str(n) for n in data.get("feature_names") or []]
    shown = ", ".join(names[:FEATURES_SHOWN])
    if len(names) > FEATURES_SHOWN:
        shown += f", ... and {len(names) - FEATURES_SHOWN} more (summary.json lists them all)"
    tested = f"{test['n']:,} test rows" if test else "no test set"
    return [
        f"Data: {name}; label {label_text(provenance)}; n = {train['n']:,} training rows, "
        f"d = {train['d']} {unit}; {tested}.",
        "",
        f"{unit.capitalize()} ({len(names)}): {shown}.",
        "",
    ]


def best_accuracy_note(train: dict[str, Any]) -> str:
    """The training-accuracy ceiling of a dataset summary (``Dataset.summary``): the accuracy of
    the best labelling of the distinct rows, which no classifier of any kind exceeds (equal
    rows get one label). It is not what a linear classifier can reach: that is the exact ERM's
    (``erm_01``), which may be well below, so the note says so. Said only when it tells
    something: below 1 when equal rows carry different labels; exactly 1 whenever no two
    equal rows disagree, which says nothing about the data, so then the note says why it is 1
    instead of printing 1.0000."""
    best = float(train["best_possible_accuracy"])
    both = train.get("distinct_rows_with_both_labels")
    if both is None:
        both = 1 if best < 1.0 else 0
    if int(both) == 0:
        return (
            "no two equal rows carry different labels (so no classifier's training accuracy "
            "is capped below 1 by the data)"
        )
    return (
        f"training accuracy at most {best:.4f} for any classifier, linear or not "
        f"({int(both)} of {train['distinct_rows']} distinct rows carry both labels; the best "
        f"linear classifier's is the exact ERM's, erm_01)"
    )


def accuracy_text(value: float, sd: float | None = None) -> str:
    """An accuracy in a table: 4 decimals (``mean ± sd`` given an ``sd``), or ``-`` when the runs
    have none (no test set)."""
    if not math.isfinite(value):
        return NO_TEST
    return f"{value:.4f}" if sd is None else f"{value:.4f} ± {sd:.4f}"


def private_means_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """The runs a mean of Figure 1a is taken over: a private mechanism's runs whose privacy
    holds (the others are drawn one by one), and every run of a non-private reference."""
    reference = frame["mechanism"].isin(NON_PRIVATE)
    holds = frame["privacy_holds"].map(lambda v: str(v).strip().lower() in ("true", "1", "yes"))
    return frame[reference | holds]


@dataclass(frozen=True)
class ReferenceBound:
    """What an uncertified reference proves (SPEC section 8): its solver found a feasible point
    of objective ``value`` and proved ``bound`` <= the minimum, so the minimum lies in
    [bound, value] (``gap`` = value - bound). When the objective is the count of training
    errors (the exact 0/1 ERM: ``train_accuracy`` = 1 - value / n), the optimum's training
    accuracy lies in [accuracy_low, accuracy_high] = [1 - value / n, 1 - bound / n], clipped to
    [., 1]; otherwise those are None."""

    value: float
    bound: float
    accuracy_low: float | None
    accuracy_high: float | None

    @property
    def gap(self) -> float:
        return self.value - self.bound

    def interval(self) -> str:
        """``the optimum lies in [bound, value]``, plus the accuracy interval when known."""
        low = f"{self.bound:.6g}" if math.isfinite(self.bound) else "-inf (no bound)"
        text = f"the optimum lies in [{low}, {self.value:.6g}]"
        if self.accuracy_low is not None:
            text += (
                f" (training errors); its training accuracy in "
                f"[{self.accuracy_low:.4f}, {self.accuracy_high:.4f}]"
            )
        return text


def reference_bound(frame: pd.DataFrame, name: str) -> ReferenceBound | None:
    """The bound interval of the reference ``name`` (one run, one oracle call), or None when
    its record does not carry one (several calls, or logged before the fields existed)."""
    part = frame[frame["mechanism"] == name]
    if len(part) != 1 or "oracle_objective" not in part or "oracle_bound" not in part:
        return None
    row = part.iloc[0]
    value, bound = float(row["oracle_objective"]), float(row["oracle_bound"])
    if math.isnan(value) or math.isnan(bound):
        return None
    n = float(row.get("train_n", 0) or 0)
    accuracy = float(row["train_accuracy"])
    if n > 0 and abs((1.0 - value / n) - accuracy) <= 1e-9:  # the objective counts the errors
        high = 1.0 if not math.isfinite(bound) else min(1.0, 1.0 - bound / n)
        return ReferenceBound(value, bound, accuracy, max(accuracy, high))
    return ReferenceBound(value, bound, None, None)


def reference_label(frame: pd.DataFrame, name: str) -> str:
    """A reference's legend entry: an uncertified exact ERM is only a feasible point, and its
    bound interval is what is known of the optimum."""
    if reference_certified(frame, name):
        return f"{name} (non-private)"
    gap = gap_text(frame.loc[frame["mechanism"] == name, "oracle_max_gap"].max())
    known = reference_bound(frame, name)
    if known is not None and known.accuracy_low is not None:
        return (
            f"{name} NOT certified (gap {gap}): optimum accuracy in "
            f"[{known.accuracy_low:.4f}, {known.accuracy_high:.4f}]"
        )
    return f"{name} (non-private, NOT certified: gap {gap}, not the optimum)"


def figure_1a(frame: pd.DataFrame, path: Path) -> Path:
    """Training accuracy against epsilon: mean and sd per mechanism over its runs whose privacy
    holds (``private_means_frame``), each run whose privacy does not hold as a red cross;
    references as lines."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    agg = aggregate(private_means_frame(frame))
    styles = iter([("black", "--"), ("gray", ":"), ("black", "-."), ("gray", "--")])
    for name, part in agg.groupby("mechanism"):
        if name in NON_PRIVATE:
            color, style = next(styles)
            label, width = reference_label(frame, name), 1.2
            if not reference_certified(frame, name):  # not the exact optimum: say so, in red
                known = reference_bound(frame, name)
                if known is not None and known.accuracy_low is not None:
                    # a bound, not a value: the band where the optimum's accuracy lies
                    ax.axhspan(
                        known.accuracy_low,
                        known.accuracy_high,
                        color="red",
                        alpha=0.15,
                        label=label,
                    )
                    label = f"{name} feasible point (not the optimum)"
                color, width = "red", 0.8
            ax.axhline(
                part["train_acc_mean"].iloc[0],
                color=color,
                linestyle=style,
                linewidth=width,
                label=label,
            )
            continue
        part = part.sort_values("requested_epsilon")
        # plotted at the epsilon proven for the noise used (SPEC 10), not the requested one
        x = part["proven_epsilon"].where(
            np.isfinite(part["proven_epsilon"]), part["requested_epsilon"]
        )
        paper = any(c.startswith("paper") for c in part["calibration"])
        label = (
            f"{name} (calibration {','.join(sorted(set(part['calibration'])))})" if paper else name
        )
        ax.errorbar(
            x, part["train_acc_mean"], yerr=part["train_acc_sd"], marker="o", capsize=3, label=label
        )
    uncertified = frame[
        (~frame["privacy_holds"].astype(bool)) & ~frame["mechanism"].isin(NON_PRIVATE)
    ]
    if len(uncertified):
        proven = uncertified.get("privacy_epsilon", uncertified["requested_epsilon"])
        ax.scatter(
            proven,
            uncertified["train_accuracy"],
            marker="x",
            color="red",
            zorder=5,
            label="privacy does not hold",
        )
    ax.set_xlabel(f"epsilon proven for the noise used ({PRIVACY_DOC})")
    ax.set_ylabel("training accuracy (0/1)")
    ax.set_title(
        "Figure 1a: accuracy against epsilon\n(mean ± sd over the runs whose privacy holds)",
        fontsize=11,
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure_1b(frame: pd.DataFrame, path: Path) -> Path:
    """Histogram of run times (wall seconds) per mechanism, log-scaled bins."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    private = frame[~frame["mechanism"].isin(NON_PRIVATE)]
    times = private["wall_seconds"].clip(lower=1e-3).dropna()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    if len(times):
        low, high = math.log10(times.min()), math.log10(times.max())
        # edges a hair beyond the extremes: 10**log10(t) can round above t and drop the fastest run
        bins = np.logspace(low - 1e-9, high + 1e-9 if high > low else low + 1, 25)
        # stacked, opaque bars: every colour drawn is a mechanism's, and in the legend (blended
        # translucent bars made colours that were not)
        groups = [
            (name, part["wall_seconds"].clip(lower=1e-3).dropna())
            for name, part in private.groupby("mechanism")
        ]
        groups = [(name, t) for name, t in groups if len(t)]
        colors = [f"C{i}" for i in range(len(groups))]
        ax.hist(
            [t for _, t in groups],
            bins=bins,
            stacked=True,
            color=colors,
            label=[name for name, _ in groups],
            edgecolor="white",
            linewidth=0.3,
        )
        ax.set_xscale("log")
    ax.yaxis.set_major_locator(MaxNLocator(integer=True))  # counts of runs
    ax.set_xlabel("run time (seconds, log scale)")
    ax.set_ylabel("runs")
    ax.set_title("Figure 1b: run times per mechanism")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def figure_synthetic(frame: pd.DataFrame, path: Path) -> Path:
    """Synthetic tables against epsilon: the workload's largest marginal error, and the test
    accuracy of logistic regression trained on the table, mean ± sd per mechanism over its runs
    whose privacy holds; the real training table's accuracy as a line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.5))
    agg = aggregate(private_means_frame(frame))
    for name, part in agg.groupby("mechanism"):
        if name in NON_PRIVATE:
            right.axhline(
                part["test_acc_mean"].iloc[0],
                color="black",
                linestyle="--",
                label=f"{name} (non-private)",
            )
            continue
        part = part.sort_values("requested_epsilon")
        left.errorbar(
            part["proven_epsilon"],
            part["max_error_mean"],
            yerr=part["max_error_sd"],
            marker="o",
            capsize=3,
            label=name,
        )
        right.plot(part["proven_epsilon"], part["test_acc_mean"], marker="o", label=name)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel("epsilon proven")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    left.set_ylabel("largest marginal error (fraction)")
    left.set_title("Workload error (mean ± sd over runs)", fontsize=11)
    right.set_ylabel("test accuracy")
    right.set_title("Logistic regression trained on the table", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return path


def outcome_lines(outcome, missing: Sequence[str]) -> list[str]:
    """The sweep's verdict, first: complete, or partial and why, with what is missing."""
    if outcome is None:
        return []
    lines = [outcome.headline(), ""]
    if outcome.status in ("interrupted", "incomplete"):
        lines.append(
            f"{outcome.finished} of {outcome.requested} requested runs finished; the "
            f"tables below cover those only. Rerun the same command to finish the "
            f"sweep (finished runs are kept)."
        )
        for key, why in list(outcome.failed.items())[:10]:
            lines.append(f"- failed: {key}: {why}")
        if len(outcome.failed) > 10:
            lines.append(f"- ... and {len(outcome.failed) - 10} more failed runs")
        not_run = [k for k in missing if k not in outcome.failed]
        if not_run:
            shown = ", ".join(not_run[:10]) + (" ..." if len(not_run) > 10 else "")
            lines.append(f"- not run ({len(not_run)}): {shown}")
        lines.append("")
    return lines


def summary_text(
    frame: pd.DataFrame,
    title: str,
    outcome=None,
    missing: Sequence[str] = (),
    data: dict[str, Any] | None = None,
    cpus: int | None = None,
    beyond_limit: Sequence[str] = (),
) -> str:
    """summary.md: the verdict, what the data is (``data``, ``data_lines``), the tables; an
    uncertified run's cost to certify on ``cpus`` CPUs (default: this machine's);
    ``beyond_limit``: the carried runs that could not certify within the limit when the attempt
    started (``beyond_limit_lines``)."""
    cpus = cpus if cpus is not None else os.cpu_count()
    lines = [f"# {title}", "", *outcome_lines(outcome, missing), *data_lines(data)]
    if frame.empty:
        return "\n".join(lines + ["No run finished.", *carried_lines(beyond_limit)]) + "\n"
    requested = f" of {outcome.requested} requested" if outcome is not None else ""
    lines += [f"{len(frame)}{requested} runs finished.", ""]
    for section, part in sections(frame):
        lines += section.lines(part)
    not_private = frame[
        (~frame["privacy_holds"].astype(bool)) & ~frame["mechanism"].isin(NON_PRIVATE)
    ]
    lines += ["", f"Private-mechanism runs whose privacy does NOT hold: {len(not_private)}."]
    for r in not_private.head(10).itertuples():
        cost = to_certify_text(getattr(r, "oracle_cpu_seconds_to_certify", math.nan), cpus)
        lines.append(f"- {r.key}: {r.privacy_reason}{cost}")
    lines += attempts_lines(frame)
    lines += carried_lines(beyond_limit)
    return "\n".join(lines) + "\n"


#: The most runs carried on over attempts that summary.md names (results.csv has them all).
ATTEMPTS_SHOWN = 10


def attempts_lines(frame: pd.DataFrame) -> list[str]:
    """summary.md's word on the runs carried on over attempts (``RunResult.oracle_attempts``):
    which attempt ended each, certified or not, from what (the kept state of which attempt, or
    from scratch), and the CPU of all its attempts; nothing for a results.csv without them."""
    if "oracle_attempts" not in frame:
        return []
    said = [
        (r.key, r.oracle_attempts)
        for r in frame.itertuples()
        if isinstance(r.oracle_attempts, str) and r.oracle_attempts
    ]
    if not said:
        return []
    head = (
        f"Carried on over attempts: {len(said)} run(s) (the attempt that ended each, from what, "
        "and the CPU of all its attempts):"
    )
    lines = ["", head, *(f"- {key}: {text}" for key, text in said[:ATTEMPTS_SHOWN])]
    if len(said) > ATTEMPTS_SHOWN:
        lines.append(f"- ... and {len(said) - ATTEMPTS_SHOWN} more (results.csv, oracle_attempts)")
    return lines


def carried_lines(beyond_limit: Sequence[str]) -> list[str]:
    """summary.md's word on the carried runs that could not certify within the limit."""
    if not beyond_limit:
        return []
    return [
        "",
        f"Carried on: {len(beyond_limit)} run(s) could not certify within oracle.time_limit "
        "when this attempt started (their price from the last attempt, and what would):",
        *(f"- {line}" for line in beyond_limit),
    ]


def to_certify_text(seconds: float, cpus: int | None) -> str:
    """ "; to certify: about X CPU-hours; on C CPUs about Y" for an uncertified run whose window
    search estimated what is left (``RunResult.oracle_cpu_seconds_to_certify``), "" when it is
    not known or nothing is left. ``cpus``: the machine's or cluster's CPUs (None: not said)."""
    if not math.isfinite(seconds) or seconds <= 0:
        return ""
    text = f"; to certify: about {_duration(seconds)} of CPU"
    if cpus is not None and cpus > 1:
        text += f"; on {cpus} CPUs about {_duration(seconds / cpus)}"
    return text + " (carry on: the same command with a longer oracle.time_limit)"


def beyond_limit_lines(prices: Mapping[str, float], limit: float, cpus: int | None) -> list[str]:
    """One line for each carried run that cannot certify within ``limit`` (``oracle.time_limit``,
    seconds) even on all the sweep's ``cpus`` (None: 1): its price (``prices``, by run key: the
    CPU seconds its last attempt estimated it still needs, ``carry_order``) and what would do:
    the limit on those CPUs, or the CPUs at that limit. A run without a known price gets no
    line. The dearest first.

    A solve's CPU seconds within its limit are at most ``limit`` times the CPUs it can hold: its
    own and, as it grows onto idle CPUs, at most the rest of the sweep's (pipeline.distributed),
    so a price above ``limit * cpus`` is not met in this attempt, whatever the order."""
    cpus = max(1, int(cpus or 1))
    lines = []
    dear = [(p, k) for k, p in prices.items() if p is not None and math.isfinite(p)]
    for price, key in sorted(dear, key=lambda pk: (-pk[0], pk[1])):
        if price <= limit * cpus:
            continue
        on = f"{cpus} CPUs" if cpus > 1 else "1 CPU"
        lines.append(
            f"{key}: about {_duration(price)} of CPU left to certify: it cannot certify within "
            f"oracle.time_limit={limit:g} s on {on}; oracle.time_limit="
            f"{_round_up(price / cpus)} would on {on}, or {math.ceil(price / limit):,} CPUs at "
            f"{limit:g} s"
        )
    return lines


def _round_up(x: float) -> str:
    """``x`` rounded up to two significant figures, as a config value (``21000``, ``950``)."""
    if x <= 10:
        return f"{math.ceil(x)}"
    scale = 10 ** (math.floor(math.log10(x)) - 1)
    return f"{math.ceil(x / scale) * scale:.0f}"


def _duration(seconds: float) -> str:
    """``4.2 s``, ``95 s``, ``17 min``, ``2 h``, ``5,800 h``: two significant figures, never
    in scientific notation (``1e+02 min`` was read as a typo)."""
    if seconds < 10:
        return f"{_two_figures(seconds)} s"
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 5400:  # up to 90 min; beyond, hours read better
        return f"{_two_figures(seconds / 60)} min"
    return f"{_two_figures(seconds / 3600)} h"


def _two_figures(x: float) -> str:
    """``x`` rounded to two significant figures, written out in full (``100``, ``1.7``,
    ``0.042``, ``12,000``)."""
    if x <= 0 or not math.isfinite(x):
        return f"{x:g}"
    rounded = float(f"{x:.2g}")
    decimals = max(0, 1 - math.floor(math.log10(rounded)))
    text = f"{rounded:,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if "." in text else text


def synthetic_lines(frame: pd.DataFrame) -> list[str]:
    """The synthetic tables' part of summary.md: per mechanism and epsilon, the workload's error
    (fractions) and the test accuracy of logistic regression trained on the table, beside the
    real training table's (the non-private reference)."""
    agg = aggregate(frame)
    lines = [
        "Synthetic tables, measured on the sweep's workload (absolute error of a cell's "
        "fraction, in [0, 1]; with sweep.workload=conjunctions the largest over every "
        "conjunction of up to workload_k literals, the mean over the workload_k-way marginals' "
        "cells) and by logistic regression trained on the table and tested on the real test "
        "set (docs/synthetic.md):",
        "",
        "| mechanism | requested epsilon | epsilon proven | delta | runs | max marginal error "
        "(mean ± sd) | mean marginal error (mean) | test acc (mean ± sd) | private | median s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in agg.itertuples():
        private = r.mechanism not in NON_PRIVATE
        eps = f"{r.requested_epsilon:g}" if private else "- (non-private)"
        proven = f"{r.proven_epsilon:.4g}" if private else "-"
        delta = f"{r.proven_delta:.3g}" if private else "-"
        lines.append(
            f"| {r.mechanism} | {eps} | {proven} | {delta} | {r.runs} | "
            f"{r.max_error_mean:.4f} ± {r.max_error_sd:.4f} | {r.mean_error_mean:.5f} | "
            f"{accuracy_text(r.test_acc_mean, r.test_acc_sd)} | "
            f"{f'{int(r.private)}/{r.runs}' if private else '-'} | {r.wall_median:.2f} |"
        )
    return lines + [""]


def classifier_lines(frame: pd.DataFrame) -> list[str]:
    """The classifiers' part of summary.md: the private mechanisms, then the references."""
    agg = aggregate(frame)
    lines = [
        f"Epsilon proven, delta: the largest (epsilon, delta) over the row's runs that the "
        f'calibrations of {PRIVACY_DOC} prove for the noise the runs used (its sections "What '
        f'a record shows about a guarantee" and "How the proven calibrations are computed"); '
        f"epsilon exceeds the requested one when a paper's calibration was used. Oracle "
        f"certified: whether every oracle answer of the row's runs was certified optimal; "
        f"privacy holds only for runs whose answers were (private: how many of the runs). "
        f"Accuracies: mean ± sample standard deviation over the row's runs (± 0 for one run).",
        "",
        "| mechanism | requested epsilon | epsilon proven | delta | calibration | runs | "
        "train acc (mean ± sd) | test acc (mean ± sd) | oracle certified | private | median s "
        "| max s |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for r in agg.itertuples():
        if r.mechanism in NON_PRIVATE:
            continue
        eps = "-" if math.isinf(r.requested_epsilon) else f"{r.requested_epsilon:g}"
        proven = "-" if not math.isfinite(r.proven_epsilon) else f"{r.proven_epsilon:.4g}"
        delta = "-" if not math.isfinite(r.proven_delta) else f"{r.proven_delta:.3g}"
        part = frame[
            (frame["mechanism"] == r.mechanism)
            & (frame["requested_epsilon"] == r.requested_epsilon)
        ]
        lines.append(
            f"| {r.mechanism} | {eps} | {proven} | {delta} | {r.calibration} | {r.runs} | "
            f"{accuracy_text(r.train_acc_mean, r.train_acc_sd)} | "
            f"{accuracy_text(r.test_acc_mean, r.test_acc_sd)} | {certification_text(part)} | "
            f"{int(r.private)}/{r.runs} | {r.wall_median:.2f} | {r.wall_max:.2f} |"
        )
    references = agg[agg["mechanism"].isin(NON_PRIVATE)]
    if len(references):
        lines += [
            "",
            "Non-private references (not private by design; no privacy column), one run each:",
            "",
            "| reference | train acc (1 run) | test acc (1 run) | oracle certified | max gap | s |",
            "| --- | --- | --- | --- | --- | --- |",
        ]
        for r in references.itertuples():
            part = frame[frame["mechanism"] == r.mechanism]
            verdict = oracle_verdict(frame, r.mechanism)
            calls = int(part["oracle_calls"].max())
            gap = gap_text(float(part["oracle_max_gap"].max()), calls)
            if verdict == Certified.NO:
                verdict = "**NO**: a feasible point, not the exact optimum"
                known = reference_bound(frame, r.mechanism)
                if known is not None:  # a bound, not a value
                    verdict += f"; gap {gap_text(known.gap)}: {known.interval()}"
            lines.append(
                f"| {r.mechanism} | {r.train_acc_mean:.4f} | {accuracy_text(r.test_acc_mean)} | "
                f"{verdict} | {gap} | {r.wall_max:.2f} |"
            )
    if not np.isfinite(frame["test_accuracy"].astype(float)).any():
        lines += ["", f"Test accuracy {NO_TEST}: the sweep's dataset has no test set."]
    elif not np.isfinite(agg["test_acc_mean"].astype(float)).all():
        lines += ["", f"Test accuracy {NO_TEST}: those runs had no test set."]
    return lines + [""]


@dataclass(frozen=True)
class Section:
    """The part of the report of one kind of catalog entry (``mechanisms.entries``): its lines
    of summary.md and its figure (``write_report``'s name for it, and how it is drawn)."""

    lines: Callable[[pd.DataFrame], list[str]]
    figure: str
    draw: Callable[[pd.DataFrame, Path], Path]


#: Each kind of entry's section, in the report's order: the classifiers', the synthetic tables'.
SECTIONS = {
    ClassifierEntry: Section(classifier_lines, "classifiers", figure_1a),
    TableEntry: Section(synthetic_lines, "synthetic", figure_synthetic),
}


def sections(frame: pd.DataFrame) -> list[tuple[Section, pd.DataFrame]]:
    """(section, its runs) of every kind of entry that has runs in ``frame``."""
    if frame.empty:
        return []
    parts = [(s, frame[frame["mechanism"].isin(BY_KIND[kind])]) for kind, s in SECTIONS.items()]
    return [(section, part) for section, part in parts if not part.empty]


def write_report(
    rows: Sequence[dict[str, Any]],
    output_dir: Path,
    title: str,
    outcome=None,
    missing: Sequence[str] = (),
    data: dict[str, Any] | None = None,
    cpus: int | None = None,
    beyond_limit: Sequence[str] = (),
) -> list[Path]:
    """results.csv, fig1a.png, fig1b.png and summary.md in ``output_dir``.

    ``outcome`` (pipeline.run.SweepOutcome) puts the verdict first in summary.md, ``data`` (as
    summary.json describes the data) says next what the tables are of; figures of an earlier,
    fuller report are removed rather than left beside a smaller results.csv. ``cpus``: the
    CPUs the sweep has (its Ray's, a cluster's when it runs on one), which an uncertified run's
    price is divided over (None: this machine's); ``beyond_limit``: ``summary_text``'s.
    """
    frame = results_frame(rows)
    output_dir.mkdir(parents=True, exist_ok=True)
    paths = [output_dir / "results.csv"]
    # requested_epsilon is the grid's target; the guarantee is privacy_epsilon (SPEC section 10)
    frame.to_csv(paths[0], index=False)
    figures = {
        "classifiers": output_dir / "fig1a_accuracy.png",
        "runtime": output_dir / "fig1b_runtime.png",
        "synthetic": output_dir / "fig_synthetic.png",
    }
    drawn = {}
    if not frame.empty:
        drawn["runtime"] = figure_1b(frame, figures["runtime"])
    for section, part in sections(frame):
        drawn[section.figure] = section.draw(part, figures[section.figure])
    for name, path in figures.items():  # an earlier, fuller report's figure is not left behind
        if name in drawn:
            paths.append(drawn[name])
        else:
            path.unlink(missing_ok=True)
    paths.append(
        write_summary(frame, output_dir, title, outcome, missing, data, cpus, beyond_limit)
    )
    return paths


def write_summary(
    frame: pd.DataFrame,
    output_dir: Path,
    title: str,
    outcome=None,
    missing: Sequence[str] = (),
    data: dict[str, Any] | None = None,
    cpus: int | None = None,
    beyond_limit: Sequence[str] = (),
) -> Path:
    """summary.md alone (``summary_text``), as the last words of a sweep a full disk stopped
    write it when the figures do not fit (pipeline.run). Written whole or not at all: into a
    temporary file, then renamed over the old one, so that a disk that fills meanwhile leaves
    the last summary.md (or none), never a cut or empty one."""
    summary = output_dir / "summary.md"
    text = summary_text(frame, title, outcome, missing, data, cpus, beyond_limit)
    write_atomically(summary, text)
    return summary


def write_atomically(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or is left as it was (its temporary file removed)."""
    tmp = path.with_name(f".{path.name}.part")
    try:
        with open(tmp, "w") as f:
            f.write(text)
            f.flush()
            os.fsync(f.fileno())
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
