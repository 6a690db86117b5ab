"""Benchmark an oracle on the Adult instance, beside the reference formulation when asked.

    python -m pipeline.bench.fast_oracle [--mechanism opdisc|rspm] [--epsilons 0.1 0.5 1.0] \
        [--seeds 0 1 2 3 4] [--subsample N] [--reference] [--oracle structured] \
        [--time-limit S] [--threads 1]

For each (epsilon, seed) it draws the mechanism's noise from numpy.random.default_rng(seed)
(OPDisc: eta over d + 1 coordinates, SPEC section 3; Gaussian RSPM: one weight per separator
row, SPEC section 4; delta = 1/n^2), builds the one Problem and solves it with ``--oracle``
(a name of ``oracles.registry``; default the structured oracle, ``oracles.structured``) and,
with ``--reference``, with the reference formulation (``oracles.highs.HighsOracle``) on the
same Problem. ``--subsample N`` takes a balanced subsample of N training rows (seeded by
``--subsample-seed``), the sizes where the reference finishes. One row per solve: instance, n, distinct
rows, epsilon, seed, method, status, objective, bound, wall seconds and CPU seconds of this
process (the machine may be shared: CPU seconds do not count time spent waiting for a core).

When both certify, their objectives must agree to 1e-6. When they do not, the row says which
certificate is refuted: the other method's w is a feasible point with a lower exact objective.

The summary gives, per method, how many solves certified and the median and max time to a
certificate (uncertified solves count with their full time and are marked), then the ratio
reference / measured oracle on the same instances (per instance, median, and of the totals; a
reference that hit its limit gives a ratio that is only a lower bound, marked >=), and the
machine with its load average before and after the run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from dataclasses import dataclass

import numpy as np

from core.objective import DEFAULT_MARGIN, MergedRows
from mechanisms.catalog import CATALOG
from oracles.base import OBJECTIVE_TOL
from oracles.registry import make_oracle
from pipeline.bench.machine import describe_machine, print_header
from pipeline.data.adult import load_adult


@dataclass
class Run:
    eps: float
    seed: int
    method: str
    certified: bool
    status: str
    objective: float
    bound: float
    seconds: float
    cpu: float
    w: np.ndarray


def balanced_subsample(X: np.ndarray, y: np.ndarray, n: int, seed: int):
    """n rows of (X, y), half of each label (the extra one negative when n is odd), seeded."""
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == -1)
    half = n // 2
    if not 2 <= n or n - half > min(len(pos), len(neg)):
        raise ValueError(
            f"a balanced subsample of {n} rows needs 2 <= n <= {2 * min(len(pos), len(neg))}"
        )
    keep = np.sort(
        np.concatenate(
            [rng.choice(pos, half, replace=False), rng.choice(neg, n - half, replace=False)]
        )
    )
    return X[keep], y[keep]


#: The benchmarks' mechanisms: their names here and their catalog entries.
CATALOG_NAMES = {"opdisc": "opdisc", "rspm": "rspm_gaussian"}


def make_mechanism(name: str, epsilon: float, n: int):
    """The mechanism of catalog entry ``CATALOG_NAMES[name]`` with its default settings, at
    (epsilon, 1/n^2) (``mechanisms.catalog``)."""
    entry = CATALOG[CATALOG_NAMES[name]]
    settings = entry.default_settings()
    return entry.build(entry.parameters(settings, epsilon, 1.0 / n**2, DEFAULT_MARGIN))


def load_loadavg() -> str:
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:  # pragma: no cover - not on every platform
        return "load average unknown"


def solve(oracle, method: str, problem, eps: float, seed: int) -> Run:
    wall, cpu = time.perf_counter(), time.process_time()
    solution = oracle.solve(problem)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    c = solution.certificate
    return Run(
        eps,
        seed,
        method,
        c.certified,
        c.status.value,
        c.objective,
        c.bound,
        wall,
        cpu,
        np.asarray(solution.w),
    )


def agreement(problem, fast: Run, ref: Run) -> str:
    """Do the two answers agree? If not, which certificate does the other's w refute?"""
    if abs(fast.objective - ref.objective) <= OBJECTIVE_TOL:
        return "agree" if fast.certified and ref.certified else "same objective"
    lower, higher = (fast, ref) if fast.objective < ref.objective else (ref, fast)
    exact = float(problem.objective(lower.w))
    delta = higher.objective - exact
    if higher.certified and problem.domain.contains(lower.w):
        return (
            f"DISAGREE: {higher.method}'s certificate is false, {lower.method}'s w is "
            f"feasible and lower by {delta:.6g}"
        )
    return f"differ by {delta:.6g} ({higher.method} not certified)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="Adult directory (else $ADULT_DATA_DIR)")
    parser.add_argument("--mechanism", choices=("opdisc", "rspm"), default="opdisc")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[0.1, 0.5, 1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--subsample", type=int, default=None)
    parser.add_argument("--subsample-seed", type=int, default=0)
    parser.add_argument(
        "--oracle",
        default="structured",
        help="the oracle to measure (oracles.registry name; default structured)",
    )
    parser.add_argument(
        "--reference",
        action="store_true",
        help="also solve every instance with the reference (HighsOracle)",
    )
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args(argv)

    import highspy  # noqa: F401 - imported once here, so that no solve pays the import

    train = load_adult(args.data_dir).train
    X, y = train.features, train.labels
    if args.subsample:
        try:
            X, y = balanced_subsample(X, y, args.subsample, args.subsample_seed)
        except ValueError as err:
            parser.error(f"--subsample: {err}")
    rows = MergedRows.from_xy(X, y)
    n, d = rows.n, rows.d
    instance = "adult" if not args.subsample else f"adult-sub{args.subsample}s{args.subsample_seed}"
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    print(
        f"instance: {instance}, mechanism {args.mechanism}, n={n}, distinct rows="
        f"{rows.n_distinct}, d={d}, delta=1/n^2, time limit {args.time_limit:g}s, threads "
        f"{args.threads}"
    )
    try:
        measured = make_oracle(args.oracle, time_limit=args.time_limit, threads=args.threads)
    except ValueError as err:
        parser.error(f"--oracle: {err}")
    oracles = [(args.oracle, measured)]
    if args.reference:
        reference = make_oracle("highs", time_limit=args.time_limit, threads=args.threads)
        oracles.append(("reference", reference))
    print_header(
        [
            ("instance", "<18"),
            ("n", ">6"),
            ("distinct", ">8"),
            ("eps", ">5"),
            ("seed", ">4"),
            ("method", "<10"),
            ("status", "<11"),
            ("objective", ">14"),
            ("bound", ">14"),
            ("seconds", ">8"),
            ("cpu_s", ">8"),
        ],
        "check",
    )
    runs: list[Run] = []
    notes: list[str] = []
    for eps in args.epsilons:
        mech = make_mechanism(args.mechanism, eps, n)
        for seed in args.seeds:
            noise = mech.draw_noise(np.random.default_rng(seed), n, d)
            (problem,) = mech.problems(rows, noise)
            pair = []
            for method, oracle in oracles:
                run = solve(oracle, method, problem, eps, seed)
                pair.append(run)
                runs.append(run)
                check = agreement(problem, pair[0], run) if len(pair) == 2 else ""
                if check.startswith("DISAGREE"):
                    notes.append(f"eps={eps:g} seed={seed}: {check}")
                print(
                    f"{instance:<18} {n:>6} {rows.n_distinct:>8} {eps:>5g} {seed:>4} "
                    f"{method:<10} {run.status:<11} {run.objective:>14.6f} {run.bound:>14.6f} "
                    f"{run.seconds:>8.2f} {run.cpu:>8.2f}  {check}",
                    flush=True,
                )

    print()
    for method, _ in oracles:
        mine = [r for r in runs if r.method == method]
        times = [r.seconds for r in mine]
        ok = sum(r.certified for r in mine)
        flag = "" if ok == len(mine) else " (uncertified solves counted at their full time)"
        print(
            f"summary {method}: {ok}/{len(mine)} certified optimal; time to certificate "
            f"median {statistics.median(times):.2f}s, max {max(times):.2f}s; cpu median "
            f"{statistics.median(r.cpu for r in mine):.2f}s, max "
            f"{max(r.cpu for r in mine):.2f}s{flag}"
        )
    if args.reference:
        fast = [r for r in runs if r.method == args.oracle]
        ref = [r for r in runs if r.method == "reference"]
        ratios = [b.seconds / a.seconds for a, b in zip(fast, ref)]
        lower_only = any(not b.certified for b in ref)
        mark = ">=" if lower_only else ""
        per = ", ".join(f"{('' if b.certified else '>=')}{x:.1f}" for x, b in zip(ratios, ref))
        of_medians = statistics.median(r.seconds for r in ref) / statistics.median(
            r.seconds for r in fast
        )
        of_totals = sum(r.seconds for r in ref) / sum(r.seconds for r in fast)
        print(
            f"ratio reference/{args.oracle} (wall seconds, same instances, same run): median "
            f"{mark}{statistics.median(ratios):.1f}x, min {min(ratios):.1f}x, of medians "
            f"{mark}{of_medians:.1f}x, of totals {mark}{of_totals:.1f}x"
        )
        print(f"per instance: {per}")
        cpu = [b.cpu / a.cpu for a, b in zip(fast, ref)]
        print(
            f"ratio in CPU seconds of this process (insensitive to a shared machine): median "
            f"{mark}{statistics.median(cpu):.1f}x, min {min(cpu):.1f}x, of totals "
            f"{mark}{sum(r.cpu for r in ref) / sum(r.cpu for r in fast):.1f}x"
        )
        agree = sum(
            abs(a.objective - b.objective) <= OBJECTIVE_TOL
            for a, b in zip(fast, ref)
            if a.certified and b.certified
        )
        both = sum(a.certified and b.certified for a, b in zip(fast, ref))
        print(
            f"agreement: {agree}/{both} instances certified by both have the same objective (1e-6)"
        )
        for note in notes:
            print(f"  {note}")
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 0


if __name__ == "__main__":
    sys.exit(main())
