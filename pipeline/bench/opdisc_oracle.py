"""Benchmark the OPDisc oracle on the Adult instance.

    python -m pipeline.bench.opdisc_oracle --epsilons 1.0 --seeds 0 1 2 --backends highs \
        --time-limit 600 [--subsample 4000] [--threads 1]

For each (epsilon, seed, backend) it draws OPDisc's eta (SPEC section 3, delta = 1/n^2) from
numpy.random.default_rng(seed), solves argmin L(D, w) - <eta, pi(w)> over W_tau, and prints one
row per solve: backend, status, objective, bound, gap, seconds, training accuracy. A summary
and the machine it ran on follow. ``--subsample N`` takes a balanced subsample of N rows
(seeded by --subsample-seed) to measure how the solve time grows with n.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time

import numpy as np

from mechanisms.opdisc import OPDisc, OPDiscParams
from oracles.objective import MergedRows
from pipeline.bench.machine import describe_machine


def balanced_subsample(X, y, n: int, seed: int):
    rng = np.random.default_rng(seed)
    pos, neg = np.flatnonzero(y == 1), np.flatnonzero(y == -1)
    half = n // 2
    if half > min(len(pos), len(neg)):
        raise SystemExit(f"--subsample {n} is larger than the balanced data allows")
    keep = np.sort(np.concatenate([rng.choice(pos, half, replace=False),
                                   rng.choice(neg, n - half, replace=False)]))  # fmt: skip
    return X[keep], y[keep]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-dir", default=None, help="Adult directory (else $ADULT_DATA_DIR)")
    parser.add_argument("--epsilons", type=float, nargs="+", default=[1.0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--backends", nargs="+", default=["highs"],
                        help="oracle names: highs, gurobi, auto, ...")
    parser.add_argument("--time-limit", type=float, default=600.0)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--subsample", type=int, default=None)
    parser.add_argument("--subsample-seed", type=int, default=0)
    args = parser.parse_args(argv)

    from oracles.registry import make_oracle
    from pipeline.data.adult import load_adult

    train = load_adult(args.data_dir).train
    X, y = train.features, train.labels
    if args.subsample:
        X, y = balanced_subsample(X, y, args.subsample, args.subsample_seed)
    rows = MergedRows.from_xy(X, y)
    n = rows.n
    print(f"machine: {describe_machine()}")
    print(f"instance: Adult train, n={n}, distinct rows={rows.n_distinct}, d={rows.d}, "
          f"delta=1/n^2, time limit {args.time_limit:g}s, threads {args.threads}")
    header = (f"{'backend':<10} {'eps':>5} {'seed':>4} {'status':<12} {'objective':>12} "
              f"{'bound':>12} {'gap':>10} {'seconds':>8} {'train_acc':>9} fallback")
    print(header)
    print("-" * len(header))
    results = []
    for backend in args.backends:
        oracle = make_oracle(backend, time_limit=args.time_limit, threads=args.threads)
        for eps in args.epsilons:
            mech = OPDisc(OPDiscParams(eps, 1.0 / n**2))
            for seed in args.seeds:
                noise = mech.draw_noise(np.random.default_rng(seed), n, rows.d)
                (problem,) = mech.problems(rows, noise)
                start = time.perf_counter()
                solution = oracle.solve(problem)
                seconds = time.perf_counter() - start
                c = solution.certificate
                acc = 1.0 - rows.loss(solution.w) / n
                results.append((backend, c.certified, seconds))
                print(f"{backend:<10} {eps:>5g} {seed:>4} {c.status.value:<12} "
                      f"{c.objective:>12.4f} {c.bound:>12.4f} {c.gap:>10.4g} {seconds:>8.1f} "
                      f"{acc:>9.4f} {c.fallback or ''}", flush=True)
    print()
    for backend in args.backends:
        times = [s for b, _, s in results if b == backend]
        certified = sum(ok for b, ok, _ in results if b == backend)
        print(f"summary {backend}: {certified}/{len(times)} certified optimal; seconds median "
              f"{statistics.median(times):.1f}, max {max(times):.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
