"""The sweep on Ray: every run on the cluster, every oracle call of a run as a task of its own.

The driver composes the runs, puts the dataset into the object store once, and hands each run
to a driver thread (at most ``in_flight`` at a time), which

* for an oracle mechanism (OPDisc, RSPM, OPSamp, the exact ERM) runs it through
  ``mechanisms.runner.run`` with ``RaySolveMany``: the noise is drawn and the problems built in
  the driver, each problem is solved by a Ray task (``solve_task``; the solver's model is built
  inside the task), and the release is finished in the driver. OPSamp's m calls are m tasks,
  OPDisc's one call one task: no mechanism is a special case;
* for any other run (DP-SGD, the exponential mechanism, logistic regression) waits on one Ray
  task that runs it whole (``run_task``).

While runs go, the driver prints, at least every ``PROGRESS_EVERY`` seconds, each running
solve's incumbent, bound and elapsed time, and an ETA that counts them (``pipeline.sweep.progress``).
Results are taken as they complete and logged to MLflow by the driver alone. Solver threads
equal the CPUs a task holds. A task whose worker dies is retried (``max_retries``). Runs already
FINISHED in MLflow for the same sweep are skipped (resume).
"""

from __future__ import annotations

import atexit
import dataclasses
import logging
import math
import os
import queue
import threading
import time
from typing import Any, Mapping, Sequence

from mechanisms.catalog import CATALOG, NON_ORACLE, NON_PRIVATE
from mechanisms.release import Release
from oracles.contract.certificate import budget_of
from pipeline.sweep import reaper
from pipeline.config import Config
from pipeline.data.record import Dataset
from pipeline.distributed.ray_pool import assigned_cpus, node_id
from pipeline.distributed.ray_search import demand_actor, set_waiting
from pipeline.sweep.preflight import local_ray_error, probe_ray_address, ray_connect_error
from pipeline.sweep.progress import (
    PROGRESS_EVERY,
    REDRAW_EVERY,
    REPORT_EVERY,
    Channel,
    Progress,
    close_board,
    make_board,
    read_board,
    reporting,
)
from pipeline.tracking.run_record import RunResult
from pipeline.sweep.one_run import RunKey, carry_order, launch_order, run_one, sweep_keys
from pipeline.tracking.mlflow_runs import HEARTBEAT

log = logging.getLogger(__name__)

#: Retries of a task whose worker process or node died (not of a Python exception).
MAX_RETRIES = 3


def solve_one(oracle: Any, problem: Any, channel: Channel | None = None) -> tuple[Any, str, float]:
    """One oracle call on a Ray worker: (solution, node, seconds the task took). With a
    ``channel``, the solver's progress goes to the driver's board (``pipeline.sweep.progress``)."""
    start = time.perf_counter()
    with reporting(channel):
        solution = oracle.solve(problem, budget_of(oracle))  # its limits, from the task's start
    return solution, node_id(), time.perf_counter() - start


def _remote_functions(run_cpus: int, solver_cpus: int):
    """(run_task, solve_task): a whole run of a mechanism without an oracle holding
    ``run_cpus`` CPUs, an oracle call ``solver_cpus``; each retried on a lost worker."""
    import ray

    @ray.remote(num_cpus=run_cpus, max_retries=MAX_RETRIES)
    def run_task(
        config: Config,
        key: RunKey,
        train: Dataset,
        test: Dataset | None,
        channel: Channel | None = None,
    ):
        with reporting(channel):
            result, release = run_one(config, key, train, test, threads=assigned_cpus())
        return dataclasses.replace(result, node=node_id()), release

    solve_task = ray.remote(num_cpus=solver_cpus, max_retries=MAX_RETRIES)(solve_one)
    return run_task, solve_task


