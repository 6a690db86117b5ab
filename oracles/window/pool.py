"""The pool of one window search: it owns the open nodes, and every place a search runs is a
client of it.

As in UG's load coordinator (ParaSCIP, FiberSCIP; Shinano et al. 2012, ``../shared/STYLE.md``,
"One search, many transports"), the search's nodes are WORK UNITS (prefix arrays of one level,
in search order) in one pool, and its workers (``oracles.window.worker``) take one unit at a
time, search it below the best value known, and DONATE part of their open tree to the pool when
another worker is idle and the pool is empty. The pool also holds the least value any worker has
found (``offer``), the workers a cluster asks to give their nodes back (``recall``), and a race's
stop (``stop``). A unit is LEASED to the worker that took it until the worker takes the next,
releases it, or is lost (``requeue``: the lease goes back to the pool, to be searched again from
its own prefixes; its donated subtrees may be searched twice, nothing is left out). The solve has
ended when no unit is queued or leased (``finished``).

The pool is one class whatever the transport: a ``Pool`` in this process, shared by threads (a
lock), or the same class as a Ray actor (``pipeline.distributed``). A worker never calls the pool
directly: it talks to a ``PoolClient`` (``LocalClient`` here; the Ray client answers from
futures and never blocks), through the one loop of ``oracles.window.engine``.

Carrying on is this pool written down: a stopped solve's open nodes are the pool's units left
(``left``) and its workers' own open nodes, and the next attempt starts a pool from them
(``oracles.window.checkpoint``).

The pool records every unit's origin (``UnitRecord``), from which ``replay_makespan`` replays a
run on P simulated CPUs (``bench.parts_balance``).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from core.validation import check_int

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


@dataclass(frozen=True)
class Look:
    """What a worker learns from one look at the pool.

    Attributes:
        wanted: units idle workers wait for beyond those queued (a busy worker donates when > 0).
        finished: no unit queued or leased: the search has ended (``Pool.finished``).
        best: the least exact objective any worker has found, or the start's best.
        recalled: this worker is asked to give its nodes back to the pool and end.
        stopped: why the whole search is to stop ("" while it goes on: a race's rival
            certified, ``Pool.stop``).
    """

    wanted: int
    finished: bool
    best: float
    recalled: bool = False
    stopped: str = ""


class Pool:
    """The open nodes of one search, its best value and its signals (module docstring). Every
    method returns at once and is safe for threads; ``worker`` is the worker's index."""

    def __init__(
        self, units: Sequence[np.ndarray], best: float = math.inf, adopted: Sequence[int] = ()
    ) -> None:
        self._lock = threading.Lock()
        self._queue: deque[int] = deque()
        self._units: dict[int, np.ndarray] = {}
        self.records: list[UnitRecord] = []
        self._leases: dict[int, int] = {}
        self._hungry: set[int] = set()
        self.donations = 0
        self.best = float(best)
        self._recalled: set[int] = set()
        self._seen: set[int] = set()
        self._stopped = ""
        for states in units:
            self._add(np.asarray(states, dtype=np.int8), -1, 0)
        for worker in adopted:  # workers whose nodes came from elsewhere (``adopt``)
            self.adopt(worker)

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
        """Release the worker's lease (``nodes`` searched in it) and lease it the next unit (id,
        prefixes), or None (it is idle)."""
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
        """Units given by the worker from its leased unit, at ``offset`` of its nodes (a donation,
        or its nodes handed back when recalled)."""
        with self._lock:
            parent = self._leases.get(worker, -1)
            for states in units:
                if len(states):
                    self._add(np.asarray(states, dtype=np.int8), parent, int(offset))
                    self.donations += 1

    def release(self, worker: int, nodes: int = 0) -> None:
        """The worker is done with its lease; ``nodes`` searched in it."""
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
        whose pool moved to a cluster, ``pipeline.distributed``) holds the pool open until it
        takes its next unit."""
        with self._lock:
            uid = len(self.records)
            self.records.append(UnitRecord(-1, 0))
            self._units[uid] = np.zeros((0, 0), np.int8)
            self._leases[worker] = uid

    def offer(self, value: float) -> float:
        """Record a worker's best value if it is better; the least known."""
        with self._lock:
            self.best = min(self.best, float(value))
            return self.best

    def stop(self, reason: str) -> None:
        """Every later look says the search is to stop (``Look.stopped``)."""
        with self._lock:
            self._stopped = str(reason) or "stopped"

    def recall(self, workers: Sequence[int]) -> None:
        """Ask these workers to give their open nodes back to the pool and end."""
        with self._lock:
            self._recalled.update(int(i) for i in workers)

    def look(self, worker: int = -1) -> Look:
        """The pool's state for ``worker`` in one call (one round trip to a Ray actor); a
        worker's first look says it has started (``started``)."""
        with self._lock:
            self._seen.add(worker)
            return Look(
                self._wanted(),
                self._finished(),
                self.best,
                worker in self._recalled,
                self._stopped,
            )

    def started(self) -> int:
        """How many workers have looked at the pool (started running)."""
        with self._lock:
            return len(self._seen - {-1})

    def _wanted(self) -> int:
        return max(0, len(self._hungry) - len(self._queue))

    def _finished(self) -> bool:
        return not self._queue and not self._leases

    def wanted(self) -> int:
        with self._lock:
            return self._wanted()

    def finished(self) -> bool:
        with self._lock:
            return self._finished()

    def left(self) -> tuple[np.ndarray, ...]:
        """The units no worker searches: the queue's, and those still leased (a lost worker's
        lease: call ``requeue`` first; every worker that ended released its own)."""
        with self._lock:
            leased = set(self._leases.values())
            queued = [self._units[uid] for uid in self._queue]
            units = tuple(queued) + tuple(self._units[u] for u in sorted(leased))
            return tuple(u for u in units if len(u))

    def queued(self) -> tuple[tuple[int, np.ndarray], ...]:
        """The units in the queue (not leased), in order, with their ids."""
        with self._lock:
            return tuple((uid, self._units[uid]) for uid in self._queue)

    def donations_made(self) -> int:
        """How many units workers gave the pool (for a Ray actor's caller)."""
        with self._lock:
            return self.donations

    def unit_records(self) -> list[UnitRecord]:
        with self._lock:
            return [UnitRecord(r.parent, r.offset, r.nodes) for r in self.records]


