"""Work donation for a split solve (``oracles.window.split``): parts that pull their work from a pool,
and busy parts that give the pool part of their open tree when another part is idle.

A fixed split (``split.plan_split``: the frontier dealt round-robin into parts) balances only as
well as its deal: one part's subtree may be a thousand times another's. Here, as in the load
coordinator of the UG framework (ParaSCIP, FiberSCIP; Shinano et al. 2012) and work stealing in
parallel branch and bound, the parts' nodes are WORK UNITS (prefix arrays of one level, in search
order) in a pool:

1. the plan's tasks go to the pool (a task a unit, each level of a carried-on task a unit), and
   every worker takes one unit at a time and searches it depth first below the best known
   (``Worker``: ``branch.descend``'s search, stepped a chunk of nodes at a time);
2. when a worker is idle and the pool is empty (``WorkPool.wanted``), a busy worker, between two
   of its chunks, DONATES part of its open tree (``Worker.donate``): every other one of the
   unvisited nodes at its SHALLOWEST open depth (the start nodes of its unit not opened yet,
   else the unvisited children of the shallowest node on its stack: the largest subtrees), as
   prefixes k[:j] + v, removed from its own stack;
3. the solve has ended when every worker is idle and the pool is empty, no unit leased.

Why the answer and certificate are the one-process ones: given the best value B, the window
search's tree is fixed (a node is kept when its bound is at most threshold(B), whatever order the
nodes come in), and a donated node is searched exactly as its donor would have searched it
(``Nodes.from_states`` rebuilds it; ``branch_kernel.open_node`` makes the same children). Every
point with F at most the best lies, at any moment, below a node of some worker's stack, some
worker's unit not yet opened, or a unit of the pool, or has been evaluated; donation only moves a
node from one of these to another. So when every worker is idle and the pool empty, every such
point was evaluated and the least value found is min F (``split`` module docstring, step 4), and a
stopped solve's open nodes (every worker's ``Worker.open`` and the pool's ``WorkPool.left``) and
its bound (the least bound among them) are exact for carrying on (``oracles.window.checkpoint``). The minimum
value never depends on the schedule; the point w does only among exact ties of F.

The pool has one interface (``WorkPool``) and two places it lives: this process (``LocalPool``:
``virtual_parts``, P virtual workers stepped round-robin a fixed chunk of nodes at a time, the
deterministic driver that benchmarks and tests use; ``thread_donating_parts``, workers on threads)
and a Ray actor (``pipeline.donate_solve``). A unit is LEASED to the worker that took it until the
worker takes the next or releases it: a lost worker's lease goes back to the pool (``requeue``)
and is searched again from its own prefixes (its donated subtrees may be searched twice; nothing
is left out).

The pool records every unit's origin (``UnitRecord``: the unit it was donated from, at how many of
that unit's nodes, and the nodes searched in it), from which ``replay_makespan`` replays the run on
P simulated CPUs.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import os
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.validation import check_int
from oracles.base import Status
from oracles.window.tree import Nodes, SearchStopped, Tables, open_nodes, score_leaves
from oracles.window.kernel import DONE, State, open_node, run
from oracles.budget import Budget
from oracles.window.split import MapParts, PartResult, PartTask
from oracles.window.split_threads import SharedBest

#: Nodes a virtual worker makes in one step (``virtual_parts``).
VIRTUAL_CHUNK = 10_000
#: Nodes a worker on a thread or a Ray task makes between two looks at the pool.
WORKER_CHUNK = 50_000
#: A node is donated only when at least this many levels lie below it (a smaller subtree costs
#: more to ship than to search).
MIN_LEVELS_LEFT = 3
#: How long an idle worker on a thread waits between two looks at the pool.
IDLE_SECONDS = 0.01


@dataclass
class UnitRecord:
    """Where a unit came from: ``parent`` the unit it was donated from (-1: the plan's),
    ``offset`` the parent's nodes when it was donated, ``nodes`` the nodes searched in it (its
    donated subtrees not counted; summed over every worker that searched it)."""

    parent: int
    offset: int
    nodes: int = 0


class WorkPool(Protocol):
    """The pool's interface (module docstring); ``worker`` is the worker's index. Every method
    returns at once."""

    def take(self, worker: int, nodes: int) -> tuple[int, np.ndarray] | None:
        """Release the worker's lease (``nodes`` searched in it) and lease it the next unit (id,
        prefixes), or None (it is idle)."""

    def put(self, worker: int, units: Sequence[np.ndarray], offset: int) -> None:
        """Units donated by the worker from its leased unit, at ``offset`` of its nodes."""

    def release(self, worker: int, nodes: int) -> None:
        """The worker is done with its lease; ``nodes`` searched in it."""

    def wanted(self) -> int:
        """How many units idle workers wait for beyond those in the pool."""

    def finished(self) -> bool:
        """Every worker idle, the pool empty, no unit leased."""

    def requeue(self, worker: int, nodes: int) -> None:
        """A lost worker's lease back to the pool, to be searched again from its prefixes."""

    def left(self) -> tuple[np.ndarray, ...]:
        """The units no live worker searches (a stopped solve's open nodes besides the
        workers' own)."""


