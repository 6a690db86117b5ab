"""The window search's one loop, and the places it runs in this process.

One search (``../shared/STYLE.md``, "One search, many transports"): a ``Worker``
(``oracles.window.worker``) runs ``search``, the one loop, against a ``PoolClient``
(``oracles.window.pool``):

1. look at the pool (the best value known, whether idle workers want units, whether the worker
   is recalled or the search stopped);
2. when idle, take the next unit (``IDLE``: others hold the rest; ``DONE``: the search ended);
3. search a chunk of nodes below the best known, offer a better value, and donate part of the
   open tree when a worker is idle and the pool empty.

The places it runs are EXECUTORS, each a driver of that loop over one pool:

- ``InProcess``: workers stepped in turn in this process (one worker: the plain solve, with its
  progress reports; more: a deterministic run that tests and benchmarks replay);
- ``Threads``: one worker a thread (the kernel is compiled without the interpreter lock), for a
  solve that holds several CPUs or runs in a race;
- the Ray executor of ``pipeline.distributed`` (workers as Ray tasks on the pool as an actor,
  growing onto a sweep's idle CPUs); oracles/ imports no Ray.

Every executor returns a ``Searched``: the least value found, the least best value any worker
searched below, and every node left (its workers' open nodes and the pool's units), from which
``oracles.window.oracle`` builds the certificate. Why the answer is exact whatever the executor:
every point with F at most the best lies below a node some worker or the pool holds, or was
evaluated (``oracles.window.worker``); a node is dropped only when its bound exceeds a best value
some point attains. So when no node is left, the least value found is min F; when some are left,
min(that value, the least best searched below, the least bound of the nodes left) is a proven
lower bound, and those nodes are exactly what a later attempt must search
(``oracles.window.checkpoint``).
"""

from __future__ import annotations

import math
import os
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Generator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from core.validation import check_int
from oracles.contract.budget import Budget
from oracles.contract.stats import ClusterStats
from oracles.window.pool import (
    DONE,
    IDLE,
    IDLE_SECONDS,
    LocalClient,
    Pool,
    PoolClient,
    StopSignal,
    UnitRecord,
)
from oracles.window.tree import Nodes, Tables
from oracles.window.worker import MIN_LEVELS_LEFT, Worker

#: Nodes a worker makes between two looks at the pool (threads, Ray tasks; a chunk of a few
#: milliseconds to a few tens).
WORKER_CHUNK = 50_000
#: Nodes a worker makes in one turn when ``InProcess`` steps several in turn (small: the turns
#: interleave, and the run is the same on every machine).
TURN_CHUNK = 10_000
#: What a recalled worker's loop returns (it gave its nodes back: nothing of its own is open).
RECALLED = "recalled"


def search(
    worker: Worker, client: PoolClient, budget: Budget, chunk: int = WORKER_CHUNK
) -> Generator[None, None, str]:
    """The one loop (module docstring), a generator that yields after every chunk and every
    idle look, so that a driver may step several workers in turn or hook into every chunk.
    Returns "" when the search ended, else why this worker stopped (the budget, a race's stop,
    ``RECALLED``); a stopped worker's open nodes stay in it (``Worker.open``)."""
    offered = math.inf
    while True:
        if budget.expired() or budget.spent(worker.made):
            return budget.stopped_by(worker.made)
        look = client.look()
        if look.stopped:
            return look.stopped
        if look.recalled:  # the cluster wants this CPU: the nodes back to the pool, and end
            client.put(list(worker.hand_back()), worker.unit_made)
            return RECALLED
        if not worker.busy:
            taken = client.take(worker.unit_made)
            if taken is DONE:
                return ""
            if taken is IDLE:
                yield
                continue
            worker.load(taken)
        worker.step(budget.chunk(worker.made, chunk) or 1, look.best)
        if worker.value < offered:
            offered = worker.value
            client.offer(offered)
        if worker.busy and look.wanted > 0:
            given = worker.donate()
            if given is not None:
                client.put([given], worker.unit_made)
        yield


