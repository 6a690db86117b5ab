"""Issue 19 side by side: oracles on the breast-cancer table (30 continuous columns).

    python -m pipeline.bench.generic_tables [--mechanisms opdisc rspm erm] \
        [--epsilons 1 3 10] [--seeds 0 1] [--oracles window highs gurobi] [--time-limit 120]

Instances: ``pipeline.bench.generic_instances`` (n = 326 balanced training rows, d = 30;
OPDisc on B = 5, D^2 = 30; Gaussian RSPM on {-1, 0, 1}^30; exact 0/1 ERM on OPDisc's grid;
delta = 1/n^2; noise from numpy.random.default_rng(seed)). Oracles:

* ``window``: ``oracles.window.WindowOracle`` without its fallback (what the window alone
  certifies; its bound when uncertified is the Lagrangian one);
* ``window+mip``: the same with the fallback to the reference MIP (chosen by size);
* ``highs``: the reference MILP on HiGHS as the ``highs`` oracle solves it (the unsafe presolve
  reduction off, and a second opinion: ``oracles.highs.HighsOracle``);
* ``gurobi``: the reference MILP on Gurobi (the model fits the pip licence: 717 columns).

One row per solve: certified, status, objective, bound, gap, wall seconds, and whether the
answer agrees with the other methods' on the same instance (a certified answer that another
method's feasible point beats is reported as FALSE). The machine and its load are printed
before and after: figures from a shared machine.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time


from oracles.base import OBJECTIVE_TOL
from pipeline.bench.fast_oracle import load_loadavg
from pipeline.bench.generic_instances import MECHANISMS, breast_cancer_rows, make_instance
from pipeline.bench.machine import describe_machine, print_header

ORACLES = ("window", "window+mip", "highs", "gurobi")


def make(name: str, time_limit: float, threads: int):
    from oracles.gurobi import GurobiOracle
    from oracles.highs import HighsOracle
    from oracles.window import WindowOracle

    if name == "window":
        return WindowOracle(time_limit=time_limit, threads=threads, fallback=None)
    if name == "window+mip":
        return WindowOracle(time_limit=time_limit, threads=threads, fallback="mip")
    if name == "highs":
        return HighsOracle(time_limit=time_limit, threads=threads)
    if name == "gurobi":
        return GurobiOracle(time_limit=time_limit, threads=threads)
    raise ValueError(f"unknown oracle {name!r}; known: {ORACLES}")


def check(problem, runs: list[tuple[str, object]]) -> list[str]:
    """For each run: 'ok', 'worse' (uncertified and above the best point seen), or FALSE (a
    certified objective that another method's feasible point beats)."""
    best = min(float(problem.objective(sol.w)) for _, sol in runs)
    out = []
    for _, sol in runs:
        c = sol.certificate
        above = c.objective - best > OBJECTIVE_TOL
        if c.certified and above:
            out.append("FALSE")
        elif above:
            out.append(f"+{c.objective - best:.3g}")
        else:
            out.append("best")
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0, 3.0, 10.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--oracles", nargs="+", choices=ORACLES,
                        default=["window", "highs", "gurobi"])  # fmt: skip
    parser.add_argument("--time-limit", type=float, default=120.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import highspy  # noqa: F401 - imported once, so that no solve pays the import

    rows = breast_cancer_rows()
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start (shared machine)")
    print(f"table: breast cancer, n={rows.n}, distinct rows={rows.n_distinct}, d={rows.d}, "
          f"delta=1/n^2, time limit {args.time_limit:g}s, threads {args.threads}")  # fmt: skip
    print_header([("instance", "<22"), ("oracle", "<10"), ("cert", "<4"), ("status", "<12"),
                  ("objective", ">12"), ("bound", ">12"), ("gap", ">9"), ("seconds", ">8")],
                 "check  note")  # fmt: skip
    specs = []
    for mech in args.mechanisms:
        if mech == "erm":
            specs.append(("erm", None, None))
        else:
            specs += [(mech, e, s) for e in args.epsilons for s in args.seeds]
    results: dict[str, list] = {name: [] for name in args.oracles}
    false = 0
    for mech, eps, seed in specs:
        inst = make_instance(mech, eps, seed, rows)
        runs = []
        for name in args.oracles:
            oracle = make(name, args.time_limit, args.threads)
            wall = time.perf_counter()
            sol = oracle.solve(inst.problem)
            runs.append((name, sol))
            results[name].append((sol.certificate, time.perf_counter() - wall))
        for (name, sol), verdict in zip(runs, check(inst.problem, runs)):
            c = sol.certificate
            false += verdict == "FALSE"
            note = c.extra.get("window", "")
            if "window_points" in c.extra:
                note = f"window {c.extra['window_points']} points"
            print(f"{inst.name:<22} {name:<10} {('yes' if c.certified else 'no'):<4} "
                  f"{c.status.value:<12} {c.objective:>12.3f} {c.bound:>12.3f} {c.gap:>9.3f} "
                  f"{c.seconds:>8.1f}  {verdict:<6} {note}", flush=True)  # fmt: skip
    print()
    for name, got in results.items():
        times = [t for _, t in got]
        ok = sum(c.certified for c, _ in got)
        print(f"summary {name}: {ok}/{len(got)} certified; wall seconds median "
              f"{statistics.median(times):.1f}, max {max(times):.1f} (uncertified solves at "
              f"their full time)")  # fmt: skip
    print(f"false certificates (beaten by another method's point): {false}")
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
