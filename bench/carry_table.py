"""Hard window solves stopped at a first limit and carried on to a total one: what certified, at
what CPU, beside each solve's estimate of its cost at the first stop.

    python -m bench.carry_table --state /abs/dir --tables breast_cancer midwest crime \
        --mechanisms opdisc rspm --epsilon 10 --runs 5 --first 300 --total 1800

Each instance is run ``r`` of ``+sweep=table`` on a table (``bench.generic_instances
.sweep_instance``: the noise the sweep draws). Its window solve (``oracles.window.WindowOracle``,
one worker, one thread, a carry directory under ``--state``) gets ``--first`` seconds; when it
stops uncertified its certificate says what certifying would still cost (``tree_nodes``,
``nodes_per_cpu_second``), and it is carried on from its kept state (``oracles.window.checkpoint``) in
attempts of at most ``--first`` seconds until it certifies or its attempts have run ``--total``
seconds in all. The row: certified or not, after how many attempts, at what total CPU and wall
seconds and nodes, and the estimate made at the first stop (the nodes it said were left, and
the CPU seconds at the rate the search had measured) beside the nodes the carried-on search
then took. (A first solve stopped before its search began, in its grid search or its tables,
estimates nothing: the next stop's estimate is taken.)

The run can be stopped and started again with the same ``--state``: finished instances are
read from ``results.jsonl`` there, and an instance that was running carries on from its kept
state (its attempts' seconds are in the state). The limits are wall seconds, so a loaded machine
gives a solve less CPU; the load average is printed beside every row. With ``--cpu`` they are
CPU seconds instead: a probe of ``PROBE_SECONDS`` measures the search's nodes per CPU second, and
each attempt after it is a node limit of that rate times the CPU seconds left to its next stop
(the first limit, then the total), so a loaded machine measures what a quiet one's wall seconds
would give.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path

from bench.generic_instances import TABLES, sweep_instance
from bench.machine import describe_machine, load_loadavg
from oracles.contract.budget import Budget
from oracles.contract.stats import CarryStats, TreeStats, WindowStats
from oracles.window.checkpoint import CarryStore
from oracles.window.oracle import WindowOracle

#: ``--cpu``: the first attempt's seconds (wall), which measure the search's rate.
PROBE_SECONDS = 20.0
#: ``--cpu``: an attempt's wall limit is this times its CPU seconds (plus a minute).
WALL_FACTOR = 4.0


@dataclass(frozen=True)
class Row:
    """One instance's solves (module docstring)."""

    table: str
    instance: str
    certified: bool
    attempts: int
    cpu_seconds: float
    seconds: float
    nodes: int
    first_certified: bool
    estimate_nodes: float
    estimate_low: float
    estimate_high: float
    estimate_cpu_seconds: float
    nodes_after_first: int
    gap: float
    load: str

    @property
    def key(self) -> str:
        return f"{self.table}/{self.instance}"


def solve_carried(
    instance, state: Path, first: float, total: float, table: str, *, cpu: bool = False
) -> Row:
    """The first solve and its carried-on attempts (module docstring); ``cpu``: the limits are
    CPU seconds (``--cpu``), else wall seconds."""
    folder = state / "carry" / table / instance.name.replace(" ", "_")
    oracle = WindowOracle(carry=str(folder))
    store = CarryStore(str(folder))
    kept = store.load(instance.problem)
    spent = (kept.cpu_seconds if cpu else kept.seconds) if kept is not None else 0.0
    estimate = _read_estimate(state, table, instance.name)
    rate = None  # nodes a CPU second, as the last attempt measured it (``cpu``)
    while True:
        goal = first if spent < first else total  # the next stop: the first limit, then the total
        left = goal - spent
        if not cpu:
            budget = Budget.from_limit(min(first, total - spent))
        elif rate is None:  # a probe of the rate (its CPU counts)
            budget = Budget.from_limit(min(PROBE_SECONDS, left))
        else:  # about ``left`` CPU seconds of nodes, whatever the load (and a wall limit too)
            budget = Budget.from_limit(WALL_FACTOR * left + 60.0).with_nodes(
                max(1, int(rate * left))
            )
        solution = oracle.solve(instance.problem, budget)
        c = solution.certificate
        carry, window = c.stat(CarryStats), c.stat(WindowStats)
        if cpu:
            before = carry.carried_cpu_seconds if carry else spent
            spent = carry.total_cpu_seconds if carry else spent + c.cpu_seconds
            rate = float(window.nodes if window else 0) / max(spent - before, 1e-9) or None
        else:
            spent = carry.total_seconds if carry else spent + c.seconds
        at_first = spent >= (0.9 * first if cpu else 0.0)  # the stop at the first limit
        if estimate is None and (c.certified or at_first):
            estimate = _estimate(c)
            _write_estimate(state, table, instance.name, estimate)
        elif estimate is not None and math.isnan(estimate["nodes"]) and not c.certified:
            # a stop before any search estimates nothing: the next stop's
            estimate = _estimate(c)
            _write_estimate(state, table, instance.name, estimate)
        if c.certified or spent >= total - 1.0:
            break
    carry = c.stat(CarryStats)
    nodes = _nodes(c)
    return Row(
        table,
        instance.name,
        c.certified,
        carry.attempts if carry else 1,
        float(carry.total_cpu_seconds if carry else c.cpu_seconds),
        float(carry.total_seconds if carry else c.seconds),
        nodes,
        bool(estimate["first_certified"]),
        estimate["nodes"],
        estimate["low"],
        estimate["high"],
        estimate["cpu_seconds"],
        nodes - int(estimate["first_nodes"]),
        float(c.gap),
        load_loadavg(),
    )


