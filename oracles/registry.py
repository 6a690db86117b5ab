"""Oracles by name, for configs and the pipeline: ``make_oracle("highs", time_limit=60)``.

``FACTORIES`` maps a name to a callable ``(*, time_limit, threads, **options) -> Oracle``. An
oracle class whose constructor takes ``time_limit`` and ``threads`` keywords is its own factory;
registering a new backend is one line in ``FACTORIES``. Backends import their solver lazily, so
importing this module loads no solver.
"""

from __future__ import annotations

from typing import Any, Callable

from oracles.auto import AutoOracle
from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, Oracle
from oracles.convex import ConvexOracle
from oracles.enumerate import EnumerationOracle
from oracles.gurobi import GurobiOracle
from oracles.highs import HighsOracle
from oracles.structured import StructuredOracle
from oracles.window import WindowOracle

OracleFactory = Callable[..., Oracle]


def _enumeration(*, time_limit: float, threads: int, **options: Any) -> EnumerationOracle:
    """Brute force has no time limit and runs on one thread: both options are not used.

    Its size limit is ``max_points`` (an option), refused up front rather than timed out.
    """
    return EnumerationOracle(**options)


FACTORIES: dict[str, OracleFactory] = {
    "enumerate": _enumeration,
    "highs": HighsOracle,
    "gurobi": GurobiOracle,
    "auto": AutoOracle,
    "convex": ConvexOracle,
    "structured": StructuredOracle,
    "window": WindowOracle,  # issue 19 prototype; not in any default
}


def make_oracle(
    name: str, *, time_limit: float = DEFAULT_TIME_LIMIT, threads: int = DEFAULT_THREADS, **options: Any
) -> Oracle:
    """The oracle registered as ``name``, built with these options.

    Raises:
        ValueError: ``name`` is not registered (the message lists the known names).
        TypeError: an option the oracle does not take.
    """
    try:
        factory = FACTORIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown oracle {name!r}; known: {sorted(FACTORIES)}") from None
    return factory(time_limit=time_limit, threads=threads, **options)


__all__ = ["FACTORIES", "OracleFactory", "make_oracle"]
