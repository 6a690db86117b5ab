"""Exact argmin over an IntegerGrid by depth-first branch and bound on the coordinates.

The search's tables and nodes, behind the window oracle (``oracles.window.oracle``).
In ``oracles.window.minorant``'s notation F = N + L, and N_lam <= F is the Lagrangian minorant
(``noise_window.tighten``): separable over the coordinates plus a function of ||k||^2. The
search fixes the coordinates one at a time (``noise_window.coordinate_order``: costly noise
first) and keeps a node (a prefix k_0..k_{j-1}) only while its LOWER BOUND

    lb = C + Comp_j(p) + owed

is at most the best exact value found so far, where C is the prefix's share of N_lam, Comp_j(p)
the least N_lam-share of any completion given the prefix's square sum p (exact, by dynamic
programming: ``noise_window.completion_tables``), and owed what the rows the prefix FORCES to one
side of mu owe above their share of N_lam (``noise_window.RowPrune``): a row forced to its costly
label its weight less the most its minorant can take, a row forced to its right label the part
of its minorant below zero that N_lam counted against it. A row is forced when its score cannot
cross mu whatever the completion: the prefix fixes part of the score, and the rest
lies within +-reach_j(r), the EXACT maximum of |sum_{i >= j} x_i k_i| over integer completions
with |k_i| <= B and square sum at most the budget r = cap - p left by the norm ball (a knapsack
over the remaining coordinates, ``reach_tables``; tighter than Cauchy-Schwarz because an integer
point with square sum r touches at most r coordinates).

Why the answer is exact: F >= lb on every point below a node (the three parts bound N_lam and
the rows separately, and N_lam + owed <= F), so a node dropped with lb > best holds no point
better than the best, and every leaf (a whole point) kept is evaluated with the exact rule
(``Problem.objective``, SPEC section 2). The best only ever decreases to values some grid point
attains. When the stack is empty, the best is the exact minimum and is certified with itself as
the bound; when a deadline stops the search, min(best, the least lb left on the stack) is still a
proven lower bound, reported with the best point uncertified. Every threshold carries the window's
relative slack (``noise_window.threshold_slack``), so rounding can keep a node, never drop one.

Depth first, a chunk of nodes at a time, lowest bounds first: memory stays bounded (the depth
times the chunk), the best falls early, and every node is checked against the best when it is
popped, not when it was made. The rows' signed scores (``Nodes.Y``) are updated incrementally
from the parent's.

The search itself is ``oracles.window.worker`` (one worker) and ``oracles.window.engine`` (the
loop, the pool, where the workers run); ``frontier`` expands breadth first from the root (the
plan's first unit, ``oracles.window.plan``), and ``open_nodes`` writes a stopped search's stack
down as prefixes (``oracles.window.checkpoint``).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.problem import Problem
from oracles.window.kernel import (
    State,
    expand_nodes,
    node_bounds,
)
from oracles.window.minorant import (
    WINDOW_REL_SLACK,
    Decomposition,
    RowPrune,
    completion_tables,
    coordinate_order,
)

#: float32's unit roundoff: the signed scores Y are kept in float32 (``build_tables``).
Y_ROUNDING = 2.0**-24
#: How often (seconds) a search that reports progress estimates what is left (the first time
#: after one interval): an estimate costs a tenth of a second or so.
ESTIMATE_EVERY = 60.0


class SearchStopped(RuntimeError):
    """The frontier passed its node limit (``frontier``)."""


@dataclass(frozen=True, eq=False)
class Tables:
    """Everything the search needs, in SEARCH order (coordinate ``order[j]`` is level j); numpy
    records and the Problem only, so a Ray task receives them pickled and builds nothing else.

    Attributes:
        problem: the problem (leaves are evaluated with its exact objective).
        order: (d,) the coordinates in search order.
        unary: (d, 2B + 1) N_lam's separable tables, row j for coordinate order[j] (+inf: value
            not allowed).
        const: N_lam's constant.
        comp: (d + 1, cap + 1) ``noise_window.completion_tables``.
        X: (u, d) the rows of L whose label matters (w_u > 0), coefficients on k (tau x_u),
            columns in search order.
        weight, minorant, span: (u,) each row's w_u, its weight M_u in N_lam and its
            minorant's span (``noise_window.RowPrune``): what a forced row owes (``owed``).
        margin: mu.
        scale: the size of N_lam's terms (``noise_window.threshold_slack``).
        sign: (u,) -1 where the costly label is -1, else +1: a node keeps its rows' scores as
            Y = sign (S - mu), and a row is forced exactly when Y exceeds its room.
        steps: (d, u) sign X transposed: what fixing k_j = 1 adds to Y.
        room: (d + 1, cap + 1, u) the exact max of |sum_{i >= level} X_ui k_i| over completions
            with square sum at most r (``reach_tables``) plus a rounding allowance on Y, rounded
            up to float32, by level and budget r: a row is forced when Y > room[level, cap - p].
        rows_slack: the rounding allowance on what the rows owe (``rows_slack``).
    """

    problem: Problem
    order: np.ndarray
    unary: np.ndarray
    const: float
    comp: np.ndarray
    X: np.ndarray
    weight: np.ndarray
    minorant: np.ndarray
    span: np.ndarray
    margin: float
    scale: float
    sign: np.ndarray
    steps: np.ndarray
    room: np.ndarray
    rows_slack: float = 0.0

    @property
    def d(self) -> int:
        return len(self.order)

    @property
    def cap(self) -> int:
        return self.comp.shape[1] - 1

    @property
    def bound(self) -> int:
        return (self.unary.shape[1] - 1) // 2

    def slack(self, threshold: float) -> float:
        """Rounding allowance on a bound near ``threshold``: N_lam's
        (``noise_window.threshold_slack``) and the rows' (``rows_slack``)."""
        return WINDOW_REL_SLACK * (1.0 + self.scale + abs(threshold)) + self.rows_slack

    def threshold(self, best: float) -> float:
        """The largest prefix cost (C + Comp + owed, without ``const``) that is kept below
        ``best``."""
        return best - self.const + self.slack(best)

    def points(self, states: np.ndarray) -> np.ndarray:
        """Whole points (search order) as w = tau k in the problem's coordinates."""
        K = np.zeros((len(states), self.d))
        K[:, self.order] = states
        return self.problem.domain.step * K


