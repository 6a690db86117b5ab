"""The structured oracle on the Adult sweep's own problems: this checkout's code beside another
commit's, solve by solve, in one process.

    python -m bench.adult_structured [--base a9f9241] [--mechanisms opdisc rspm_gaussian]
        [--epsilons 0.1 1.0] [--runs 15] [--override KEY=VALUE ...] [--each]

The problems are those of ``python -m pipeline +sweep=adult`` (``sweep_seed`` 0): each run's
request made as the sweep makes it (``pipeline.sweep.one_run.run_request``: its settings, its own
generator, the sweep's oracle settings) and its problem built by the mechanism's own code
(``ClassifierEntry.prepare``, as ``pipeline.sweep.preflight.shape_tree`` does), then solved by the
route's structured oracle (``Route.strategy("structured")``, on a budget of the route's time
limit and threads) and by the structured oracle of commit ``--base``, whose three modules
(``oracles/structured*.py`` at that commit) are read with ``git show`` and imported from a temporary
directory. ``--override`` adds Hydra overrides after ``+sweep=adult`` (the bench's test runs it
on the synthetic dataset).

Each problem is solved once by each code, in alternation (base first), so a changing load falls
on both. A solve's CPU is ``time.process_time`` around ``solve`` (shape read included: the
route reads it at classification, a solve once); the parts of it are the same clock around the
functions the oracle calls (wrapped in the oracle module's namespace): the shape (``decompose``,
the same data for every run of the sweep, only the noise differs), the separable and cell
bounds, building the sub-MILPs, HiGHS (``run_highs``) and the compiled search. Before timing,
one solve by each code (numba's compilation or its cache, highspy's import), reported apart, as
is HiGHS's fixed cost per call (a one-column MILP).

Checks: both codes certify every problem, with objectives within ``OBJECTIVE_EQUAL`` of each
other; the run fails (exit 1) otherwise. Released points that differ are listed with their
objectives (a tie between two minima, not an error, when the objectives agree).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import numpy as np
import scipy.sparse
from hydra import compose, initialize_config_dir

from bench.machine import describe_machine, load_loadavg
from mechanisms.catalog import CATALOG
from mechanisms.privacy import PrivacyLeakWarning
from oracles.structured import oracle as structured
from oracles.contract.budget import Budget
from oracles.mip.highs import LinearModel, run_highs
from pipeline.cli import CONFIG_DIR  # its import stores the config schemas (register)
from pipeline.config import validate
from pipeline.data import load_dataset
from pipeline.sweep.one_run import run_request, sweep_keys

#: The commit this bench compares against by default: main before the compiled search.
DEFAULT_BASE = "a9f9241"
#: The mechanisms whose problems go to the structured oracle in the Adult sweep.
MECHANISMS = ("opdisc", "rspm_gaussian")
#: Two codes' certified objectives agree when they differ by at most this.
OBJECTIVE_EQUAL = 1e-9
#: Where a module of the flat oracles/ of older commits lives now (each family in its folder):
#: an old structured oracle imports the contract and HiGHS under their old names.
FLAT_TO_FAMILY = {
    "budget": "contract.budget",
    "stats": "contract.stats",
    "solve_progress": "contract.progress",
    "highs": "mip.highs",
    "mip": "mip.formulation",
    "margin_band": "mip.margin_band",
    "structured_search": "structured.search",
}

#: The modules of the structured oracle, in import order (each imports the ones before it).
#: The modules loaded from the commit compared against, in import order: its ``base`` too, whose
#: certificates the old oracle builds (an ``extra`` dict before the typed stats of issue 44).
MODULES = ("base", "structured_shape", "structured_milp", "structured")
#: The functions each code's oracle module calls whose CPU is reported apart (when it has them).
PARTS = (
    "decompose",
    "separable_bounds",
    "cell_bounds",
    "build_subproblem",
    "solve_subproblem",
    "search_combination",
)
#: ... and, in its sub-MILP module, HiGHS itself.
HIGHS_PART = "run_highs"


@dataclass(frozen=True)
class Solved:
    """One solve by one code."""

    cpu: float
    objective: float
    certified: bool
    w: np.ndarray
    counts: dict


def counts(cert) -> dict:
    """A certificate's counts by name: its stats (``Certificate.stats_dict``), or the ``extra``
    dict of a commit from before the typed stats."""
    return dict(cert.stats_dict()) if hasattr(cert, "stats_dict") else dict(getattr(cert, "extra"))


def base_modules(commit: str, folder: Path) -> ModuleType:
    """The structured oracle module of ``commit``, its two helpers imported beside it under
    names of their own (``git show COMMIT:oracles/MODULE.py``, imports rewritten)."""
    root = Path(__file__).resolve().parent.parent
    prefix = f"base_{commit}_".replace("-", "_")
    module = None
    for name in MODULES:
        try:
            source = subprocess.run(
                ["git", "show", f"{commit}:oracles/{name}.py"],
                cwd=root,
                check=True,
                capture_output=True,
                text=True,
            ).stdout
        except (OSError, subprocess.CalledProcessError) as err:
            raise SystemExit(f"error: cannot read oracles/{name}.py of {commit!r}: {err}") from None
        for other in MODULES:
            source = source.replace(f"from oracles.{other} import", f"from {prefix}{other} import")
        for flat, family in FLAT_TO_FAMILY.items():
            source = source.replace(f"from oracles.{flat} import", f"from oracles.{family} import")
        path = folder / f"{prefix}{name}.py"
        path.write_text(source)
        spec = importlib.util.spec_from_file_location(prefix + name, path)
        module = importlib.util.module_from_spec(spec)
        sys.modules[prefix + name] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
    return module


def time_parts(module: ModuleType, parts: dict[str, float]) -> None:
    """Wrap the ``PARTS`` that ``module`` (an oracle module) calls, and HiGHS in its sub-MILP
    module, so that each adds its CPU seconds to ``parts``."""

    def timed(name, fn):
        def wrapper(*args, **kwargs):
            start = time.process_time()
            try:
                return fn(*args, **kwargs)
            finally:
                parts[name] += time.process_time() - start

        return wrapper

    milp = sys.modules[module.solve_subproblem.__module__]
    for name in PARTS:
        if hasattr(module, name):
            setattr(module, name, timed(name, getattr(module, name)))
    setattr(milp, HIGHS_PART, timed(HIGHS_PART, getattr(milp, HIGHS_PART)))


def sweep_problems(overrides, mechanisms, epsilons, runs):
    """(key, problem, the route's structured oracle, its time limit and threads) for each run
    of ``+sweep=adult`` (with ``overrides``) of ``mechanisms``, at ``epsilons`` (None: all),
    the first ``runs`` (None: all) (module docstring)."""
    with initialize_config_dir(config_dir=CONFIG_DIR, version_base=None):
        config = validate(compose(config_name="config", overrides=["+sweep=adult", *overrides]))
    train, _ = load_dataset(config.dataset)
    found = []
    for key in sweep_keys(config):
        if key.mechanism not in mechanisms:
            continue
        if epsilons is not None and not any(abs(key.epsilon - e) < 1e-12 for e in epsilons):
            continue
        if runs is not None and key.run_index >= runs:
            continue
        request = run_request(config, key, train)
        entry = CATALOG[request.settings.name]
        route = entry.oracle_of(request.settings, request.oracles)
        with warnings.catch_warnings():  # data clipped to a bound: the sweep says so itself
            warnings.simplefilter("ignore", PrivacyLeakWarning)
            problem = entry.prepare(request).problems[0]
        found.append((key, problem, route.strategy("structured"), route.time_limit, route.threads))
    return found


def solve(oracle, problem, limit: float, threads: int) -> Solved:
    start = time.process_time()
    solution = oracle.solve(problem, Budget.from_limit(limit, threads))
    cpu = time.process_time() - start
    cert = solution.certificate
    return Solved(cpu, float(cert.objective), bool(cert.certified), solution.w, counts(cert))


def highs_call_cpu(calls: int = 200) -> float:
    """CPU seconds of one HiGHS call on a one-column MILP (the fixed cost of a call)."""
    model = LinearModel(
        cost=np.array([1.0]),
        matrix=scipy.sparse.csr_array(np.ones((1, 1))),
        row_lower=np.array([0.0]),
        row_upper=np.array([1.0]),
        col_lower=np.zeros(1),
        col_upper=np.ones(1),
        integer=np.ones(1, dtype=bool),
    )
    start = time.process_time()
    for _ in range(calls):
        run_highs(model, Budget.from_limit(60.0), {"presolve": "off"})
    return (time.process_time() - start) / calls


def _median(xs):
    return statistics.median(xs) if xs else float("nan")


def report(rows, parts, base: str) -> int:
    """The tables (module docstring); returns the number of failed checks."""
    print(
        f"| mechanism | epsilon | runs | {base} CPU s | this CPU s | ratio | this median | "
        "this max | tabled | searched | HiGHS sub-MILPs (base / this) |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    cells = defaultdict(list)
    for key, old, new in rows:
        cells[(key.mechanism, key.epsilon)].append((old, new))
    for (mech, eps), pairs in cells.items():
        o = sum(p[0].cpu for p in pairs)
        n = sum(p[1].cpu for p in pairs)
        cpus = [p[1].cpu for p in pairs]
        print(
            f"| {mech} | {eps:g} | {len(pairs)} | {o:.2f} | {n:.2f} | {o / max(n, 1e-9):.1f} | "
            f"{_median(cpus):.3f} | {max(cpus):.3f} | "
            f"{sum(p[1].counts.get('tabled', 0) for p in pairs)} | "
            f"{sum(p[1].counts.get('searched', 0) for p in pairs)} | "
            f"{sum(p[0].counts.get('subproblems', 0) for p in pairs)} / "
            f"{sum(p[1].counts.get('subproblems', 0) for p in pairs)} |"
        )
    print()
    print(f"| mechanism | runs | {base} CPU s | this CPU s | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for mech in dict.fromkeys(k.mechanism for k, _, _ in rows):
        mine = [(o, n) for k, o, n in rows if k.mechanism == mech]
        o, n = sum(p[0].cpu for p in mine), sum(p[1].cpu for p in mine)
        print(f"| {mech} | {len(mine)} | {o:.2f} | {n:.2f} | {o / max(n, 1e-9):.1f} |")
    print()
    print("where the CPU goes (seconds, all solves; HiGHS is inside the sub-MILPs):")
    print(f"| part | {base} | this |")
    print("| --- | ---: | ---: |")
    totals = {
        "base": sum(o.cpu for _, o, _ in rows),
        "this": sum(n.cpu for _, _, n in rows),
    }
    for name in (*PARTS, HIGHS_PART):
        print(f"| {name} | {parts['base'][name]:.2f} | {parts['this'][name]:.2f} |")
    counted = {c: sum(parts[c][p] for p in PARTS) for c in ("base", "this")}
    print(
        f"| the rest (the search loop, tables for the sub-MILPs, certify) | "
        f"{totals['base'] - counted['base']:.2f} | {totals['this'] - counted['this']:.2f} |"
    )
    print(f"| total | {totals['base']:.2f} | {totals['this']:.2f} |")
    failed = 0
    differ = []
    for key, old, new in rows:
        if not (old.certified and new.certified):
            print(f"error: {key} not certified (base {old.certified}, this {new.certified})")
            failed += 1
        if abs(old.objective - new.objective) > OBJECTIVE_EQUAL:
            print(f"error: {key}: objective {old.objective!r} (base) != {new.objective!r}")
            failed += 1
        if not np.array_equal(old.w, new.w):
            differ.append(f"{key} ({old.objective!r} / {new.objective!r})")
    print()
    print(
        f"objectives: {len(rows) - failed} of {len(rows)} certified by both and equal within "
        f"{OBJECTIVE_EQUAL:g}; released points equal in {len(rows) - len(differ)} of {len(rows)}"
        + (f"; different (ties: equal objectives): {', '.join(differ)}" if differ else "")
    )
    return failed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.adult_structured", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--base", default=DEFAULT_BASE, help="the commit to compare against")
    parser.add_argument("--mechanisms", nargs="+", default=list(MECHANISMS), choices=MECHANISMS)
    parser.add_argument("--epsilons", type=float, nargs="+", default=None)
    parser.add_argument("--runs", type=int, default=None, help="the first RUNS runs of each")
    parser.add_argument("--override", action="append", default=[], help="a Hydra override")
    parser.add_argument("--each", action="store_true", help="a line per solve, as it ends")
    args = parser.parse_args(argv)
    load_before = load_loadavg()
    print(f"machine: {describe_machine()}; {load_before} at start")
    start = time.process_time()
    problems = sweep_problems(args.override, args.mechanisms, args.epsilons, args.runs)
    print(
        f"{len(problems)} problems of {' '.join(['+sweep=adult', *args.override])} built in "
        f"{time.process_time() - start:.1f} CPU s; base {args.base}, one solve each, "
        "alternating, CPU seconds (time.process_time)"
    )
    parts = {"base": defaultdict(float), "this": defaultdict(float)}
    with tempfile.TemporaryDirectory(prefix="adult-structured-") as folder:
        old_module = base_modules(args.base, Path(folder))
        codes = {"base": old_module, "this": structured}
        warm = {}
        for code, module in codes.items():  # compiled or read from caches before timing
            key, problem, oracle, limit, threads = problems[0]
            start = time.process_time()
            mine = module.StructuredOracle(max_combos=oracle.max_combos, max_work=oracle.max_work)
            # a copy: each code keeps the shapes it read, by problem (its ``_SHAPES``)
            mine.solve(copy.copy(problem), Budget.from_limit(limit, threads))
            warm[code] = time.process_time() - start
        for code, module in codes.items():
            time_parts(module, parts[code])
        print(
            f"first solve (imports, numba's compilation or cache), not counted: base "
            f"{warm['base']:.2f} s, this {warm['this']:.2f} s; a HiGHS call on a one-column "
            f"MILP: {1000 * highs_call_cpu():.2f} ms"
        )
        rows = []
        for key, problem, oracle, limit, threads in problems:
            settings = {"max_combos": oracle.max_combos, "max_work": oracle.max_work}
            old = solve(old_module.StructuredOracle(**settings), problem, limit, threads)
            new = solve(structured.StructuredOracle(**settings), problem, limit, threads)
            rows.append((key, old, new))
            if args.each:
                print(
                    f"{key}: base {old.cpu:.3f} s, this {new.cpu:.3f} s, objective "
                    f"{new.objective!r}, searched {new.counts.get('searched', 0)}, search nodes "
                    f"{new.counts.get('search_nodes', 0)}, HiGHS {new.counts.get('subproblems', 0)}",
                    flush=True,
                )
        print()
        failed = report(rows, parts, args.base)
    print(f"machine: {describe_machine()}; {load_before} at start, {load_loadavg()} at end")
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