@dataclass(frozen=True, eq=False)
class WorkerResult:
    """How one worker ended.

    Attributes:
        index: the worker's index in its pool.
        value, w: the least exact objective it found (+inf, None: none at or below its best).
        best: the least best value it searched below (its last).
        open: its nodes still to search (a stopped worker's; empty otherwise).
        nodes, leaves: nodes it made, points it evaluated exactly.
        seconds, cpu_seconds: its wall and CPU seconds (the thread's, or the Ray task's).
        pid: the process it ran in; node: the Ray node ("" elsewhere).
        message: "" when the search ended, else why it stopped; error: what it raised ("").
        threads: the CPUs its task held (a Ray task's; 1 elsewhere).
    """

    index: int
    value: float
    w: np.ndarray | None
    best: float
    open: tuple[np.ndarray, ...]
    nodes: int
    leaves: int
    seconds: float
    cpu_seconds: float
    pid: int
    message: str = ""
    error: str = ""
    node: str = ""
    threads: int = 1

    @classmethod
    def of(
        cls, worker: Worker, message: str, seconds: float, cpu: float, error: str = ""
    ) -> WorkerResult:
        return cls(
            worker.index,
            worker.value,
            worker.w,
            worker.best,
            worker.open(),
            worker.made,
            worker.leaves,
            seconds,
            cpu,
            os.getpid(),
            message,
            error,
        )


#: ``hook(worker)``: called after every chunk of worker 0 (progress, a cluster's grow policy).
Hook = Callable[[Worker], None]


class Stepped:
    """One worker's loop (``search``) that its driver steps a chunk at a time: ``step`` runs one
    chunk (or one idle look) and says whether the loop goes on. When it ends, the worker's lease
    is released; a worker that raised first gives its lease back to the pool (searched again by
    another, or left open) and records the error (``message``, ``error``)."""

    def __init__(self, worker: Worker, client: PoolClient, budget: Budget, chunk: int) -> None:
        self.worker, self.client = worker, client
        self.loop = search(worker, client, budget, chunk)
        self.message = self.error = ""

    def step(self) -> bool:
        try:
            next(self.loop)
            return True
        except StopIteration as end:
            self.message = end.value
        except Exception as err:  # noqa: BLE001 - a failed worker leaves its nodes to the others
            self.error = self.message = f"{type(err).__name__}: {err}"
            self.worker.hand_back()
            self.client.requeue(self.worker.unit_made)
        self.client.release(self.worker.unit_made)
        return False


def drive(
    worker: Worker,
    client: PoolClient,
    budget: Budget,
    *,
    chunk: int = WORKER_CHUNK,
    hook: Hook | None = None,
    clock: Callable[[], float] = time.thread_time,
) -> WorkerResult:
    """One worker's loop to its end (a thread's, a Ray task's, or this process's), ``hook``
    called after every chunk (``Stepped``)."""
    start, cpu = time.perf_counter(), clock()
    run = Stepped(worker, client, budget, chunk)
    while run.step():
        if hook is not None:
            hook(worker)
    return WorkerResult.of(
        worker, run.message, time.perf_counter() - start, clock() - cpu, run.error
    )


@dataclass(frozen=True, eq=False)
class Searched:
    """What a search made of its units (module docstring).

    Attributes:
        value, w: the least exact objective found below the start's best (+inf, None: none).
        floor: the least best value any worker searched below (a point attains it).
        open: every node left, in order: the workers' open nodes, then the pool's units.
        least_left: the least bound of ``open`` (with the constant; +inf when none is left).
        message: why it stopped ("" when it ended); errors: what workers raised.
        nodes, leaves: summed over the workers.
        cpu_seconds: every worker's; remote_cpu_seconds: of it, other processes' (Ray tasks).
        workers: how many searched; threads: the CPUs its widest task held.
        donations, records: the pool's (``UnitRecord``: ``pool.replay_makespan``).
        cluster: what a search on a cluster did there (``pipeline.distributed``), None when
            its pool never moved.
    """

    value: float
    w: np.ndarray | None
    floor: float
    open: tuple[np.ndarray, ...]
    least_left: float
    message: str
    errors: tuple[str, ...]
    nodes: int
    leaves: int
    cpu_seconds: float
    remote_cpu_seconds: float
    workers: int
    threads: int
    donations: int
    records: list[UnitRecord] = field(default_factory=list)
    cluster: ClusterStats | None = None

    @property
    def finished(self) -> bool:
        """Every node was searched: the least value found (or the start's best) is min F."""
        return not self.open

    @property
    def bound(self) -> float:
        """A proven lower bound on F over the points below the units searched (module
        docstring): +inf past the start's best when none lies there."""
        return min(self.value, self.floor, self.least_left)


