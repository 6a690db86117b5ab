"""A sweep's idle CPUs go to its running solves (issue 38, item 3): a window search that grows
onto idle CPUs of the Ray cluster while no run waits, and shrinks back when runs wait again.

``ElasticParts`` is the ``map_parts`` a sweep gives the window search by default
(``pipeline.tasks.oracle_for``; ``oracle.parts`` > 1 stays an explicit override). It searches in
the solve's own task (worker 0 of ``oracles.window.donate``, on a pool in this process), so a solve that
ends quickly costs no more than before. About every ``GROW_EVERY`` seconds it looks at the
cluster:

* when CPUs are idle (``ray.available_resources``) and no run of the sweep waits for one (the
  sweep's ``Demand`` actor, which the driver keeps up to date; without one, idle CPUs alone
  decide), the pool moves into a Ray actor (``pipeline.donate_solve.RayPool``) and one extra
  worker task starts a idle CPU (``donate_solve.donating_part_task``): they take what worker 0
  donates (``Worker.donate``) and donate to each other;
* when runs wait and no CPU is idle, extras are RECALLED: each gives its open nodes back to the
  pool (``Worker.hand_back``) and ends, so the waiting run gets its CPU; worker 0 and the others
  search what was handed back.

The answer and certificate are the one-process ones (``oracles.window.donate``'s argument: every node
is in exactly one worker's search or the pool, whichever CPU it moves to); a lost extra's lease
goes back to the pool and is searched again.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections.abc import Sequence
from typing import Any

from oracles.base import Status
from oracles.window.tree import ESTIMATE_EVERY, Estimate, Tables
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
from oracles.solve_progress import Reporter, reporter
from oracles.window.split import BACKEND, PartResult, PartTask
from pipeline.donate_solve import (
    LOOK_EVERY,
    PART_GRACE_SECONDS,
    Pending,
    RayPool,
    donating_part_task,
)

log = logging.getLogger(__name__)

#: Seconds between two looks at the cluster's idle CPUs and the sweep's waiting runs.
GROW_EVERY = 1.0
#: How long a finished solve waits for its extras to return before it cancels them (an extra
#: that never got a CPU: the solve ended first).
FINISH_SECONDS = 5.0
#: The name of a sweep's ``Demand`` actor (in the sweep's own Ray namespace).
DEMAND_NAME = "sweep-demand"


class Demand:
    """How many of the sweep's runs wait for a CPU (a Ray actor the sweep's driver keeps up to
    date: the runs not finished beyond the sweep's slots, ``pipeline.sweep.run_sweep``)."""

    def __init__(self, waiting: int = 0) -> None:
        self.runs = int(waiting)

    def set(self, waiting: int) -> None:
        self.runs = max(0, int(waiting))

    def waiting(self) -> int:
        return self.runs


def demand_actor(ray: Any, waiting: int) -> Any | None:
    """A sweep's ``Demand`` actor under ``DEMAND_NAME`` (no CPU), or None (logged) if Ray
    cannot make one: the sweep's solves then grow onto idle CPUs whatever waits."""
    try:
        return (
            ray.remote(num_cpus=0, max_restarts=0)(Demand)
            .options(name=DEMAND_NAME, get_if_exists=True)
            .remote(waiting)
        )
    except Exception as err:  # noqa: BLE001 - best effort, as the progress board
        log.warning("no demand actor (solves grow onto idle CPUs whatever waits): %r", err)
        return None


def set_waiting(demand: Any | None, waiting: int) -> None:
    """Tell the sweep's ``Demand`` how many runs wait (nothing without one)."""
    if demand is not None:
        demand.set.remote(max(0, int(waiting)))


class _Cluster:
    """What the solve reads about the cluster without blocking: idle CPUs now, and the runs
    waiting as last read from the sweep's ``Demand`` (0 without one; 1 until its first answer
    arrives: no growth on a guess)."""

    def __init__(self, ray: Any) -> None:
        self.ray = ray
        try:
            self.demand = ray.get_actor(DEMAND_NAME)
        except Exception:  # noqa: BLE001 - none (ValueError), or a Ray that has no actors
            self.demand = None
        self.pending = None
        self.waiting = 0 if self.demand is None else 1

    def look(self) -> tuple[int, int]:
        if self.demand is not None:
            if self.pending is not None and self.pending.ready():
                try:
                    self.waiting = int(self.pending.value())
                except self.ray.exceptions.RayError:
                    self.demand = None
                self.pending = None
            if self.pending is None and self.demand is not None:
                self.pending = Pending(self.demand.waiting.remote())
        try:
            idle = int(self.ray.available_resources().get("CPU", 0.0))
        except Exception:  # noqa: BLE001 - a Ray that cannot say: never grow on a guess
            idle = 0
        return idle, self.waiting


