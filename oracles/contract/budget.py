"""A solve's budget: its deadline, its CPUs and an optional node limit, validated once, where it
is made.

Every solve runs on one ``Budget``: a route makes it when the solve starts (``Budget.from_limit``
on the route's ``time_limit`` and ``threads``; ``oracles.routing.routes``) and every strategy takes it
as the second argument of ``solve(problem, budget)``. It is the one form of time below the
routing table: the structured search's subproblems, HiGHS's second opinion, the grid search,
the window search, its frontier and its parts (in this process, on threads or as Ray tasks in
other processes) and the compiled kernel's node chunks all read the same budget. Nothing
re-reads a time limit: a piece of work asks the budget what is left (``left``) before it starts,
gives a solver only that (``solver_seconds``), takes its node chunks from it (``chunk``) and
stops when it has ``expired`` or its nodes are spent (``spent``). A member of a chain that may
take only part of what is left gets ``share(fraction)`` or ``sub(seconds)``; what it leaves is
the next member's.

A budget is checked in ``__post_init__``, so every budget is valid wherever it was made (a bad
value is refused naming the field and quoting it, as ``core.validation`` does); the code below
it trusts it.

The deadline is on the monotonic clock (``time.monotonic``: never set back, the same clock as
``time.perf_counter`` on Linux), so a budget means the same in one process whatever the wall
clock does. A budget crosses to other processes (a race's rival, the parts of a split solve on
Ray, possibly on other machines) by pickling, which hands the deadline over as wall-clock
seconds and reads it back on the receiver's monotonic clock. A race's stop is not part of a
budget: it is the window search's own argument (``Stop``, ``WindowOracle.solve(..., stop=)``), a
lock of this process that workers elsewhere see through their pool (``oracles.window.pool``).

A budget is frozen: ``share``, ``sub`` and ``with_threads`` return new budgets and never extend
the deadline.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, replace
from typing import Any, Protocol

from core.validation import check_int, check_real, require

#: Every oracle's defaults (the pipeline's ``oracle`` config and the estimators take them from
#: here): seconds a solve may take before it returns uncertified, and solver threads.
DEFAULT_TIME_LIMIT = 600.0
DEFAULT_THREADS = 1

#: The time a solver call is given when (almost) nothing is left: solvers refuse a limit of 0,
#: and a call this short returns at its first check of the clock.
MIN_SOLVER_SECONDS = 1e-3


def now() -> float:
    """The budget's clock (monotonic seconds)."""
    return time.monotonic()


class Stop(Protocol):
    """The stop signal of a race (``oracles.routing.race.RaceStop``), handed to the racing search as
    an argument of its solve: called, it says why the search is to stop ("" while it goes on)."""

    def __call__(self) -> str: ...


