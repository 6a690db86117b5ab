"""A strategy on a time limit, for tests that call one strategy as a route would.

Strategies keep the one contract ``solve(problem, budget)`` and never read a time limit; a route
makes each solve's budget from its limit (``oracles.routing.Route.solve``). ``limited(strategy,
seconds, threads)`` does the same for one strategy alone, without the route's chain.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from oracles.base import Solution
from oracles.budget import Budget


@dataclass(frozen=True)
class Limited:
    """``strategy`` with each solve on a fresh budget of ``seconds`` (None: no deadline) and
    ``threads``, unless the caller gives one."""

    strategy: Any
    seconds: float | None = None
    threads: int = 1

    @property
    def name(self) -> str:
        return self.strategy.name

    def solve(self, problem: Any, budget: Budget | None = None) -> Solution:
        if budget is None:
            budget = Budget.from_limit(self.seconds, self.threads)
        return self.strategy.solve(problem, budget)


def limited(strategy: Any, seconds: float | None = None, threads: int = 1) -> Limited:
    return Limited(strategy, seconds, threads)
