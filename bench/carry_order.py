"""A carried-on sweep's order: cheapest to certify first against today's launch order, on the
same runs, side by side: certified releases per CPU hour.

    python -m bench.carry_order --state /abs/dir --table breast_cancer --epsilon 10 \
        --first 60 --total 600 [--seeds 5] [--mechanisms opdisc rspm_gaussian]

1. The sweep (``+sweep=table`` on ``--table``, ``bench.generic_instances.write_table``, at
   ``--epsilon`` with ``--seeds`` runs of each of ``--mechanisms``) runs once with
   ``oracle.time_limit=--first`` into ``<state>/first``: its uncertified runs keep their window
   search's state (``<output_dir>/carry``) and their price
   (``oracle_cpu_seconds_to_certify``).
2. That directory is copied twice, byte for byte (``<state>/cheapest``, ``<state>/launch``), and
   each copy is carried on with ``oracle.time_limit=--total`` (``oracle.carry_on=true``), one
   after the other (never side by side: they would share the CPUs): ``cheapest`` as the sweep
   runs now (``pipeline.sweep.one_run.carry_order``), ``launch`` with the carried runs started in
   ``launch_order`` instead (today's order before issue 45; the driver's ``carry_order`` is
   replaced by the launch order for that run alone, nothing else changes: both grow onto idle
   CPUs by price, ``pipeline.distributed.ray_search``). The copies' MLflow stores are their own
   (``tracking.tracking_uri``); the artifacts of runs logged in step 1 stay where step 1 wrote
   them.
3. For each order, over the runs carried on: how many certified, the carry-on's wall seconds,
   its oracle CPU seconds (``oracle_cpu_seconds``: this attempt's), the machine's CPU hours
   (wall times the sweep's CPUs) and certified releases per machine CPU hour, and when each
   release certified (seconds after the carry-on started). The machine, its load before and
   after each step, and the instance are printed.

The limits are wall seconds: a loaded machine gives the solves less CPU, alike for both orders
only if the load holds; the load is printed beside each. Step 1 is not repeated when
``<state>/first/summary.md`` exists (delete the directory to start over).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd

from bench.generic_instances import TABLES, write_table
from bench.machine import describe_machine, load_loadavg
from pipeline.cli import ExitCode
from pipeline.tracking.run_record import Certified, certified_text

#: The carry-on of the launch order: the driver with ``carry_order`` replaced, nothing else.
LAUNCH_ORDER_DRIVER = (
    "import sys, pipeline.sweep.fan_out as s, pipeline.sweep.one_run as t; "
    "s.carry_order = lambda keys, prices: t.launch_order(keys); "
    "from pipeline import cli; cli.entry(sys.argv[1:])"
)


def sweep_args(args: argparse.Namespace, table: list[str], out: Path, limit: float) -> list[str]:
    """The pipeline's overrides of one step: the table, the grid, the limit, the directory."""
    mechanisms = ",".join(args.mechanisms)
    return [
        "+sweep=table",
        *table,
        f"sweep.mechanisms=[{mechanisms}]",
        f"sweep.epsilons=[{args.epsilon}]",
        f"sweep.seeds={args.seeds}",
        f"oracle.time_limit={limit}",
        f"hydra.run.dir={out}",
        f"tracking.tracking_uri=sqlite:///{out / 'mlflow.db'}",
    ]


def run_step(command: list[str], log: Path) -> float:
    """Run ``command`` (its output to ``log``); its wall seconds. Fails on an exit other than
    0 and a sweep's uncertified runs (``ExitCode.PRIVACY_NOT_HOLDING``)."""
    start = time.perf_counter()
    with open(log, "w") as f:
        done = subprocess.run(
            command, check=False, stdout=f, stderr=subprocess.STDOUT, env=os.environ.copy()
        )
    seconds = time.perf_counter() - start
    if done.returncode not in (0, ExitCode.PRIVACY_NOT_HOLDING):  # uncertified runs: expected
        raise SystemExit(f"error: {' '.join(command[:4])} ... exited {done.returncode}: see {log}")
    return seconds