class _Signal:
    """What ``PoolClient.take`` answers when it has no unit: ``IDLE`` (ask again) or ``DONE``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


#: No unit now: other workers hold the rest; ask again.
IDLE = _Signal("IDLE")
#: The search has ended: no unit queued or leased.
DONE = _Signal("DONE")


class PoolClient(Protocol):
    """How one worker talks to the pool, wherever the two run (module docstring). No method
    blocks on a remote pool: ``look`` gives the newest answer known, ``take`` a unit, ``IDLE``
    or ``DONE``."""

    def look(self) -> Look: ...

    def take(self, nodes: int) -> np.ndarray | _Signal: ...

    def offer(self, value: float) -> None: ...

    def put(self, units: Sequence[np.ndarray], offset: int) -> None: ...

    def release(self, nodes: int) -> None: ...

    def requeue(self, nodes: int) -> None: ...


#: ``stop() -> reason``: a race's stop signal looked at with the pool ("" while it goes on).
StopSignal = Callable[[], str]


class LocalClient:
    """A worker's client of a ``Pool`` in this process. ``pause``: seconds an idle worker waits
    before its next look (0: the driver steps the workers in turn, ``engine.InProcess``);
    ``stop``: a race's stop signal, looked at with every look (``oracles.routing.race.RaceStop``)."""

    def __init__(
        self,
        pool: Pool,
        worker: int,
        *,
        pause: float = IDLE_SECONDS,
        stop: StopSignal | None = None,
    ) -> None:
        check_int("worker", worker, minimum=0)
        self.pool, self.worker, self.pause, self._stop = pool, worker, pause, stop

    def look(self) -> Look:
        look = self.pool.look(self.worker)
        stopped = self._stop() if self._stop is not None else ""
        if stopped and not look.stopped:
            return dataclasses.replace(look, stopped=stopped)
        return look

    def take(self, nodes: int) -> np.ndarray | _Signal:
        taken = self.pool.take(self.worker, nodes)
        if taken is not None:
            return taken[1]
        if self.pool.finished():
            return DONE
        if self.pause:
            time.sleep(self.pause)
        return IDLE

    def offer(self, value: float) -> None:
        self.pool.offer(value)

    def put(self, units: Sequence[np.ndarray], offset: int) -> None:
        self.pool.put(self.worker, units, offset)

    def release(self, nodes: int) -> None:
        self.pool.release(self.worker, nodes)

    def requeue(self, nodes: int) -> None:
        self.pool.requeue(self.worker, nodes)


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
    "DONE",
    "IDLE",
    "IDLE_SECONDS",
    "LocalClient",
    "Look",
    "Pool",
    "PoolClient",
    "StopSignal",
    "UnitRecord",
    "replay_makespan",
]
