"""One run of the sweep: (mechanism, epsilon, run index) on a dataset, as a plain function.

Kept free of Ray and MLflow so that it runs the same in a test, a loop, or a Ray task. The
noise of a run comes from a generator derived from (sweep seed, mechanism, epsilon, run
index), so any run can be reproduced alone.
"""

from __future__ import annotations

import itertools
import math
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from mechanisms.catalog import CATALOG, NON_PRIVATE
from mechanisms.entries import Entry, Labelled, Request, Scores, Table

# Imported here, at load time, not lazily: a driver must have its code loaded before it connects
# to Ray (on a one-machine test cluster a second node re-extracts the job's working directory into
# the same place while the driver runs). None of these imports a solver backend.
from mechanisms.release import Release
from mechanisms.runner import SolveMany, solve_sequentially
from mechanisms.synthetic.domain import ConjunctionClass, Domain, Workload
from mechanisms.synthetic.fem import SyntheticRelease, check_listed
from oracles.routing import registry
from pipeline.config import Config, ConfigError, OracleConfig, SweepConfig
from pipeline.data.record import Dataset
from pipeline.distributed.ray_search import RaySearch
from pipeline.tracking.run_record import RunResult
from pipeline.settings_schemas import MechanismConfig


@dataclass(frozen=True)
class RunKey:
    """Identifies a run; its string form is the resume key of the sweep."""

    mechanism: str
    epsilon: float
    run_index: int

    def __str__(self) -> str:
        return f"{self.mechanism}/eps={format_epsilon(self.epsilon)}/run={self.run_index}"

    @property
    def label(self) -> str:
        """What the console and MLflow call the run (``run_label``)."""
        return run_label(self.mechanism, str(self))


def run_label(mechanism: str, key: str) -> str:
    """What the console and MLflow's run name call a run: its key, but a non-private reference
    (run once, its epsilon recorded as inf) ``erm_01 (non-private reference)``."""
    if mechanism in NON_PRIVATE:
        return f"{mechanism} (non-private reference)"
    return key


def format_epsilon(epsilon: float) -> str:
    """The shortest text that reads back as exactly ``epsilon``.

    ``%g`` (6 significant digits) where it is exact, so the keys of existing sweeps do not change,
    else ``repr``: 0.5 and 0.5000001 must not share a key (a rerun would take one for the other).
    """
    short = f"{epsilon:g}"
    return short if float(short) == epsilon else repr(float(epsilon))


def run_generator(sweep_seed: int, key: RunKey) -> np.random.Generator:
    """A generator derived from (sweep seed, mechanism, epsilon, run index) alone."""
    entropy = [
        int(sweep_seed),
        zlib.crc32(key.mechanism.encode()),
        # epsilon in units of 1e-9; the non-private references (epsilon = inf) get 2**63
        int(round(key.epsilon * 1e9)) if math.isfinite(key.epsilon) else 2**63,
        int(key.run_index),
    ]
    return np.random.default_rng(np.random.SeedSequence(entropy))


def sweep_keys(config: Config) -> list[RunKey]:
    """Every run of the sweep; the non-private references once each (epsilon recorded as inf)."""
    sweep = config.sweep
    if sweep is None:
        return []
    keys = []
    for name in sweep.mechanisms:
        if name in NON_PRIVATE:
            keys.append(RunKey(name, math.inf, 0))
            continue
        for eps in sweep.epsilons:
            keys += [RunKey(name, float(eps), i) for i in range(sweep.seeds)]
    return keys


def launch_order(keys: Sequence[RunKey]) -> list[RunKey]:
    """``keys`` in the order a sweep starts them: round-robin over its cells (a mechanism at an
    epsilon, a reference), a run of each cell in turn, cells in the order they first appear.

    Every cell's first run starts early, so the ETA (``pipeline.sweep.progress``) measures every kind
    of run before it has to guess one from another's times (a kind with no finished run is
    planned at its time limit), and the runs of each kind are spread over the whole sweep, so the
    mean of its finished runs stands for the ones to come. The long references start in the first
    round, not last.
    A run's noise comes from its key alone (``run_generator``), so the order changes no result."""
    cells: dict[tuple[str, float], list[RunKey]] = {}
    for key in keys:
        cells.setdefault((key.mechanism, key.epsilon), []).append(key)
    rounds = itertools.zip_longest(*cells.values())
    return [key for row in rounds for key in row if key is not None]


