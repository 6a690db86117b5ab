"""One worker of the window search: a depth-first search of the units it takes from the pool
(``oracles.window.pool``), made a chunk of nodes at a time, that can give part of its open tree
away (``donate``) or all of it back (``hand_back``).

Given the best value B, the window search's tree is fixed (a node is kept when its bound is at
most threshold(B), ``oracles.window.tree``), whatever order the nodes come in; a donated node is
searched exactly as its donor would have searched it (``Nodes.from_states`` rebuilds it,
``kernel.open_node`` makes the same children). So at every moment every point with F at most the
best lies below a node of some worker's stack, some worker's unit not opened yet, or a unit of
the pool, or was evaluated; donating moves a node from one of these places to another and loses
none (``tests/oracles/window/test_worker.py`` checks this at every donation against the brute
force). How a worker donates (step 2 of UG's load balancing, ``oracles.window.pool``): every
other one of the unvisited nodes at its SHALLOWEST open depth (the start nodes of its unit not
opened yet, else the unvisited children of the shallowest node on its stack: the largest
subtrees), as prefixes k[:j] + v, removed from its own stack.
"""

from __future__ import annotations

import math

import numpy as np

from oracles.window.kernel import DONE, State, open_node, run
from oracles.window.tree import Nodes, Tables, open_nodes, score_leaves

#: A node is donated only when at least this many levels lie below it (a smaller subtree costs
#: more to ship than to search).
MIN_LEVELS_LEFT = 3


class Worker:
    """One worker's depth-first search of the units it takes (``branch.descend``'s search,
    made a chunk at a time, with ``donate``). ``value``/``w``: the least exact objective it
    found at or below the best it was given, and its point."""

    def __init__(
        self, tables: Tables, index: int, best: float, min_levels: int = MIN_LEVELS_LEFT
    ) -> None:
        self.t, self.index, self.min_levels = tables, index, min_levels
        self.best = float(best)
        self.w: np.ndarray | None = None
        self.value = math.inf
        self.made = self.leaves = 0
        self.unit_made = 0
        self.state = State.empty(tables.d, tables.bound, len(tables.sign))
        self.start: Nodes | None = None
        self.order = np.zeros(0, np.int64)
        self.pos = 0

    @property
    def busy(self) -> bool:
        return self.start is not None

    def load(self, states: np.ndarray) -> None:
        """Start on a unit (prefixes of one level)."""
        self.start = Nodes.from_states(self.t, states)
        self.order = np.argsort(self.start.lb, kind="stable")
        self.pos, self.unit_made = 0, 0
        self.state.start, self.state.top = self.start.level, self.start.level - 1

    def _score(self, K: np.ndarray) -> None:
        self.w, self.value, self.best = score_leaves(self.t, K, self.w, self.value, self.best)
        self.leaves += len(K)

    def step(self, nodes: int, best: float = math.inf) -> int:
        """Search up to about ``nodes`` nodes of the unit below min(best, its own best); returns
        the nodes made. The worker is idle (``busy`` False) when its unit is done."""
        self.best = min(self.best, float(best))
        t, state, start = self.t, self.state, self.start
        made = 0
        while start is not None and made < nodes:
            T = t.threshold(self.best)
            if state.top < state.start:  # no subtree open: the unit's next start node
                if self.pos >= len(self.order):
                    start = self.start = None
                    break
                index = self.order[self.pos]
                self.pos += 1
                if not start.lb[index] <= T:
                    continue
                if start.level == t.d:
                    self._score(start.states[index : index + 1])
                    continue
                made += open_node(
                    t,
                    state,
                    start.level,
                    start.states[index],
                    start.C[index],
                    start.P[index],
                    start.Y[index],
                    T,
                )
                continue
            why, n = run(t, state, T, max(1, nodes - made))
            made += n
            if state.n_leaves:
                self._score(state.leaves[: state.n_leaves])
                state.n_leaves = 0
            if why == DONE:
                state.top = state.start - 1
        self.made += made
        self.unit_made += made
        return made

    def donate(self) -> np.ndarray | None:
        """Every other unvisited node at the shallowest open depth (module docstring, step 2),
        as prefixes, removed from this worker's search; None when nothing can be spared."""
        if self.start is None:
            return None
        t, state = self.t, self.state
        rest = self.order[self.pos :]
        opened = state.top >= state.start
        if t.d - self.start.level >= self.min_levels and (len(rest) >= 2 or (rest.size and opened)):
            kept, given = (rest[0::2], rest[1::2]) if len(rest) >= 2 else (rest[:0], rest)
            self.order = np.concatenate([self.order[: self.pos], kept])
            return self.start.states[given]
        if not opened:
            return None
        for j in range(state.start, state.top + 1):
            if t.d - (j + 1) < self.min_levels:
                break
            first, count = int(state.cursor[j]), int(state.count[j])
            n = count - first
            if n >= 2 or (n == 1 and (j < state.top or len(rest))):
                values = state.vals[j, first:count].copy()
                bounds = state.lbs[j, first:count].copy()
                keep = slice(0, None, 2) if n >= 2 else slice(0, 0)
                given = values[1::2] if n >= 2 else values
                kept = values[keep]
                state.vals[j, first : first + len(kept)] = kept
                state.lbs[j, first : first + len(kept)] = bounds[keep]
                state.count[j] = first + len(kept)
                prefix = np.broadcast_to(state.k[:j], (len(given), j))
                return np.hstack([prefix, given[:, None]]).astype(np.int8)
        return None

    def hand_back(self) -> tuple[np.ndarray, ...]:
        """The unit's nodes still to search (``open``), no longer this worker's: it is idle."""
        left = self.open()
        self.start = None
        self.state.top = self.state.start - 1
        self.order, self.pos = np.zeros(0, np.int64), 0
        return left

    def open(self) -> tuple[np.ndarray, ...]:
        """The unit's nodes still to search (``branch.open_nodes``), in order."""
        if self.start is None:
            return ()
        rest = self.start.states[self.order[self.pos :]]
        if self.state.top < self.state.start:
            return (rest,) if len(rest) else ()
        return open_nodes(self.state, rest)

    def least_bound_left(self) -> float:
        """The least bound (with the constant) of a node still to search in its unit."""
        if self.start is None:
            return math.inf
        rest = self.start.lb[self.order[self.pos :]]
        least = float(rest.min(initial=math.inf))
        if self.state.top >= self.state.start:
            least = min(least, self.state.least_bound_left())
        return least + self.t.const


__all__ = ["MIN_LEVELS_LEFT", "Worker"]
