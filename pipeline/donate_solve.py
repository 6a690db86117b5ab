"""Work donation on Ray: the workers of ``oracles.window.donate`` as Ray tasks pulling from one pool.

``WindowOracle(parts=N, map_parts=ray_donating_parts())`` (``oracles.window.oracle``) runs the same
search as the one-process solve; only where the workers run changes:

* the pool (``oracles.window.donate.LocalPool`` with the shared best value, ``RayPool``) is a Ray actor
  holding no CPU (like ``pipeline.progress.ProgressBoard``); the search's ``Tables`` go to the
  object store once, and each worker makes their arrays writable (``writable``);
* each worker is a Ray task (``donating_part_task``) that takes a unit from the pool, searches it
  ``oracles.window.donate.WORKER_CHUNK`` nodes at a time, and between chunks offers its best, reads the
  pool's state (how many units idle workers want, whether the solve has ended, the best value)
  and donates when a worker is idle and the pool empty. It never blocks on the actor while it
  holds work (a task in ``ray.get`` or ``ray.wait``, even with timeout 0, lends its CPU to
  another task): a read is taken only once it has arrived (``Pending``: the call's future). An
  idle worker polls the pool every ``IDLE_SECONDS``;
* a LOST worker (its task raised or its node died) does not void the solve: its lease goes back
  to the pool (``LocalPool.requeue``) and is searched again from its own prefixes by whichever
  worker takes it, and a replacement task is started (at most ``MAX_RELAUNCHES`` times a solve).
  Until the lease is back, no other worker can see the pool as finished, so nothing is left out;
* a worker holds ``cpus_per_task`` CPUs and records them as its ``threads`` (``assigned_cpus``),
  which the certificate reports;
* the driver waits for the workers until the solve's deadline plus ``PART_GRACE_SECONDS``; a
  worker not back by then (still searching, or never started because the cluster's CPUs are
  busy) is cancelled and its lease counted as open (the pool's ``left``), so the solve returns
  on time and its open nodes stay exact for carrying on (``oracles.window.checkpoint``).

Runs on whatever Ray the caller connected to (``pipeline.sweep.init_ray``: ``cluster.address``
or a local Ray); ``pipeline.tasks.oracle_for`` gives it to the window search when
``oracle.parts`` > 1.
"""

from __future__ import annotations

import dataclasses
import math
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from oracles.base import Status
from oracles.window.tree import Tables
from oracles.budget import Budget, now
from oracles.window.donate import (
    IDLE_SECONDS,
    MIN_LEVELS_LEFT,
    WORKER_CHUNK,
    LocalPool,
    Worker,
    per_task,
    pool_units,
    with_pool_left,
)
from oracles.window.split import PartResult, PartTask

#: Seconds between two looks at the pool of a busy worker (an idle one looks at once). Every
#: look is a round trip to the pool's actor; looked at after every chunk (about 40 a second a
#: worker), a two-node solve's workers got 1.80 CPU s a wall second, and 1.83-1.85 with this
#: (docs/results/parts_balance.md).
LOOK_EVERY = 0.1
#: Replacement tasks a solve starts for workers Ray lost.
MAX_RELAUNCHES = 4
#: How long after the parts' deadline the driver still waits for their results (a part checks
#: its deadline itself; this covers returning its result).
PART_GRACE_SECONDS = 5.0


def assigned_cpus() -> int:
    """The CPUs the running Ray task holds (at least 1)."""
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, int(round(cpus)))


def writable(tables: Tables) -> Tables:
    """``tables`` with writable arrays. Read from Ray's object store they are read-only, and the
    compiled search (``oracles.window.kernel``) compiles another specialization of itself for
    read-only arrays in every worker: measured 4.5 s on top of a 1 s search, so that a part of a
    short solve was cancelled at its deadline before that compilation ever reached numba's cache.
    """
    copies = {}
    for name in (f.name for f in dataclasses.fields(tables)):
        value = getattr(tables, name)
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            copies[name] = np.array(value)
    return dataclasses.replace(tables, **copies) if copies else tables


