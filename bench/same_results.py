"""Do two sweeps give the same results? ``results.csv`` against ``results.csv``, run by run.

    python -m bench.same_results BEFORE/results.csv AFTER/results.csv

A refactoring must not change what a sweep computes: the same seeds give the same runs with the
same releases, privacy claims and certificates. Every column is compared exactly (nan equals
nan) except those that measure time or place (``TIMING``). Exit 0 when identical, 1 with the
differing columns (and how many runs differ in each) otherwise. ``--allow-new``: a change that adds
columns (a new measurement) is compared on the columns both have.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

#: Columns that measure when, how long or where a run ran, not what it computed.
TIMING = frozenset(
    {"start_time_ms", "wall_seconds", "oracle_wall_seconds", "oracle_cpu_seconds", "node"}
)


def differences(
    before: pd.DataFrame, after: pd.DataFrame, allow_new: bool = False
) -> dict[str, int | str]:
    """{column: number of runs that differ, or why it cannot be compared}; empty: identical.

    ``allow_new``: columns only ``after`` has (a change that adds a measurement) do not count.
    """
    if sorted(before["key"]) != sorted(after["key"]):
        return {"key": "the two sweeps ran different runs"}
    before = before.sort_values("key").reset_index(drop=True)
    after = after.sort_values("key").reset_index(drop=True)
    out: dict[str, int | str] = {}
    for column in [c for c in before.columns if c not in TIMING]:
        if column not in after:
            out[column] = "missing after"
            continue
        x, y = before[column], after[column]
        same = (x == y) | (x.isna() & y.isna())
        if not same.all():
            out[column] = int((~same).sum())
    if not allow_new:
        out |= {c: "new after" for c in after.columns if c not in before and c not in TIMING}
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument(
        "--allow-new",
        action="store_true",
        help="columns only AFTER has (a change that adds a measurement) are listed, not counted",
    )
    args = parser.parse_args(argv)
    before, after = pd.read_csv(args.before), pd.read_csv(args.after)
    diff = differences(before, after, allow_new=args.allow_new)
    new = [c for c in after.columns if c not in before and c not in TIMING]
    if args.allow_new and new:
        print(f"new after, not compared: {', '.join(new)}")
    compared = [c for c in before.columns if c not in TIMING]
    print(f"{len(before)} runs, {len(compared)} columns compared (not {', '.join(sorted(TIMING))})")
    if not diff:
        print("identical")
        return 0
    for column, what in diff.items():
        print(f"differ: {column}: {what}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
