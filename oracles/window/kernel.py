"""The depth-first search of ``oracles.window.tree``, compiled (numba): one node at a time, in place.

``branch.descend`` drives it. The bounds are ``branch.expand``'s, computed the same way (the
rows' signed scores Y in float32, updated from the parent's by the same products; what a row
owes in float64, ``branch.owed``), so the two make the same nodes; what changes is the cost of
a node. Each node's children are bounded in turn, cheapest test first: the noise part
C + Comp (no row touched), then the rows, stopping as soon as the sum passes the threshold
(every row's share is >= 0). A node's children are kept sorted by their bounds, and the search
takes them in that order, so once one is above the threshold the rest of that node is dropped.

The state lives in numpy arrays between calls (``State``): for each depth the children still to
visit (values and bounds, sorted) and the node's C, P and Y. ``run`` advances the search until
it has made ``budget`` nodes, filled its leaf buffer, or emptied the stack below its start
depth, and returns which. Whole points are never scored here: a leaf whose bound is at most the
threshold goes to the buffer, and the caller scores it with the exact rule
(``Problem.objective``, SPEC section 2). A leaf's bound is F up to the minorant's rounding
allowance (every row is forced there), so the buffer holds few points besides better ones.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numba import njit

#: ``run`` returned because the stack below its start depth is empty.
DONE = 0
#: ``run`` made its budget of nodes.
BUDGET = 1
#: ``run`` filled the leaf buffer.
LEAVES = 2
#: Rows summed between two checks of the threshold.
ROW_BLOCK = 64


@dataclass(eq=False)
class State:
    """The search's stack: ``top`` is the depth of the node whose children are being visited;
    for each depth j <= top, ``vals[j, :count[j]]`` are its children's values for coordinate j
    (sorted by their bounds ``lbs``), ``cursor[j]`` the next to visit, ``C``/``P``/``Y`` the
    node's prefix cost, square sum and signed scores, ``k[j]`` the value the path took."""

    start: int
    top: int
    vals: np.ndarray
    lbs: np.ndarray
    count: np.ndarray
    cursor: np.ndarray
    C: np.ndarray
    P: np.ndarray
    Y: np.ndarray
    k: np.ndarray
    leaves: np.ndarray
    n_leaves: int = 0

    @classmethod
    def empty(cls, d: int, bound: int, rows: int, leaf_room: int = 1024) -> "State":
        width = 2 * bound + 1
        return cls(
            start=0,
            top=-1,
            vals=np.zeros((d + 1, width), np.int8),
            lbs=np.zeros((d + 1, width)),
            count=np.zeros(d + 1, np.int64),
            cursor=np.zeros(d + 1, np.int64),
            C=np.zeros(d + 1),
            P=np.zeros(d + 1, np.int64),
            Y=np.zeros((d + 1, rows), np.float32),
            k=np.zeros(d + 1, np.int8),
            leaves=np.zeros((leaf_room, d), np.int8),
        )

    def least_bound_left(self) -> float:
        """The least bound of a child still to visit on the stack (+inf when none)."""
        least = math.inf
        for j in range(self.start, self.top + 1):
            left = self.lbs[j, self.cursor[j] : self.count[j]]
            if len(left):
                least = min(least, float(left.min()))
        return least


