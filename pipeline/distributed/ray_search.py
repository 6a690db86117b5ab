"""``RaySearch``: the window search's executor on a Ray cluster (``oracles.window.engine``).

The search starts in the solve's own task: worker 0 on a pool in this process, so a solve that
ends quickly costs no more than in one process. Two things move it onto the cluster:

* ``extras`` (``oracle.parts`` - 1): the pool moves into a Ray actor at once
  (``ray_pool``) and that many extra workers start as Ray tasks of ``cpus_per_task`` CPUs each; a
  lost one's lease goes back to the pool and a replacement starts (at most ``MAX_RELAUNCHES``);
* ``grow`` (a sweep's default): about every ``GROW_EVERY`` seconds the solve looks at the
  cluster. When CPUs are idle (``ray.available_resources``) and no run of the sweep waits for
  one (the sweep's ``Demand`` actor, which the driver keeps up to date; without one, idle CPUs
  alone decide), the pool moves into a Ray actor and one extra worker starts an idle CPU; when
  runs wait and no CPU is idle, extras are RECALLED: each gives its open nodes back to the pool
  and ends, so the waiting run gets its CPU.

  The idle CPUs go to the solve nearest to certifying first (issue 45: two solves priced at
  hours took both CPUs while one priced at 5 CPU minutes waited). A solve that would grow
  first, or that has run ``PRICE_AFTER`` seconds, prices itself (``price_of``: the tree below
  its open nodes, ``tree_size``, at its own node rate; it grows from the next look on, ranked at
  that price) and says its price to the ``Demand`` at every look; the ``Demand`` answers its
  RANK, how many running solves are cheaper. A solve grows only while more CPUs are idle than
  its rank: the cheapest takes the first idle CPU, the next the second, and so on, so an idle
  CPU still goes to someone when the cheapest cannot take it. A price not said again within
  ``PRICE_HOLDS`` seconds (a solve that ended or died) no longer counts.

Every worker runs the one loop (``engine.search``) against the one pool: worker 0 through a
client that starts local and moves with the pool (``Moving``), the extras through
``ray_pool.RayClient``. The answer and certificate are the one-process ones whichever CPU a node
moves to (``oracles.window.engine``). The solve waits for its extras until its deadline plus
``PART_GRACE_SECONDS`` (when it finished, at most ``FINISH_SECONDS`` more: an extra still queued
for a CPU is of no use); one not back by then is cancelled and its lease counted as open, so the
solve returns on time and its open nodes stay exact for carrying on.
"""

from __future__ import annotations

import logging
import math
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from oracles.contract.budget import Budget, now
from oracles.contract.stats import ClusterStats
from oracles.window.engine import (
    WORKER_CHUNK,
    Executor,
    Job,
    Searched,
    WorkerResult,
    drive,
    searched,
)
from oracles.window.oracle import cost_left
from oracles.window.pool import LocalClient, Look, Pool
from oracles.window.tree import Tables
from oracles.window.worker import MIN_LEVELS_LEFT, Worker
from pipeline.distributed.ray_pool import Pending, RayClient, node_id, worker_task

log = logging.getLogger(__name__)

#: Seconds between two looks at the cluster's idle CPUs and the sweep's waiting runs.
GROW_EVERY = 1.0
#: How long a finished solve waits for its extras to return before it cancels them.
FINISH_SECONDS = 5.0
#: How long after the solve's deadline it still waits for its extras' results (an extra checks
#: the deadline itself; this covers returning its result).
PART_GRACE_SECONDS = 5.0
#: Replacement tasks a solve with fixed extras starts for extras Ray lost.
MAX_RELAUNCHES = 4
#: The name of a sweep's ``Demand`` actor (in the sweep's own Ray namespace).
DEMAND_NAME = "sweep-demand"
#: Seconds a solve's price counts on the ``Demand`` after it last said it (it says it at every
#: look, about every ``GROW_EVERY`` seconds): a solve that ended or died stops counting.
PRICE_HOLDS = 10.0
#: Seconds after its start a solve prices itself (``price_of``) whether or not it may grow, so
#: that the solves running when a CPU falls idle have their prices said (a shorter one never
#: pays for the estimate); one that may grow earlier prices itself then.
PRICE_AFTER = 2.0


