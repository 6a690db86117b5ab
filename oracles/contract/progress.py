"""Progress inside a solve: a best-effort channel from a running solver to whoever listens.

A solve of several minutes says nothing until it returns. Here a backend can tell a listener,
while it runs, its incumbent (the objective of the best feasible point found so far) and its
proven lower bound, so that a sweep can show them (``pipeline.sweep.progress``).

* ``listening(listener, interval)`` registers a listener for this PROCESS (not per thread: a
  solver may call back from a thread of its own) until the block ends; blocks nest.
* A backend takes ``reporter(label, backend)`` when its solve starts and calls
  ``report(incumbent, bound)`` as often as it likes (HiGHS: a MIP callback, Gurobi: a MIP
  callback, the structured oracle: its loop). The reporter passes on at most one
  ``SolveProgress`` per ``interval`` seconds.
* Without a listener the reporter is inactive: ``active`` is False and ``report`` returns at
  once, so a backend installs no solver callback at all and solves exactly as without this
  module (estimators, tests, benchmarks).
* Progress is best effort and never changes a result: a listener that raises is silenced (and
  logged once); ``report`` never raises. A solver callback must not raise either (an exception
  in a HiGHS callback ends its solve with kSolveError), so backends wrap theirs in ``guarded``.

This module imports no Ray, MLflow or Hydra (STYLE.md, point 3): forwarding the reports to a
sweep's driver is the pipeline's job.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator

log = logging.getLogger(__name__)

#: Seconds between two reports of one solve, unless the listener asks for another interval.
DEFAULT_INTERVAL = 5.0
#: Solvers' stand-ins for "none" (Gurobi's MIP_OBJBST is 1e100 without an incumbent).
SOLVER_INFINITY = 1e100


@dataclass(frozen=True)
class Price:
    """What a running solve's certificate would still cost, as its backend estimates it (the
    window search: ``oracles.window.tree_size``): ``cpu_seconds`` its likely CPU seconds left,
    ``cpu_seconds_high`` the high end of its estimate (the estimator's spread, not a bound), and
    ``cpu_share`` the CPU seconds the solve has had a wall second so far (the wall time left is
    about ``cpu_seconds / cpu_share``; a loaded machine gives less than 1)."""

    cpu_seconds: float
    cpu_seconds_high: float
    cpu_share: float

    def __post_init__(self) -> None:
        for name in ("cpu_seconds", "cpu_seconds_high", "cpu_share"):
            value = getattr(self, name)
            if not (isinstance(value, (int, float)) and math.isfinite(value) and value >= 0):
                raise ValueError(f"{name} must be a finite number >= 0, found {value!r}")
        if self.cpu_seconds_high < self.cpu_seconds:
            raise ValueError(
                f"cpu_seconds_high ({self.cpu_seconds_high}) is below cpu_seconds "
                f"({self.cpu_seconds})"
            )

    def wall_seconds_high(self, least_share: float) -> float:
        """The wall seconds left at the high end, at the solve's CPU share so far (at least
        ``least_share``: a solve measured on a starved instant is not planned at 0 CPU)."""
        return self.cpu_seconds_high / max(self.cpu_share, least_share)


@dataclass(frozen=True)
class SolveProgress:
    """Where one solve stands: ``incumbent`` is the objective of its best feasible point so far
    (+inf without one), ``bound`` its proven lower bound on the minimum (-inf without one), in
    the backend's own model (before ``oracles.contract.certificate.certify`` re-evaluates anything), after
    ``elapsed`` seconds. The minimum lies in [bound, incumbent]. ``note``: what the backend
    adds (the window search: what certifying would still cost, ``oracles.window.tree_size``),
    and ``price`` the same cost as numbers when the backend has one (None: not estimated)."""

    label: str
    backend: str
    elapsed: float
    incumbent: float
    bound: float
    note: str = ""
    price: Price | None = None

    @property
    def gap(self) -> float:
        """incumbent - bound (absolute), +inf while either is missing."""
        if math.isfinite(self.incumbent) and math.isfinite(self.bound):
            return float(self.incumbent - self.bound)
        return math.inf


Listener = Callable[[SolveProgress], None]


@dataclass(frozen=True)
class _Registration:
    listener: Listener
    interval: float


_LOCK = threading.Lock()
_CURRENT: list[_Registration] = []  # a stack: the last registration is the one in force


@contextmanager
def listening(listener: Listener, interval: float = DEFAULT_INTERVAL) -> Iterator[None]:
    """Send the progress of every solve started in this process to ``listener`` (at most one
    report per solve per ``interval`` seconds) until the block ends."""
    if not callable(listener):
        raise TypeError(f"listener must be callable, found {listener!r}")
    if not (
        isinstance(interval, (int, float))
        and not isinstance(interval, bool)
        and math.isfinite(interval)
        and interval >= 0
    ):
        raise ValueError(f"interval must be a finite number >= 0, found {interval!r}")
    registration = _Registration(listener, float(interval))
    with _LOCK:
        _CURRENT.append(registration)
    try:
        yield
    finally:
        with _LOCK:
            _CURRENT.remove(registration)


def _as_value(x: object, missing: float) -> float:
    """A solver's number as a float, its "infinity" (and anything unreadable) as ``missing``."""
    try:
        value = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return missing
    if math.isnan(value) or abs(value) >= SOLVER_INFINITY:
        return missing
    return value