def least_bound(tables: Tables, units: Sequence[np.ndarray]) -> float:
    """The least bound (with the constant) of the nodes ``units`` (+inf: none)."""
    least = math.inf
    for states in units:
        if len(states):
            least = min(least, float(Nodes.from_states(tables, states).lb.min()))
    return least + tables.const


def gather(
    tables: Tables,
    results: Sequence[WorkerResult],
    pool: Pool,
    best: float,
    *,
    threads: int = 1,
    cluster: ClusterStats | None = None,
) -> Searched:
    """The search's outcome from its workers' results (in index order) and its pool (every
    worker released or requeued its lease): the better point among ties the lower index's."""
    return searched(
        tables,
        results,
        pool.left(),
        min(best, pool.best),
        pool.donations_made(),
        pool.unit_records(),
        threads=threads,
        cluster=cluster,
    )


def searched(
    tables: Tables,
    results: Sequence[WorkerResult],
    left: Sequence[np.ndarray],
    best: float,
    donations: int,
    records: list[UnitRecord],
    *,
    threads: int = 1,
    cluster: ClusterStats | None = None,
) -> Searched:
    """``gather`` from the pool's state read already (``left``: its units no worker holds;
    ``best``: its best value; a Ray actor's, read by ``pipeline.distributed``)."""
    results = sorted(results, key=lambda r: r.index)
    w, value = None, math.inf
    for r in results:
        if r.w is not None and r.value < value:
            w, value = r.w, r.value
    open_ = tuple(s for r in results for s in r.open if len(s)) + tuple(s for s in left if len(s))
    messages = [r.message for r in results if r.message and r.message != RECALLED]
    message = messages[0] if messages else ("units left in the pool" if open_ else "")
    here = os.getpid()
    return Searched(
        value,
        w,
        min([best] + [r.best for r in results]),
        open_,
        least_bound(tables, open_),
        message,
        tuple(r.error for r in results if r.error),
        sum(r.nodes for r in results),
        sum(r.leaves for r in results),
        sum(r.cpu_seconds for r in results),
        sum(r.cpu_seconds for r in results if r.pid != here),
        len(results),
        max([threads] + [r.threads for r in results]),
        donations,
        records,
        cluster,
    )


class Report(Protocol):
    """What a search tells its progress line (``oracles.window.oracle``): called after every
    chunk of worker 0 with the worker, its pool in this process and how many workers search
    (one: its bound is the whole's, the worker's open nodes and the pool's units; several:
    ``where`` they search, e.g. "threads", "CPUs of the cluster")."""

    def __call__(self, worker: Worker, pool: Pool, workers: int, where: str = "") -> None: ...


@dataclass(frozen=True, eq=False)
class Job:
    """One search for an executor: the tables, the pool's first units, the best value to search
    below, the budget, a race's stop signal and the progress line (``Report``)."""

    tables: Tables
    units: tuple[np.ndarray, ...]
    best: float
    budget: Budget
    stop: StopSignal | None = None
    report: Report | None = None


class Executor(ABC):
    """Where a window search's workers run (module docstring): ``run`` gives the job to
    ``search``, each executor's own. ``accepts`` says whether it runs a solve on ``budget`` (a
    race's stop or the budget's threads may need another)."""

    def accepts(self, budget: Budget, racing: bool) -> bool:
        return True

    def run(
        self,
        tables: Tables,
        units: Sequence[np.ndarray],
        best: float,
        budget: Budget,
        *,
        stop: StopSignal | None = None,
        report: Report | None = None,
    ) -> Searched:
        return self.search(Job(tables, tuple(units), float(best), budget, stop, report))

    @abstractmethod
    def search(self, job: Job) -> Searched:
        """The search of ``job`` to its end or its budget."""