class Demand:
    """How many of the sweep's runs wait for a CPU (a Ray actor the sweep's driver keeps up to
    date: the runs not finished beyond the sweep's slots, ``pipeline.sweep.fan_out.run_sweep``), and
    the running solves' prices, which say whose turn it is to grow (module docstring)."""

    def __init__(self, waiting: int = 0, clock: Callable[[], float] = time.monotonic) -> None:
        self.runs = int(waiting)
        self.clock = clock
        self.prices: dict[str, tuple[float, float]] = {}  # solve: (CPU seconds left, said at)

    def set(self, waiting: int) -> None:
        self.runs = max(0, int(waiting))

    def waiting(self) -> int:
        return self.runs

    def look(self, solve: str, price: float = math.nan) -> tuple[int, int]:
        """(runs waiting, ``solve``'s rank): its ``price`` (CPU seconds it still needs to
        certify; NaN: not known, not recorded) kept, and how many other solves whose price
        holds are cheaper (ties: the lesser name first). An unpriced solve ranks after every
        priced one."""
        now = self.clock()
        if math.isfinite(price):
            self.prices[solve] = (float(price), now)
        self.prices = {k: v for k, v in self.prices.items() if now - v[1] <= PRICE_HOLDS}
        own = self.prices.get(solve)
        others = [(p, k) for k, (p, _) in self.prices.items() if k != solve]
        if own is None:
            return self.runs, len(others)
        return self.runs, sum((p, k) < (own[0], solve) for p, k in others)

    def gone(self, solve: str) -> None:
        """``solve`` ended: its price no longer counts."""
        self.prices.pop(solve, None)


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


class Cluster:
    """What the solve reads about the cluster without blocking: idle CPUs now, and the runs
    waiting and the solve's rank (``Demand.look``) as last read from the sweep's ``Demand``
    (0 and 0 without one; 1 waiting until its first answer arrives: no growth on a guess).
    ``solve``: the name this solve's price goes under."""

    def __init__(self, ray: Any, solve: str | None = None) -> None:
        self.ray = ray
        self.solve = solve or uuid.uuid4().hex
        try:
            self.demand = ray.get_actor(DEMAND_NAME)
        except Exception:  # noqa: BLE001 - none (ValueError), or a Ray that has no actors
            self.demand = None
        self.pending: Pending | None = None
        self.waiting = 0 if self.demand is None else 1
        self.rank = 0

    def look(self, price: float = math.nan) -> tuple[int, int, int]:
        """(idle CPUs, runs waiting, rank), saying ``price`` to the ``Demand``."""
        if self.demand is not None:
            if self.pending is not None and self.pending.ready():
                try:
                    self.waiting, self.rank = map(int, self.pending.value())
                except self.ray.exceptions.RayError:
                    self.demand, self.rank = None, 0
                self.pending = None
            if self.pending is None and self.demand is not None:
                self.pending = Pending(self.demand.look.remote(self.solve, price))
        try:
            idle = int(self.ray.available_resources().get("CPU", 0.0))
        except Exception:  # noqa: BLE001 - a Ray that cannot say: never grow on a guess
            idle = 0
        return idle, self.waiting, self.rank

    def say(self, price: float) -> None:
        """Tell the ``Demand`` this solve's ``price`` now, not at the next look (best effort):
        a solve that just priced itself counts in the others' ranks at once."""
        if self.demand is not None:
            try:
                self.demand.look.remote(self.solve, price)
            except Exception as err:  # noqa: BLE001 - said again at the next look
                log.debug("the demand did not hear solve %s's price: %r", self.solve, err)

    def gone(self) -> None:
        """The solve ended: its price no longer counts (best effort)."""
        if self.demand is not None:
            try:
                self.demand.gone.remote(self.solve)
            except Exception as err:  # noqa: BLE001 - the price lapses after PRICE_HOLDS anyway
                log.debug("the demand did not hear that solve %s ended: %r", self.solve, err)


