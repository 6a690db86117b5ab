"""Work donation's balance: one search's workers on one pool (``oracles.window.engine``) against
the one-process search and against a fixed split, on large trees.

    python -m bench.parts_balance [--instance midwest:opdisc:10:2 ...] [--parts 8 32 128] \
        [--cpus 16 64 256] [--chunk 10000] [--threads 2,4,8] [--thread-chunk 50000] \
        [--grid-seconds 5] [--out docs/results/parts_balance.md]

For each instance (``TABLE:MECHANISM:EPSILON:SEED``, ``bench.generic_instances``), one at a time:

1. the window oracle's plan (``oracles.window.plan.plan``: the grid search's incumbent, the
   search's tables, the root as its first unit), made once and shared by every run below;
2. the ONE-PROCESS search (``engine.InProcess(1)``, one worker from the root): its nodes N, its
   answer and bound, its CPU seconds;
3. for each P of ``--parts``:
   - the FIXED SPLIT (the deal the engine replaced, built here as a baseline): the frontier
     expanded breadth first until a level holds 64 P nodes (``NODES_PER_PART``; the nodes of
     its levels counted), dealt round-robin by bound into P parts (``deal``), each part
     searched by its own one-worker search below the best the parts before it found (as the
     old ``sequential_parts``). Its figures: the parts' nodes (the frontier's included) over N,
     the largest part's nodes over the mean part's, its makespan in nodes (the frontier's,
     then the largest part's) and the speed-up N / makespan on P CPUs;
   - the DONATING run: P workers on one pool stepped in turn ``--chunk`` nodes at a time
     (``engine.InProcess(P, chunk)``), from the plan's root, a busy worker donating half the
     unvisited nodes of its shallowest open depth whenever a worker is idle and the pool empty.
     Its figures: the answer (must be the one-process one), the workers' nodes over N (target
     <= 1.15), the largest worker's nodes over the mean worker's (target <= 1.3), the
     donations, and the replay's speed-up on P CPUs;
4. the REPLAY (``oracles.window.pool.replay_makespan``): every unit the donating run with the
   most workers searched, with the unit it was donated from and when, scheduled on C simulated
   CPUs for each C of ``--cpus``: the makespan M in nodes and the speed-up N / M;
5. with ``--threads 2,4,8``: for each n, the fixed split into n parts (as in 3) and the search on
   n threads (``engine.Threads(n)``, what ``oracle.threads = n`` runs): the same figures, the
   workers' nodes read from each thread's result (the threads' schedule depends on the
   machine; their nodes, not their seconds, are the figures).

Node counts of the in-process runs do not depend on the machine; the CPU seconds do (the
machine and its load are printed before and after). The output is printed and written to
``--out`` (after every instance, so a run cut short keeps what finished).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from bench.generic_instances import TABLES, make_instance, table_rows
from bench.machine import describe_machine, load_loadavg
from oracles.contract.budget import Budget
from oracles.window.engine import WORKER_CHUNK, InProcess, Searched, Threads, WorkerResult
from oracles.window.plan import Plan, plan
from oracles.window.pool import replay_makespan
from oracles.window.tree import Nodes, expand

#: Chosen before any run on them, from the preflight survey of ``bench.tree_size --survey`` over
#: breast cancer and midwest, OPDisc and RSPM, epsilon 9 and 10, seeds 0 to 9: for each (table,
#: mechanism) the smallest preflight estimate of at least 1e8 nodes, and the three smallest of
#: those four (midwest RSPM's, 4.4e8, left out for time): estimates 1.01e8, 1.09e8, 1.42e8.
INSTANCES = ("midwest:opdisc:10:2", "breast_cancer:rspm:9:8", "breast_cancer:opdisc:10:6")
TARGET_NODES = 1.15
TARGET_LARGEST = 1.3
#: The fixed split's frontier: nodes a part (the old ``split.NODES_PER_PART``).
NODES_PER_PART = 64


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


def counts(text: str) -> list[int]:
    """``2,4,8``: thread counts, each >= 1."""
    try:
        values = [int(v) for v in text.split(",") if v.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"counts are N,N,... found {text!r}") from None
    if not values or min(values) < 1:
        raise argparse.ArgumentTypeError(f"counts must be >= 1, found {text!r}")
    return values


def deal(nodes: Nodes, parts: int) -> list[np.ndarray]:
    """The nodes' indices in ``parts`` groups, round-robin in order of their lower bounds (the
    fixed split's deal: each group gets a share of the most promising nodes); empty groups
    dropped."""
    ranked = np.argsort(nodes.lb, kind="stable")
    return [g for g in (ranked[i::parts] for i in range(parts)) if len(g)]


def dealt(start: Plan, parts: int) -> tuple[tuple[np.ndarray, ...], int]:
    """The plan's root expanded breadth first until a level holds ``NODES_PER_PART * parts``
    nodes, dealt into ``parts`` units (``deal``); and the nodes of the levels made."""
    t = start.tables
    T = t.threshold(start.incumbent)
    nodes, made = Nodes.root(t), 0
    if not start.units:
        return (), 0
    while nodes.level < t.d and len(nodes) < NODES_PER_PART * parts:
        nodes = expand(t, nodes, T)
        made += len(nodes)
    return tuple(nodes.states[g] for g in deal(nodes, parts)), made


def fixed_split(start: Plan, parts: int) -> tuple[list[int], float, int, float]:
    """The fixed split's parts (module docstring, step 3), each searched by its own one-worker
    search below the best found before it: each part's nodes, the least value found, the
    frontier's nodes and the CPU seconds."""
    units, frontier_nodes = dealt(start, parts)
    best, nodes = start.incumbent, []
    cpu = time.process_time()
    for states in units:
        out = InProcess(1).run(start.tables, (states,), best, Budget(math.inf))
        if not out.finished:
            raise RuntimeError(f"a part of the fixed split did not finish ({out.message})")
        best = min(best, out.value)
        nodes.append(out.nodes)
    return nodes, best, frontier_nodes, time.process_time() - cpu


