"""Work donation's balance: a split solve's parts with a work pool (``oracles.window.donate``) against
the one-process search, on large trees.

    python -m bench.parts_balance [--instance midwest:opdisc:10:2 ...] [--parts 8 32 128] \
        [--cpus 16 64 256] [--chunk 10000] [--grid-seconds 5] [--out docs/results/parts_balance.md]

For each instance (``TABLE:MECHANISM:EPSILON:SEED``, ``bench.generic_instances``), one at a time,
in this process, on one thread:

1. the window oracle's plan (``oracles.window.split.plan_split``, one part: the grid search's incumbent
   and the search's tables), made once and shared by every run below;
2. the ONE-PROCESS search (``split.sequential_parts``, one part from the root): its nodes N, its
   answer and bound, its CPU seconds;
3. for each P of ``--parts``: the frontier expanded breadth first until a level holds 64 P nodes
   (``split.NODES_PER_PART``; the nodes of its levels counted), dealt into P units, and P virtual
   workers (``oracles.window.donate.VirtualParts``) stepped round-robin ``--chunk`` nodes at a time,
   donating half the unvisited nodes of their shallowest open depth whenever a worker is idle and
   the pool empty. Its figures: the answer and bound (must be the one-process ones), the parts'
   nodes (the frontier's included) over N (target <= 1.15), the largest worker's nodes over the
   mean worker's (target <= 1.3), the donations;
4. the REPLAY (``oracles.window.donate.replay_makespan``): every unit the P-worker run searched, with
   the unit it was donated from and when, scheduled on C simulated CPUs for each C of ``--cpus``
   (from the run with the most parts) and on P (each run's own): the makespan M in nodes (the
   frontier's nodes before it, on one CPU) and the speed-up N / M.

Node counts do not depend on the machine; the CPU seconds do (the machine and its load are printed
before and after). The output is printed and written to ``--out`` (after every instance, so a run
cut short keeps what finished).
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

import numpy as np

from bench.generic_instances import TABLES, make_instance, table_rows
from bench.machine import describe_machine, load_loadavg
from oracles.window.tree import Nodes, deal, expand
from oracles.budget import Budget
from oracles.window.donate import VirtualParts, replay_makespan
from oracles.window.split import NODES_PER_PART, PartTask, plan_split, sequential_parts

#: Chosen before any run on them, from the preflight survey of ``bench.tree_size --survey`` over
#: breast cancer and midwest, OPDisc and RSPM, epsilon 9 and 10, seeds 0 to 9: for each (table,
#: mechanism) the smallest preflight estimate of at least 1e8 nodes, and the three smallest of
#: those four (midwest RSPM's, 4.4e8, left out for time): estimates 1.01e8, 1.09e8, 1.42e8.
INSTANCES = ("midwest:opdisc:10:2", "breast_cancer:rspm:9:8", "breast_cancer:opdisc:10:6")
TARGET_NODES = 1.15
TARGET_LARGEST = 1.3


def instance_spec(text: str) -> tuple[str, str, float, int]:
    """``TABLE:MECHANISM:EPSILON:SEED``."""
    parts = text.split(":")
    if len(parts) != 4 or parts[0] not in TABLES or parts[1] not in ("opdisc", "rspm"):
        raise argparse.ArgumentTypeError(
            f"an instance is TABLE:MECHANISM:EPSILON:SEED with a table of {sorted(TABLES)} and "
            f"opdisc or rspm, found {text!r}"
        )
    try:
        return parts[0], parts[1], float(parts[2]), int(parts[3])
    except ValueError:
        raise argparse.ArgumentTypeError(f"EPSILON and SEED must be numbers in {text!r}") from None


def dealt(plan, parts: int) -> tuple[tuple[PartTask, ...], int]:
    """The plan's root expanded breadth first until a level holds ``NODES_PER_PART * parts``
    nodes (``branch.frontier``), dealt into ``parts`` tasks; and the nodes of the levels made."""
    t = plan.tables
    T = t.threshold(plan.incumbent)
    nodes, made = Nodes.root(t), 0
    while nodes.level < t.d and len(nodes) < NODES_PER_PART * parts:
        nodes = expand(t, nodes, T)
        made += len(nodes)
    budget = Budget(math.inf)
    groups = deal(nodes, parts)
    return tuple(PartTask(i, nodes.states[g], budget) for i, g in enumerate(groups)), made


def line(label: str, *cells: str) -> str:
    return f"{label:<34} " + " ".join(cells)


def measure(name: str, problem, parts_list, cpus_list, chunk: int, grid_seconds: float):
    """Steps 1 to 4 of the module docstring on one problem: the lines to print."""
    plan = plan_split(problem, Budget(math.inf), parts=1, search_seconds=grid_seconds)
    cpu = time.process_time()
    (one,) = sequential_parts(plan.tables, plan.tasks, plan.incumbent)
    one_cpu = time.process_time() - cpu
    if not one.finished:
        raise RuntimeError(f"{name}: the one-process search did not finish ({one.message})")
    N = one.nodes
    value = min(plan.incumbent, one.value)
    out = [
        (
            f"{name}: incumbent {plan.incumbent:.6f}, minimum {value:.6f}; one process: "
            f"{N:,} nodes in {one_cpu:.0f} CPU s ({N / max(one_cpu, 1e-9) / 1e6:.2f} M nodes/s)"
        )
    ]
    print(out[0], flush=True)
    runs = []
    for P in parts_list:
        tasks, frontier_nodes = dealt(plan, P)
        driver = VirtualParts(chunk)
        cpu = time.process_time()
        results = driver(plan.tables, tasks, plan.incumbent)
        spent = time.process_time() - cpu
        nodes = np.array([r.nodes for r in results], dtype=float)
        found = min([plan.incumbent] + [r.value for r in results])
        same = found == value and all(r.finished for r in results)
        total = nodes.sum() + frontier_nodes
        records = driver.pool.unit_records()
        largest = nodes.max() / nodes.mean() if nodes.sum() else 1.0
        own = replay_makespan(records, P) + frontier_nodes
        runs.append((P, records, frontier_nodes))
        row = line(
            f"  {P:>4} parts",
            f"nodes/one {total / N:6.3f} ({'ok' if total / N <= TARGET_NODES else 'OVER'})",
            f"largest/mean {largest:5.3f} ({'ok' if largest <= TARGET_LARGEST else 'OVER'})",
            f"answer {'same' if same else 'DIFFERENT'}",
            f"donations {driver.pool.donations:>6,} units {len(records):>6,}",
            f"frontier {frontier_nodes:>7,}",
            f"speed-up on {P} CPUs {N / own:6.1f}",
            f"CPU s {spent:5.0f}",
        )
        print(row, flush=True)
        out.append(row)
    P, records, frontier_nodes = max(runs, key=lambda r: r[0])
    for C in cpus_list:
        makespan = replay_makespan(records, C) + frontier_nodes
        row = line(
            f"  replay of the {P}-part run",
            f"on {C:>4} CPUs: makespan {makespan:>13,} nodes, speed-up {N / makespan:6.1f}"
            f" (efficiency {N / makespan / C:5.2f})",
        )
        print(row, flush=True)
        out.append(row)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.parts_balance", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--instance", action="append", type=instance_spec, default=None)
    parser.add_argument("--parts", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--cpus", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--grid-seconds", type=float, default=5.0)
    parser.add_argument("--out", default="docs/results/parts_balance.md")
    args = parser.parse_args(argv)
    if min(args.parts + args.cpus + [args.chunk]) < 1:
        parser.error("--parts, --cpus and --chunk must be >= 1")
    specs = args.instance or [instance_spec(s) for s in INSTANCES]
    head = [
        f"machine: {describe_machine()}; {load_loadavg()} at start",
        (
            f"one thread; virtual workers stepped {args.chunk:,} nodes at a time; grid search "
            f"{args.grid_seconds:g} s; targets: nodes/one <= {TARGET_NODES}, largest/mean <= "
            f"{TARGET_LARGEST}"
        ),
    ]
    print("\n".join(head), flush=True)
    lines: list[str] = []
    for table, mech, eps, seed in specs:
        problem = make_instance(mech, eps, seed, table_rows(table)).problem
        name = f"{table} {mech} eps={eps:g} seed={seed}"
        lines += measure(name, problem, args.parts, args.cpus, args.chunk, args.grid_seconds)
        write(args.out, argv, head, lines, done=False)
    tail = f"machine: {describe_machine()}; {load_loadavg()} at end"
    print(tail)
    write(args.out, argv, head, lines + [tail], done=True)
    return 0


def write(path: str, argv, head: list[str], lines: list[str], *, done: bool) -> None:
    """The results file: the command, and the output so far."""
    command = "python -m bench.parts_balance " + " ".join(argv or [])
    state = "" if done else "\n(run in progress: the instances that finished so far)\n"
    text = (
        "# Measured results: work donation's balance (bench/parts_balance.py)\n\n"
        f"```\n{command.strip()}\n```\n{state}\n```\n" + "\n".join(head + lines) + "\n```\n"
    )
    Path(path).write_text(text)


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["INSTANCES", "dealt", "instance_spec", "main", "measure"]
