"""A strategy on a time limit, for tests that call one strategy as a route would.

Strategies keep the one contract ``solve(problem, budget)`` and never read a time limit; a route
makes each solve's budget from its limit (``oracles.routing.routes.Route.solve``). ``limited(strategy,
seconds, threads)`` does the same for one strategy alone, without the route's chain
(``oracles.contract.budget.Limited``, which an estimator given its own oracle object uses too).
"""

from __future__ import annotations

from typing import Any

from oracles.contract.certificate import Solution
from oracles.contract.budget import Limited


def limited(strategy: Any, seconds: float | None = None, threads: int = 1) -> Limited:
    return Limited(strategy, seconds, threads)


def on_limits(oracle: Any, problem: Any) -> Solution:
    """``problem`` solved by ``oracle`` (a route or a ``Limited``) on one budget of its own
    configured limits, made now: ``oracle.solve(problem, oracle.budget())`` for a receiver
    that is an expression."""
    return oracle.solve(problem, oracle.budget())