def _nodes(c) -> int:
    """The nodes every attempt made (this one's when it did not carry on; 0 without a search)."""
    carry, window = c.stat(CarryStats), c.stat(WindowStats)
    return int(carry.total_nodes if carry else window.nodes if window else 0)


def _estimate(c) -> dict:
    """What the first solve's certificate said certifying would cost (nan when it certified)."""
    tree = c.stat(TreeStats)
    rate = float(tree.nodes_per_cpu_second) if tree else math.nan
    left = float(tree.tree_nodes) if tree else math.nan
    return {
        "first_certified": bool(c.certified),
        "first_nodes": _nodes(c),
        "nodes": left,
        "low": float(tree.tree_nodes_low) if tree else math.nan,
        "high": float(tree.tree_nodes_high) if tree else math.nan,
        "cpu_seconds": left / rate if rate > 0 else math.nan,
    }


def _estimate_path(state: Path, table: str, name: str) -> Path:
    return state / "estimates" / table / f"{name.replace(' ', '_')}.json"


def _read_estimate(state: Path, table: str, name: str) -> dict | None:
    path = _estimate_path(state, table, name)
    return json.loads(path.read_text()) if path.exists() else None


def _write_estimate(state: Path, table: str, name: str, estimate: dict) -> None:
    path = _estimate_path(state, table, name)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(estimate))


def line(r: Row) -> str:
    est = "certified at once" if r.first_certified else f"{r.estimate_nodes:.2g} nodes"
    est_cpu = "" if r.first_certified else f"{r.estimate_cpu_seconds:,.0f}"
    after = "" if r.first_certified else f"{r.nodes_after_first:.2g}"
    return (
        f"| {r.table} | {r.instance} | {'yes' if r.certified else 'no'} | {r.attempts} | "
        f"{r.cpu_seconds:,.0f} | {r.seconds:,.0f} | {r.nodes:.3g} | {est} | {est_cpu} | "
        f"{after} | {r.gap:.3g} | {r.load.removeprefix('load average ')} |"
    )


HEADER = (
    "| table | instance | certified | attempts | CPU s | wall s | nodes | estimated left at "
    "first stop | its CPU s | nodes taken after it | gap | load |\n"
    "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.carry_table", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--state", type=Path, required=True, help="where states and rows are kept")
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=["breast_cancer"])
    parser.add_argument("--mechanisms", nargs="+", choices=("opdisc", "rspm"), default=["rspm"])
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first", type=float, default=300.0, help="seconds of the first solve")
    parser.add_argument("--total", type=float, default=1800.0, help="seconds in all")
    parser.add_argument(
        "--cpu",
        action="store_true",
        help="limits in CPU seconds (node limits at the search's measured rate): what a quiet "
        "machine's wall seconds give, measured on a loaded one",
    )
    args = parser.parse_args(argv)
    if not 0 < args.first <= args.total:
        parser.error(f"need 0 < --first <= --total, found {args.first} and {args.total}")
    state = args.state.resolve()
    state.mkdir(parents=True, exist_ok=True)
    results = state / "results.jsonl"
    done = {}
    if results.exists():
        for text in results.read_text().splitlines():
            row = Row(**json.loads(text))
            done[row.key] = row
    print(f"machine: {describe_machine()}; {load_loadavg()} at start")
    kind = "CPU" if args.cpu else "wall"
    print(
        f"first solve {args.first:g} {kind} s, carried on to {args.total:g} {kind} s in all; "
        f"state {state}"
    )
    print(HEADER)
    for table in args.tables:
        for mech in args.mechanisms:
            for run in range(args.runs):
                instance = sweep_instance(mech, args.epsilon, run, table)
                key = f"{table}/{instance.name}"
                if key not in done:
                    done[key] = solve_carried(
                        instance, state, args.first, args.total, table, cpu=args.cpu
                    )
                    with results.open("a") as out:
                        out.write(json.dumps(asdict(done[key])) + "\n")
                print(line(done[key]), flush=True)
    rows = list(done.values())
    certified = sum(r.certified for r in rows)
    at_once = sum(r.first_certified for r in rows)
    print()
    print(
        f"{certified} of {len(rows)} certified ({at_once} within the first {args.first:g} s); "
        f"CPU in all {sum(r.cpu_seconds for r in rows) / 3600:.2f} hours"
    )
    print(f"machine: {describe_machine()}; {load_loadavg()} at end ({time.strftime('%F %T')})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
