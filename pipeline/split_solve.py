"""A split solve on Ray: the parts of ``oracles.split`` as Ray tasks that share
the best value found so far.

``WindowOracle(parts=N, map_parts=ray_map_parts())`` (``oracles.window``) runs the same code as
the one-process solve; only where the parts run changes:

* the search's ``Tables`` (numpy records and the Problem) are put in Ray's object store ONCE
  and every task reads them from there; each part is a Ray task holding ``cpus_per_task`` CPUs
  that receives a ``PartTask`` (its nodes' prefixes, numpy) and builds everything else inside
  the task; nothing solver-specific crosses a process boundary. The CPUs the task holds are
  passed as its ``threads`` (recorded in its ``PartResult`` and the certificate; the search
  itself is numpy and builds no solver model);
* a ``BestValue`` actor (no CPU, like ``pipeline.progress.ProgressBoard``) holds the least
  exact objective found so far, starting at the incumbent's: a task reads it about every second
  while it searches (``oracles.branch.SHARE_EVERY``) and offers each better point it finds at
  once, so the parts prune each other while they run. A task never blocks on the actor (a task
  blocked in ``ray.get`` lends its CPU to another part, and two parts would share one CPU);
* a task that raises is recorded as a failed part (``PartResult.failed``), and so is a task
  Ray lost: the whole is then uncertified (``oracles.split.combine``), never retried with
  other parts' values;
* the driver waits for the parts only until their deadline (the solve's budget,
  ``PartTask.budget``, which each part reads on its own clock) plus ``PART_GRACE_SECONDS``: a part that Ray has not started
  by then (the cluster's CPUs busy) or that has not returned is cancelled and recorded as
  stopped (TIME_LIMIT), so a split solve returns on time whatever the queue.

Runs on whatever Ray the caller connected to (``pipeline.sweep.init_ray``: ``cluster.address``
or a local Ray).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any, Sequence

import numpy as np

from oracles.branch import SearchStopped, Tables
from oracles.budget import now
from oracles.split import PartResult, PartTask, part_or_failure, solve_part_below

#: A part Ray lost (its worker died) is retried this many times; a part that raised is not.
MAX_RETRIES = 1
#: How long after the parts' deadline the driver still waits for their results (a part checks
#: its deadline itself; this covers returning its result).
PART_GRACE_SECONDS = 5.0


class BestValue:
    """The least exact objective any part has found (a Ray actor by ``RayMapParts``)."""

    def __init__(self, value: float) -> None:
        self.value = float(value)

    def read(self) -> float:
        return self.value

    def offer(self, value: float) -> float:
        self.value = min(self.value, float(value))
        return self.value


def assigned_cpus() -> int:
    """The CPUs the running Ray task holds (at least 1)."""
    import ray

    cpus = ray.get_runtime_context().get_assigned_resources().get("CPU", 1.0)
    return max(1, int(round(cpus)))


def writable(tables: Tables) -> Tables:
    """``tables`` with writable arrays. Read from Ray's object store they are read-only, and the
    compiled search (``oracles.branch_kernel``) compiles another specialization of itself for
    read-only arrays in every worker: measured 4.5 s on top of a 1 s search, so that a part of a
    short solve was cancelled at its deadline before that compilation ever reached numba's cache.
    """
    copies = {}
    for name in (f.name for f in dataclasses.fields(tables)):
        value = getattr(tables, name)
        if isinstance(value, np.ndarray) and not value.flags.writeable:
            copies[name] = np.array(value)
    return dataclasses.replace(tables, **copies) if copies else tables


def solve_part_task(tables: Tables, task: PartTask, best: Any, start_value: float) -> PartResult:
    """One part on a Ray worker, sharing the best value through the ``best`` actor while it
    searches. Its own failure is a failed part, not an exception.

    Nothing here waits on the actor: a task blocked in ``ray.get`` hands its CPU back to Ray,
    which then starts another part on it, so two parts would share one CPU. Offers are sent
    without waiting, and a read is taken only once it has arrived (``ray.wait`` with timeout
    0); the part starts from ``start_value``, the best known when the parts were launched."""
    import ray

    threads = assigned_cpus()
    pending = [best.read.remote()]

    def share(value: float) -> float:
        if math.isfinite(value):
            best.offer.remote(value)
        ready, _ = ray.wait(pending, timeout=0)
        if not ready:
            return value
        known = ray.get(ready[0])
        pending[0] = best.read.remote()
        return min(value, known)

    return part_or_failure(
        solve_part_below, writable(tables), task, start_value, threads=threads, share=share
    )


class RayMapParts:
    """``map_parts`` for ``oracles.window.WindowOracle``: every part a Ray task (module
    docstring). Keeps ``best_seen``, the shared value read when the last call ended (offers are
    not awaited, so it may miss the last ones)."""

    def __init__(self, cpus_per_task: int = 1) -> None:
        if cpus_per_task < 1:
            raise ValueError(f"cpus_per_task must be >= 1, found {cpus_per_task!r}")
        self.cpus_per_task = int(cpus_per_task)
        self.best_seen = math.inf

    def __call__(
        self, tables: Tables, tasks: Sequence[PartTask], incumbent: float
    ) -> list[PartResult]:
        import ray

        best = ray.remote(num_cpus=0, max_restarts=0)(BestValue).remote(incumbent)
        remote = ray.remote(num_cpus=self.cpus_per_task, max_retries=MAX_RETRIES)(solve_part_task)
        shared = ray.put(tables)
        refs = [remote.remote(shared, task, best, incumbent) for task in tasks]
        results = []
        until = max((task.budget.deadline for task in tasks), default=math.inf)
        until += PART_GRACE_SECONDS
        try:
            for task, ref in zip(tasks, refs):
                results.append(_result(ray, task, ref, until))
            self.best_seen = _best_seen(ray, best, self.best_seen, until)
        except BaseException:
            for ref in refs:  # interrupted: the other parts are of no use
                ray.cancel(ref)
            raise
        finally:
            ray.kill(best)
        return results


def _best_seen(ray, best: Any, known: float, until: float) -> float:
    """The shared best value, waited for at most a second past ``until`` (``known`` if it
    does not come: it is a record, not part of the answer)."""
    timeout = None if until == math.inf else max(0.0, until - now()) + 1.0
    try:
        return ray.get(best.read.remote(), timeout=timeout)
    except ray.exceptions.RayError:
        return known


def _result(ray, task: PartTask, ref, until: float) -> PartResult:
    """The result of ``task``'s Ray task, waited for until ``until`` (``oracles.budget.now``
    seconds): one that is not back by then is cancelled and stopped (TIME_LIMIT), one Ray lost
    failed."""
    timeout = None if until == math.inf else max(0.0, until - now())
    try:
        return ray.get(ref, timeout=timeout)
    except ray.exceptions.GetTimeoutError:
        ray.cancel(ref, force=True)
        stopped = SearchStopped("the part had not returned by the solve's deadline")
        return PartResult.failed(task.index, stopped)
    except ray.exceptions.RayError as err:  # lost worker, actor gone, ...
        return PartResult.failed(task.index, err)


def ray_map_parts(cpus_per_task: int = 1) -> RayMapParts:
    """The Ray ``map_parts``, each part holding ``cpus_per_task`` CPUs."""
    return RayMapParts(cpus_per_task)


__all__ = [
    "BestValue",
    "MAX_RETRIES",
    "PART_GRACE_SECONDS",
    "RayMapParts",
    "assigned_cpus",
    "ray_map_parts",
    "solve_part_task",
    "writable",
]
