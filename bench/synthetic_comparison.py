"""The synthetic-data comparison table (docs/results/synthetic.md) from sweeps' results.

    python -m pipeline +sweep=synth_adult hydra.run.dir=/abs/synth
    python -m bench.synthetic_comparison /abs/synth/results.csv [MORE/results.csv ...]

One row per (mechanism, requested epsilon) over the runs whose privacy holds (a run whose
guarantee does not hold is counted apart, never averaged in): the largest and the mean marginal
error over the sweep's workload (mean ± sd over runs), the test accuracy of logistic regression
trained on the table, the run time, and the epsilon proven. The non-private reference (the real
table) and the majority class's rate of the test set, when given, close the table. The machine
it prints is where this script ran; the times are the sweeps' own (the runs' wall seconds), so
the table is for sweeps run on that machine.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from bench.machine import describe_machine
from mechanisms.catalog import NON_PRIVATE
from pipeline.tracking.report import aggregate, private_means_frame

COLUMNS = (
    "| mechanism | epsilon | proven (max) | runs | max marginal error | mean marginal error "
    "| test accuracy | median s |"
)


def comparison(frame: pd.DataFrame) -> list[str]:
    """The markdown rows of the table (module docstring) for the runs of ``frame``: the
    report's aggregate (``pipeline.tracking.report.aggregate``) of the runs whose privacy holds."""
    lines = [COLUMNS, "| " + " | ".join(["---"] * 8) + " |"]
    kept = private_means_frame(frame)
    dropped = len(frame) - len(kept)
    agg = aggregate(kept)
    reference = agg["mechanism"].isin(NON_PRIVATE)
    for r in agg[~reference].itertuples():
        lines.append(
            f"| {r.mechanism} | {r.requested_epsilon:g} | {r.proven_epsilon:.4g} | {r.runs} | "
            f"{r.max_error_mean:.3f} ± {r.max_error_sd:.3f} | {r.mean_error_mean:.5f} | "
            f"{r.test_acc_mean:.3f} ± {r.test_acc_sd:.3f} | {r.wall_median:.1f} |"
        )
    for r in agg[reference].itertuples():
        lines.append(
            f"| {r.mechanism} (non-private) | - | - | {r.runs} | {r.max_error_mean:.3f} | "
            f"{r.mean_error_mean:.5f} | {r.test_acc_mean:.3f} | {r.wall_median:.1f} |"
        )
    if dropped:
        lines.append(f"\n{dropped} runs whose privacy does not hold are left out.")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", type=Path, nargs="+", help="a sweep's results.csv")
    parser.add_argument(
        "--majority", type=float, default=math.nan, help="the test set's majority-class rate"
    )
    args = parser.parse_args(argv)
    frame = pd.concat([pd.read_csv(path) for path in args.results], ignore_index=True)
    missing = {"max_marginal_error", "mean_marginal_error"} - set(frame.columns)
    if missing:
        print(f"error: {args.results}: no {sorted(missing)}: not a synthetic-data sweep")
        return 2
    frame = frame[frame["max_marginal_error"].notna()]
    print(f"machine: {describe_machine()}")
    print(f"sweeps: {', '.join(str(p) for p in args.results)}; {len(frame)} runs")
    print("\n".join(comparison(frame)))
    if math.isfinite(args.majority):
        print(f"\nThe majority class of the test set: accuracy {args.majority:.3f}.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