def carry_order(keys: Sequence[RunKey], prices: Mapping[str, float]) -> list[RunKey]:
    """``keys`` in the order a carried-on sweep starts them: the runs with a price (``prices``,
    by run key: the CPU seconds their last attempt's window search estimated it still needs to
    certify, ``RunResult.oracle_cpu_seconds_to_certify``) cheapest first, then the rest
    (no price known, or a run that never finished) in ``launch_order``.

    A carried-on sweep is bought in certified releases: a run that certifies in 5 CPU minutes
    waiting behind two priced at hours certifies only after they stopped at their limit (issue
    45: an RSPM run at 5 CPU minutes waited 900 s behind OPDisc runs at 5.8 CPU-hours and 13 CPU
    minutes). Cheapest first spends the first CPU hours where they certify. Ties keep
    ``launch_order``; a run's noise comes from its key alone, so the order changes no result."""
    ordered = launch_order(keys)
    rank = {key: i for i, key in enumerate(ordered)}

    def price(key: RunKey) -> float:
        value = prices.get(str(key), math.nan)
        return float(value) if value is not None and math.isfinite(value) else math.nan

    priced = sorted(
        (k for k in ordered if not math.isnan(price(k))), key=lambda k: (price(k), rank[k])
    )
    return priced + [k for k in ordered if math.isnan(price(k))]


@dataclass(frozen=True)
class SweepOracles:
    """The oracles a sweep offers its runs (``mechanisms.entries.Oracles``): the configured one
    (``oracle.name``) and any named route, each built by ``oracle_for``."""

    cfg: OracleConfig
    threads: int | None = None
    carry: str | None = None

    def configured(self) -> Any:
        return oracle_for(self.cfg, self.cfg.name, self.threads, self.carry)

    def route(self, name: str) -> Any:
        return oracle_for(self.cfg, name, self.threads, self.carry)


def mechanism_oracle(
    cfg: OracleConfig, threads: int | None = None, mechanism: MechanismConfig | None = None
) -> Any:
    """The oracle ``mechanism`` asks for (its catalog entry says which; without one, the
    configured oracle); a ValueError for a mechanism that calls none."""
    oracles = SweepOracles(cfg, threads)
    if mechanism is None:
        return oracles.configured()
    return CATALOG[mechanism.name].oracle_of(mechanism, oracles)


def oracle_for(
    cfg: OracleConfig, name: str, threads: int | None = None, carry: str | None = None
) -> Any:
    """The one place an oracle is built for a run: the route ``name`` (the configured
    ``cfg.name``, or one a catalog entry asks for by name, e.g. the data player's
    ``conjunctions_search``), from the registry. Every oracle gets ``cfg.time_limit`` and ``threads``
    (default ``cfg.threads``). A route that runs the window search runs it on Ray
    (``pipeline.distributed.ray_search.RaySearch``): ``cfg.parts`` > 1 starts that many workers
    sharing its work (a lost one's work is searched again), else the search grows onto the
    cluster's idle CPUs while no run of the sweep waits; ``carry``: the directory where a
    problem's attempts are counted and a window search that stops keeps its state, so that a
    later solve of the same problem counts every attempt's CPU whatever route ends it and
    resumes the state wherever its route reaches the window search (``oracles.window.checkpoint``,
    ``oracles.routing.routes.Route.solve``, ``carry_directory``). Every route of a mechanism's
    problem (``registry.DISCRETE``) takes it."""
    threads = threads or cfg.threads
    options: dict[str, Any] = {}
    if name in registry.SPLIT:
        extras = cfg.parts - 1
        options["executor"] = RaySearch(extras, grow=extras == 0, cpus_per_task=threads)
    if carry is not None and name in registry.DISCRETE:
        options["carry"] = carry
    return registry.make_oracle(name, time_limit=cfg.time_limit, threads=threads, **options)


#: Where a sweep's stopped window searches keep their states, under its output directory.
CARRY_DIR = "carry"


def carry_directory(config: Config) -> str | None:
    """The sweep's directory of carried search states (``<output_dir>/carry``; None without an
    output directory: a library call keeps nothing). Its runs' tasks read and write it, so on a
    cluster of several machines it must be on a filesystem they share (docs/cluster.md);
    elsewhere a search starts over, which changes its time, never its answer."""
    if config.output_dir is None:
        return None
    return str(Path(config.output_dir).absolute() / CARRY_DIR)


def privacy_delta(config: Config, n: int) -> float:
    """The sweep's delta, 1/n^2 by default (SPEC section 9)."""
    sweep_delta = config.sweep.privacy_delta if config.sweep is not None else None
    return sweep_delta if sweep_delta is not None else 1.0 / n**2