class Reporter:
    """The reports of one solve: throttled, silenced on failure, inactive without a listener."""

    def __init__(
        self,
        label: str,
        backend: str,
        registration: _Registration | None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self.label, self.backend, self.clock = str(label), str(backend), clock
        self._registration = registration
        self.start = clock()
        self._last = self.start

    @property
    def active(self) -> bool:
        """Whether anyone listens (a backend installs its solver callback only then)."""
        return self._registration is not None

    def due(self) -> bool:
        """Whether a report now would be passed on (for callers whose values cost work)."""
        if self._registration is None:
            return False
        return self.clock() - self._last >= self._registration.interval

    def report(
        self,
        incumbent: object,
        bound: object,
        *,
        force: bool = False,
        note: str = "",
        price: Price | None = None,
    ) -> None:
        """Pass on (incumbent, bound), ``note`` and ``price`` if an interval has passed since
        the last report (or ``force``). Never raises."""
        registration = self._registration
        if registration is None:
            return
        try:
            now = self.clock()
            if not force and now - self._last < registration.interval:
                return
            self._last = now
            progress = SolveProgress(
                self.label,
                self.backend,
                now - self.start,
                _as_value(incumbent, math.inf),
                _as_value(bound, -math.inf),
                str(note),
                price,
            )
            registration.listener(progress)
        except Exception as err:  # noqa: BLE001 - progress must never fail a solve
            self._registration = None  # this solve reports no more
            log.warning("progress listener failed, %s reports no more: %r", self.label, err)


def reporter(
    label: str, backend: str, *, clock: Callable[[], float] = time.perf_counter
) -> Reporter:
    """A Reporter for a solve starting now, bound to the listener in force (if any)."""
    with _LOCK:
        registration = _CURRENT[-1] if _CURRENT else None
    return Reporter(label, backend, registration, clock)


def guarded(callback: Callable[..., None]) -> Callable[..., None]:
    """``callback`` for a solver's callback API: any exception it raises is swallowed (a HiGHS
    callback that raises ends the solve with kSolveError; progress must not do that)."""

    def call(*args: object) -> None:
        try:
            callback(*args)
        except Exception:  # noqa: BLE001 - module docstring
            pass

    return call


__all__ = [
    "DEFAULT_INTERVAL",
    "Listener",
    "Price",
    "Reporter",
    "SolveProgress",
    "guarded",
    "listening",
    "reporter",
]
