"""Oracles by name, for configs and the pipeline: ``make_oracle("highs", time_limit=60)``.

A name is a route of the routing table (``oracles.routing.routes.ROUTES``): ``FACTORIES`` maps it to
its builder, ``(*, time_limit, threads, **options) -> Oracle`` (``oracles.routing.routes.BUILDERS``:
a route of one strategy is that strategy, a route of several a ``routing.Route``). The time
limit and the thread count are checked once, here (``oracles.contract.budget.check_limits``); each solve
then runs on its own budget. Registering a backend is a strategy in ``routing.STRATEGIES``, a
row of ``routing.ROUTES`` and its builder. Strategies import their solver when they solve, so
importing this module loads no solver.
"""

from __future__ import annotations

from typing import Any, Callable

from oracles.contract.certificate import Oracle
from oracles.contract.budget import DEFAULT_THREADS, DEFAULT_TIME_LIMIT, check_limits
from oracles.routing.routes import ANY, BUILDERS, PROBLEM_CLASSES, ROUTES
from oracles.routing.routes import SPLIT as SPLIT_ROUTES

OracleFactory = Callable[..., Oracle]

#: The data player's oracles of private synthetic data (oracles.synthetic.data_player): they solve a
#: ConjunctionProblem, not a mechanism's problem, and are never a config's ``oracle.name``.
CONJUNCTIONS = {
    name: builder for name, builder in BUILDERS.items() if name.startswith("conjunctions_")
}

FACTORIES: dict[str, OracleFactory] = dict(BUILDERS)
#: The oracles of the mechanisms' discrete problems, a config's ``oracle.name``: the routes with a
#: row for an IntegerGrid (not ``convex``, which solves OPSamp's logistic problems only, nor the
#: synthetic-data game's).
DISCRETE = tuple(
    name
    for name in FACTORIES
    if any(row.route == name and row.problem in (ANY, *PROBLEM_CLASSES) for row in ROUTES)
)
#: The oracles that run the window search (they take its ``executor`` and ``carry``).
SPLIT = tuple(name for name in FACTORIES if name in SPLIT_ROUTES)


def make_oracle(
    name: str,
    *,
    time_limit: float | None = DEFAULT_TIME_LIMIT,
    threads: int = DEFAULT_THREADS,
    **options: Any,
) -> Oracle:
    """The oracle registered as ``name``, built with these options.

    Raises:
        ValueError: ``name`` is not registered (the message lists the known names), or a
            time limit or thread count out of range (naming it).
        TypeError: an option the oracle does not take.
    """
    try:
        factory = FACTORIES[name]
    except (KeyError, TypeError):
        raise ValueError(f"unknown oracle {name!r}; known: {sorted(FACTORIES)}") from None
    check_limits(time_limit, threads)
    return factory(time_limit=time_limit, threads=threads, **options)


__all__ = ["CONJUNCTIONS", "DISCRETE", "FACTORIES", "OracleFactory", "SPLIT", "make_oracle"]