def run_data(config: Config, entry: Entry, dataset: Dataset) -> Labelled | Table:
    """The data a run of ``entry`` takes from ``dataset`` (the entry's kind says which: features
    and labels, or records over their public domain with the sweep's ``workload``)."""

    def entry_workload(domain: Domain) -> Workload | ConjunctionClass:
        # called by a table entry only (a classifier's data takes no workload)
        built = workload(config, domain)
        if entry.lists_workload:
            try:
                check_listed(built)  # fem's own refusal, before any run
            except ValueError as error:
                raise ConfigError(f"sweep.workload: {error}") from None
        return built

    return entry.data(dataset, entry_workload)


def run_request(
    config: Config,
    key: RunKey,
    train: Dataset,
    *,
    solve_many: SolveMany | None = None,
    threads: int | None = None,
) -> Request:
    """The catalog entry's one ``Request`` of run ``key``: its settings, target and data, a
    fresh generator of its own (``run_generator``) and the sweep's oracles (``SweepOracles``).
    Made again it is the same request: a preflight that builds run 0's problem from it
    (``pipeline.sweep.preflight.check_tree_sizes``) draws nothing that run does not draw itself."""
    cfg = config.mechanisms[key.mechanism]
    entry = CATALOG[cfg.name]
    return Request(
        cfg,
        key.epsilon,
        privacy_delta(config, train.n),
        config.margin,
        run_data(config, entry, train),
        run_generator(config.sweep.sweep_seed if config.sweep else 0, key),
        oracles=SweepOracles(config.oracle, threads, carry_directory(config)),
        solve_many=solve_many or solve_sequentially,
    )


def run_release(
    config: Config,
    key: RunKey,
    train: Dataset,
    *,
    solve_many: SolveMany | None = None,
    threads: int | None = None,
) -> Release | SyntheticRelease:
    """The release of one run (no I/O): the catalog entry's one ``Request`` (``run_request``)."""
    request = run_request(config, key, train, solve_many=solve_many, threads=threads)
    return CATALOG[request.settings.name].release(request)


def workload_k(config: Config, domain: Domain) -> int:
    """The sweep's ``workload_k``, checked against the records' public ``domain``: a ConfigError
    when there are fewer attributes (the driver checks it once before any run,
    ``pipeline.sweep.preflight.check_workload``)."""
    k = config.sweep.workload_k if config.sweep is not None else SweepConfig.workload_k
    attributes = len(domain.sizes)
    if k > attributes:
        raise ConfigError(
            f"sweep.workload_k: must be <= the {attributes} attributes of the records "
            f"({', '.join(domain.names)}), found {k}"
        )
    return k


def workload(config: Config, domain: Domain) -> Workload | ConjunctionClass:
    """The sweep's workload of synthetic data: every ``sweep.workload_k``-way marginal of the
    records' public ``domain``, or with ``sweep.workload=conjunctions`` every conjunction of 1 to
    ``sweep.workload_k`` literals, never listed (a ConfigError when there are fewer
    attributes)."""
    k = workload_k(config, domain)
    kind = config.sweep.workload if config.sweep is not None else SweepConfig.workload
    if kind == "conjunctions":
        return ConjunctionClass(domain.sizes, k)
    return Workload.all_k_way(domain.sizes, k)


def score(
    config: Config, key: RunKey, release: Any, train: Dataset, test: Dataset | None
) -> Scores:
    """The scores of run ``key``'s release, as its catalog entry's kind scores it (a
    classifier's accuracy; a synthetic table's workload error and downstream accuracy)."""
    entry = CATALOG[key.mechanism]
    test_data = run_data(config, entry, test) if test is not None else None
    return entry.score(release, run_data(config, entry, train), test_data)


def run_one(
    config: Config, key: RunKey, train: Dataset, test: Dataset | None, **kwargs: Any
) -> tuple[RunResult, Release | SyntheticRelease]:
    """Run one (mechanism, epsilon, run index): its result record and its release."""
    started = time.time()  # when it ran (the clock), and for how long (the monotonic clock)
    start = time.perf_counter()
    release = run_release(config, key, train, **kwargs)
    wall_seconds = time.perf_counter() - start
    scores = score(config, key, release, train, test)  # not part of the run's time
    result = RunResult.of(key, release, scores, train.n, wall_seconds, started=started)
    return result, release