def price_of(
    tables: Tables, left: Sequence[np.ndarray], best: float, made: int, cpu_seconds: float
) -> float:
    """A solve's price: the CPU seconds its tree below the open nodes ``left`` (the estimate
    of a stopped search's cost, ``oracles.window.oracle.cost_left``, about 0.2 s below 40 open
    nodes at 24 levels, once a solve) takes at its own rate (``made`` nodes in
    ``cpu_seconds``); 0 with no node left, NaN before any node was made (no rate yet)."""
    left = [states for states in left if len(states)]
    if not left:
        return 0.0
    if made <= 0 or cpu_seconds <= 0:
        return math.nan
    return float(cost_left(tables, left, best).nodes) / (made / cpu_seconds)


class Price:
    """A solve's price as it goes on: estimated once (``price_of``) when it first may grow,
    then less the CPU it has got since (its own, and about a CPU a second for each extra
    running: the extras' CPU is counted when they return)."""

    def __init__(self) -> None:
        self.at: float | None = None  # the price when estimated
        self.cpu = self.wall = 0.0  # this process's CPU, the wall clock, then

    def now(self, extras: int) -> float:
        if self.at is None:
            return math.nan
        spent = time.process_time() - self.cpu + extras * (time.perf_counter() - self.wall)
        return max(0.0, self.at - spent)

    def estimate(self, value: float) -> None:
        self.at, self.cpu, self.wall = value, time.process_time(), time.perf_counter()


class Moving:
    """Worker 0's client: of the pool in this process until the pool moves to a Ray actor
    (``move``), of the actor after."""

    def __init__(self, local: LocalClient) -> None:
        self.inner: LocalClient | RayClient = local

    def move(self, actor: Any, best: float) -> None:
        self.inner = RayClient(actor, 0, best)

    def look(self) -> Look:
        return self.inner.look()

    def take(self, nodes: int):
        return self.inner.take(nodes)

    def offer(self, value: float) -> None:
        self.inner.offer(value)

    def put(self, units: Sequence[np.ndarray], offset: int) -> None:
        self.inner.put(units, offset)

    def release(self, nodes: int) -> None:
        self.inner.release(nodes)

    def requeue(self, nodes: int) -> None:
        self.inner.requeue(nodes)


