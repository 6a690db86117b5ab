"""The split solve with 1 and 2 Ray workers, beside the one-process solve, on one instance.

    python -m pipeline.bench.split_workers [--mechanism opdisc|rspm] [--epsilon 3] [--seed 1] \
        [--parts 8] [--workers 1 2] [--sweep-run R]

Issue 19, part 2: one large exact solve cut into parts (``oracles.split``) that run as Ray
tasks sharing the best value while they run (``pipeline.split_solve``). The instance is the
breast-cancer table of ``pipeline.bench.generic_instances`` (n = 326, d = 30) with the
mechanism's noise from numpy.random.default_rng(seed); the default is the hardest instance the
window oracle certifies at epsilon 3 (OPDisc seed 1). It is solved in this process with one
part (the window oracle as the sweep runs it), then cut into ``--parts`` parts on a local Ray
started with ``num_cpus`` = each of ``--workers`` (one CPU per part task), all in one run. Per
method: certified, objective, wall seconds, the parts' own seconds summed (the CPU the parts
used: each part is single-threaded numpy), nodes, and the speed-up of wall time against the
1-worker run. Every answer must have the same exact objective.
"""

from __future__ import annotations

import argparse
import time

from oracles.registry import make_oracle
from pipeline.bench.fast_oracle import load_loadavg
from pipeline.bench.generic_instances import make_instance, sweep_instance
from pipeline.bench.machine import describe_machine, print_header
from pipeline.split_solve import ray_map_parts
from pipeline.sweep import workers_at_driver_niceness


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanism", choices=("rspm", "opdisc"), default="opdisc")
    parser.add_argument("--epsilon", type=float, default=3.0)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--parts", type=int, default=8)
    parser.add_argument(
        "--sweep-run",
        type=int,
        default=None,
        metavar="R",
        help="instead of --seed: the noise of run R of +sweep=table on breast "
        "cancer (run 3 at epsilon 3 is the hardest the sweep met)",
    )
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args(argv)

    import ray

    def solve(parts: int, map_parts=None):
        # no fallback: the search alone, so that every run does the same kind of work
        oracle = make_oracle(
            "window", time_limit=args.time_limit, fallback=None, parts=parts, map_parts=map_parts
        )
        return oracle.solve(instance.problem)

    if args.sweep_run is None:
        instance = make_instance(args.mechanism, args.epsilon, args.seed)
    else:
        instance = sweep_instance(args.mechanism, args.epsilon, args.sweep_run)
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    which = (
        instance.name
        if args.sweep_run is None
        else (
            f"{args.mechanism} eps={args.epsilon:g}, noise of +sweep=table's run {args.sweep_run}"
        )
    )
    print(
        f"instance: breast cancer, {which}, d={instance.problem.d}, "
        f"{instance.problem.n_rows} rows; parts={args.parts}"
    )
    print_header(
        [
            ("method", "<14"),
            ("status", "<11"),
            ("objective", ">14"),
            ("wall_s", ">8"),
            ("parts_s", ">8"),
            ("parts", ">6"),
            ("nodes", ">10"),
            ("speed-up", ">8"),
        ]
    )
    runs = []

    def show(method: str, solution, wall: float) -> None:
        c = solution.certificate
        runs.append((method, c, wall))
        one = next((w for m, _, w in runs if m == "ray 1 worker"), None)
        speed = f"{one / wall:.2f}" if one else ""
        print(
            f"{method:<14} {c.status.value:<11} {c.objective:>14.6f} {wall:>8.2f} "
            f"{c.extra.get('part_seconds', 0.0):>8.2f} {c.extra.get('parts', 0):>6} "
            f"{c.extra.get('nodes', 0):>10} {speed:>8}",
            flush=True,
        )

    start = time.perf_counter()
    show("one process", solve(1), time.perf_counter() - start)
    workers_at_driver_niceness()  # the parts at this process's priority, as in a sweep
    for workers in args.workers:
        ray.init(
            address="local", num_cpus=workers, include_dashboard=False, log_to_driver=False
        )  # its own Ray, never a running cluster
        try:
            start = time.perf_counter()
            solution = solve(args.parts, ray_map_parts(1))
            show(
                f"ray {workers} worker" + ("s" if workers > 1 else ""),
                solution,
                time.perf_counter() - start,
            )
        finally:
            ray.shutdown()
    values = {round(c.objective, 9) for _, c, _ in runs}
    print(f"answers agree: {'yes' if len(values) == 1 else 'NO: ' + str(sorted(values))}")
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
