"""A window search stopped at a node count and carried on, against the same search run whole.

    python -m bench.carry_on --family breast_cancer:rspm:7 --seeds 0 1 2 --stops 5

For each instance (``bench.generic_instances``: a table, a mechanism, an epsilon, a noise seed):

1. the window search (``oracles.window.WindowOracle``, one worker, one thread) runs whole, on no
   deadline, and its nodes N, answer and bound are recorded;
2. the same search with a carry directory (``oracles.window.checkpoint``) runs on a node limit of N / stops,
   and again from the state each stop kept, until it certifies;
3. the row compares the two: the same answer and bound (to 1e-9), the carried-on total nodes
   over N, the attempts, and the CPU seconds of each.

The grid search's incumbent fixes the tables, so both runs get ``--grid-seconds`` of it (the
grid search stops earlier when its restarts stop improving: the same incumbent on a loaded
machine). Node counts do not depend on the machine's load; the seconds do, so the load average
is printed beside them.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass

from bench.generic_instances import Instance, make_instance, table_rows
from bench.machine import describe_machine, load_loadavg
from bench.tree_size import family
from oracles.contract.budget import Budget
from oracles.contract.stats import CarryStats, WindowStats
from oracles.window.oracle import WindowOracle


@dataclass(frozen=True)
class Carried:
    """One instance run whole and carried on (module docstring)."""

    name: str
    nodes: int
    carried_nodes: int
    attempts: int
    same_answer: bool
    same_bound: bool
    whole_cpu: float
    carried_cpu: float

    @property
    def ratio(self) -> float:
        return self.carried_nodes / self.nodes if self.nodes else 1.0


def measure(instance: Instance, *, stops: int, grid_seconds: float) -> Carried:
    """Steps 1 to 3 of the module docstring on one instance."""
    oracle = WindowOracle(search_seconds=grid_seconds)
    cpu = time.process_time()
    whole = oracle.solve(instance.problem, Budget.unlimited())
    whole_cpu = time.process_time() - cpu
    w = whole.certificate
    if not w.certified:
        raise RuntimeError(f"{instance.name}: the whole search did not certify ({w.message})")
    nodes = int(w.stat(WindowStats).nodes)
    limit = max(1, nodes // stops)
    with tempfile.TemporaryDirectory(prefix="carry-") as folder:
        carrying = WindowOracle(search_seconds=grid_seconds, carry=folder)
        cpu = time.process_time()
        while True:
            solution = carrying.solve(instance.problem, Budget.unlimited().with_nodes(limit))
            if solution.certificate.certified:
                break
        carried_cpu = time.process_time() - cpu
    c = solution.certificate
    return Carried(
        instance.name,
        nodes,
        int(c.stat(CarryStats).total_nodes),
        int(c.stat(CarryStats).attempts),
        abs(c.objective - w.objective) <= 1e-9,
        abs(c.bound - w.bound) <= 1e-9,
        whole_cpu,
        carried_cpu,
    )


def line(table: str, r: Carried) -> str:
    return (
        f"{table:<14} {r.name:<28} {r.nodes:>12,} {r.carried_nodes:>12,} {r.ratio:>8.5f} "
        f"{r.attempts:>4} {'yes' if r.same_answer else 'NO':>6} {'yes' if r.same_bound else 'NO':>5} "
        f"{r.whole_cpu:>8.1f} {r.carried_cpu:>8.1f}"
    )


HEADER = (
    f"{'table':<14} {'instance':<28} {'nodes whole':>12} {'carried on':>12} {'ratio':>8} "
    f"{'tries':>4} {'answer':>6} {'bound':>5} {'cpu whole':>8} {'cpu carry':>8}"
)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.carry_on", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--family", action="append", type=family, required=True)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--stops", type=int, default=5, help="node limit: the nodes / stops")
    parser.add_argument("--grid-seconds", type=float, default=30.0)
    args = parser.parse_args(argv)
    if args.stops < 1:
        parser.error(f"--stops must be >= 1, found {args.stops}")
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(f"one worker, one thread; stopped every 1/{args.stops} of the whole search's nodes")
    print(HEADER)
    rows = []
    for table, mech, eps in args.family:
        for seed in args.seeds:
            r = measure(
                make_instance(mech, eps, seed, table_rows(table)),
                stops=args.stops,
                grid_seconds=args.grid_seconds,
            )
            rows.append(r)
            print(line(table, r), flush=True)
    worst = max((abs(r.ratio - 1.0) for r in rows), default=0.0)
    same = sum(r.same_answer and r.same_bound for r in rows)
    print(
        f"\n{same} of {len(rows)} with the same answer and bound; carried-on nodes within "
        f"{100 * worst:.3f}% of the whole search's"
    )
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0 if same == len(rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["Carried", "line", "main", "measure"]