@njit(cache=True, nogil=True, error_model="numpy", fastmath={"reassoc"})
def _bound(nb, Y, fv, step, T, room, weight, minorant, span):
    """The bound of a node (its noise part nb = C + Comp_j(P), its rows' ``room`` at its level
    and square sum) whose scores are Y + fv * step (float32, as the parent's plus
    its last coordinate's; fv = 0 for a node's own scores): nb plus what the rows it forces owe
    (``noise_window.RowPrune``), or +inf once above T. A row is forced to its costly label when
    its signed distance Y to mu exceeds its room, and to its right label when Y plus its room
    is below 0; Y + room bounds the largest Y of any completion (summed in float64, exactly).

    This is the search's inner loop (about 600 row terms a node on the tables of 24-30 columns),
    written so that LLVM vectorizes it (``bench.node_rate``: 4-6x the nodes per CPU second):

    * the row index is unsigned: numba wraps a negative signed index around, and for a signed
      index LLVM could not prove it never is, so it gathered every array lane by lane;
    * ``error_model="numpy"``: no ZeroDivisionError check (it branched inside the loop); every
      span is > 0 (``branch.build_tables`` checks it);
    * ``fastmath={"reassoc"}`` and nothing else: a block's row terms may be summed in any order
      (in vector lanes). Each term is computed exactly as before; a sum of m terms in any order
      is within (m - 1) u of the sum of their magnitudes, the same bound as in the order they are
      listed, so the rounding allowance that covers it (``Tables.slack``) is unchanged. No other
      rewrite is allowed (no contraction into fused multiply-adds, no reciprocal, no finite-math
      assumption: +inf and nan compare as IEEE says).
    """
    lb = nb
    first = np.uint64(0)
    block = np.uint64(ROW_BLOCK)
    rows = np.uint64(Y.shape[0])
    # the rows in blocks without a branch (vectorized), the threshold checked between them
    while first < rows:
        last = min(first + block, rows)
        owe = 0.0
        for u in range(first, last):
            y = Y[u] + fv * step[u]
            ru = room[u]
            top = np.float64(y) + np.float64(ru)
            share = top / span[u]
            costly = weight[u] - minorant[u] * min(share, 1.0)
            right = -minorant[u] * share
            owe += costly if y > ru else (right if top < 0.0 else 0.0)
        lb += owe
        if lb > T:
            return np.inf
        first = last
    return lb


@njit(cache=True, nogil=True)
def _children(j, C, P, Y, T, tab, vals, lbs):
    """The children of a node at depth j (prefix cost C, square sum P, scores Y) whose bound is
    at most T, sorted by bound into vals/lbs; returns how many (``tab``: ``tables``)."""
    unary, comp, room, steps, weight, minorant, span, bound, cap = tab
    n = 0
    for i in range(2 * bound + 1):
        v = i - bound
        P2 = P + v * v
        if P2 > cap:
            continue
        base = C + unary[j, i]
        nb = base + comp[j + 1, P2]
        if not nb <= T:  # also drops +inf and nan
            continue
        lb = _bound(
            nb,
            Y,
            np.float32(v),
            steps[j],
            T,
            room[j + 1, cap - P2],
            weight,
            minorant,
            span,
        )
        if not lb <= T:
            continue
        # insert, sorted by bound (ties: smaller index first, as a stable sort)
        m = n
        while m > 0 and lbs[m - 1] > lb:
            vals[m] = vals[m - 1]
            lbs[m] = lbs[m - 1]
            m -= 1
        vals[m] = v
        lbs[m] = lb
        n += 1
    return n


@njit(cache=True, nogil=True)
def _run(
    start,
    top,
    vals,
    lbs,
    count,
    cursor,
    C,
    P,
    Y,
    k,
    leaves,
    n_leaves,
    T,
    budget,
    tab,
):
    unary, comp, room, steps, weight, minorant, span, bound, cap = tab
    d = unary.shape[0]
    made = 0
    while top >= start:
        i = cursor[top]
        if i >= count[top] or lbs[top, i] > T:  # sorted: the rest are above T too
            cursor[top] = count[top]
            top -= 1
            continue
        cursor[top] = i + 1
        v = vals[top, i]
        k[top] = v
        c = top + 1
        if c == d:  # a whole point: scored exactly by the caller
            leaves[n_leaves, :] = k[:d]
            n_leaves += 1
            if n_leaves == leaves.shape[0]:
                return LEAVES, top, n_leaves, made
            continue
        C[c] = C[top] + unary[top, v + bound]
        P[c] = P[top] + v * v
        fv = np.float32(v)
        for u in range(Y.shape[1]):
            Y[c, u] = Y[top, u] + fv * steps[top, u]
        n = _children(
            c,
            C[c],
            P[c],
            Y[c],
            T,
            tab,
            vals[c],
            lbs[c],
        )
        count[c] = n
        cursor[c] = 0
        made += n
        top = c
        if made >= budget:
            return BUDGET, top, n_leaves, made
    return DONE, top, n_leaves, made


