"""One synthetic table measured on a class too large to list (docs/results/synthetic.md).

    ADULT_DATA_DIR=/work/shared/data/adult python -m bench.synthetic_unlisted fem_rspm 1.0 0 --k 5

Runs one mechanism once on Adult's training records at (epsilon, delta = 1/n^2) and prints one
JSON line: the largest error over every conjunction of 1 to k literals (exact, by the
branch-and-bound search of ``ConjunctionClass.max_error``; never listed), the mean error over the
k-way marginals' cells, the proven epsilon, the game's T and records, the run's wall seconds and
peak memory, and /proc/loadavg before and after (the machine may be shared). Each mechanism
gets what it can take:

* ``fem_rspm``: RSPM over the class itself (its schedule from the budget, docs/synthetic.md 4.8;
  ``--rounds T``: T stated, 50 records a round and the perturbation 0.16 sqrt(T), the schedule
  it had before);
* ``fem``: the exponential mechanism lists its workload, so it plays on every ``--listed-k``-way
  marginal (default 3) and is measured on the class;
* ``aim``: the class's k-way marginals listed as its workload (``--aim-rounds``,
  ``--aim-max-model-size``);
* ``mwem``, ``mst``: their own queries (the workload only checks the domain).

``--workload marginals`` measures on every k-way marginal's cells instead (listed, as the
sweeps do), RSPM still selecting over every conjunction of up to k literals.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from mechanisms.synthetic.baselines import (
    AIMParams,
    MSTParams,
    MWEMParams,
    run_aim,
    run_mst,
    run_mwem,
)
from mechanisms.synthetic.domain import ConjunctionClass, Workload
from mechanisms.synthetic.evaluate import marginal_errors
from mechanisms.synthetic.fem import FEMParams, run_fem
from oracles.routing.registry import make_oracle
from pipeline.data.adult_domain import load_adult_records

MECHANISMS = ("fem_rspm", "fem", "aim", "mwem", "mst")


def loadavg() -> str:
    """The first three fields of /proc/loadavg ("" where there is none)."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def release(mechanism: str, codes, domain, cls: ConjunctionClass, epsilon, delta, rng, args):
    """The mechanism's release on ``codes`` (module docstring: what each is handed)."""
    if mechanism == "fem_rspm":
        params = FEMParams(epsilon, delta, query_player="rspm", max_literals=cls.max_literals)
        if args.rounds is not None:
            scale = params.noise_scale * args.rounds**0.5
            params = replace(params, rounds=args.rounds, samples=50, noise_scale=scale)
        return run_fem(codes, cls, params, rng, make_oracle("conjunctions_search"))
    if mechanism == "fem":
        listed = Workload.all_k_way(cls.sizes, args.listed_k)
        return run_fem(
            codes, listed, FEMParams(epsilon, delta), rng, make_oracle("conjunctions_search")
        )
    listed = Workload(cls.sizes, cls.marginals)
    if mechanism == "aim":
        params = AIMParams(epsilon, delta, args.aim_rounds, args.aim_max_model_size)
        return run_aim(codes, domain, params, rng, listed)
    if mechanism == "mwem":
        return run_mwem(codes, domain, MWEMParams(epsilon, delta), rng, listed)
    return run_mst(codes, domain, MSTParams(epsilon, delta), rng, listed)


def measure(
    mechanism: str, codes, domain, k: int, epsilon: float, seed: int, args
) -> dict[str, object]:
    """The JSON record of one run (module docstring)."""
    cls = ConjunctionClass(domain.sizes, k)
    delta = 1.0 / len(codes) ** 2
    before = loadavg()
    start = time.perf_counter()
    out = release(mechanism, codes, domain, cls, epsilon, delta, np.random.default_rng(seed), args)
    seconds = time.perf_counter() - start
    tick = time.perf_counter()
    if args.workload == "marginals":
        errors = marginal_errors(Workload.all_k_way(domain.sizes, k), codes, out.records)
        measured = {"max_error": errors.max, "mean_error": errors.mean}
    else:
        largest = cls.max_error(codes, out.records)
        measured = {
            "max_error": largest.value,
            "witness": [list(largest.conjunction), largest.sign],
            "certified": largest.certificate.certified,
            "mean_error": cls.mean_error(codes, out.records),
        }
    return {
        "mechanism": mechanism,
        "epsilon": epsilon,
        "seed": seed,
        "k": k,
        "workload": args.workload,
        "conjunctions": cls.queries,
        **measured,
        "proven_epsilon": out.privacy.epsilon,
        "privacy_holds": out.privacy.holds,
        "rounds": out.params.get("rounds"),
        "samples": out.params.get("samples"),
        "records": len(out.records),
        "seconds": seconds,
        "evaluation_seconds": time.perf_counter() - tick,
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "loadavg_before": before,
        "loadavg_after": loadavg(),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mechanism", choices=MECHANISMS)
    parser.add_argument("epsilon", type=float)
    parser.add_argument("seed", type=int)
    parser.add_argument("--k", type=int, default=5, help="the class: 1 to k literals")
    parser.add_argument("--workload", choices=("conjunctions", "marginals"), default="conjunctions")
    parser.add_argument("--rounds", type=int, default=None, help="fem_rspm: T stated")
    parser.add_argument("--listed-k", type=int, default=3, help="fem's workload: k-way marginals")
    parser.add_argument("--aim-rounds", type=int, default=20)
    parser.add_argument("--aim-max-model-size", type=float, default=5.0)
    parser.add_argument("--data", type=Path, default=os.environ.get("ADULT_DATA_DIR"))
    args = parser.parse_args(argv)
    if args.data is None:
        print("error: --data or ADULT_DATA_DIR: the Adult files' directory", file=sys.stderr)
        return 2
    records = load_adult_records(Path(args.data))
    row = measure(
        args.mechanism, records.train, records.domain, args.k, args.epsilon, args.seed, args
    )
    print(json.dumps(row), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