class Pending:
    """An actor call's answer, looked at without blocking. ``ObjectRef.future``: a task that
    calls ``ray.wait`` (even with timeout 0) or ``ray.get`` is marked blocked and lends its CPU
    to another task (measured on a one-CPU Ray: a second task started 0.4 s after a task began
    polling with ``ray.wait(timeout=0)``, and not before the first ended when it polled a
    future)."""

    def __init__(self, ref: Any) -> None:
        self.future = ref.future()

    def ready(self) -> bool:
        return self.future.done()

    def value(self) -> Any:
        return self.future.result()


class RayPool(LocalPool):
    """The pool with the least exact objective any worker has found (a Ray actor)."""

    def __init__(
        self, units: Sequence[np.ndarray], best: float, adopted: Sequence[int] = ()
    ) -> None:
        super().__init__(units)
        self.best = float(best)
        self.recalled: set[int] = set()
        self.seen: set[int] = set()
        for worker in adopted:  # workers whose nodes came from elsewhere (``adopt``)
            self.adopt(worker)

    def offer(self, value: float) -> float:
        self.best = min(self.best, float(value))
        return self.best

    def started(self) -> int:
        """How many workers have looked at the pool (started running)."""
        return len(self.seen - {-1})

    def recall(self, workers: Sequence[int]) -> None:
        """Ask these workers to give their open nodes back to the pool and end
        (``pipeline.elastic_solve``)."""
        self.recalled.update(int(i) for i in workers)

    def look(self, worker: int = -1) -> tuple[int, bool, float, bool]:
        """``status()``, the best value and whether ``worker`` is recalled, in one round trip
        (a worker's first look says it has started: ``started``)."""
        self.seen.add(worker)
        wanted, finished = self.status()
        return wanted, finished, self.best, worker in self.recalled


def donating_part_task(
    tables: Tables,
    index: int,
    pool: Any,
    budget: Budget,
    start_value: float,
    chunk: int = WORKER_CHUNK,
    min_levels: int = MIN_LEVELS_LEFT,
) -> PartResult:
    """Worker ``index`` on a Ray worker (module docstring): its ``PartResult``, its open nodes
    when the budget stopped it."""
    import ray

    start, cpu = time.perf_counter(), time.process_time()
    w = Worker(writable(tables), index, start_value, min_levels)
    looking: Pending | None = Pending(pool.look.remote(index))
    looked = time.perf_counter()
    taking: Pending | None = None
    idle_look = False
    wanted, known, offered = 0, float(start_value), math.inf
    message = ""
    while True:
        if budget.expired() or budget.spent(w.made):
            message = budget.stopped_by(w.made)
            break
        if looking is not None and looking.ready():
            wanted, finished, best, recalled = looking.value()
            known, looking = min(known, best), None
            if recalled:  # runs wait for this CPU: the open nodes back to the pool, and end
                back = list(w.hand_back())
                if taking is not None:  # a unit leased meanwhile goes back too
                    taken = taking.value()
                    back += [taken[1]] if taken is not None else []
                pool.put.remote(index, back, w.unit_made)
                break
            if idle_look and finished:  # a look sent after an empty take: the solve ended
                break
            idle_look = False
        if looking is None and (not w.busy or time.perf_counter() - looked >= LOOK_EVERY):
            looking, looked = Pending(pool.look.remote(index)), time.perf_counter()
        if not w.busy:
            if taking is None and not idle_look:
                taking = Pending(pool.take.remote(index, w.unit_made))
            if taking is None or not taking.ready():
                time.sleep(IDLE_SECONDS)
                continue
            taken, taking = taking.value(), None
            if taken is None:  # idle: the next look (sent after this take) says if it ended
                looking, idle_look = Pending(pool.look.remote(index)), True
                time.sleep(IDLE_SECONDS)
                continue
            w.load(taken[1])
        w.step(budget.chunk(w.made, chunk) or 1, known)
        if w.value < offered:
            offered = w.value
            pool.offer.remote(offered)
        if w.busy and wanted > 0:
            given = w.donate()
            if given is not None:
                pool.put.remote(index, [given], w.unit_made)
            wanted = 0  # until the next look
    status = Status.TIME_LIMIT if message else Status.OPTIMAL
    result = w.result(
        status, float(start_value), time.perf_counter() - start, time.process_time() - cpu, message
    )
    ray.get(pool.release.remote(index, w.unit_made))
    return dataclasses.replace(result, threads=assigned_cpus())