class LocalPool:
    """The pool in one process (a lock makes it safe for threads; the Ray actor of
    ``pipeline.donate_solve`` is this class)."""

    def __init__(self, units: Sequence[np.ndarray]) -> None:
        self._lock = threading.Lock()
        self._queue: deque[int] = deque()
        self._units: dict[int, np.ndarray] = {}
        self.records: list[UnitRecord] = []
        self._leases: dict[int, int] = {}
        self._hungry: set[int] = set()
        self.donations = 0
        for states in units:
            self._add(np.asarray(states, dtype=np.int8), -1, 0)

    def _add(self, states: np.ndarray, parent: int, offset: int) -> None:
        if len(states) == 0:
            return
        uid = len(self.records)
        self.records.append(UnitRecord(parent, offset))
        self._units[uid] = states
        self._queue.append(uid)

    def _release(self, worker: int, nodes: int) -> None:
        uid = self._leases.pop(worker, None)
        if uid is not None:
            self.records[uid].nodes += int(nodes)
            del self._units[uid]

    def take(self, worker: int, nodes: int = 0) -> tuple[int, np.ndarray] | None:
        with self._lock:
            self._release(worker, nodes)
            if not self._queue:
                self._hungry.add(worker)
                return None
            self._hungry.discard(worker)
            uid = self._queue.popleft()
            self._leases[worker] = uid
            return uid, self._units[uid]

    def put(self, worker: int, units: Sequence[np.ndarray], offset: int) -> None:
        with self._lock:
            parent = self._leases.get(worker, -1)
            for states in units:
                self._add(np.asarray(states, dtype=np.int8), parent, int(offset))
                self.donations += 1

    def release(self, worker: int, nodes: int) -> None:
        with self._lock:
            self._release(worker, nodes)
            self._hungry.discard(worker)

    def requeue(self, worker: int, nodes: int = 0) -> None:
        """A lost worker's lease back to the pool (searched again from its own prefixes)."""
        with self._lock:
            uid = self._leases.pop(worker, None)
            self._hungry.discard(worker)
            if uid is not None:
                self.records[uid].nodes += int(nodes)
                if len(self._units[uid]):
                    self._queue.appendleft(uid)
                else:
                    del self._units[uid]

    def adopt(self, worker: int) -> None:
        """Lease the worker an empty unit: a worker whose nodes came from elsewhere (a search
        that moved its pool here, ``pipeline.elastic_solve``) holds the pool open until it
        takes its next unit."""
        with self._lock:
            uid = len(self.records)
            self.records.append(UnitRecord(-1, 0))
            self._units[uid] = np.zeros((0, 0), np.int8)
            self._leases[worker] = uid

    def wanted(self) -> int:
        with self._lock:
            return max(0, len(self._hungry) - len(self._queue))

    def finished(self) -> bool:
        with self._lock:
            return not self._queue and not self._leases

    def status(self) -> tuple[int, bool]:
        """``wanted()`` and ``finished()`` in one call (one round trip to a Ray actor)."""
        with self._lock:
            wanted = max(0, len(self._hungry) - len(self._queue))
            return wanted, not self._queue and not self._leases

    def left(self) -> tuple[np.ndarray, ...]:
        """The units no worker searches: the queue's, and those leased to no live worker (call
        ``requeue`` for a lost worker first)."""
        with self._lock:
            leased = set(self._leases.values())
            queued = [self._units[uid] for uid in self._queue]
            units = tuple(queued) + tuple(self._units[u] for u in sorted(leased))
            return tuple(u for u in units if len(u))

    def donations_made(self) -> int:
        """How many units workers donated (``donations``, for a Ray actor's caller)."""
        with self._lock:
            return self.donations

    def queued(self) -> tuple[np.ndarray, ...]:
        """The units in the queue (not leased), in order."""
        with self._lock:
            return tuple(self._units[uid] for uid in self._queue)

    def unit_records(self) -> list[UnitRecord]:
        with self._lock:
            return [UnitRecord(r.parent, r.offset, r.nodes) for r in self.records]