def line(label: str, *cells: str) -> str:
    return f"{label:<34} " + " ".join(cells)


def verdict(value: float, target: float) -> str:
    return "ok" if value <= target else "OVER"


def fixed_row(start: Plan, P: int, N: int, value: float) -> str:
    nodes, found, frontier_nodes, spent = fixed_split(start, P)
    per = np.array(nodes, dtype=float)
    total = per.sum() + frontier_nodes
    largest = per.max() / per.mean() if per.sum() else 1.0
    makespan = frontier_nodes + (int(per.max()) if len(per) else 0)
    return line(
        f"  {P:>4} fixed parts",
        f"nodes/one {total / N:6.3f}",
        f"largest/mean {largest:5.3f}",
        f"answer {'same' if found == value else 'DIFFERENT'}",
        f"frontier {frontier_nodes:>7,}",
        f"speed-up on {P} CPUs {N / max(makespan, 1):6.1f}",
        f"CPU s {spent:5.0f}",
    )


def donating_row(
    label: str,
    results: Sequence[WorkerResult],
    out: Searched,
    start: Plan,
    value: float,
    N: int,
    spent: float,
    speedup: str,
) -> str:
    """A donating run's row: its workers' nodes (``results``) and its ``Searched`` ``out`` from
    the plan ``start``; ``value`` the one-process minimum."""
    nodes = np.array([r.nodes for r in results], dtype=float)
    found = min(start.incumbent, out.value)
    same = out.finished and found == value and not out.errors
    total = nodes.sum()
    largest = nodes.max() / nodes.mean() if total else 1.0
    return line(
        label,
        f"nodes/one {total / N:6.3f} ({verdict(total / N, TARGET_NODES)})",
        f"largest/mean {largest:5.3f} ({verdict(largest, TARGET_LARGEST)})",
        f"answer {'same' if same else 'DIFFERENT'}",
        f"donations {out.donations:>6,} units {len(out.records):>6,}",
        speedup,
        f"CPU s {spent:5.0f}",
    )


