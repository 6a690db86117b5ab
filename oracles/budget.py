"""A solve's budget: its deadline, its CPUs and an optional node limit, validated once.

Every solve runs on one ``Budget``, made when the solve starts (``Budget.from_limit``, the one
place a time limit and a thread count are checked; a bad value is refused naming the field and
quoting it, as ``core.validation`` does) and passed down to every piece of work: the structured
oracle's subproblems, HiGHS's second opinion, the window search and its parts, the reference
formulation a route hands a problem on to (``oracles.routing``). Nothing re-reads a time limit:
a piece of work asks the budget what is left (``left``) before it starts, gives a solver only
that (``solver_seconds``), and stops when it has expired (``expired``). A member of a chain
that may take only part of what is left gets ``share(fraction)`` or ``sub(seconds)``; what it
leaves is the next member's.

The deadline is on the monotonic clock (``time.monotonic``: never set back, the same clock as
``time.perf_counter`` on Linux), so a budget means the same in one process whatever the wall
clock does. A deadline other processes read (the parts of a split solve on Ray, possibly on
other machines) is handed over as wall-clock seconds (``wall_deadline``).

A budget is frozen: ``share`` and ``sub`` return new budgets and never extend the deadline.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any

from core.validation import check_int, check_real, require
from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT

#: The time a solver call is given when (almost) nothing is left: solvers refuse a limit of 0,
#: and a call this short returns at its first check of the clock.
MIN_SOLVER_SECONDS = 1e-3


def now() -> float:
    """The budget's clock (monotonic seconds)."""
    return time.monotonic()


@dataclass(frozen=True)
class Budget:
    """What one solve may spend (module docstring).

    Attributes:
        deadline: when the solve must return, in ``time.monotonic()`` seconds.
        threads: the CPUs it holds (solver threads; a search in numpy uses one).
        node_limit: the most search nodes it may make (None: no limit but the deadline).
        seconds: the time it was given when made (a record's limit; ``left`` is what remains).
    """

    deadline: float
    threads: int = DEFAULT_THREADS
    node_limit: int | None = None
    seconds: float = math.inf

    @classmethod
    def from_limit(
        cls,
        time_limit: Any = DEFAULT_TIME_LIMIT,
        threads: Any = DEFAULT_THREADS,
        node_limit: Any = None,
    ) -> Budget:
        """A budget of ``time_limit`` seconds from now on ``threads`` CPUs: ``time_limit``
        finite and > 0, ``threads`` an integer >= 1, ``node_limit`` None or an integer >= 1;
        else TypeError / ValueError naming the field and quoting the value."""
        check_limits(time_limit, threads, node_limit)
        return cls(now() + float(time_limit), int(threads), node_limit, float(time_limit))

    def left(self) -> float:
        """Seconds until the deadline (0 once it has passed)."""
        return max(0.0, self.deadline - now())

    def expired(self) -> bool:
        """Whether the deadline has passed: no further piece of work may start."""
        return now() >= self.deadline

    def solver_seconds(self) -> float:
        """The time limit to give a solver call now: what is left, at least
        ``MIN_SOLVER_SECONDS``."""
        return max(self.left(), MIN_SOLVER_SECONDS)

    def sub(self, seconds: float) -> Budget:
        """A budget for a member that may take at most ``seconds`` of what is left."""
        require(not math.isnan(seconds) and seconds >= 0, "seconds", "must be >= 0", seconds)
        deadline = min(self.deadline, now() + float(seconds))
        return replace(self, deadline=deadline, seconds=max(0.0, deadline - now()))

    def share(self, fraction: float) -> Budget:
        """A budget for a member that may take ``fraction`` (in (0, 1]) of what is left."""
        check_real("fraction", fraction, "(0, 1]")
        return self.sub(fraction * self.left())

    def wall_deadline(self) -> float:
        """The deadline in wall-clock seconds (``time.time()``), for other processes."""
        return time.time() + self.left()

    def with_threads(self, threads: int) -> Budget:
        """The same deadline on ``threads`` CPUs."""
        check_int("threads", threads)
        return replace(self, threads=int(threads))


def check_limits(time_limit: Any, threads: Any, node_limit: Any = None) -> None:
    """The one check of a solve's limits (``Budget.from_limit``): ``time_limit`` (seconds)
    finite and > 0, ``threads`` an integer >= 1, ``node_limit`` None or an integer >= 1."""
    check_real("time_limit", time_limit)
    check_int("threads", threads)
    if node_limit is not None:
        check_int("node_limit", node_limit)


__all__ = ["Budget", "MIN_SOLVER_SECONDS", "check_limits", "now"]