class InProcess(Executor):
    """``workers`` workers stepped in turn in this process, ``chunk`` nodes a turn (default:
    ``WORKER_CHUNK`` for one worker, ``TURN_CHUNK`` for several): one worker is the plain solve;
    several give the same run on every machine (tests, ``bench.parts_balance``). Keeps its last
    run's ``pool``, ``rounds`` (turns in which some worker searched: the makespan in chunks) and
    ``results`` (each worker's, in index order: ``bench.parts_balance`` reads their nodes).
    ``on_donate(workers, pool, best)`` is called after every donation (tests check coverage
    there); ``min_levels``: ``Worker``'s."""

    def __init__(
        self,
        workers: int = 1,
        chunk: int | None = None,
        *,
        min_levels: int = MIN_LEVELS_LEFT,
        on_donate: Callable[[list, Pool, float], None] | None = None,
    ) -> None:
        check_int("workers", workers)
        self.workers, self.min_levels, self.on_donate = workers, min_levels, on_donate
        self.chunk = chunk if chunk is not None else (WORKER_CHUNK if workers == 1 else TURN_CHUNK)
        check_int("chunk", self.chunk)
        self.pool: Pool | None = None
        self.rounds = 0
        self.results: tuple[WorkerResult, ...] = ()

    def search(self, job: Job) -> Searched:
        tables, best, budget, report = job.tables, job.best, job.budget, job.report
        pool = self.pool = Pool(job.units, best)
        workers = [Worker(tables, i, best, self.min_levels) for i in range(self.workers)]
        clients = [LocalClient(pool, i, pause=0.0, stop=job.stop) for i in range(self.workers)]
        runs = [Stepped(w, clients[i], budget, self.chunk) for i, w in enumerate(workers)]
        alive = list(range(self.workers))
        start, cpu = time.perf_counter(), time.process_time()
        donations, self.rounds = 0, 0
        while alive:
            made = sum(w.made for w in workers)
            for i in list(alive):
                if not runs[i].step():
                    alive.remove(i)
                if i == 0 and report is not None:
                    report(workers[0], pool, self.workers)
                if self.on_donate is not None and pool.donations_made() > donations:
                    donations = pool.donations_made()
                    self.on_donate(workers, pool, min(w.best for w in workers))
            self.rounds += sum(w.made for w in workers) > made
        seconds, share = time.perf_counter() - start, (time.process_time() - cpu) / self.workers
        results = [
            WorkerResult.of(w, runs[w.index].message, seconds, share, runs[w.index].error)
            for w in workers
        ]
        self.results = tuple(results)
        return gather(tables, results, pool, best)


class Threads(Executor):
    """One worker a thread, ``threads`` of them, on one pool (module docstring): a worker looks
    at the pool between chunks of ``chunk`` nodes and an idle one every ``IDLE_SECONDS``. Keeps
    its last run's ``pool`` and ``results`` (each worker's, in index order)."""

    def __init__(
        self, threads: int, chunk: int = WORKER_CHUNK, min_levels: int = MIN_LEVELS_LEFT
    ) -> None:
        check_int("threads", threads)
        check_int("chunk", chunk)
        self.threads, self.chunk, self.min_levels = threads, chunk, min_levels
        self.pool: Pool | None = None
        self.results: tuple[WorkerResult, ...] = ()

    def search(self, job: Job) -> Searched:
        tables, best, report = job.tables, job.best, job.report
        pool = self.pool = Pool(job.units, best)
        count = self.threads

        def work(index: int) -> WorkerResult:
            worker = Worker(tables, index, best, self.min_levels)
            client = LocalClient(pool, index, pause=IDLE_SECONDS, stop=job.stop)
            hook = None
            if index == 0 and report is not None:

                def hook(w: Worker) -> None:
                    report(w, pool, count, "threads")

            return drive(worker, client, job.budget, chunk=self.chunk, hook=hook)

        with ThreadPoolExecutor(max_workers=count) as threads:
            results = list(threads.map(work, range(count)))
        self.results = tuple(results)
        return gather(tables, results, pool, best, threads=count)


def local_executor(threads: int) -> Executor:
    """The executor of a solve that runs in this process: its budget's CPUs as threads, one
    worker in this thread when it has one."""
    return InProcess() if threads <= 1 else Threads(threads)


__all__ = [
    "RECALLED",
    "TURN_CHUNK",
    "WORKER_CHUNK",
    "Executor",
    "Hook",
    "Job",
    "InProcess",
    "Report",
    "Searched",
    "Stepped",
    "Threads",
    "WorkerResult",
    "drive",
    "gather",
    "least_bound",
    "local_executor",
    "search",
    "searched",
]