@dataclass(frozen=True)
class Budget:
    """What one solve may spend (module docstring).

    Attributes:
        deadline: when the solve must return, in ``time.monotonic()`` seconds (inf: never).
        threads: the CPUs it holds (solver threads; a search in numpy uses one).
        node_limit: the most search nodes it may make (None: no limit but the deadline).
        seconds: the time it was given when made (a record's limit; ``left`` is what remains).
    """

    deadline: float
    threads: int = DEFAULT_THREADS
    node_limit: int | None = None
    seconds: float = math.inf

    def __post_init__(self) -> None:
        require(
            isinstance(self.deadline, (int, float)) and not math.isnan(self.deadline),
            "deadline",
            "must be a number of monotonic seconds (inf: none)",
            self.deadline,
        )
        check_int("threads", self.threads)
        if self.node_limit is not None:
            check_int("node_limit", self.node_limit, 0)
        require(
            not math.isnan(self.seconds) and self.seconds >= 0,
            "seconds",
            "must be >= 0",
            self.seconds,
        )

    @classmethod
    def from_limit(
        cls,
        time_limit: Any = DEFAULT_TIME_LIMIT,
        threads: Any = DEFAULT_THREADS,
        node_limit: Any = None,
    ) -> Budget:
        """A budget of ``time_limit`` seconds from now on ``threads`` CPUs: ``time_limit``
        finite and > 0 (None: no deadline), ``threads`` an integer >= 1, ``node_limit`` None or
        an integer >= 1; else TypeError / ValueError naming the field and quoting the value."""
        check_limits(time_limit, threads, node_limit)
        seconds = math.inf if time_limit is None else float(time_limit)
        return cls(now() + seconds, int(threads), node_limit, seconds)

    @classmethod
    def unlimited(cls, threads: int = DEFAULT_THREADS) -> Budget:
        """No deadline and no node limit, on ``threads`` CPUs."""
        return cls(math.inf, threads)

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

    def spent(self, nodes: int) -> bool:
        """Whether ``nodes`` made so far exceed the node limit."""
        return self.node_limit is not None and nodes > self.node_limit

    def chunk(self, nodes: int, size: int) -> int:
        """The nodes the next chunk of a search may make, ``nodes`` made so far: at most
        ``size``, and one past the node limit at most (0 once it is spent), so that a search
        that runs into the limit says so."""
        if self.node_limit is None:
            return size
        return max(0, min(size, self.node_limit + 1 - nodes))

    def stopped_by(self, nodes: int) -> str:
        """Why a search that made ``nodes`` stops: the deadline, or its node limit."""
        return f"more than {self.node_limit} nodes" if self.spent(nodes) else "deadline"

    def sub(self, seconds: float) -> Budget:
        """A budget for a member that may take at most ``seconds`` of what is left."""
        require(not math.isnan(seconds) and seconds >= 0, "seconds", "must be >= 0", seconds)
        deadline = min(self.deadline, now() + float(seconds))
        return replace(self, deadline=deadline, seconds=max(0.0, deadline - now()))

    def share(self, fraction: float) -> Budget:
        """A budget for a member that may take ``fraction`` (in (0, 1]) of what is left."""
        check_real("fraction", fraction, "(0, 1]")
        return self.sub(fraction * self.left()) if math.isfinite(self.deadline) else self

    def with_threads(self, threads: int) -> Budget:
        """The same deadline on ``threads`` CPUs."""
        return replace(self, threads=threads)

    def with_nodes(self, node_limit: int | None) -> Budget:
        """The same deadline with at most ``node_limit`` nodes (the lesser of it and this
        budget's own limit; None keeps this budget's)."""
        if node_limit is None:
            return self
        if self.node_limit is not None:
            node_limit = min(node_limit, self.node_limit)
        return replace(self, node_limit=node_limit)

    def after(self, nodes: int) -> Budget:
        """What is left once ``nodes`` nodes were made: the same deadline, the node limit less
        ``nodes`` (at least 0: the next chunk then makes one node and stops)."""
        if self.node_limit is None:
            return self
        return replace(self, node_limit=max(0, self.node_limit - nodes))

    def wall_deadline(self) -> float:
        """The deadline in wall-clock seconds (``time.time()``)."""
        return time.time() + self.left() if math.isfinite(self.deadline) else math.inf

    def __reduce__(self):
        # to another process: the deadline as wall-clock seconds, read back on its own clock
        return (_received, (self.wall_deadline(), self.threads, self.node_limit, self.seconds))


def _received(wall_deadline: float, threads: int, node_limit: int | None, seconds: float) -> Budget:
    """A budget pickled in another process (``Budget.__reduce__``), on this process's clock."""
    left = wall_deadline - time.time() if math.isfinite(wall_deadline) else math.inf
    return Budget(now() + max(0.0, left), threads, node_limit, seconds)


def check_limits(time_limit: Any, threads: Any, node_limit: Any = None) -> None:
    """The one check of a solve's limits as a config or a caller gives them
    (``Budget.from_limit``, ``oracles.routing.registry.make_oracle``): ``time_limit`` (seconds) finite
    and > 0 or None, ``threads`` an integer >= 1, ``node_limit`` None or an integer >= 1."""
    if time_limit is not None:
        check_real("time_limit", time_limit)
    check_int("threads", threads)
    if node_limit is not None:
        check_int("node_limit", node_limit)


@dataclass(frozen=True)
class Limited:
    """``strategy`` on ``seconds`` (None: no deadline) and ``threads``: ``budget()`` is one
    solve's budget from now, as a route makes it (``oracles.contract.certificate.Configured``). Strategies never
    read a time limit; this carries one for a strategy used alone (an estimator given its own
    oracle object, tests that call one strategy as a route would)."""

    strategy: Any
    seconds: float | None = None
    threads: int = 1

    @property
    def name(self) -> str:
        return self.strategy.name

    def budget(self) -> Budget:
        return Budget.from_limit(self.seconds, self.threads)

    def solve(self, problem: Any, budget: Budget) -> Any:
        return self.strategy.solve(problem, budget)


__all__ = [
    "DEFAULT_THREADS",
    "DEFAULT_TIME_LIMIT",
    "Budget",
    "Limited",
    "MIN_SOLVER_SECONDS",
    "Stop",
    "check_limits",
    "now",
]
