"""A window search stopped at its share of the budget: going on from its kept state against
handing the rest to the reference formulation (``oracles.routing.routes.Route.go_on``), side by
side on the same problems.

For each problem (run ``r`` of ``+sweep=table`` on a table: ``bench.generic_instances``), the
window search first runs alone to its certificate (``S`` wall seconds, at most
``--max-seconds``; a problem it does not certify there is left out, and said so). The default
route then solves it with a time limit of ``S / at`` (``--at`` 0.85: its window step, 80% of
that, stops at about 94% of the search) twice, in alternating order, each with a carry
directory of its own: once as it is (the search goes on when its price fits the rest) and once
with going on switched off (the rest to the reference formulation, as before). ``--limit L``
solves every problem at L seconds instead, without the run alone. One thread, wall-clock
limits: run it on a quiet machine; the load is printed beside every solve.

    python -m bench.go_on --table breast_cancer --epsilon 10 --mechanisms opdisc rspm \\
        --runs 0 1 2 3 4 5
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import tempfile
from contextlib import contextmanager
from typing import Iterator

from bench.generic_instances import TABLES, Instance, sweep_instance
from bench.machine import describe_machine, load_loadavg
from oracles.contract.budget import Budget
from oracles.contract.stats import RouteStats
from oracles.routing import routes
from oracles.routing.registry import make_oracle
from oracles.window.oracle import WindowOracle

VARIANTS = ("go on", "hand over")
HEADER = (
    "| instance | alone: wall s | limit s | variant | certified | went on | ran | wall s | CPU s "
    "| gap | load |\n| --- | ---: | ---: | --- | --- | --- | --- | ---: | ---: | ---: | --- |"
)


@dataclasses.dataclass(frozen=True)
class Row:
    instance: str
    alone_seconds: float
    limit: float
    variant: str
    certified: bool
    went_on: bool
    by: str
    seconds: float
    cpu_seconds: float
    gap: float
    load: str

    def line(self) -> str:
        return (
            f"| {self.instance} | {self.alone_seconds:.1f} | {self.limit:.1f} | {self.variant} "
            f"| {'yes' if self.certified else 'no'} | {'yes' if self.went_on else 'no'} "
            f"| {self.by} | {self.seconds:.1f} | {self.cpu_seconds:.1f} | {self.gap:.3g} "
            f"| {self.load} |"
        )


@contextmanager
def going_on(on: bool) -> Iterator[None]:
    """The route's go-on as it is (``on``), or switched off: no price fits an infinite margin."""
    kept = routes.GO_ON_MARGIN
    routes.GO_ON_MARGIN = kept if on else math.inf
    try:
        yield
    finally:
        routes.GO_ON_MARGIN = kept


def alone(instance: Instance, max_seconds: float) -> float | None:
    """The window search's wall seconds to its certificate, alone, None past ``max_seconds``."""
    cert = WindowOracle().solve(instance.problem, Budget.from_limit(max_seconds, 1)).certificate
    return cert.seconds if cert.certified else None


def solve(instance: Instance, limit: float, variant: str, alone_seconds: float) -> Row:
    """``instance`` by the default route on ``limit`` seconds and one thread, ``variant``."""
    with tempfile.TemporaryDirectory() as carry, going_on(variant == "go on"):
        route = make_oracle("structured", time_limit=limit, threads=1, carry=carry)
        cert = route.solve(instance.problem, route.budget()).certificate
    route_stats = cert.stat(RouteStats)
    referenced = route_stats is not None and route_stats.fallback_status is not None
    by = "window + reference" if referenced else "window"
    return Row(
        instance.name,
        alone_seconds,
        limit,
        variant,
        cert.certified,
        route_stats is not None and route_stats.went_on is not None,
        by,
        cert.seconds,
        cert.cpu_seconds,
        cert.gap,
        load_loadavg().removeprefix("load average "),
    )


def run(
    instances: list[Instance], at: float, max_seconds: float, limit: float | None = None
) -> list[Row]:
    """Every instance the search certifies alone within ``max_seconds``, by both variants in
    alternating order at ``S / at``; with a ``limit``, every instance at that limit (no run
    alone); each row printed as it ends."""
    rows: list[Row] = []
    for i, instance in enumerate(instances):
        seconds = alone(instance, max_seconds) if limit is None else math.nan
        if seconds is None:
            print(f"| {instance.name} | not certified alone within {max_seconds:g} s: left out |")
            continue
        order = VARIANTS if i % 2 == 0 else VARIANTS[::-1]
        for variant in order:
            row = solve(instance, seconds / at if limit is None else limit, variant, seconds)
            print(row.line(), flush=True)
            rows.append(row)
    return rows


def totals(rows: list[Row]) -> str:
    """Certified and CPU seconds by variant."""
    lines = []
    for variant in VARIANTS:
        mine = [r for r in rows if r.variant == variant]
        certified = sum(r.certified for r in mine)
        went = sum(r.went_on for r in mine)
        cpu = sum(r.cpu_seconds for r in mine)
        lines.append(
            f"{variant}: {certified} of {len(mine)} certified, {went} went on, {cpu:.1f} CPU s"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.go_on", description=__doc__)
    parser.add_argument("--table", default="breast_cancer", choices=sorted(TABLES))
    parser.add_argument("--epsilon", type=float, default=10.0)
    parser.add_argument("--mechanisms", nargs="+", default=["opdisc", "rspm"])
    parser.add_argument("--runs", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--at", type=float, default=0.85, help="the limit is S / at")
    parser.add_argument("--max-seconds", type=float, default=120.0)
    parser.add_argument(
        "--limit", type=float, default=None, help="one time limit for all (no run alone)"
    )
    args = parser.parse_args(argv)
    if not 0.0 < args.at <= 1.0:
        parser.error(f"--at must be in (0, 1], found {args.at}")
    if args.limit is not None and not (math.isfinite(args.limit) and args.limit > 0):
        parser.error(f"--limit must be a number of seconds > 0, found {args.limit}")
    print(describe_machine())
    print(f"table {args.table}, epsilon {args.epsilon:g}, at {args.at:g}, {load_loadavg()}")
    print(HEADER)
    instances = [
        sweep_instance(m, args.epsilon, r, args.table) for m in args.mechanisms for r in args.runs
    ]
    rows = run(instances, args.at, args.max_seconds, args.limit)
    print(totals(rows))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