class RaySolveMany:
    """``solve_many`` for ``mechanisms.runner.run``: each problem a Ray task, in order.

    Problems and oracles are plain picklable records; a backend builds its solver model inside
    the task. Keeps the accounting of the calls it made: ``task_seconds`` (what the tasks took,
    summed: the compute, not the time they queued), ``waited`` (the caller's wall time spent
    waiting on them) and the ``nodes`` they ran on. With a progress ``board`` each task reports
    there under ``tag`` (``#i`` appended when a call makes several problems).
    """

    def __init__(self, solve_task: Any, board: Any = None, tag: str = "") -> None:
        self.solve_task = solve_task
        self.board, self.tag = board, tag
        self.task_seconds = 0.0
        self.waited = 0.0
        self.nodes: set[str] = set()

    def _submit(self, oracle: Any, problems: Sequence[Any]) -> list[Any]:
        if self.board is None:
            return [self.solve_task.remote(oracle, problem) for problem in problems]
        tags = (
            [self.tag] if len(problems) == 1 else [f"{self.tag}#{i}" for i in range(len(problems))]
        )
        return [
            self.solve_task.remote(oracle, problem, Channel(self.board, tag, REPORT_EVERY))
            for problem, tag in zip(problems, tags)
        ]

    def __call__(self, oracle: Any, problems: Sequence[Any]) -> list[Any]:
        import ray

        start = time.perf_counter()
        refs = self._submit(oracle, problems)
        try:
            results = ray.get(refs)
        except BaseException:
            for ref in refs:  # the run failed: its other calls are of no use
                ray.cancel(ref)
            raise
        finally:
            self.waited += time.perf_counter() - start
        solutions = []
        for solution, node, seconds in results:
            solutions.append(solution)
            self.nodes.add(node)
            self.task_seconds += seconds
        return solutions


def run_on_cluster(
    config: Config,
    key: RunKey,
    train: Dataset,
    test: Dataset | None,
    run_task: Any,
    solve_task: Any,
    train_ref: Any,
    test_ref: Any,
    board: Any = None,
) -> tuple[RunResult, Release]:
    """One run, from a driver thread: an oracle mechanism through ``run`` with its calls as
    tasks, anything else as one task. The result's time is the compute the run cost: the driver's
    own part plus what its tasks took, not how long they waited in the queue. ``board``: the
    sweep's progress board (``pipeline.sweep.progress``), if any."""
    import ray

    if config.mechanisms[key.mechanism].name in NON_ORACLE:
        if board is None:
            return ray.get(run_task.remote(config, key, train_ref, test_ref))
        channel = Channel(board, str(key), REPORT_EVERY)
        return ray.get(run_task.remote(config, key, train_ref, test_ref, channel))
    solver = RaySolveMany(solve_task, board, str(key))
    result, release = run_one(config, key, train, test, solve_many=solver)
    wall_seconds = result.wall_seconds - solver.waited + solver.task_seconds
    return dataclasses.replace(
        result, wall_seconds=wall_seconds, node=",".join(sorted(solver.nodes))
    ), solve_step_of_tasks(release, solver)


def solve_step_of_tasks(release: Any, solver: RaySolveMany) -> Any:
    """``release`` with its ``solve`` step timed as its ``wall_seconds`` is: the oracle tasks'
    own seconds (``solver.task_seconds``), not the driver's wait for them, which includes their
    queue for a CPU (a ``solve`` of 12.75 s beside a run of 3.68 s); that wait is kept as the
    step ``solve_waited``, and ``total`` is the steps' sum again."""
    timings = dict(getattr(release, "timings", {}))
    if "solve" not in timings or not dataclasses.is_dataclass(release):
        return release
    waited = timings["solve"]
    timings["solve"] = solver.task_seconds
    if "total" in timings:
        timings["total"] += solver.task_seconds - waited
    timings["solve_waited"] = waited
    return dataclasses.replace(release, timings=timings)


#: Ray starts its worker processes niced by this environment variable's value (15 by default,
#: read by the raylet when it starts): on a machine shared with other work a niced solve gets a
#: fraction of a core while its time limit runs (one sweep measured 1.1 s of CPU per 10 s and
#: lost certificates it otherwise keeps). The pipeline's own Ray sets it to 0: its tasks run at
#: the driver's niceness.
WORKER_NICENESS_ENV = "RAY_worker_niceness"


def workers_at_driver_niceness() -> None:
    """Make a Ray started from this process (``ray.init(address="local")``) run its workers at
    this process's niceness (``WORKER_NICENESS_ENV``). Call it before ``ray.init``."""
    os.environ[WORKER_NICENESS_ENV] = "0"


