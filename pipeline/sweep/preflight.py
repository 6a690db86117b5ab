"""Checks a sweep makes before it changes anything: fail fast, in one line, leave nothing behind.

Each check runs before the MLflow parent run is created and before Ray starts, so a sweep that
cannot run leaves no FAILED parent and no empty report:

* ``probe_tracking_store``: an HTTP tracking server answers ``/health`` within seconds (MLflow's
  own client retries for minutes); a sqlite store can be written (a read-only directory fails
  after 100 s inside MLflow otherwise).
* ``probe_ray_address``: ``cluster.address`` accepts a TCP connection (``ray.init`` waits for
  minutes on an address nobody listens on).
* ``check_job_output_dir``: under ``ray job submit`` the driver runs in a temporary copy of the
  working directory, so a relative output directory vanishes with the cluster.
* ``check_task_cpus``: every Ray task (``oracle.threads``, ``cluster.cpus_per_task`` CPUs) fits
  in the largest node: before the data load for a Ray of our own (``local_cpus``), right after
  connecting for a cluster.
* ``check_oracle_calls``: OPSamp's m oracle calls per run (its calibration, SPEC section 5) are
  computed for every epsilon before anything runs; a tiny epsilon that makes m huge, or the
  calibration fail, is refused here rather than after Ray started.
* ``check_workload``: ``sweep.workload_k`` against the records' attributes.
* ``check_data_bounds``: the training data against every bound a mechanism's privacy proof
  assumes (OPSamp's ``x_max``, mechanisms.bounds): data beyond it are refused in one line naming
  the setting, the row and the feature, rather than failing every run of the sweep.
* ``check_tree_sizes``: for OPDisc and RSPM on an oracle that sends their problem to the window
  search, the search's tree estimated on each run of the grid it can within ``ESTIMATE_SECONDS``
  (``oracles.window.tree_size``); a warning line for each (mechanism, epsilon) with a run not
  expected to certify within ``oracle.time_limit``, and one saying how many runs were not
  estimated (``oracle.estimate=false``: no estimate).
"""

from __future__ import annotations

import logging
import math
import os
import socket
import sqlite3
import tempfile
import time
import urllib.error
import urllib.request
import warnings
from dataclasses import asdict
from pathlib import Path
from typing import Iterable
from urllib.parse import urlparse

import numpy as np

from core.validation import InvalidValue
from mechanisms.bounds import FeatureBoundError
from mechanisms.catalog import CATALOG, NON_ORACLE, build_mechanism
from mechanisms.privacy import PrivacyLeakWarning
from oracles.window import tree_size
from oracles.contract.budget import Budget
from oracles.routing.routes import Route
from oracles.window.plan import plan
from oracles.window.tree_size import TreeEstimate, estimate_tree, size_message
from pipeline.config import ConfigError
from pipeline.sweep.one_run import (
    RunKey,
    format_epsilon,
    launch_order,
    privacy_delta,
    run_data,
    run_request,
    sweep_keys,
)

log = logging.getLogger(__name__)

#: Seconds a probe waits for a service to answer.
PROBE_TIMEOUT = 5.0
#: Above this many oracle calls (Ray tasks) per run, a sweep warns.
WARN_ORACLE_CALLS = 100
#: The mechanisms whose one problem (a grid with their noise) the window search may solve.
TREE_MECHANISMS = frozenset({"opdisc", "rspm_gaussian", "rspm_laplace"})
#: Seconds ``check_tree_sizes`` spends on all the grid's shapes before it stops estimating.
ESTIMATE_SECONDS = 30.0
#: The grid search's seconds for the incumbent a shape's tree is estimated below (the window
#: search's own takes up to 5 s: a worse incumbent here makes the estimate larger, not smaller).
PLAN_SECONDS = 1.0


class ServiceError(RuntimeError):
    """A service the sweep needs (tracking store, Ray cluster) cannot be reached; one line."""