def carried_keys(first: Path) -> list[str]:
    """The runs step 1 left uncertified (``oracle_certified`` False), which step 2 carries on."""
    frame = pd.read_csv(first / "results.csv")
    shown = frame["oracle_certified"].map(certified_text)
    return sorted(frame.loc[shown == Certified.NO, "key"])


def figures(out: Path, keys: list[str], wall: float, cpus: int, began_ms: float) -> dict:
    """An order's figures over the carried runs ``keys`` (module docstring, step 3)."""
    frame = pd.read_csv(out / "results.csv")
    rows = frame[frame["key"].isin(keys)]
    certified = rows[rows["oracle_certified"].map(certified_text) == Certified.YES]
    ends = (certified["start_time_ms"] - began_ms) / 1000.0 + certified["wall_seconds"]
    cpu_hours = wall * cpus / 3600.0
    return {
        "carried": len(keys),
        "certified": len(certified),
        "wall_s": round(wall, 1),
        "oracle_cpu_s": round(float(rows["oracle_cpu_seconds"].sum()), 1),
        "machine_cpu_h": round(cpu_hours, 3),
        "certified_per_cpu_h": round(len(certified) / cpu_hours, 2) if cpu_hours else float("nan"),
        "certified_at_s": sorted(round(float(t), 1) for t in ends),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.carry_order", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--state", type=Path, required=True, help="an absolute directory")
    parser.add_argument("--table", choices=sorted(TABLES), default="breast_cancer")
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--mechanisms", nargs="+", default=["opdisc", "rspm_gaussian"])
    parser.add_argument("--first", type=float, default=60.0, help="step 1's oracle.time_limit")
    parser.add_argument("--total", type=float, default=600.0, help="step 2's oracle.time_limit")
    parser.add_argument("--cpus", type=int, default=os.cpu_count() or 1, help="the sweep's CPUs")
    args = parser.parse_args(argv)
    state = args.state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    table = write_table(args.table, state / f"{args.table}.csv")
    print(describe_machine())
    print(
        f"instance: {args.table} at epsilon {args.epsilon:g}, {args.seeds} runs of "
        f"{', '.join(args.mechanisms)}; first {args.first:g} s, carried on to {args.total:g} s"
    )
    first = state / "first"
    if not (first / "summary.md").exists():
        print(f"step 1 ({load_loadavg()}) ...", flush=True)
        wall = run_step(
            [sys.executable, "-m", "pipeline", *sweep_args(args, table, first, args.first)],
            state / "first.log",
        )
        print(f"step 1: {wall:.0f} s ({load_loadavg()})")
    keys = carried_keys(first)
    print(f"carried on: {len(keys)} runs left uncertified at {args.first:g} s: {', '.join(keys)}")
    if not keys:
        print("nothing to carry on: give a harder table, a smaller --first or more --seeds")
        return 0
    results = {}
    for order, driver in (
        ("cheapest", ["-m", "pipeline"]),
        ("launch", ["-c", LAUNCH_ORDER_DRIVER]),
    ):
        out = state / order
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(first, out)
        overrides = [*sweep_args(args, table, out, args.total), "oracle.carry_on=true"]
        print(f"{order}: carrying on ({load_loadavg()}) ...", flush=True)
        began_ms = time.time() * 1000.0
        wall = run_step([sys.executable, *driver, *overrides], state / f"{order}.log")
        results[order] = figures(out, keys, wall, args.cpus, began_ms)
        print(f"{order}: {results[order]} ({load_loadavg()})", flush=True)
    a, b = results["cheapest"], results["launch"]
    ratio = a["certified_per_cpu_h"] / b["certified_per_cpu_h"] if b["certified_per_cpu_h"] else 0
    print(
        f"certified releases per machine CPU hour: cheapest first {a['certified_per_cpu_h']}, "
        f"launch order {b['certified_per_cpu_h']} (ratio {ratio:.2f}); certified "
        f"{a['certified']} and {b['certified']} of {len(keys)}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