def reach_tables(X: np.ndarray, bound: int, cap: int) -> np.ndarray:
    """reach[u, j, r] = max of sum_{i >= j} |X_ui| v_i over integers 0 <= v_i <= bound with
    sum v_i^2 <= r: the exact range of a row's remaining score (a knapsack, by dynamic
    programming from the last coordinate). Shape (u, d + 1, cap + 1), non-decreasing in r."""
    u, d = X.shape
    A = np.abs(X)
    reach = np.zeros((u, d + 1, cap + 1))
    for j in range(d - 1, -1, -1):
        best = reach[:, j + 1, :].copy()
        for v in range(1, bound + 1):
            s = v * v
            if s > cap:
                break
            cand = reach[:, j + 1, : cap + 1 - s] + v * A[:, j : j + 1]
            best[:, s:] = np.maximum(best[:, s:], cand)
        reach[:, j, :] = np.maximum.accumulate(best, axis=1)
    return reach


def rows_slack(weight, minorant, span, size, room_max) -> float:
    """A bound on the rounding error of what the rows owe in a node's bound
    (``branch_kernel._bound``), whatever order its terms are summed in.

    A row owes w - M min(s, 1) (forced to its costly label) or -M s (to its right label), with
    s = (Y + room) / span and |Y| <= ``size``, room <= ``room_max``: at most
    w + M (size + room_max) / span in magnitude, and R is the sum of these over the rows. Each
    term is computed with at most 4 roundings (the addition, the division, the product, the
    difference), and the m terms and the node's own part are summed in m + 1 additions in some
    order: the error is at most (m + 5) u R with u = 2^-53 (a sum's error in any order is at
    most (m - 1) u times the sum of the magnitudes, to first order). Twice that is returned."""
    if np.any(~(span > 0)) or not np.all(np.isfinite(span)):
        raise ValueError("every row's span must be finite and > 0")
    R = float(np.sum(weight + minorant * (size + room_max) / span))
    return 2.0 * (len(span) + 5) * 2.0**-53 * R