def probe_tracking_store(uri: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise ServiceError unless the MLflow store at ``uri`` answers and can be written."""
    parsed = urlparse(uri)
    if parsed.scheme in ("http", "https"):
        url = uri.rstrip("/") + "/health"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                if response.status != 200:
                    raise ServiceError(
                        f"tracking server {uri} answered {response.status} at "
                        f"/health (tracking.tracking_uri)"
                    )
        except (urllib.error.URLError, OSError, ValueError) as e:
            reason = getattr(e, "reason", e)
            raise ServiceError(
                f"tracking server {uri} unreachable: {reason} (tracking.tracking_uri; start the "
                f"server or fix the URI)"
            ) from None
    elif parsed.scheme == "sqlite":
        _probe_sqlite(uri)


def _probe_sqlite(uri: str) -> None:
    path = Path(uri[len("sqlite:///") :]) if uri.startswith("sqlite:///") else None
    if path is None or str(path) in ("", ":memory:"):
        return
    where = f"tracking store {uri}"
    if not path.parent.is_dir():
        raise ServiceError(
            f"{where}: directory {path.parent} does not exist (tracking.tracking_uri)"
        )
    try:
        # sqlite writes a journal beside the database: the directory must take new files. A file
        # of another name, so that nobody takes it for the store while MLflow creates it.
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".probe-"):
            pass
        if path.exists():
            connection = sqlite3.connect(f"file:{path}?mode=rw", uri=True, timeout=2)
            try:
                connection.execute("BEGIN IMMEDIATE")  # a write transaction, rolled back
                connection.execute("ROLLBACK")
            finally:
                connection.close()
    except (OSError, sqlite3.Error) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else e
        raise ServiceError(
            f"{where} cannot be written: {reason} (tracking.tracking_uri, or a "
            f"writable hydra.run.dir)"
        ) from None


def probe_ray_address(address: str, timeout: float = PROBE_TIMEOUT) -> None:
    """Raise ServiceError unless something listens at ``cluster.address`` (host:port)."""
    if address in ("auto", "local") or "://" in address and not address.startswith("ray://"):
        return
    host, _, port = address.removeprefix("ray://").rpartition(":")
    if not host or not port.isdigit():
        raise ConfigError(
            f"cluster.address: must be HOST:PORT, auto or ray://HOST:PORT, found {address!r}"
        )
    try:
        with socket.create_connection((host, int(port)), timeout=timeout):
            pass
    except OSError as e:
        raise ServiceError(
            f"Ray cluster at {address} unreachable: {e.strerror or e} "
            f"(cluster.address; is the head node up?)"
        ) from None
    _probe_gcs(address, f"{host}:{port}", timeout)


def _probe_gcs(address: str, target: str, timeout: float) -> None:
    """Something listens at ``target``: is it a Ray head's GCS (a gRPC server)? ``ray.init``
    on a port that takes the connection but does not speak gRPC waits minutes."""
    if os.environ.get("RAY_USE_TLS", "0") not in ("0", ""):
        return  # a TLS channel needs the cluster's certificates: left to ray.init
    import grpc  # Ray's dependency; imported only when a remote cluster is named

    channel = grpc.insecure_channel(target)
    try:
        grpc.channel_ready_future(channel).result(timeout=timeout)
    except grpc.FutureTimeoutError:
        raise ServiceError(
            f"something listens at {address} but it does not answer as a Ray cluster within "
            f"{timeout:g} s (cluster.address: the head node's GCS address, port 6379 unless "
            "ray start --port said otherwise)"
        ) from None
    finally:
        channel.close()


def local_ray_error(error: BaseException, tried: str = "") -> ServiceError:
    """A local Ray that would not start (its processes timing out on an overloaded machine, a
    full /tmp) as one line; ``tried``: what was tried, e.g. "3 attempts, ..."."""
    text = [line.strip() for line in str(error).strip().splitlines() if line.strip()]
    first = f"{type(error).__name__}: {text[0]}" if text else type(error).__name__
    tried = f" ({tried})" if tried else ""
    return ServiceError(
        f"a local Ray would not start{tried}: {first[:300]} (rerun the same command when the "
        "machine is less loaded; cluster.num_cpus, or cluster.address for a running cluster)"
    )


def ray_connect_error(address: str, error: BaseException) -> ServiceError:
    """``ray.init``'s failure as one line, with the token hint a Ray 2.60 cluster needs."""
    text = str(error).strip().splitlines()
    first = text[0] if text else type(error).__name__
    hint = ""
    lowered = str(error).lower()
    if "token" in lowered or "auth" in lowered:
        hint = (
            " (the cluster uses token authentication: set RAY_AUTH_MODE=token and the "
            "cluster's RAY_AUTH_TOKEN for the driver)"
        )
    elif os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        # Ray 2.60 reports a missing token as a plain connection failure
        hint = (
            " (if the cluster uses token authentication, set RAY_AUTH_MODE=token and the "
            "cluster's RAY_AUTH_TOKEN for the driver)"
        )
    return ServiceError(
        f"cannot connect to the Ray cluster at {address}: {type(error).__name__}: {first}{hint}"
    )


def under_ray_job() -> bool:
    """True when this process is the driver of a ``ray job submit``."""
    return "RAY_JOB_CONFIG_JSON_ENV_VAR" in os.environ


def check_job_output_dir(output_dir: Path, cwd: Path | None = None) -> None:
    """Under ``ray job submit``, refuse an output directory inside the job's working-dir copy."""
    if not under_ray_job():
        return
    cwd = (cwd or Path.cwd()).resolve()
    output_dir = Path(output_dir).resolve()
    if output_dir == cwd or cwd in output_dir.parents:
        raise ConfigError(
            f"hydra.run.dir: under `ray job submit` the driver runs in Ray's temporary copy of "
            f"the working directory, so {output_dir} would vanish with the cluster; give an "
            f"absolute path outside it, e.g. hydra.run.dir=/shared/results/NAME, found "
            f"{str(output_dir)!r}"
        )


def check_oracle_calls(config, epsilons: Iterable[float], n: int, d: int) -> dict[float, int]:
    """OPSamp's m per run for each epsilon (``mechanisms.opsamp.opsamp_calibration``).

    Raises ConfigError when the calibration fails (e.g. epsilon = 1e-300) or m exceeds
    ``sweep.max_oracle_calls``; warns above WARN_ORACLE_CALLS. Returns {epsilon: m}.
    """
    cfg = config.mechanisms.get("opsamp")
    if cfg is None or "opsamp" not in config.sweep.mechanisms:
        return {}
    limit = config.sweep.max_oracle_calls
    delta = privacy_delta(config, n)
    out: dict[float, int] = {}
    for eps in epsilons:
        try:
            mechanism = build_mechanism(cfg, eps, delta, config.margin)
            calibration = mechanism.calibrate(n, d)
            m = calibration.m
            numbers = [v for v in asdict(calibration).values() if not isinstance(v, str)]
            if not all(math.isfinite(float(v)) for v in numbers):
                raise ValueError(f"the calibration is not finite: {calibration}")
        except (ValueError, OverflowError, ZeroDivisionError, FloatingPointError) as e:
            raise ConfigError(
                f"sweep.epsilons: OPSamp cannot be calibrated at epsilon "
                f"{eps!r} (n={n}, d={d}): {e}, found {eps!r}"
            ) from None
        _require_calls(m, limit, eps, config.sweep.seeds)
        out[eps] = int(m)
    return out


def check_workload(config, train) -> None:
    """Every swept mechanism's data made once from the training set, as its entry's kind takes
    it (``pipeline.sweep.one_run.run_data``), in the driver beside the other data checks: for records
    over a public domain (the synthetic-data sweeps), a ``sweep.workload_k`` beyond their
    attributes is one ConfigError before any run, not a failure inside each
    (``pipeline.sweep.one_run.workload_k``)."""
    for name in dict.fromkeys(config.sweep.mechanisms if config.sweep is not None else ()):
        run_data(config, CATALOG[config.mechanisms[name].name], train)


def local_cpus(config) -> int | None:
    """CPUs of the Ray this driver starts itself: ``cluster.num_cpus``, else the local machine's
    (``os.cpu_count``, what Ray counts unless a container's limit is lower). None when the
    driver joins a cluster (``cluster.address``, ``$RAY_ADDRESS``): its CPUs are known once
    connected (``pipeline.sweep.fan_out.largest_node_cpus``)."""
    if config.cluster.address or os.environ.get("RAY_ADDRESS"):
        return None
    return config.cluster.num_cpus or os.cpu_count() or 1


def check_task_cpus(config, cpus: int, where: str) -> None:
    """Every Ray task the sweep makes fits in ``cpus``, the CPUs of the largest node (``where``
    says which): an oracle call holds ``oracle.threads`` CPUs, a run that calls no oracle
    ``cluster.cpus_per_task`` (``pipeline.sweep.fan_out``). A larger task could never be scheduled and
    the sweep would wait forever: a ConfigError naming the key, before any task."""
    swept = [config.mechanisms[m].name for m in config.sweep.mechanisms]
    needs = []
    if any(name not in NON_ORACLE for name in swept):
        needs.append(("oracle.threads", config.oracle.threads, "an oracle call"))
    if any(name in NON_ORACLE for name in swept):
        needs.append(
            ("cluster.cpus_per_task", config.cluster.cpus_per_task, "a run without oracle")
        )
    for key, need, what in needs:
        if need > cpus:
            raise ConfigError(
                f"{key}: {what} is a Ray task of {need} CPUs, more than the {cpus} CPUs of "
                f"{where}, so it could never start; give {key}={cpus} or fewer (or a cluster "
                f"with a node that large), found {need}"
            )


def check_rows(config, n: int) -> None:
    """Every swept mechanism's settings against the ``n`` training rows (``Entry.check_rows``):
    ConfigError naming the setting (``mechanisms.dpsgd_lr.batch_size: ...``) before any run."""
    for name in config.sweep.mechanisms:
        try:
            CATALOG[name].check_rows(config.mechanisms[name], config.margin, n)
        except InvalidValue as e:
            raise ConfigError(f"mechanisms.{name}.{e}") from None


def check_data_bounds(config, train) -> list[str]:
    """Every swept oracle mechanism's ``enforce_bounds`` on the training data, once, in the
    driver (each run checks again, mechanisms.runner.run).

    Raises ConfigError (``mechanisms.<name>.x_max: row i, column 'feature' is v, ...``) for data
    beyond a bound; returns the PrivacyLeakWarnings of data clipped on request (they are also
    logged), for the sweep's record.
    """
    delta = privacy_delta(config, train.n)
    leaks: list[str] = []
    for name in config.sweep.mechanisms:
        if name in NON_ORACLE:  # no bound on the features (mechanisms.bounds)
            continue
        epsilon = config.sweep.epsilons[0]  # the bounds do not depend on the target
        mechanism = build_mechanism(config.mechanisms[name], epsilon, delta, config.margin)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", PrivacyLeakWarning)
            try:
                mechanism.enforce_bounds(train.features, train.feature_names)
            except FeatureBoundError as e:
                raise ConfigError(e.message(f"mechanisms.{name}.")) from None
        for w in caught:
            if issubclass(w.category, PrivacyLeakWarning):
                leaks.append(f"mechanisms.{name}: {w.message}")
                log.warning("%s", leaks[-1])
            else:
                warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    return leaks


def _count(m: int) -> str:
    return f"{m:,}" if m < 10**12 else f"{float(m):.3g}"


def _require_calls(m: int, limit: int, eps: float, seeds: int) -> None:
    if m > limit:
        raise ConfigError(
            f"sweep.epsilons: OPSamp at epsilon {eps!r} needs m={_count(m)} oracle calls (Ray "
            f"tasks) per run, more than sweep.max_oracle_calls={limit:,}; raise the limit or drop that "
            f"epsilon, found {eps!r}"
        )
    if m > WARN_ORACLE_CALLS:
        log.warning(
            "OPSamp at epsilon %g needs m=%d oracle calls (Ray tasks) per run, %d for its %d runs",
            eps,
            m,
            m * seeds,
            seeds,
        )


def check_tree_sizes(
    config,
    train,
    *,
    rate: float | None = None,
    seconds: float = ESTIMATE_SECONDS,
) -> list[str]:
    """Warn of the (mechanism, epsilon) whose window search is not expected to certify within
    the limit.

    For each run of the grid whose mechanism is OPDisc or RSPM (``TREE_MECHANISMS``) and whose
    problem the configured oracle's route sends to the window search
    (``oracles.routing.routes.Route.plan``, the chain the run takes: the ``structured`` route only for a
    generic table with noise, the ``window`` and ``portfolio`` routes for every grid): the run's
    problem built exactly as that run builds it (``pipeline.sweep.one_run.run_request``, its own
    generator, ``ClassifierEntry.prepare``), planned as the window search plans it
    (``oracles.window.plan.plan``, a grid search of ``PLAN_SECONDS``), and its tree below the
    plan's incumbent estimated (``oracles.window.tree_size.estimate_tree``, seed 0). Runs are
    estimated in the sweep's launch order (``pipeline.sweep.one_run.launch_order``: run 0 of every
    (mechanism, epsilon) first, then run 1 of each, ...), so a short budget still sees every
    shape. A (mechanism, epsilon) with a run whose estimate is not certified within
    ``oracle.time_limit`` CPU seconds on the solve's CPUs (``oracle.threads``, times
    ``oracle.parts`` when the parts run as tasks) at ``rate`` nodes a CPU second (default
    ``oracles.window.tree_size.TYPICAL_RATE``) gets one warning line: its dearest run's
    estimate, and which of its estimated runs are not expected to certify. A (mechanism,
    epsilon) whose first run's problem the route does not send to the window search is not
    read further: the route's choice (``Route.plan``) rests on what its runs share, the data's
    shape and the cell's grid and budget, not on their noise (every OPDisc and RSPM problem
    carries noise), so its other runs go where the first went; on Adult this skips building
    140 problems that go to the structured search. After ``seconds`` the rest are not
    estimated, and a line says how many. Nothing when ``oracle.estimate`` is false. Returns the
    lines (each also logged as a warning).

    Privacy: the estimate reads the private training data and the runs' noise, and what it says
    (a tree's size) depends on both, like a certificate's gap. It goes only to the operator
    running the sweep (the driver's log), never into a release, a run's record, MLflow or the
    report. It draws nothing from any run's generator: each run's is made afresh here, and the
    run makes its own, which draws the same noise.
    """
    if not config.oracle.estimate or config.sweep is None:
        return []
    keys = [k for k in launch_order(sweep_keys(config)) if k.mechanism in _tree_names(config)]
    rate = tree_size.TYPICAL_RATE if rate is None else rate
    cpus = config.oracle.threads * config.oracle.parts
    limit = config.oracle.time_limit
    start = time.monotonic()
    estimated: dict[tuple[str, float], dict[int, TreeEstimate]] = {}
    elsewhere: set[tuple[str, float]] = set()  # cells whose first run's route has no window
    seen: list[RunKey] = []  # the runs read (of cells the route sends to the window search)
    missed: list[RunKey] = []  # the runs it would have read when its time ran out
    for key in keys:
        cell = (key.mechanism, key.epsilon)
        if cell in elsewhere:
            continue
        left = seconds - (time.monotonic() - start)
        if missed or left <= 0:
            missed.append(key)
            continue
        estimate = shape_tree(config, train, key, min(PLAN_SECONDS, left))
        if estimate is None and cell not in estimated:
            elsewhere.add(cell)
            continue
        seen.append(key)
        if estimate is not None:
            estimated.setdefault(cell, {})[key.run_index] = estimate
    lines = [
        line
        for (name, eps), runs in estimated.items()
        if (line := _beyond_line(name, eps, runs, limit, cpus, rate))
    ]
    if missed:
        cells = {(k.mechanism, k.epsilon) for k in missed} - {
            (k.mechanism, k.epsilon) for k in seen
        }
        none = f", {len(cells)} (mechanism, epsilon) with none" if cells else ""
        lines.append(
            f"stopped estimating the window search's trees after {seconds:g} s: "
            f"{len(missed)} of {len(seen) + len(missed)} runs not estimated{none} "
            "(oracle.estimate=false turns the estimate off)"
        )
    for line in lines:
        log.warning("%s", line)
    return lines


def _tree_names(config) -> set[str]:
    """The sweep's mechanisms whose problem the window search may solve (``TREE_MECHANISMS``)."""
    return {m for m in config.sweep.mechanisms if config.mechanisms[m].name in TREE_MECHANISMS}


def _beyond_line(
    name: str, eps: float, runs: dict[int, TreeEstimate], limit: float, cpus: int, rate: float
) -> str:
    """The warning for a (mechanism, epsilon) whose estimated ``runs`` (by run index) include
    some not expected to certify within ``limit`` on ``cpus`` at ``rate``; "" when none."""
    beyond = [i for i, e in sorted(runs.items()) if not e.certifies_within(limit * cpus, rate)]
    if not beyond:
        return ""
    dearest = max(beyond, key=lambda i: runs[i].nodes)
    which = (
        ""
        if len(runs) == 1
        else f" (run {dearest}, the dearest; {len(beyond)} of the {len(runs)} runs estimated "
        f"are not expected to certify: run{'s' if len(beyond) > 1 else ''} "
        f"{', '.join(map(str, beyond))})"
    )
    on = f" on {cpus} CPUs" if cpus > 1 else ""
    return (
        f"{name} at epsilon {format_epsilon(eps)}: the window search is estimated at "
        f"{size_message(runs[dearest], rate)}{which}: it is not expected to certify within "
        f"oracle.time_limit={limit:g} s{on}; give a longer limit, more CPUs, or carry on "
        "(oracle.carry_on=true)"
    )


def shape_tree(config, train, key: RunKey, plan_seconds: float) -> TreeEstimate | None:
    """The window search's tree on run ``key``'s problem (``check_tree_sizes``), or None when
    the run's oracle does not send that problem to the window search."""
    request = run_request(config, key, train)
    entry = CATALOG[request.settings.name]
    route = entry.oracle_of(request.settings, request.oracles)
    if not isinstance(route, Route):
        return None
    with warnings.catch_warnings():  # data clipped to a bound: check_data_bounds said so
        warnings.simplefilter("ignore", PrivacyLeakWarning)
        problem = entry.prepare(request).problems[0]
    if "window" not in route.plan(problem, route.budget()).strategies:
        return None
    window = route.strategy("window")
    start = plan(
        problem,
        Budget.from_limit(plan_seconds),
        search_seconds=plan_seconds,
        seed=window.seed,
        lagrange_iterations=window.lagrange_iterations,
    )
    return estimate_tree(start.tables, start.incumbent, rng=np.random.default_rng(0))