def measure(
    name: str,
    problem,
    parts_list,
    cpus_list,
    chunk: int,
    grid_seconds: float,
    threads_list: Sequence[int] = (),
    threads_chunk: int = WORKER_CHUNK,
):
    """Steps 1 to 5 of the module docstring on one problem: the lines to print."""
    start = plan(problem, Budget(math.inf), search_seconds=grid_seconds)
    t = start.tables
    cpu = time.process_time()
    one = InProcess(1).run(t, start.units, start.incumbent, Budget(math.inf))
    one_cpu = time.process_time() - cpu
    if not one.finished:
        raise RuntimeError(f"{name}: the one-process search did not finish ({one.message})")
    N = max(one.nodes, 1)
    value = min(start.incumbent, one.value)
    out = [
        (
            f"{name}: incumbent {start.incumbent:.6f}, minimum {value:.6f}; one process: "
            f"{one.nodes:,} nodes in {one_cpu:.0f} CPU s "
            f"({one.nodes / max(one_cpu, 1e-9) / 1e6:.2f} M nodes/s)"
        )
    ]
    print(out[0], flush=True)

    def emit(row: str) -> None:
        print(row, flush=True)
        out.append(row)

    widest = None
    for P in parts_list:
        emit(fixed_row(start, P, N, value))
        driver = InProcess(P, chunk)
        cpu = time.process_time()
        run = driver.run(t, start.units, start.incumbent, Budget(math.inf))
        spent = time.process_time() - cpu
        own = replay_makespan(run.records, P)
        speedup = f"speed-up on {P} CPUs {N / max(own, 1):6.1f}"
        emit(donating_row(f"  {P:>4} parts", driver.results, run, start, value, N, spent, speedup))
        if widest is None or P >= widest[0]:
            widest = (P, run.records)
    if widest is not None:
        P, records = widest
        for C in cpus_list:
            makespan = max(replay_makespan(records, C), 1)
            emit(
                line(
                    f"  replay of the {P}-part run",
                    f"on {C:>4} CPUs: makespan {makespan:>13,} nodes, speed-up {N / makespan:6.1f}"
                    f" (efficiency {N / makespan / C:5.2f})",
                )
            )
    for n in threads_list:
        emit(fixed_row(start, n, N, value))
        driver = Threads(n, threads_chunk)
        cpu = time.process_time()
        run = driver.run(t, start.units, start.incumbent, Budget(math.inf, threads=n))
        spent = time.process_time() - cpu
        per = ", ".join(f"{r.nodes:,}" for r in driver.results)
        row = donating_row(f"  {n:>4} threads", driver.results, run, start, value, N, spent, "")
        emit(f"{row} worker nodes [{per}]")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.parts_balance", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--instance", action="append", type=instance_spec, default=None)
    parser.add_argument("--parts", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--cpus", type=int, nargs="+", default=[16, 64, 256])
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument(
        "--threads", type=counts, default=[], help="N,N,...: the search on N threads too"
    )
    parser.add_argument(
        "--thread-chunk",
        type=int,
        default=WORKER_CHUNK,
        help="nodes a thread makes between two looks at the pool (default the engine's)",
    )
    parser.add_argument("--grid-seconds", type=float, default=5.0)
    parser.add_argument("--out", default="docs/results/parts_balance.md")
    argv = sys.argv[1:] if argv is None else argv  # the results file names the command run
    args = parser.parse_args(argv)
    if min(args.parts + args.cpus + [args.chunk, args.thread_chunk]) < 1:
        parser.error("--parts, --cpus, --chunk and --thread-chunk must be >= 1")
    specs = args.instance or [instance_spec(s) for s in INSTANCES]
    head = [
        f"machine: {describe_machine()}; {load_loadavg()} at start",
        (
            f"in-process workers stepped {args.chunk:,} nodes at a time; threads "
            f"{','.join(map(str, args.threads)) or 'none'} looking at the pool every "
            f"{args.thread_chunk:,} nodes; grid search {args.grid_seconds:g} s; "
            f"targets: nodes/one <= {TARGET_NODES}, largest/mean <= {TARGET_LARGEST}"
        ),
    ]
    print("\n".join(head), flush=True)
    lines: list[str] = []
    for table, mech, eps, seed in specs:
        problem = make_instance(mech, eps, seed, table_rows(table)).problem
        name = f"{table} {mech} eps={eps:g} seed={seed}"
        lines += measure(
            name,
            problem,
            args.parts,
            args.cpus,
            args.chunk,
            args.grid_seconds,
            args.threads,
            args.thread_chunk,
        )
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


__all__ = [
    "INSTANCES",
    "NODES_PER_PART",
    "counts",
    "deal",
    "dealt",
    "fixed_split",
    "instance_spec",
    "main",
    "measure",
]