class Worker:
    """One worker's depth-first search of the units it takes (``branch.descend``'s search,
    made a chunk at a time, with ``donate``). ``value``/``w``: the least exact objective it
    found at or below the best it was given, and its point."""

    def __init__(
        self, tables: Tables, index: int, best: float, min_levels: int = MIN_LEVELS_LEFT
    ) -> None:
        self.t, self.index, self.min_levels = tables, index, min_levels
        self.best = float(best)
        self.w: np.ndarray | None = None
        self.value = math.inf
        self.made = self.leaves = 0
        self.unit_made = 0
        self.state = State.empty(tables.d, tables.bound, len(tables.sign))
        self.start: Nodes | None = None
        self.order = np.zeros(0, np.int64)
        self.pos = 0

    @property
    def busy(self) -> bool:
        return self.start is not None

    def load(self, states: np.ndarray) -> None:
        """Start on a unit (prefixes of one level)."""
        self.start = Nodes.from_states(self.t, states)
        self.order = np.argsort(self.start.lb, kind="stable")
        self.pos, self.unit_made = 0, 0
        self.state.start, self.state.top = self.start.level, self.start.level - 1

    def _score(self, K: np.ndarray) -> None:
        self.w, self.value, self.best = score_leaves(self.t, K, self.w, self.value, self.best)
        self.leaves += len(K)

    def step(self, nodes: int, best: float = math.inf) -> int:
        """Search up to about ``nodes`` nodes of the unit below min(best, its own best); returns
        the nodes made. The worker is idle (``busy`` False) when its unit is done."""
        self.best = min(self.best, float(best))
        t, state, start = self.t, self.state, self.start
        made = 0
        while start is not None and made < nodes:
            T = t.threshold(self.best)
            if state.top < state.start:  # no subtree open: the unit's next start node
                if self.pos >= len(self.order):
                    start = self.start = None
                    break
                index = self.order[self.pos]
                self.pos += 1
                if not start.lb[index] <= T:
                    continue
                if start.level == t.d:
                    self._score(start.states[index : index + 1])
                    continue
                made += open_node(
                    t,
                    state,
                    start.level,
                    start.states[index],
                    start.C[index],
                    start.P[index],
                    start.Y[index],
                    T,
                )
                continue
            why, n = run(t, state, T, max(1, nodes - made))
            made += n
            if state.n_leaves:
                self._score(state.leaves[: state.n_leaves])
                state.n_leaves = 0
            if why == DONE:
                state.top = state.start - 1
        self.made += made
        self.unit_made += made
        return made

    def donate(self) -> np.ndarray | None:
        """Every other unvisited node at the shallowest open depth (module docstring, step 2),
        as prefixes, removed from this worker's search; None when nothing can be spared."""
        if self.start is None:
            return None
        t, state = self.t, self.state
        rest = self.order[self.pos :]
        opened = state.top >= state.start
        if t.d - self.start.level >= self.min_levels and (len(rest) >= 2 or (rest.size and opened)):
            kept, given = (rest[0::2], rest[1::2]) if len(rest) >= 2 else (rest[:0], rest)
            self.order = np.concatenate([self.order[: self.pos], kept])
            return self.start.states[given]
        if not opened:
            return None
        for j in range(state.start, state.top + 1):
            if t.d - (j + 1) < self.min_levels:
                break
            first, count = int(state.cursor[j]), int(state.count[j])
            n = count - first
            if n >= 2 or (n == 1 and (j < state.top or len(rest))):
                values = state.vals[j, first:count].copy()
                bounds = state.lbs[j, first:count].copy()
                keep = slice(0, None, 2) if n >= 2 else slice(0, 0)
                given = values[1::2] if n >= 2 else values
                kept = values[keep]
                state.vals[j, first : first + len(kept)] = kept
                state.lbs[j, first : first + len(kept)] = bounds[keep]
                state.count[j] = first + len(kept)
                prefix = np.broadcast_to(state.k[:j], (len(given), j))
                return np.hstack([prefix, given[:, None]]).astype(np.int8)
        return None

    def hand_back(self) -> tuple[np.ndarray, ...]:
        """The unit's nodes still to search (``open``), no longer this worker's: it is idle."""
        left = self.open()
        self.start = None
        self.state.top = self.state.start - 1
        self.order, self.pos = np.zeros(0, np.int64), 0
        return left

    def open(self) -> tuple[np.ndarray, ...]:
        """The unit's nodes still to search (``branch.open_nodes``), in order."""
        if self.start is None:
            return ()
        rest = self.start.states[self.order[self.pos :]]
        if self.state.top < self.state.start:
            return (rest,) if len(rest) else ()
        return open_nodes(self.state, rest)

    def least_bound_left(self) -> float:
        """The least bound (with the constant) of a node still to search in its unit."""
        if self.start is None:
            return math.inf
        rest = self.start.lb[self.order[self.pos :]]
        least = float(rest.min(initial=math.inf))
        if self.state.top >= self.state.start:
            least = min(least, self.state.least_bound_left())
        return least + self.t.const

    def result(
        self, status: Status, threshold: float, seconds: float, cpu: float, message: str = ""
    ) -> PartResult:
        """This worker's ``split.PartResult``: a finished worker proves min(value, its best), a
        stopped one also at most the least bound of its open nodes."""
        bound = min(self.value, self.best)
        left: tuple[np.ndarray, ...] = ()
        if status is not Status.OPTIMAL:
            left = self.open()
            bound = min(bound, self.least_bound_left())
        return PartResult(
            self.index,
            status,
            self.value,
            self.w,
            bound,
            threshold,
            seconds,
            self.made,
            self.leaves,
            1,
            message,
            cpu,
            os.getpid(),
            left,
        )