def init_ray(config: Config) -> None:
    """Connect to ``cluster.address``, else to $RAY_ADDRESS (set by ``ray job submit``), else start
    a Ray of our own, its workers at the driver's niceness (``workers_at_driver_niceness``): never
    join, unasked, a cluster someone started on the same machine."""
    import ray  # lazily: a sweep whose runs all finished never starts Ray

    if ray.is_initialized():
        return
    if config.cluster.address:
        probe_ray_address(config.cluster.address)  # ray.init waits minutes on a dead address
        try:
            ray_init(address=config.cluster.address, log_to_driver=False)
        except Exception as e:  # noqa: BLE001 - any failure to connect is the same user error
            raise ray_connect_error(config.cluster.address, e) from None
    elif os.environ.get("RAY_ADDRESS"):
        try:
            ray_init(log_to_driver=False)
        except Exception as e:  # noqa: BLE001
            raise ray_connect_error(os.environ["RAY_ADDRESS"], e) from None
    else:
        # A Ray of our own enables token authentication by default and says so on every run;
        # the warning is not news to anyone here (ray.init(address="local") keeps the token).
        quiet = logging.getLogger("ray._private.authentication.authentication_token_setup")
        level = quiet.level
        quiet.setLevel(logging.ERROR)
        workers_at_driver_niceness()
        try:
            context = start_local_ray(config.cluster.num_cpus)
        finally:
            quiet.setLevel(level)
        _reap_at_exit(context)


def largest_node_cpus() -> int | None:
    """The CPUs of the largest live node of the Ray this driver is connected to (a task runs on
    one node), None when it is not connected."""
    import ray

    if not ray.is_initialized():
        return None
    cpus = [node.get("Resources", {}).get("CPU", 0) for node in ray.nodes() if node.get("Alive")]
    return int(max(cpus, default=0))


def cluster_cpus() -> int | None:
    """The CPUs of every live node of the Ray this driver is connected to (what the sweep's
    runs are spread over), None when it is not connected."""
    import ray

    if not ray.is_initialized():
        return None
    cpus = [node.get("Resources", {}).get("CPU", 0) for node in ray.nodes() if node.get("Alive")]
    return int(sum(cpus)) or None


#: Starts of the pipeline's own Ray before the driver gives up. Ray 2.60 waits a fixed 30 s
#: (``LOCAL_RAY_RAYLET_WAIT``, not configurable) for its raylet to register, which a loaded
#: machine misses (7 of 7 starts at load 20 to 66 on 2 cores); a second start often
#: finds the files and libraries the first one read in the page cache.
LOCAL_RAY_ATTEMPTS = 3
LOCAL_RAY_RAYLET_WAIT = 30
#: Ray's wait for its GCS to start, in seconds (30 by default), read off this variable.
GCS_WAIT_ENV = "RAY_gcs_server_port_wait_time_s"
GCS_WAIT_SECONDS = 120


def start_local_ray(num_cpus: int | None, attempts: int = LOCAL_RAY_ATTEMPTS) -> Any:
    """``ray.init`` of a Ray of this process's own, tried ``attempts`` times, the GCS given
    ``GCS_WAIT_SECONDS`` (unless $RAY_gcs_server_port_wait_time_s says otherwise). A failed
    start's processes (its GCS, raylet, agents: this process's descendants that the start
    added) are stopped before the next, and after the last: a driver that gives up leaves no Ray
    of its own behind. The last failure is a ServiceError that says what was tried."""
    os.environ.setdefault(GCS_WAIT_ENV, str(GCS_WAIT_SECONDS))
    for attempt in range(1, attempts + 1):
        before = set(reaper.descendants(os.getpid()))
        try:
            return ray_init(
                address="local", num_cpus=num_cpus, log_to_driver=False, include_dashboard=False
            )
        except Exception as e:  # noqa: BLE001 - e.g. an overloaded machine's start timing out
            error = e
        reaper.stop([pid for pid in reaper.descendants(os.getpid()) if pid not in before])
        if attempt < attempts:
            log.warning(
                "a local Ray did not start (attempt %d of %d: %s: %s); its processes are "
                "stopped, starting again",
                attempt,
                attempts,
                type(error).__name__,
                (str(error).strip().splitlines() or [""])[0][:200],
            )
    raise local_ray_error(
        error,
        f"{attempts} attempt{'s' if attempts > 1 else ''}, each waiting "
        f"{LOCAL_RAY_RAYLET_WAIT} s for its raylet and {os.environ[GCS_WAIT_ENV]} s for its GCS "
        "(RAY_gcs_server_port_wait_time_s), its processes stopped after",
    ) from None


