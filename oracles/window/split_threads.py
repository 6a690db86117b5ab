"""The parts of a split solve (``oracles.window.split``) on threads of this process: a solve that holds
several CPUs searches on all of them without Ray.

The window search's depth-first kernel is compiled without the interpreter lock
(``oracles.window.kernel``), so parts searched in threads run side by side on as many cores.
``thread_parts(threads)`` is a ``MapParts``: ``threads`` workers take the parts in order from
one queue (a worker that finishes a part takes the next, so the parts balance without being
equal), and share one best value: every part reads it when it starts and about every second
(``branch.SHARE_EVERY``) and offers each better point at once, so the parts prune each other
while they run. The results are the ones ``sequential_parts`` would give for the same best
values: one per part, in order; a part that raises is recorded as failed and leaves the whole
uncertified (``split.combine``), the others go on.
"""

from __future__ import annotations

import math
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

from core.validation import check_int
from oracles.window.tree import SearchStopped, Tables
from oracles.window.split import MapParts, PartResult, PartTask, part_or_failure, solve_part_below


class SharedBest:
    """The least objective value any part has found (or the incumbent's), under a lock; and a
    stop signal (``stop``: another member of a race, ``oracles.race``, has proven its answer)."""

    def __init__(self, value: float) -> None:
        self._value = float(value)
        self._lock = threading.Lock()
        self._stopped = ""

    def offer(self, value: float) -> float:
        """Record ``value`` if it is better; return the least value known. After ``stop``,
        raises ``SearchStopped`` instead: the part that offers stops there, its proven bound
        lost, its stop recorded (``PartResult.failed``)."""
        with self._lock:
            if self._stopped:
                raise SearchStopped(self._stopped)
            if value < self._value:
                self._value = float(value)
            return self._value

    def stop(self, reason: str) -> None:
        """Make every later ``offer`` raise ``SearchStopped(reason)``."""
        with self._lock:
            self._stopped = reason

    @property
    def value(self) -> float:
        with self._lock:
            return self._value


def thread_parts(threads: int, shared: SharedBest | None = None) -> MapParts:
    """A ``MapParts`` that searches the parts on ``threads`` threads (module docstring), sharing
    their best through ``shared`` when given (it is offered the incumbent first)."""
    check_int("threads", threads)

    def map_parts(tables: Tables, tasks: Sequence[PartTask], incumbent: float) -> list[PartResult]:
        best = SharedBest(math.inf) if shared is None else shared
        if math.isfinite(incumbent):
            try:
                best.offer(incumbent)
            except SearchStopped:  # stopped already: each part stops at its first offer
                pass

        def solve(task: PartTask) -> PartResult:
            return part_or_failure(
                solve_part_below, tables, task, best.value, threads=threads, share=best.offer
            )

        with ThreadPoolExecutor(max_workers=max(1, min(threads, len(tasks)))) as pool:
            return list(pool.map(solve, tasks))

    return map_parts


__all__ = ["SharedBest", "thread_parts"]