def pool_units(tasks: Sequence[PartTask]) -> list[np.ndarray]:
    """The plan's tasks as the pool's first units (a level of a task a unit), in order."""
    return [states for task in tasks for states in task.levels() if len(states)]


def with_pool_left(
    results: list[PartResult], left: tuple[np.ndarray, ...], tables: Tables
) -> list[PartResult]:
    """``results`` with the pool's units no worker searched added to the first result's open
    nodes and bound (so ``split.combine`` and ``split.open_after`` see every node left)."""
    left = tuple(s for s in left if len(s))
    if not left:
        return results
    first = results[0]
    least = min(float(Nodes.from_states(tables, s).lb.min()) for s in left) + tables.const
    status = Status.TIME_LIMIT if first.status is Status.OPTIMAL else first.status
    message = first.message or "units left in the pool"
    results[0] = dataclasses.replace(
        first,
        status=status,
        bound=min(first.bound, least),
        message=message,
        open=tuple(first.open or ()) + left,
    )
    return results


def fold(a: PartResult, b: PartResult) -> PartResult:
    """Two workers' results as one part's: the better point (``a``'s among ties), the least
    bound, the nodes, CPU and open nodes of both, finished only when both are."""
    better = b.w is not None and b.value < a.value
    statuses = (a.status, b.status)
    status = (
        Status.ERROR
        if Status.ERROR in statuses
        else Status.OPTIMAL
        if statuses == (Status.OPTIMAL, Status.OPTIMAL)
        else Status.TIME_LIMIT
    )
    open_ = None if a.open is None or b.open is None else tuple(a.open) + tuple(b.open)
    return dataclasses.replace(
        a,
        status=status,
        value=b.value if better else a.value,
        w=b.w if better else a.w,
        bound=min(a.bound, b.bound),
        threshold=min(a.threshold, b.threshold),
        seconds=max(a.seconds, b.seconds),
        nodes=a.nodes + b.nodes,
        leaves=a.leaves + b.leaves,
        threads=a.threads + b.threads,
        message=a.message or b.message,
        cpu_seconds=a.cpu_seconds + b.cpu_seconds,
        open=open_,
        # b's CPU is a's process's only when it ran there (``PartResult.remote_cpu_seconds``)
        remote_cpu_seconds=a.remote_cpu_seconds
        + (b.remote_cpu_seconds if b.pid == a.pid else b.cpu_seconds),
    )