class _NotFromTheMainThread(logging.Filter):
    """Drops Ray's warning that ray.init, called from another thread, sets no SIGTERM handler
    (``ray_init`` wants none: the driver has its own)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "SIGTERM handler is not set" not in record.getMessage()


def ray_init(**kwargs) -> Any:
    """``ray.init(**kwargs)`` in a thread of its own, which then stays parked for the life of the
    process, while this thread waits. An interrupt meanwhile (SIGTERM, Ctrl-C) is raised once
    ray.init has returned: cut short inside ray.init, Ray 2.60's driver hangs for good
    (destroying a half-connected GCS client: seen with gdb, a SIGTERM a second after "Started a
    local Ray instance"). From another thread, ray.init also leaves the driver's own SIGTERM
    handler in place (pipeline.sweep.faults.stop_on_sigterm; from the main thread it sets one that exits
    15 without a word). The thread stays: the processes a local Ray starts die with the thread
    that started them (PR_SET_PDEATHSIG), that is with the process."""
    import ray

    outcome: dict[str, Any] = {}
    done = threading.Event()

    def start() -> None:
        try:
            outcome["context"] = ray.init(**kwargs)
        except BaseException as e:  # noqa: BLE001 - raised again in the waiting thread
            outcome["error"] = e
        done.set()
        threading.Event().wait()  # parked

    quiet = logging.getLogger("ray._private.worker")
    drop = _NotFromTheMainThread()
    quiet.addFilter(drop)
    stop: BaseException | None = None
    try:
        threading.Thread(target=start, daemon=True, name="ray.init").start()
        while not done.is_set():
            try:
                done.wait(0.5)
            except KeyboardInterrupt as e:  # SIGTERM (pipeline.sweep.faults.Terminated) or Ctrl-C
                if stop is None:
                    log.warning("stopping as soon as Ray has started (cut short, it would hang)")
                stop = e
    finally:
        quiet.removeFilter(drop)
    if stop is not None:
        raise stop
    if "error" in outcome:
        raise outcome["error"]
    return outcome["context"]


def _reap_at_exit(context) -> None:
    """Our own Ray stops with this driver, even one killed by SIGKILL (pipeline.sweep.reaper): at a
    clean exit Ray is shut down first, then the watchdog finds nothing left."""
    import ray

    session_dir = (getattr(context, "address_info", None) or {}).get("session_dir")
    if not session_dir:
        return
    watchdog = reaper.watch(os.path.basename(session_dir))

    def shutdown() -> None:  # registered after Ray's own handler, so it runs before it
        ray.shutdown()
        watchdog.stdin.close()

    atexit.register(shutdown)


def failure_reason(error: BaseException) -> str:
    """A task's exception as one line: the original error (not Ray's wrapper), type first."""
    cause = getattr(error, "cause", None) or error
    lines = [line.strip() for line in str(cause).strip().splitlines() if line.strip()]
    name = type(cause).__name__
    return (f"{name}: {lines[0]}" if lines else name)[:300]


def runs_in_flight(cpus: int, slots: int, *, carried: bool) -> int:
    """How many runs a sweep keeps in driver threads at once on ``cpus`` CPUs, ``slots`` solves
    at a time. A sweep: ``max(4, 2 * cpus)``, so that a run's driver part (its data, its
    problem) overlaps the others' solves. A carried-on sweep: ``slots``, one run a slot, so that
    its runs start cheapest first exactly: with more in flight Ray starts the queued solves in
    the order their driver parts end, and on breast cancer at epsilon 10 the run priced at 15 CPU
    seconds waited 133 s behind runs priced at 98 and 122 (a run's driver part is seconds, its
    carried-on solve minutes)."""
    return max(1, slots) if carried else max(4, 2 * cpus)


def run_sweep(
    config: Config,
    train: Dataset,
    test: Dataset | None,
    tracker,
    todo: list[RunKey] | None = None,
    prices: Mapping[str, float] | None = None,
) -> tuple[list[RunResult], dict[str, str]]:
    """Run ``todo`` (default: every run not yet FINISHED); ``prices``: a carried-on sweep's
    prices of its carried runs (``pipeline.run.carried_prices``), which start cheapest first
    (``carry_order``).

    Returns (results of this call's runs, {key: one-line reason} of the runs that failed). A
    KeyboardInterrupt propagates; the runs finished until then are already in MLflow.
    """
    import ray

    if todo is None:
        keys = sweep_keys(config)
        done = tracker.finished_keys()
        todo = [k for k in keys if str(k) not in done]
    if not todo:
        return [], {}
    # carried on: the cheapest to certify first; else every cell's first run early (the ETA
    # measures every kind)
    todo = carry_order(todo, prices) if prices else launch_order(todo)
    init_ray(config)
    run_task, solve_task = _remote_functions(config.cluster.cpus_per_task, config.oracle.threads)
    train_ref = ray.put(train)  # the dataset goes into the object store once
    test_ref = ray.put(test)
    cpus = int(ray.cluster_resources().get("CPU", 1))
    slots = max(1, cpus // config.oracle.threads)
    in_flight = runs_in_flight(cpus, slots, carried=bool(prices))
    board = make_board()  # the running solves' progress (pipeline.sweep.progress); None: without
    # how many runs wait for a CPU: a running solve grows onto idle CPUs only while none does,
    # and gives them back when some do (pipeline.elastic_solve)
    unfinished = [len(todo)]
    demand = demand_actor(ray, max(0, len(todo) - slots))
    progress = Progress(
        len(todo),
        keys=todo,
        slots=slots,
        limit=config.oracle.time_limit,
        every=PROGRESS_EVERY,
        unlimited={k.mechanism for k in todo if config.mechanisms[k.mechanism].name in NON_ORACLE},
        # carried on: each run planned by its price (NaN: unknown, up to its limit), not by the
        # cheaper runs that finish first
        prices={str(k): prices.get(str(k), math.nan) for k in todo} if prices else None,
    )
    failed: dict[str, str] = {}
    results: list[RunResult] = []

    def work(key: RunKey):
        progress.started(key)
        return run_on_cluster(
            config, key, train, test, run_task, solve_task, train_ref, test_ref, board
        )

    def tick() -> None:
        if progress.due():
            progress.show_running(read_board(board))
        else:
            progress.redraw()

    try:
        for key, value, error in _in_threads(
            todo,
            in_flight,
            work,
            heartbeat=tracker.heartbeat,  # the lease on the parent run: this driver is alive
            tick=tick,
            wait=min(HEARTBEAT, PROGRESS_EVERY, REDRAW_EVERY),
        ):
            unfinished[0] -= 1
            set_waiting(demand, unfinished[0] - slots)
            if error is not None:
                # a run failed for good: record why, go on, redo it on the next run
                reason = failure_reason(error)
                failed[str(key)] = reason
                log.error("run %s failed: %s", key, reason)
                tracker.log_failed_child(str(key), key.mechanism, reason)
                progress.update(f"{key.label} FAILED", key)
                continue
            result, release = value
            tracker.log_child(result, release, dataclasses.asdict(config.mechanisms[key.mechanism]))
            results.append(result)
            progress.update(finished_line(key, result), key)
    finally:
        progress.close()
        close_board(board)
        if demand is not None:
            ray.kill(demand)
    return results, failed


def finished_line(key: RunKey, result: RunResult) -> str:
    """A finished run's progress line: ``opdisc/eps=1/run=0: acc 0.870, privacy holds``; a
    reference's says what it is, not ``eps=inf`` nor ``privacy non-private``:
    ``erm_01 (non-private reference): acc 0.873``."""
    if key.mechanism in NON_PRIVATE:
        return f"{key.label}: {_headline(result)}"
    return f"{key.label}: {_headline(result)}, privacy {result.privacy_status}"


def _headline(result: RunResult) -> str:
    """What a finished run's progress line says, as its entry's kind says it: a classifier's
    training accuracy, a synthetic table's largest marginal error."""
    return CATALOG[result.mechanism].headline(result.scores)


def _in_threads(
    keys: list[RunKey], in_flight: int, work, *, heartbeat, tick=None, wait: float | None = None
):
    """Yield (key, work(key), None) or (key, None, error) as they complete, ``in_flight``
    daemon threads working at a time (daemons: an interrupted driver exits without waiting for
    the cluster); ``heartbeat()`` and ``tick()`` at least every ``wait`` seconds (default and
    at most HEARTBEAT). A ``tick`` that raises is logged, never the sweep's failure."""
    wait = HEARTBEAT if wait is None else min(wait, HEARTBEAT)
    todo: queue.Queue = queue.Queue()
    for key in keys:
        todo.put(key)
    done: queue.Queue = queue.Queue()

    def worker() -> None:
        while True:
            try:
                key = todo.get_nowait()
            except queue.Empty:
                return
            try:
                done.put((key, work(key), None))
            except Exception as e:  # noqa: BLE001 - the run's failure, reported by the caller
                done.put((key, None, e))

    for _ in range(min(in_flight, len(keys))):
        threading.Thread(target=worker, daemon=True).start()
    try:
        for _ in range(len(keys)):
            while True:
                heartbeat()
                if tick is not None:
                    try:
                        tick()
                    except Exception as e:  # noqa: BLE001 - progress is best effort
                        log.debug("progress tick failed: %r", e)
                try:
                    item = done.get(timeout=wait)
                    break
                except queue.Empty:
                    continue
            yield item
    finally:  # the caller stopped (an interrupt, a full disk): no worker starts another run
        while True:
            try:
                todo.get_nowait()
            except queue.Empty:
                break