def build_tables(problem: Problem, tight: Decomposition, prune: RowPrune) -> Tables:
    """The search's tables from the tightened decomposition and its rows (``noise_window.tightened_decomposition``)."""
    order = coordinate_order(tight)
    comp = completion_tables(tight, order)
    B = (tight.unary.shape[1] - 1) // 2
    owes = prune.weight > 0  # a row of equal counts costs the same on both sides
    X = prune.X[owes][:, order]
    unary = tight.unary[order]
    finite = np.where(np.isfinite(unary), np.abs(unary), 0.0)
    norm = np.abs(tight.norm[np.isfinite(tight.norm)])
    scale = float(finite.max(axis=1).sum() + norm.max(initial=0.0) + abs(tight.const))
    # Y is kept in float32 (half the memory traffic): d + 1 rounded products and additions of
    # terms whose sum is at most B |x|_1 + |mu| in size, each off by at most 2^-24 of it; the
    # allowance is twice that
    size = 1.0 + B * np.abs(X).sum(axis=1) + abs(prune.margin)
    tol = Y_ROUNDING * 4 * (X.shape[1] + 2) * size
    reach = reach_tables(X, B, comp.shape[1] - 1)
    sign = np.where(prune.costly_negative[owes], -1.0, 1.0)
    room = (reach + tol[:, None, None]).transpose(1, 2, 0)
    room = np.nextafter(room.astype(np.float32), np.float32(np.inf))  # rounded up: safe
    steps = np.ascontiguousarray((sign[:, None] * X).T.astype(np.float32))
    return Tables(
        problem,
        order,
        unary,
        float(tight.const),
        comp,
        X,
        prune.weight[owes],
        prune.minorant[owes],
        prune.span[owes],
        float(prune.margin),
        scale,
        sign,
        steps,
        np.ascontiguousarray(room),
        rows_slack(
            prune.weight[owes],
            prune.minorant[owes],
            prune.span[owes],
            size,
            room.max(axis=(0, 1)).astype(float),
        ),
    )


@dataclass(eq=False)
class Nodes:
    """Prefixes at one level: states (m, level) int8 in search order, their N_lam cost C, square
    sum P, signed row scores Y = sign (S - mu) (m, u; ``Tables.sign``) and lower bound
    (C + Comp + owed, without ``const``)."""

    level: int
    states: np.ndarray
    C: np.ndarray
    P: np.ndarray
    Y: np.ndarray
    lb: np.ndarray

    def __len__(self) -> int:
        return len(self.states)

    def take(self, idx) -> "Nodes":
        return Nodes(
            self.level, self.states[idx], self.C[idx], self.P[idx], self.Y[idx], self.lb[idx]
        )

    @classmethod
    def root(cls, t: Tables) -> "Nodes":
        lb = np.array([t.comp[0, 0]])
        return cls(
            0,
            np.zeros((1, 0), np.int8),
            np.zeros(1),
            np.zeros(1, np.int64),
            (-t.sign * t.margin)[None, :].astype(np.float32),
            lb,
        )

    @classmethod
    def from_states(cls, t: Tables, states: np.ndarray, T: float = math.inf) -> "Nodes":
        """Nodes rebuilt from their states alone (what a part ships), bounds recomputed at the
        threshold T (``branch_kernel._bound``: +inf for a node above it)."""
        states = np.asarray(states, dtype=np.int8)
        level = states.shape[1]
        B = t.bound
        idx = states.astype(np.int64) + B
        C = t.unary[np.arange(level)[None, :], idx].sum(axis=1) if level else np.zeros(len(states))
        P = (states.astype(np.int64) ** 2).sum(axis=1)
        Y = (t.sign * (states.astype(float) @ t.X[:, :level].T - t.margin)).astype(np.float32)
        return cls(level, states, C, P, Y, node_bounds(t, level, C, P, Y, T))