class RaySearch(Executor):
    """The window search's executor on Ray (module docstring). Keeps, of its last run:
    ``extras`` (extra workers started), ``recalled``, ``relaunched``, ``cancelled`` (extras not
    back by the deadline), ``grown_at`` (seconds after
    the start when the pool moved to Ray, or None), ``nodes`` (the Ray nodes its workers ran on)
    and ``record()``, what the certificate says of it."""

    def __init__(
        self,
        extras: int = 0,
        *,
        grow: bool = True,
        cpus_per_task: int = 1,
        chunk: int = WORKER_CHUNK,
        min_levels: int = MIN_LEVELS_LEFT,
        grow_every: float = GROW_EVERY,
        max_extras: int | None = None,
    ) -> None:
        if extras < 0 or cpus_per_task < 1:
            raise ValueError(f"need extras >= 0 and cpus_per_task >= 1: {extras}, {cpus_per_task}")
        self.fixed, self.grow, self.cpus_per_task = int(extras), bool(grow), int(cpus_per_task)
        self.chunk, self.min_levels, self.grow_every = chunk, min_levels, grow_every
        self.max_extras = max_extras
        self._reset()

    def _reset(self) -> None:
        self.extras = self.recalled = self.relaunched = self.cancelled = 0
        self.grown_at: float | None = None
        self.nodes: set[str] = set()
        self.actor: Any = None
        self.shared: Any = None
        self.running: dict[Any, tuple[int, Pending]] = {}
        self.done: list[WorkerResult] = []
        self._started: Pending | None = None
        self._seen = 0
        self.price = Price()
        self._begun = time.perf_counter()

    def accepts(self, budget: Budget, racing: bool) -> bool:
        """A race stops its search through this process's pool, and a solve of several CPUs
        without extras runs on its threads: both stay here (``engine.Threads``)."""
        return not racing and (self.fixed > 0 or budget.threads <= 1)

    def record(self, seconds: float, own: WorkerResult, cpu_at_grow: float) -> ClusterStats | None:
        """What the run did on the cluster, for its certificate: nothing if the pool never
        moved; else its extras, the Ray nodes its workers ran on, when it moved (seconds after
        the start), and from then on its seconds, its workers' seconds and their CPU seconds
        (``elastic_tail_cpu_seconds / elastic_tail_seconds``: the CPUs it got)."""
        if self.grown_at is None:
            return None
        tail = own.seconds - self.grown_at
        return ClusterStats(
            extras=self.extras,
            recalled=self.recalled,
            nodes=len(self.nodes),
            grown_at=self.grown_at,
            tail_seconds=seconds - self.grown_at,
            tail_worker_seconds=tail + sum(r.seconds for r in self.done),
            tail_cpu_seconds=own.cpu_seconds - cpu_at_grow + sum(r.cpu_seconds for r in self.done),
        )

    def search(self, job: Job) -> Searched:
        import ray

        tables, best, budget, report = job.tables, job.best, job.budget, job.report
        start, cpu = time.perf_counter(), time.process_time()
        self._reset()
        local = Pool(job.units, best)
        worker = Worker(tables, 0, best, self.min_levels)
        client = Moving(LocalClient(local, 0, stop=job.stop))
        cluster = Cluster(ray) if ray.is_initialized() else None
        solve_cpu = time.process_time()
        self.nodes = {node_id()} if cluster is not None else set()
        cpu_at_grow = 0.0
        looked = start

        def move() -> None:
            nonlocal cpu_at_grow
            known = min(local.best, worker.best)
            queued = [states for _, states in local.queued()]
            self.actor = ray.remote(num_cpus=0, max_restarts=0)(Pool).remote(queued, known, (0,))
            self.shared = ray.put(Job(tables, (), known, budget))  # the extras' search
            self.grown_at, cpu_at_grow = time.perf_counter() - start, time.process_time() - cpu
            client.move(self.actor, known)

        def hook(w: Worker) -> None:
            nonlocal looked
            if report is not None:
                if self.actor is None:
                    report(w, local, 1)
                else:
                    report(w, local, 1 + len(self.running), "CPUs of the cluster")
            if cluster is None or time.perf_counter() - looked < self.grow_every:
                return
            looked = time.perf_counter()
            if self.actor is not None:
                self._collect(ray, budget, block=False)
            if self.grow:

                def priced() -> float:
                    """This solve's price, while its nodes are all here (before it grows)."""
                    left = w.open() + tuple(states for _, states in local.queued())
                    spent = time.process_time() - solve_cpu
                    return price_of(tables, left, min(local.best, w.best), w.made, spent)

                self._resize(ray, cluster, move, priced)

        if self.fixed and cluster is not None:
            move()
            for _ in range(self.fixed):
                self._launch(ray)
        try:
            own = drive(
                worker, client, budget, chunk=self.chunk, hook=hook, clock=time.process_time
            )
        finally:
            if cluster is not None:
                cluster.gone()
        known = min(best, local.best)
        if self.actor is None:
            left = local.left()
            donations, records = local.donations_made(), local.unit_records()
        else:
            until = budget.deadline + PART_GRACE_SECONDS
            if not own.message:  # finished: an extra still queued for a CPU is of no use
                until = min(until, now() + FINISH_SECONDS)
            self._collect(ray, budget, block=True, until=until)
            left = ray.get(self.actor.left.remote())
            known = min(known, ray.get(self.actor.offer.remote(math.inf)))
            donations = ray.get(self.actor.donations_made.remote())
            records = ray.get(self.actor.unit_records.remote())
            ray.kill(self.actor)
        seconds = time.perf_counter() - start
        return searched(
            tables,
            [own, *self.done],
            left,
            known,
            donations,
            records,
            threads=self.cpus_per_task if self.fixed else 1,
            cluster=self.record(seconds, own, cpu_at_grow),
        )

    def _launch(self, ray: Any) -> None:
        """One extra worker, as a Ray task on the pool actor (the search's ``Job`` in the
        object store once; it reads the best known at its first look)."""
        self.extras += 1
        cpus = self.cpus_per_task if self.fixed else 1
        task = ray.remote(num_cpus=cpus, max_retries=0)(worker_task)
        ref = task.remote(self.shared, self.extras, self.actor, self.chunk, self.min_levels)
        self.running[ref] = (self.extras, Pending(ref))

    def _resize(
        self,
        ray: Any,
        cluster: Cluster,
        move: Callable[[], None],
        priced: Callable[[], float] | None = None,
    ) -> None:
        """Grow onto idle CPUs while no run waits, the idle CPUs beyond this solve's rank
        (``Demand.look``: the cheaper solves grow first), recall extras while runs wait and no
        CPU is idle (module docstring). ``priced``: this solve's price, estimated the first
        time it may grow while its nodes are all in this process."""
        idle, waiting, rank = cluster.look(self.price.now(len(self.running)))
        if self.actor is not None:  # how many extras have started (worker 0 counts: it looks)
            if self._started is None:
                self._started = Pending(self.actor.started.remote())
            elif self._started.ready():
                self._seen, self._started = self._started.value(), None
        wants = idle >= 1 and waiting == 0
        unpriced = self.price.at is None and priced is not None and self.actor is None
        if unpriced and (wants or time.perf_counter() - self._begun >= PRICE_AFTER):
            value = priced()
            if not math.isnan(value):
                self.price.estimate(value)
                cluster.say(value)
                if wants:
                    return  # grow once the Demand ranks this solve at its price
        if wants:
            room = (
                idle if self.max_extras is None else min(idle, self.max_extras - len(self.running))
            )
            if room < 1 or (self.actor is not None and self._seen < self.extras + 1):
                return  # Ray's idle CPUs lag: wait until the last extra started
            if idle <= rank:
                return  # the idle CPUs go to the cheaper solves first
            if self.actor is None:
                move()
            self._launch(ray)  # one a look: Ray's count of idle CPUs lags
        elif waiting > 0 and idle == 0 and self.running:
            recall = sorted(i for i, _ in self.running.values())[-waiting:]
            self.actor.recall.remote(recall)
            self.recalled += len(recall)

    def _collect(self, ray: Any, budget: Budget, *, block: bool, until: float = math.inf) -> None:
        """The extras that returned: their results, a lost one's lease back to the pool (and,
        with fixed extras, a replacement). Without ``block`` it never waits (``Pending``); with
        it, every extra is waited for until ``until`` (then cancelled, its lease open)."""
        while self.running:
            back = [ref for ref, (_, pending) in self.running.items() if pending.ready()]
            if not back:
                if not block:
                    return
                timeout = None if until == math.inf else max(0.0, until - now())
                back, _ = ray.wait(list(self.running), num_returns=1, timeout=timeout)
                if not back:  # past the deadline: the rest are cancelled, their leases open
                    for ref, (i, _) in self.running.items():
                        ray.cancel(ref, force=True)
                        self.cancelled += 1
                        ray.get(self.actor.requeue.remote(i))
                    self.running.clear()
                    return
            for ref in back:
                i, _ = self.running.pop(ref)
                try:
                    result = ray.get(ref)
                except ray.exceptions.RayError:  # lost: its lease back to the pool
                    ray.get(self.actor.requeue.remote(i))
                    if self.fixed and self.relaunched < MAX_RELAUNCHES and not budget.expired():
                        self.relaunched += 1
                        self._launch(ray)
                else:
                    self.done.append(result)
                    if result.node:
                        self.nodes.add(result.node)


__all__ = [
    "DEMAND_NAME",
    "FINISH_SECONDS",
    "GROW_EVERY",
    "MAX_RELAUNCHES",
    "PART_GRACE_SECONDS",
    "PRICE_AFTER",
    "PRICE_HOLDS",
    "Cluster",
    "Demand",
    "Moving",
    "Price",
    "RaySearch",
    "demand_actor",
    "price_of",
    "set_waiting",
]
