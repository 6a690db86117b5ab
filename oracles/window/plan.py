"""What a window search starts from: its incumbent, its tables and its first units.

For a Problem over an IntegerGrid:

1. an incumbent w_inc with exact value UB (the grid search, ``oracles.window.incumbent``);
2. the minorant N_lam <= F tightened once below UB (``minorant.tightened_decomposition``) and
   the search's tables (``tree.build_tables``);
3. the first unit: the root, unless its bound already exceeds UB (then the incumbent is the
   minimum and no unit is searched).

A search carried on from a kept state (``oracles.window.checkpoint``) instead rebuilds the same
tables below the same incumbent with the same Lagrangian steps, starts below the carried best,
and its units are the carried open nodes, in their order (``resume``).
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.contract.certificate import OracleError
from oracles.contract.budget import Budget
from oracles.window.checkpoint import Carry
from oracles.window.incumbent import improve
from oracles.window.minorant import tightened_decomposition
from oracles.window.tree import Tables, build_tables, frontier


@dataclass(frozen=True, eq=False)
class Plan:
    """The start of one window search (module docstring).

    Attributes:
        problem: the problem.
        w_incumbent, incumbent: the best point known at the start and its exact value (the grid
            search's, or a carried state's best).
        upper, w_upper: the value and point the tables were built below (the grid search's, kept
            by every carried state so that the tables are rebuilt the same).
        tables: the search's tables.
        units: the first units of the pool, in order.
        lagrange_bound: a proven lower bound before any node is searched (the Lagrangian one;
            carried on: the larger of it and the carried state's).
        seconds: what planning took.
        lagrange_iterations: the Lagrangian steps the tables were built with.
        carried: the state it carries on from (None: a new search).
    """

    problem: Problem
    w_incumbent: np.ndarray
    incumbent: float
    upper: float
    w_upper: np.ndarray
    tables: Tables
    units: tuple[np.ndarray, ...]
    lagrange_bound: float
    seconds: float
    lagrange_iterations: int
    carried: Carry | None = None


def plan(
    problem: Problem,
    budget: Budget,
    *,
    search_seconds: float = 1.0,
    seed: int = 0,
    lagrange_iterations: int = 300,
) -> Plan:
    """Steps 1 to 3 of the module docstring: the grid search on at most ``search_seconds`` of
    ``budget`` (its random restarts from ``numpy.random.default_rng(seed)``)."""
    start = time.perf_counter()
    if not isinstance(problem.domain, IntegerGrid):
        raise OracleError(f"the window search needs an IntegerGrid, found {problem.domain!r}")
    w_inc, upper = improve(problem, budget.sub(search_seconds), rng=np.random.default_rng(seed))
    tight, lower, prune = tightened_decomposition(problem, upper, lagrange_iterations)
    tables = build_tables(problem, tight, prune)
    root = frontier(tables, upper, at_least=1)
    w_inc = np.asarray(w_inc, dtype=float)
    return Plan(
        problem,
        w_inc,
        float(upper),
        float(upper),
        w_inc,
        tables,
        (root.states,) if len(root) else (),
        float(lower),
        time.perf_counter() - start,
        lagrange_iterations,
    )


def resume(problem: Problem, carried: Carry) -> Plan:
    """The plan of a search carried on from ``carried`` (module docstring)."""
    start = time.perf_counter()
    tight, lower, prune = tightened_decomposition(
        problem, carried.upper, carried.lagrange_iterations
    )
    tables = build_tables(problem, tight, prune)
    return Plan(
        problem,
        np.asarray(carried.w_best, dtype=float),
        float(carried.best),
        float(carried.upper),
        np.asarray(carried.w_upper, dtype=float),
        tables,
        tuple(np.asarray(s, dtype=np.int8) for s in carried.open if len(s)),
        max(float(lower), float(carried.bound)),
        time.perf_counter() - start,
        carried.lagrange_iterations,
        carried,
    )


__all__ = ["Plan", "plan", "resume"]