def expand(t: Tables, nodes: Nodes, T: float, chunk: int = 4096) -> Nodes:
    """The children of ``nodes`` (one more coordinate fixed) whose lower bound is at most T:
    the compiled search's own bounds (``branch_kernel``), each node's children by increasing
    bound, ``chunk`` nodes at a time."""
    j, parts = nodes.level, []
    for first in range(0, len(nodes), chunk):
        sl = slice(first, first + chunk)
        parent, value, C, P, Y, lb = expand_nodes(t, j, nodes.C[sl], nodes.P[sl], nodes.Y[sl], T)
        states = np.hstack([nodes.states[sl][parent], value[:, None]])
        parts.append(Nodes(j + 1, states, C, P, Y, lb))
    if not parts:
        return Nodes(
            j + 1,
            np.zeros((0, j + 1), np.int8),
            np.zeros(0),
            np.zeros(0, np.int64),
            np.zeros((0, len(t.sign)), np.float32),
            np.zeros(0),
        )
    return Nodes(
        j + 1,
        np.vstack([n.states for n in parts]),
        np.concatenate([n.C for n in parts]),
        np.concatenate([n.P for n in parts]),
        np.vstack([n.Y for n in parts]),
        np.concatenate([n.lb for n in parts]),
    )


def frontier(t: Tables, best: float, *, at_least: int, max_nodes: int = 2_000_000) -> Nodes:
    """Breadth first from the root until a level holds ``at_least`` nodes (or the last level):
    every point with F <= best lies below exactly one of them. Raises ``SearchStopped`` past
    ``max_nodes``."""
    nodes = Nodes.root(t)
    T = t.threshold(best)
    if not nodes.lb[0] <= T:
        return nodes.take(np.zeros(0, dtype=np.int64))
    while nodes.level < t.d and len(nodes) < at_least:
        nodes = expand(t, nodes, T)
        if len(nodes) > max_nodes:
            raise SearchStopped(f"more than {max_nodes} nodes at level {nodes.level}")
    return nodes


def open_nodes(state: State, rest: np.ndarray) -> tuple[np.ndarray, ...]:
    """The nodes a stopped depth-first search has still to search, as prefixes ((m, level)
    int8, search order), in the order it would have searched them: the stack's children not
    visited yet, the deepest first (each level's in its sorted order), then the start nodes not
    opened yet (``rest``). Their children were never made, so a search resumed from them makes
    the nodes the stopped one would have made (``oracles.window.checkpoint``)."""
    groups = []
    for j in range(state.top, state.start - 1, -1):
        values = state.vals[j, state.cursor[j] : state.count[j]]
        if len(values):
            prefix = np.broadcast_to(state.k[:j], (len(values), j))
            groups.append(np.hstack([prefix, values[:, None]]).astype(np.int8))
    if len(rest):
        groups.append(np.asarray(rest, dtype=np.int8))
    return tuple(groups)


def score_leaves(
    t: Tables, K: np.ndarray, w: np.ndarray | None, value: float, best: float
) -> tuple[np.ndarray | None, float, float]:
    """Whole points K (search order) scored with the exact rule (``Problem.objective``): the
    least of them replaces (w, value) when it is below min(value, best), or when no point is
    kept yet and it is at most best; returns (w, value, best) with best lowered to value."""
    W = t.points(K)
    values = np.atleast_1d(t.problem.objective(W))
    i = int(np.argmin(values))
    if values[i] < min(value, best) or (w is None and values[i] <= best):
        w, value = W[i].copy(), float(values[i])
        best = min(best, value)
    return w, value, best


__all__ = [
    "Nodes",
    "ESTIMATE_EVERY",
    "SearchStopped",
    "Tables",
    "build_tables",
    "open_nodes",
    "expand",
    "frontier",
    "reach_tables",
    "score_leaves",
    "rows_slack",
]