@njit(cache=True, nogil=True)
def _expand(
    level,
    C,
    P,
    Y,
    T,
    tab,
    parent,
    value,
    C2,
    P2,
    Y2,
    lb2,
):
    """Every child of the nodes (level, C, P, Y) with a bound at most T, written to the output
    arrays in node order, each node's children by increasing bound; returns how many."""
    unary, comp, room, steps, weight, minorant, span, bound, cap = tab
    width = 2 * bound + 1
    vals = np.empty(width, np.int8)
    lbs = np.empty(width)
    n = 0
    for a in range(C.shape[0]):
        k = _children(level, C[a], P[a], Y[a], T, tab, vals, lbs)
        for i in range(k):
            v = vals[i]
            parent[n] = a
            value[n] = v
            C2[n] = C[a] + unary[level, v + bound]
            P2[n] = P[a] + v * v
            fv = np.float32(v)
            for u in range(Y.shape[1]):
                Y2[n, u] = Y[a, u] + fv * steps[level, u]
            lb2[n] = lbs[i]
            n += 1
    return n


@njit(cache=True, nogil=True)
def _node_bounds(level, C, P, Y, T, tab, out):
    """Each node's own bound at its level (``_bound`` with fv = 0), +inf above T."""
    unary, comp, room, steps, weight, minorant, span, bound, cap = tab
    for a in range(C.shape[0]):
        nb = C[a] + comp[level, P[a]]
        out[a] = np.inf
        if nb <= T:
            row = room[level, cap - P[a]]
            out[a] = _bound(nb, Y[a], np.float32(0.0), Y[a], T, row, weight, minorant, span)


def tables(t) -> tuple:
    """The search's tables as the compiled functions take them, one tuple: (unary, comp, room,
    steps, weight, minorant, span, bound, cap) (``tree.Tables``)."""
    return (t.unary, t.comp, t.room, t.steps, t.weight, t.minorant, t.span, t.bound, t.cap)


def nodes(C, P, Y) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Nodes' costs, square sums and scores as the compiled functions take them (contiguous,
    float64, int64 and float32)."""
    return (
        np.ascontiguousarray(C, dtype=np.float64),
        np.ascontiguousarray(P, np.int64),
        np.ascontiguousarray(Y, np.float32),
    )


def expand_nodes(t, level, C, P, Y, T):
    """``_expand`` on numpy arrays: (parent index, value, C, P, Y, lb) of the children kept."""
    m = len(C) * (2 * t.bound + 1)
    parent, value = np.empty(m, np.int64), np.empty(m, np.int8)
    C2, P2 = np.empty(m), np.empty(m, np.int64)
    Y2, lb2 = np.empty((m, Y.shape[1]), np.float32), np.empty(m)
    n = _expand(level, *nodes(C, P, Y), float(T), tables(t), parent, value, C2, P2, Y2, lb2)
    return parent[:n], value[:n], C2[:n], P2[:n], Y2[:n], lb2[:n]


def node_bounds(t, level, C, P, Y, T=np.inf):
    """``_node_bounds`` on numpy arrays."""
    out = np.empty(len(C))
    _node_bounds(level, *nodes(C, P, Y), float(T), tables(t), out)
    return out


def open_node(t, state: State, level: int, prefix: np.ndarray, C: float, P: int, Y, T: float):
    """Put one node (a prefix at ``level``) on an empty stack, its children bounded below T;
    returns how many children it has."""
    state.start = state.top = level
    state.C[level], state.P[level] = C, P
    state.Y[level] = Y
    state.k[:level] = prefix
    if level == t.d:  # a whole point already: no children
        state.count[level] = state.cursor[level] = 0
        return 0
    n = _children(
        level,
        float(C),
        int(P),
        state.Y[level],
        float(T),
        tables(t),
        state.vals[level],
        state.lbs[level],
    )
    state.count[level], state.cursor[level] = n, 0
    return n


def run(t, state: State, T: float, budget: int) -> tuple[int, int]:
    """Advance the search (module docstring); returns (DONE, BUDGET or LEAVES, nodes made)."""
    why, top, n_leaves, made = _run(
        state.start,
        state.top,
        state.vals,
        state.lbs,
        state.count,
        state.cursor,
        state.C,
        state.P,
        state.Y,
        state.k,
        state.leaves,
        state.n_leaves,
        float(T),
        int(budget),
        tables(t),
    )
    state.top, state.n_leaves = int(top), int(n_leaves)
    return int(why), int(made)


__all__ = [
    "BUDGET",
    "DONE",
    "LEAVES",
    "State",
    "expand_nodes",
    "node_bounds",
    "nodes",
    "open_node",
    "run",
    "tables",
]