def _gone(index: int, message: str, threshold: float, status: Status) -> PartResult:
    """A worker that did not come back: nothing found, its lease back in the pool (so its
    nodes are the pool's, and no bound of its own)."""
    return PartResult(
        index, status, math.inf, None, math.inf, threshold, 0.0, message=message, open=()
    )


class RayDonatingParts:
    """``map_parts`` for ``oracles.window.WindowOracle``: ``workers`` Ray tasks (default: one a
    plan task) sharing one pool (module docstring). Keeps ``best_seen`` (the pool's best at the
    end), ``donations``, ``relaunched`` and ``unit_records`` of the last call."""

    def __init__(
        self,
        cpus_per_task: int = 1,
        workers: int | None = None,
        chunk: int = WORKER_CHUNK,
        min_levels: int = MIN_LEVELS_LEFT,
    ) -> None:
        if cpus_per_task < 1:
            raise ValueError(f"cpus_per_task must be >= 1, found {cpus_per_task!r}")
        self.cpus_per_task, self.workers = int(cpus_per_task), workers
        self.chunk, self.min_levels = chunk, min_levels
        self.best_seen = math.inf
        self.donations = self.relaunched = 0
        self.unit_records: list = []

    def __call__(
        self, tables: Tables, tasks: Sequence[PartTask], incumbent: float
    ) -> list[PartResult]:
        import ray

        budget = tasks[0].budget if tasks else Budget(math.inf)
        pool = ray.remote(num_cpus=0, max_restarts=0)(RayPool).remote(pool_units(tasks), incumbent)
        remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=0)(donating_part_task)
        shared = ray.put(tables)

        def launch(i: int):
            return remote.remote(shared, i, pool, budget, incumbent, self.chunk, self.min_levels)

        count = self.workers or len(tasks)
        refs = {launch(i): i for i in range(count)}
        results: dict[int, PartResult] = {}
        until = budget.deadline + PART_GRACE_SECONDS
        self.relaunched = 0
        try:
            while refs:
                timeout = None if until == math.inf else max(0.0, until - now())
                ready, _ = ray.wait(list(refs), num_returns=1, timeout=timeout)
                if not ready:  # past the deadline: the rest are cancelled, their leases open
                    for ref, i in refs.items():
                        ray.cancel(ref, force=True)
                        ray.get(pool.requeue.remote(i))
                        message = "the worker had not returned by the solve's deadline"
                        results[i] = _gone(i, message, incumbent, Status.TIME_LIMIT)
                    refs = {}
                    break
                for ref in ready:
                    i = refs.pop(ref)
                    try:
                        results[i] = ray.get(ref)
                    except ray.exceptions.RayError as err:  # lost: its lease back to the pool
                        ray.get(pool.requeue.remote(i))
                        if self.relaunched < MAX_RELAUNCHES:
                            self.relaunched += 1
                            refs[launch(i)] = i
                        else:
                            message = f"lost ({type(err).__name__}); its units in the pool"
                            results[i] = _gone(i, message, incumbent, Status.OPTIMAL)
            left = ray.get(pool.left.remote())
            self.best_seen = ray.get(pool.offer.remote(math.inf))
            self.donations = ray.get(pool.donations_made.remote())
            self.unit_records = ray.get(pool.unit_records.remote())
        except BaseException:
            for ref in refs:
                ray.cancel(ref)
            raise
        finally:
            ray.kill(pool)
        ordered = with_pool_left([results[i] for i in range(count)], left, tables)
        return per_task(ordered, len(tasks), float(incumbent))


def ray_donating_parts(cpus_per_task: int = 1, workers: int | None = None) -> RayDonatingParts:
    """The Ray ``map_parts`` with work donation, each worker holding ``cpus_per_task`` CPUs."""
    return RayDonatingParts(cpus_per_task, workers)


__all__ = [
    "LOOK_EVERY",
    "MAX_RELAUNCHES",
    "PART_GRACE_SECONDS",
    "Pending",
    "RayDonatingParts",
    "RayPool",
    "assigned_cpus",
    "donating_part_task",
    "ray_donating_parts",
    "writable",
]