class ElasticParts:
    """``map_parts`` that grows onto idle CPUs and shrinks back (module docstring). It is a
    default (``elastic``): the window search runs on its budget's threads instead when the
    budget has more than one or shares a race's best (``oracles.window.oracle``). While it has not
    grown it reports the search's best and bound (``oracles.solve_progress``); once grown, the
    best known, the bound proven when it grew and how many CPUs it searches on. Keeps, of
    its last call: ``extras`` (extra workers started), ``recalled``, ``grown_at`` (seconds
    after the start when the pool moved to Ray, or None), ``worker_seconds`` (the seconds every
    worker searched, extras included), ``seconds`` (the call's), ``nodes`` (the Ray nodes its
    workers ran on) and from the growth on, ``tail_worker_seconds`` and ``tail_cpu_seconds``
    (every worker's); ``record()`` puts them in the certificate."""

    elastic = True

    def __init__(
        self,
        chunk: int = WORKER_CHUNK,
        min_levels: int = MIN_LEVELS_LEFT,
        grow_every: float = GROW_EVERY,
        max_extras: int | None = None,
        estimate_every: float = ESTIMATE_EVERY,
    ) -> None:
        self.chunk, self.min_levels, self.grow_every = chunk, min_levels, grow_every
        self.estimate_every = estimate_every
        self.max_extras = max_extras
        self.extras = self.recalled = 0
        self.grown_at: float | None = None
        self.cpu_at_grow = 0.0
        self.worker_seconds = self.seconds = 0.0
        self.tail_worker_seconds = self.tail_cpu_seconds = 0.0
        self.nodes: set[str] = set()

    def record(self) -> dict[str, float]:
        """What the last call did on the cluster, for its certificate's ``extra``: nothing if it
        never grew; else its extras, the Ray nodes its workers ran on, when it grew (seconds
        after its start), and from then on its seconds, its workers' seconds and their CPU
        seconds (``elastic_tail_cpu_seconds / elastic_tail_seconds``: the CPUs it got)."""
        if self.grown_at is None:
            return {}
        return {
            "elastic_extras": self.extras,
            "elastic_recalled": self.recalled,
            "elastic_nodes": len(self.nodes),
            "elastic_grown_at": self.grown_at,
            "elastic_tail_seconds": self.seconds - self.grown_at,
            "elastic_tail_worker_seconds": self.tail_worker_seconds,
            "elastic_tail_cpu_seconds": self.tail_cpu_seconds,
        }

    def __call__(
        self,
        tables: Tables,
        tasks: Sequence[PartTask],
        incumbent: float,
        *,
        progress: Reporter | None = None,
        estimate: Estimate | None = None,
    ) -> list[PartResult]:
        """The search (class docstring). ``progress`` hears the best and the bound while it
        has not grown (one worker: its bound is the whole's), with ``estimate``'s note every
        ``estimate_every`` seconds (``oracles.window.oracle``); None: a reporter of its own."""
        import ray

        start, cpu = time.perf_counter(), time.process_time()
        budget = tasks[0].budget if tasks else Budget(math.inf)
        w = Worker(tables, 0, incumbent, self.min_levels)
        local = LocalPool(pool_units(tasks))
        cluster = _Cluster(ray) if ray.is_initialized() else None
        self.extras = self.recalled = 0
        self.grown_at, self.cpu_at_grow = None, 0.0
        self.nodes = {_node_id(ray)} if cluster is not None else set()
        self._started: Pending | None = None
        self._seen = 0
        pool = None
        running: dict[Any, int] = {}
        done: list[PartResult] = []
        shared = None
        looked = start
        looking: Pending | None = None
        looked_at = start  # when worker 0 last sent a look at the pool
        taking: Pending | None = None
        idle_look = False
        known, offered, wanted = float(incumbent), math.inf, 0
        message = ""
        progress = reporter(tables.problem.label, BACKEND) if progress is None else progress
        note, noted = "", start
        proven = -math.inf  # the least bound left when it grew (it only rises after)
        while True:
            if budget.expired() or budget.spent(w.made):
                message = budget.stopped_by(w.made)
                break
            if pool is None:
                if not w.busy:
                    taken = local.take(0, w.unit_made)
                    if taken is None:
                        break
                    w.load(taken[1])
            else:
                if looking is None and (
                    not w.busy or time.perf_counter() - looked_at >= LOOK_EVERY
                ):
                    looking, looked_at = Pending(pool.look.remote(0)), time.perf_counter()
                if looking is not None and looking.ready():
                    wanted, finished, best, _ = looking.value()
                    known, looking = min(known, best), None
                    if idle_look and finished:  # a look sent after an empty take: it ended
                        break
                    idle_look = False
                if not w.busy:
                    if taking is None and not idle_look:
                        taking = Pending(pool.take.remote(0, w.unit_made))
                    taken = None
                    if taking is not None and taking.ready():
                        taken, taking = taking.value(), None
                        if taken is None:  # idle: the next look says whether it ended
                            looking, idle_look = Pending(pool.look.remote(0)), True
                    if taken is None:
                        time.sleep(IDLE_SECONDS)
                    else:
                        w.load(taken[1])
            if w.busy:
                w.step(budget.chunk(w.made, self.chunk) or 1, known)
                if pool is None and progress.due():  # one worker: its bound is the whole's
                    found = min(w.value, w.best)
                    queued = local.queued()
                    least = min(found, w.least_bound_left(), -math.inf if queued else math.inf)
                    if estimate is not None and time.perf_counter() - noted >= self.estimate_every:
                        note, noted = (
                            estimate(found, w.open() + queued, w.made),
                            time.perf_counter(),
                        )
                    progress.report(found, least, note=note)
                elif pool is not None and progress.due():  # grown: the best known, the bound
                    # proven when it grew; the whole's is known when the workers stop
                    cpus = f"searching on {1 + len(running)} CPUs of the cluster"
                    progress.report(min(known, w.best), proven, note=cpus)
                if pool is not None:
                    if w.value < offered:
                        offered = w.value
                        pool.offer.remote(offered)
                    if w.busy and wanted > 0:
                        given = w.donate()
                        if given is not None:
                            pool.put.remote(0, [given], w.unit_made)
                        wanted = 0
            if cluster is not None and time.perf_counter() - looked >= self.grow_every:
                looked = time.perf_counter()
                if pool is not None:
                    self._collect(ray, running, done, pool, block=False)
                grown = pool is not None
                if not grown:  # the bound proven so far, should it grow now (as reported)
                    queued = local.queued()
                    found = min(w.value, w.best)
                    proven = min(found, w.least_bound_left(), -math.inf if queued else math.inf)
                pool, shared = self._resize(
                    ray,
                    cluster,
                    local,
                    pool,
                    shared,
                    running,
                    tables,
                    budget,
                    min(known, w.best),
                    looked - start,
                )
                if pool is not None and not grown:
                    self.cpu_at_grow = time.process_time() - cpu
        status = Status.TIME_LIMIT if message else Status.OPTIMAL
        own = w.result(
            status,
            float(incumbent),
            time.perf_counter() - start,
            time.process_time() - cpu,
            message,
        )
        local.release(0, w.unit_made)  # its open nodes are in ``own``
        left: tuple = local.left()
        if pool is not None:
            ray.get(pool.release.remote(0, w.unit_made))
            until = budget.deadline + PART_GRACE_SECONDS
            if not message:  # finished: an extra still queued for a CPU is of no use
                until = min(until, now() + FINISH_SECONDS)
            self._collect(ray, running, done, pool, block=True, until=until)
            left = ray.get(pool.left.remote())
            ray.kill(pool)
        self.seconds = time.perf_counter() - start
        self.worker_seconds = own.seconds + sum(r.seconds for r in done)
        if self.grown_at is not None:  # from the growth on: the workers' seconds and CPU
            tail = own.seconds - self.grown_at
            self.tail_worker_seconds = tail + sum(r.seconds for r in done)
            own_cpu = own.cpu_seconds - self.cpu_at_grow
            self.tail_cpu_seconds = own_cpu + sum(r.cpu_seconds for r in done)
        results = with_pool_left([own, *done], left, tables)
        results = [_renumbered(r, i) for i, r in enumerate(results)]
        return per_task(results, len(tasks), float(incumbent))

    def _resize(
        self, ray, cluster, local, pool, shared, running, tables, budget, best, at
    ) -> tuple[Any, Any]:
        """Grow onto idle CPUs while no run waits, recall extras while runs wait and no CPU is
        idle (module docstring); returns the pool (a Ray actor once grown) and the tables'
        object reference."""
        idle, waiting = cluster.look()
        if pool is not None:  # how many extras have started (worker 0 counts: it looks too)
            if self._started is None:
                self._started = Pending(pool.started.remote())
            elif self._started.ready():
                self._seen, self._started = self._started.value(), None
        if idle >= 1 and waiting == 0:
            room = idle if self.max_extras is None else min(idle, self.max_extras - len(running))
            if room < 1 or (pool is not None and self._seen < self.extras + 1):
                return pool, shared  # Ray's idle CPUs lag: wait until the last extra started
            if pool is None:  # grow: the pool moves to a Ray actor
                pool = ray.remote(num_cpus=0, max_restarts=0)(RayPool).remote(
                    local.queued(), best, (0,)
                )
                shared = ray.put(tables)
                self.grown_at = at
            task = ray.remote(num_cpus=1, max_retries=0)(_located_part_task)
            # one a look: Ray's count of idle CPUs lags the tasks just started
            for _ in range(min(room, 1)):
                self.extras += 1
                ref = task.remote(
                    shared, self.extras, pool, budget, best, self.chunk, self.min_levels
                )
                running[ref] = (self.extras, Pending(ref))
        elif waiting > 0 and idle == 0 and running:
            recall = sorted(i for i, _ in running.values())[-waiting:]
            pool.recall.remote(recall)
            self.recalled += len(recall)
        return pool, shared

    def _collect(
        self, ray, running: dict, done: list, pool, *, block: bool, until: float = math.inf
    ) -> None:
        """The extras that returned (``running``: their reference -> (index, ``Pending``)):
        their results, a lost one's lease back to the pool. Without ``block`` it never waits
        (``Pending``); with it, every extra is waited for until ``until`` (then cancelled, its
        lease open)."""
        while running:
            back = [ref for ref, (_, pending) in running.items() if pending.ready()]
            if not back:
                if not block:
                    return
                timeout = None if until == math.inf else max(0.0, until - now())
                back, _ = ray.wait(list(running), num_returns=1, timeout=timeout)
                if not back:
                    for ref, (i, _) in running.items():
                        ray.cancel(ref, force=True)
                        ray.get(pool.requeue.remote(i))
                    running.clear()
                    return
            for ref in back:
                i, _ = running.pop(ref)
                try:
                    result, node = ray.get(ref)
                except ray.exceptions.RayError:
                    ray.get(pool.requeue.remote(i))
                else:
                    done.append(result)
                    self.nodes.add(node)


def _node_id(ray) -> str:
    """The Ray node this process runs on ("" outside a Ray worker or driver)."""
    try:
        return ray.get_runtime_context().get_node_id() or ""
    except Exception:  # noqa: BLE001 - a node id is a record, never a reason to fail
        return ""


def _located_part_task(*args: Any) -> tuple[PartResult, str]:
    """``donating_part_task`` and the Ray node it ran on."""
    import ray

    return donating_part_task(*args), _node_id(ray)


def _renumbered(r: PartResult, index: int) -> PartResult:
    """``r`` as worker ``index`` (the extras' indices count every extra ever started)."""
    return dataclasses.replace(r, index=index)


def elastic_parts() -> ElasticParts:
    """The sweep's default ``map_parts`` for the window search (``ElasticParts``)."""
    return ElasticParts()


__all__ = [
    "DEMAND_NAME",
    "GROW_EVERY",
    "Demand",
    "ElasticParts",
    "demand_actor",
    "elastic_parts",
    "set_waiting",
]
