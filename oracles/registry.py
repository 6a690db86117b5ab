"""Oracles by name, for configs and the pipeline: ``make_oracle("highs", time_limit=60)``.

``FACTORIES`` maps a name to a callable ``(*, time_limit, threads, **options) -> Oracle``. An
oracle class whose constructor takes ``time_limit`` and ``threads`` keywords is its own factory;
registering a new backend is one line in ``FACTORIES``. Backends import their solver lazily, so
importing this module loads no solver.
"""

from __future__ import annotations

import inspect
from typing import Any, Callable

from oracles.auto import AutoOracle
from oracles.base import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, Oracle
from oracles.conjunctions import EnumerationConjunctionOracle, HighsConjunctionOracle
from oracles.convex import ConvexOracle
from oracles.enumerate import EnumerationOracle
from oracles.gurobi import GurobiOracle
from oracles.highs import HighsOracle
from oracles.structured import StructuredOracle
from oracles.window import WindowOracle

OracleFactory = Callable[..., Oracle]


def _enumeration(*, time_limit: float, threads: int, **options: Any) -> EnumerationOracle:
    """Brute force honours the time limit and runs on one thread (``threads`` is an allowance).

    Its size limit is ``max_points`` (an option), refused up front rather than timed out.
    """
    return EnumerationOracle(time_limit=time_limit, **options)


def _conjunction_enumeration(
    *, time_limit: float, threads: int, **options: Any
) -> EnumerationConjunctionOracle:
    """Every record of the universe, on one thread; its size limit is ``max_records``."""
    return EnumerationConjunctionOracle(**options)


#: The data player's oracles of private synthetic data (oracles.conjunctions): they solve a
#: ConjunctionProblem, not a mechanism's problem, and are never a config's ``oracle.name``.
CONJUNCTIONS = {
    "conjunctions_highs": HighsConjunctionOracle,
    "conjunctions_enumerate": _conjunction_enumeration,
}

FACTORIES: dict[str, OracleFactory] = {
    "structured": StructuredOracle,
    "auto": AutoOracle,
    "highs": HighsOracle,
    "gurobi": GurobiOracle,
    "enumerate": _enumeration,
    "window": WindowOracle,
    "convex": ConvexOracle,
    **CONJUNCTIONS,
}
#: The oracles of the mechanisms' discrete problems, a config's ``oracle.name``: every one but
#: ``convex``, which solves OPSamp's logistic problems only, and the data player's CONJUNCTIONS.
DISCRETE = tuple(name for name in FACTORIES if name != "convex" and name not in CONJUNCTIONS)
#: The oracles whose one solve can be split into parts (they take ``parts`` and ``map_parts``).
SPLIT = tuple(
    name for name, factory in FACTORIES.items() if "parts" in inspect.signature(factory).parameters
)


def make_oracle(
    name: str,
    *,
    time_limit: float = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    **options: Any,
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


__all__ = ["CONJUNCTIONS", "DISCRETE", "FACTORIES", "OracleFactory", "SPLIT", "make_oracle"]
