"""A split solve on Ray (issue 19, item 2): the parts of ``oracles.split`` as Ray tasks that share
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
  other parts' values.

Runs on whatever Ray the caller connected to (``pipeline.sweep.init_ray``: ``cluster.address``
or a local Ray).
"""

from __future__ import annotations

import math
import time
from typing import Any, Sequence

from oracles.branch import Tables
from oracles.split import PartResult, PartTask, solve_part_below

#: A part Ray lost (its worker died) is retried this many times; a part that raised is not.
MAX_RETRIES = 1


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


def solve_part_task(tables: Tables, task: PartTask, best: Any, start_value: float) -> PartResult:
    """One part on a Ray worker, sharing the best value through the ``best`` actor while it
    searches. Its own failure is a failed part, not an exception.

    Nothing here waits on the actor: a task blocked in ``ray.get`` hands its CPU back to Ray,
    which then starts another part on it, so two parts would share one CPU. Offers are sent
    without waiting, and a read is taken only once it has arrived (``ray.wait`` with timeout
    0); the part starts from ``start_value``, the best known when the parts were launched."""
    import ray

    start = time.perf_counter()
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

    try:
        return solve_part_below(tables, task, start_value, threads=threads, share=share)
    except Exception as err:  # noqa: BLE001 - a failed part leaves the whole uncertified
        return PartResult.failed(
            task.index, err, seconds=time.perf_counter() - start, threads=threads
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
        try:
            for task, ref in zip(tasks, refs):
                try:
                    results.append(ray.get(ref))
                except ray.exceptions.RayError as err:  # lost worker, actor gone, ...
                    results.append(PartResult.failed(task.index, err))
            self.best_seen = ray.get(best.read.remote())
        except BaseException:
            for ref in refs:  # interrupted: the other parts are of no use
                ray.cancel(ref)
            raise
        finally:
            ray.kill(best)
        return results


def ray_map_parts(cpus_per_task: int = 1) -> RayMapParts:
    """The Ray ``map_parts``, each part holding ``cpus_per_task`` CPUs."""
    return RayMapParts(cpus_per_task)


__all__ = [
    "BestValue",
    "MAX_RETRIES",
    "RayMapParts",
    "assigned_cpus",
    "ray_map_parts",
    "solve_part_task",
]