def per_task(results: list[PartResult], count: int, threshold: float) -> list[PartResult]:
    """One result a plan task (what ``split.combine`` takes): worker i's folded into task
    i mod ``count`` (``fold``) and, for tasks beyond the workers, finished empty parts (their
    units went to the pool, which the workers emptied or whose rest ``with_pool_left`` adds)."""
    out = list(results[:count])
    for r in results[count:]:
        out[r.index % count] = fold(out[r.index % count], r)
    for index in range(len(out), count):
        out.append(PartResult(index, Status.OPTIMAL, math.inf, None, math.inf, threshold, 0.0))
    return out


#: ``on_donate(workers, pool, best)``: called after every donation (tests check coverage there).
OnDonate = Callable[[list, LocalPool, float], None]


class VirtualParts:
    """A ``MapParts`` with one virtual worker a task, stepped round-robin ``chunk`` nodes at a
    time in this process (module docstring): deterministic. Keeps the last run's ``pool`` (its
    ``unit_records`` for ``replay_makespan``) and ``rounds`` (the makespan in chunks).
    ``workers``: how many (default: one a task); ``min_levels``: ``Worker``'s."""

    def __init__(
        self,
        chunk: int = VIRTUAL_CHUNK,
        workers: int | None = None,
        on_donate: OnDonate | None = None,
        min_levels: int = MIN_LEVELS_LEFT,
    ) -> None:
        check_int("chunk", chunk)
        self.chunk, self.workers, self.on_donate = chunk, workers, on_donate
        self.min_levels = min_levels
        self.pool: LocalPool | None = None
        self.rounds = 0
        self.busy_steps = 0

    def __call__(
        self, tables: Tables, tasks: Sequence[PartTask], incumbent: float
    ) -> list[PartResult]:
        start, cpu = time.perf_counter(), time.process_time()
        count = self.workers or len(tasks)
        pool = self.pool = LocalPool(pool_units(tasks))
        budget = tasks[0].budget if tasks else Budget(math.inf)
        best = float(incumbent)
        workers = [Worker(tables, i, best, self.min_levels) for i in range(count)]
        stopped = ""
        self.rounds = self.busy_steps = 0
        while not stopped:
            busy = 0
            for w in workers:
                if not w.busy:
                    taken = pool.take(w.index, w.unit_made)
                    if taken is None:
                        continue
                    w.load(taken[1])
                w.step(budget.chunk(w.made, self.chunk) or 1, best)
                best = min(best, w.best)
                busy += 1
                if budget.expired() or budget.spent(w.made):
                    stopped = budget.stopped_by(w.made)
                    break
                if w.busy and pool.wanted():
                    given = w.donate()
                    if given is not None:
                        pool.put(w.index, [given], w.unit_made)
                        if self.on_donate is not None:
                            self.on_donate(workers, pool, best)
            self.rounds += busy > 0
            self.busy_steps += busy
            if not stopped and not any(w.busy for w in workers) and pool.finished():
                break
            if not busy and not stopped and not pool.finished():
                raise AssertionError("every worker idle and units leased")
        seconds, spent = time.perf_counter() - start, time.process_time() - cpu
        status = Status.TIME_LIMIT if stopped else Status.OPTIMAL
        results = []
        for w in workers:
            if w.busy and not stopped:
                raise AssertionError("a busy worker at the end of a finished run")
            results.append(w.result(status, float(incumbent), seconds, spent / count, stopped))
            pool.release(w.index, w.unit_made)
        results = with_pool_left(results, pool.left(), tables)
        return per_task(results, len(tasks), float(incumbent))


def virtual_parts(chunk: int = VIRTUAL_CHUNK, on_donate: OnDonate | None = None) -> VirtualParts:
    """The deterministic in-process driver (``VirtualParts``)."""
    return VirtualParts(chunk, on_donate=on_donate)


