"""The window search's pool on Ray: the actor, a worker's client of it, and the worker's task.

The pool is ``oracles.window.pool.Pool`` itself, made a Ray actor holding no CPU (like
``pipeline.sweep.progress.ProgressBoard``). A worker talks to it through ``RayClient``, the
``PoolClient`` of the one loop (``oracles.window.engine.search``) over Ray, which NEVER blocks
on the actor while the worker holds work: a task in ``ray.get`` or ``ray.wait`` (even with
timeout 0) lends its CPU to another task (measured on a one-CPU Ray: a second task started
0.4 s after a task began polling with ``ray.wait(timeout=0)``, and not before the first ended
when it polled a future). So every call is sent, and its answer read only once it has arrived
(``Pending``: the call's future); ``look`` answers with the newest state known and sends the next
look at most every ``LOOK_EVERY`` seconds.

A worker task (``worker_task``) receives the search's ``Tables`` from the object store once and
makes their arrays writable (``writable``), runs the loop to its end (``engine.drive``), and
returns its ``WorkerResult`` with the CPUs its task held and the Ray node it ran on.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from typing import Any

import numpy as np

from oracles.window.engine import Job, WorkerResult, drive
from oracles.window.pool import DONE, IDLE, IDLE_SECONDS, Look
from oracles.window.tree import Tables
from oracles.window.worker import Worker

#: Seconds between two looks at the pool of a busy worker (an idle one looks at once). Every
#: look is a round trip to the pool's actor; looked at after every chunk (about 40 a second a
#: worker), a two-node solve's workers got 1.80 CPU s a wall second, and 1.83-1.85 with this
#: (docs/results/parts_balance.md).
LOOK_EVERY = 0.1


def assigned_cpus() -> int:
    """The CPUs the running Ray task holds (at least 1)."""
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, int(round(cpus)))


def node_id() -> str:
    """The Ray node this process runs on ("" outside a Ray worker or driver, or when Ray cannot
    say: a node id is a record, never a reason to fail)."""
    import ray

    try:
        return ray.get_runtime_context().get_node_id() or ""
    except Exception:  # noqa: BLE001
        return ""


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
    """An actor call's answer, looked at without blocking (``ObjectRef.future``: module
    docstring)."""

    def __init__(self, ref: Any) -> None:
        self.future = ref.future()

    def ready(self) -> bool:
        return self.future.done()

    def value(self) -> Any:
        return self.future.result()


class RayClient:
    """Worker ``worker``'s client of the pool actor ``pool`` (module docstring): ``best`` is the
    best value it starts from; ``pause`` what an idle worker waits between two looks."""

    def __init__(
        self,
        pool: Any,
        worker: int,
        best: float,
        *,
        pause: float = IDLE_SECONDS,
        look_every: float = LOOK_EVERY,
    ) -> None:
        self.pool, self.worker, self.pause, self.look_every = pool, worker, pause, look_every
        self.known = Look(0, False, float(best))
        self.looking: Pending | None = Pending(pool.look.remote(worker))
        self.looked = time.perf_counter()
        self.taking: Pending | None = None
        self.idle_look: Pending | None = None  # a look sent after an empty take

    def _absorb(self, look: Look) -> None:
        best = min(self.known.best, look.best)
        self.known = dataclasses.replace(look, best=best)

    def look(self) -> Look:
        if self.looking is not None and self.looking.ready():
            self._absorb(self.looking.value())
            self.looking = None
        if self.looking is None and time.perf_counter() - self.looked >= self.look_every:
            self.looking, self.looked = (
                Pending(self.pool.look.remote(self.worker)),
                time.perf_counter(),
            )
        return self.known

    def _idle(self):
        """``IDLE``, after the idle worker's pause."""
        if self.pause:
            time.sleep(self.pause)
        return IDLE

    def take(self, nodes: int):
        if self.idle_look is not None:
            if not self.idle_look.ready():
                return self._idle()
            look, self.idle_look = self.idle_look.value(), None
            self._absorb(look)
            if look.finished:
                return DONE
        if self.taking is None:
            self.taking = Pending(self.pool.take.remote(self.worker, nodes))
        if not self.taking.ready():
            return self._idle()
        taken, self.taking = self.taking.value(), None
        if taken is None:  # idle: a look sent after this take says whether the search ended
            self.idle_look = Pending(self.pool.look.remote(self.worker))
            return self._idle()
        return taken[1]

    def offer(self, value: float) -> None:
        self.pool.offer.remote(value)

    def put(self, units: Sequence[np.ndarray], offset: int) -> None:
        self.pool.put.remote(self.worker, list(units), offset)
        self.known = dataclasses.replace(self.known, wanted=0)  # until the next look

    def _call(self, method: str, *args: Any) -> Any:
        """A call to the pool waited for (a worker that ends: it holds no work any more)."""
        import ray

        return ray.get(getattr(self.pool, method).remote(self.worker, *args))

    def release(self, nodes: int) -> None:
        """The lease released (a unit leased by a take still in flight goes back first)."""
        if self.taking is not None:
            taken, self.taking = self.taking.value(), None
            if taken is not None:
                self._call("requeue", 0)
        self._call("release", nodes)

    def requeue(self, nodes: int) -> None:
        self._call("requeue", nodes)


def worker_task(job: Job, index: int, pool: Any, chunk: int, min_levels: int) -> WorkerResult:
    """Worker ``index`` of the search ``job`` (its tables, best and budget) as a Ray task on the
    pool actor ``pool`` (module docstring): its result, with its open nodes when the budget
    stopped it, the Ray node it ran on and the CPUs its task held."""
    worker = Worker(writable(job.tables), index, job.best, min_levels)
    client = RayClient(pool, index, job.best)
    result = drive(worker, client, job.budget, chunk=chunk, clock=time.process_time)
    return dataclasses.replace(result, node=node_id(), threads=assigned_cpus())


__all__ = [
    "LOOK_EVERY",
    "Pending",
    "RayClient",
    "assigned_cpus",
    "node_id",
    "worker_task",
    "writable",
]