def thread_donating_parts(threads: int, shared: SharedBest | None = None) -> MapParts:
    """A ``MapParts`` whose workers are ``threads`` threads sharing one ``LocalPool`` and one
    best value (``SharedBest``): a worker looks at the pool and the best between chunks of
    ``WORKER_CHUNK`` nodes, and donates when a worker is idle and the pool empty."""
    check_int("threads", threads)

    def map_parts(tables: Tables, tasks: Sequence[PartTask], incumbent: float) -> list:
        start = time.perf_counter()
        pool = LocalPool(pool_units(tasks))
        best = SharedBest(math.inf) if shared is None else shared
        if math.isfinite(incumbent):
            try:
                best.offer(incumbent)
            except SearchStopped:
                pass
        budget = tasks[0].budget if tasks else Budget(math.inf)
        count = max(1, min(threads, len(tasks)))

        def work(index: int) -> PartResult:
            cpu = time.thread_time()
            w = Worker(tables, index, best.value)
            message = ""
            try:
                message = search_from_pool(w, pool, budget, best.offer)
            except SearchStopped as err:
                message = str(err)
            status = Status.TIME_LIMIT if message else Status.OPTIMAL
            seconds = time.perf_counter() - start
            pool.release(index, w.unit_made)
            return w.result(status, float(incumbent), seconds, time.thread_time() - cpu, message)

        with ThreadPoolExecutor(max_workers=count) as executor:
            results = list(executor.map(work, range(count)))
        results = with_pool_left(results, pool.left(), tables)
        return per_task(results, len(tasks), float(incumbent))

    return map_parts


def search_from_pool(
    w: Worker,
    pool: WorkPool,
    budget: Budget,
    share: Callable[[float], float],
    chunk: int = WORKER_CHUNK,
) -> str:
    """A worker's loop on a pool in this process: take a unit, search it a chunk at a time,
    offering its best and donating when asked, until the pool has finished (returns "") or the
    budget stops it (returns why; its open nodes stay in ``w``)."""
    while True:
        if budget.expired() or budget.spent(w.made):
            return budget.stopped_by(w.made)
        if not w.busy:
            taken = pool.take(w.index, w.unit_made)
            if taken is None:
                if pool.finished():
                    return ""
                time.sleep(IDLE_SECONDS)
                continue
            w.load(taken[1])
        w.step(budget.chunk(w.made, chunk) or 1, share(w.best))
        if w.busy and pool.wanted():
            given = w.donate()
            if given is not None:
                pool.put(w.index, [given], w.unit_made)


def replay_makespan(records: Sequence[UnitRecord], cpus: int) -> int:
    """The makespan (in nodes) of the recorded units on ``cpus`` simulated CPUs: a unit is
    ready when its parent has made ``offset`` of its nodes (the plan's units at once), each CPU
    takes the ready unit donated first, and a unit runs its ``nodes`` uninterrupted. Units
    donated only because a worker of the recorded run was idle: with more CPUs than the recorded
    run's workers, the recorded donations limit the parallelism (a lower bound on the
    speed-up)."""
    check_int("cpus", cpus)
    children: dict[int, list[int]] = {}
    ready: list[tuple[int, int]] = []
    for uid, r in enumerate(records):
        if r.parent < 0:
            ready.append((0, uid))
        else:
            children.setdefault(r.parent, []).append(uid)
    heapq.heapify(ready)
    free = [0] * cpus
    end = 0
    while ready:
        release, uid = heapq.heappop(ready)
        at = max(release, heapq.heappop(free))
        finish = at + records[uid].nodes
        heapq.heappush(free, finish)
        end = max(end, finish)
        for c in children.get(uid, ()):
            heapq.heappush(ready, (at + records[c].offset, c))
    return end


__all__ = [
    "IDLE_SECONDS",
    "MIN_LEVELS_LEFT",
    "VIRTUAL_CHUNK",
    "WORKER_CHUNK",
    "LocalPool",
    "UnitRecord",
    "VirtualParts",
    "WorkPool",
    "Worker",
    "fold",
    "per_task",
    "pool_units",
    "replay_makespan",
    "search_from_pool",
    "thread_donating_parts",
    "virtual_parts",
    "with_pool_left",
]
