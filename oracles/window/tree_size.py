"""How many nodes the window search (``oracles.window.tree``) will make: an estimate of its tree.

What a certificate costs. A solve that stops uncertified can say "about N nodes left, about X
CPU-hours", and a preflight can say whether a problem certifies within its limit, from the same
estimate: the size of the tree the depth-first search makes below a threshold.

The tree. With the best value fixed at ``best``, the search keeps a child (one more coordinate
fixed) of a node when its lower bound (``branch_kernel._bound``) is at most T = threshold(best),
and expands every kept child above the last level. ``branch.descend`` counts every child it
keeps (``Outcome.nodes``), the start nodes not included; that count is the sum over the levels
l = 1..d of the number n_l of kept nodes at level l whose ancestors were all kept. A search that
starts above ``best`` and lowers it as it goes makes a few more nodes than this tree (its early
nodes were kept below a higher threshold); a search given ``best`` from the start makes exactly
these (the tests check both).

The estimator: stratified level sampling with importance resampling, a population form of
Knuth's (1975) random probe (D. E. Knuth, "Estimating the efficiency of backtrack programs",
Math. Comp. 29) in the manner of Chen's (1992) heuristic sampling (P. C. Chen, "Heuristic
sampling: a method for predicting the performance of tree searching programs", SIAM J. Comput.
21). Each level holds at most ``width`` weighted nodes; all their children are made with the
search's own bounds (``branch_kernel.expand_nodes``, the compiled search's ``_children``), a
child carrying its parent's weight, and

    n_l_hat = sum of the weights of the level's children.

Then the children are RESAMPLED to at most ``width`` nodes: sorted by their slack T - lb (the
strata), node i is drawn with probability proportional to q_i = w_i h_i by systematic sampling
(one uniform u; positions (u + k) Q / width, k < width, Q = sum q), and a node drawn c_i times
is kept once with weight c_i Q / (width h_i). E[c_i] = width q_i / Q, so every node's expected
weight after the draw is its weight before it, and by induction over the levels
E[n_l_hat] = n_l: the estimate sum_l n_l_hat is UNBIASED (the tests check it exactly, over every
value of u, on small trees). The proxy h (``proxy``) only moves the variance: h = 1 draws in
proportion to the weights; h = exp(slack / spread) favours the nodes far below T, whose
subtrees are the large ones. ``width`` = 1 is Knuth's probe with importance sampling: one path,
each child taken with probability q_i / Q (``selection_probabilities``). A level with at most
``width`` children keeps them all (no draw, no error): small trees are counted exactly.

Independent runs (``runs``, each with its own u's) give the spread: the estimate is their mean,
the interval the mean plus or minus two standard errors (about 95% when the runs' mean is
near normal; on heavy-tailed trees it is optimistic, which ``docs/results/tree_size.md``
measures).

It only reads the tables: nothing here changes a search's answer or its certificate.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from oracles.window.tree import Nodes, Tables
from oracles.window.tree import open_nodes as branch_open_nodes
from oracles.window.kernel import State, expand_nodes

#: Nodes kept at each level of one run (``estimate_tree``).
DEFAULT_WIDTH = 1000
#: Independent runs whose mean is the estimate and whose spread gives its interval.
DEFAULT_RUNS = 8

#: Nodes a CPU second of the compiled search, for a preflight that has not measured its own:
#: below the low end of 1.9 to 2.7 million measured on breast cancer and midwest at epsilon 10
#: (d = 30 and 23, 326 and 242 rows), OPDisc and RSPM, on the project's 2-core VMs at load 10
#: (docs/results/node_rate.md; 0.33 to 0.7 million before the kernel vectorized). A running
#: search should pass its own rate.
TYPICAL_RATE = 1.5e6

#: ``proxy(slack, level, tables) -> h > 0``: the resampling's guess of a node's subtree size, up
#: to a constant, from its slack T - lb at ``level`` (module docstring).
Proxy = Callable[[np.ndarray, int, Tables], np.ndarray]


def flat_proxy(slack: np.ndarray, level: int, tables: Tables) -> np.ndarray:
    """h = 1: each node drawn in proportion to its weight."""
    return np.ones(len(slack))


def slack_proxy(slack: np.ndarray, level: int, tables: Tables) -> np.ndarray:
    """h = exp(slack / s), s the level's mean slack: nodes far below the threshold are drawn more
    often (their subtrees are larger), each carrying less weight. Capped at e^30 against
    overflow; any h > 0 keeps the estimate unbiased."""
    s = float(slack.mean()) if len(slack) else 0.0
    if not s > 0:
        return np.ones(len(slack))
    return np.exp(np.minimum(slack / s, 30.0))


PROXIES: dict[str, Proxy] = {"flat": flat_proxy, "slack": slack_proxy}


@dataclass(frozen=True)
class TreeEstimate:
    """An estimate of the number of nodes a window search makes below ``best``.

    Attributes:
        nodes: the estimate (the mean of the runs' estimates): nodes the search makes from its
            start nodes to its end, the start nodes not counted (``branch.Outcome.nodes``).
        low, high: the mean minus and plus two standard errors over the runs (low >= 0; both
            equal ``nodes`` when every level was counted exactly).
        exact: every level of every run held at most ``width`` nodes, so ``nodes`` is the count
            itself.
        best: the value the tree was estimated below (the search's best, e.g. its incumbent).
        runs, width: independent runs, and nodes kept a level in each.
        probes: nodes whose children were made (the estimator's own work).
        seconds: wall seconds the estimate took.
        per_level: (d,) the estimated kept nodes at levels 1..d (mean over the runs).
    """

    nodes: float
    low: float
    high: float
    exact: bool
    best: float
    runs: int
    width: int
    probes: int
    seconds: float
    per_level: tuple[float, ...] = ()

    def left(self, made: int) -> float:
        """Nodes left to make after ``made`` (at least 0)."""
        return max(self.nodes - made, 0.0)

    def seconds_left(self, made: int, rate: float) -> float:
        """CPU seconds left at ``rate`` nodes a CPU second."""
        if not rate > 0:
            raise ValueError(f"rate must be > 0 nodes a second, found {rate!r}")
        return self.left(made) / rate

    def certifies_within(self, seconds: float, rate: float = TYPICAL_RATE, made: int = 0) -> bool:
        """Whether the search is expected to end within ``seconds`` more CPU seconds at ``rate``
        (a preflight: the estimate, not its interval)."""
        return self.seconds_left(made, rate) <= seconds

    def to_metrics(self) -> dict[str, float]:
        return {
            "tree_nodes": float(self.nodes),
            "tree_nodes_low": float(self.low),
            "tree_nodes_high": float(self.high),
            "tree_estimate_seconds": float(self.seconds),
        }


def _sig(x: float) -> str:
    """A count in two significant figures (1.2e+07 style above a million)."""
    if x >= 1e6:
        return f"{x:.2g}".replace("e+0", "e").replace("e+", "e")
    return f"{x:,.0f}" if x >= 100 else f"{x:.2g}"


def remaining_message(estimate: TreeEstimate, made: int, rate: float | None) -> str:
    """'about N nodes left, about X CPU-hours at R nodes/s' (``rate``: the search's measured
    nodes a CPU second, None or 0 before it has one: the nodes alone; ``made``: nodes it has
    made)."""
    spread = ""
    if not estimate.exact and estimate.high > estimate.low:
        lo, hi = max(estimate.low - made, 0.0), max(estimate.high - made, 0.0)
        spread = f" ({_sig(lo)} to {_sig(hi)})"
    text = f"about {_sig(estimate.left(made))} nodes left{spread}"
    if rate is None or not rate > 0:
        return text
    hours = estimate.seconds_left(made, rate) / 3600.0
    return f"{text}, about {hours:.2g} CPU-hours at {_sig(rate)} nodes/s"


def size_message(estimate: TreeEstimate, rate: float) -> str:
    """'about N nodes (L to H), about X CPU-hours at R nodes/s': the whole tree, before any
    node (a preflight; ``remaining_message`` is a running search's)."""
    spread = ""
    if not estimate.exact and estimate.high > estimate.low:
        spread = f" ({_sig(estimate.low)} to {_sig(estimate.high)})"
    hours = estimate.seconds_left(0, rate) / 3600.0
    return f"about {_sig(estimate.nodes)} nodes{spread}, about {hours:.2g} CPU-hours at {_sig(rate)} nodes/s"


def selection_probabilities(weight: np.ndarray, h: np.ndarray) -> np.ndarray:
    """The chance that one draw (``width`` = 1) takes each node: q_i / Q, q = weight h."""
    q = weight * h
    return q / q.sum()


def systematic_counts(q: np.ndarray, draws: int, u: float) -> np.ndarray:
    """How often systematic sampling with offset ``u`` in [0, 1) draws each node: node i holds
    the interval [c_{i-1}, c_i) of the cumulative sums c of q, and the draws sit at
    (u + k) Q / draws, k < draws. E over u of count_i = draws q_i / Q."""
    cum = np.cumsum(q)
    positions = (u + np.arange(draws)) * (cum[-1] / draws)
    idx = np.minimum(np.searchsorted(cum, positions, side="right"), len(q) - 1)
    return np.bincount(idx, minlength=len(q))


def resample(
    weight: np.ndarray, slack: np.ndarray, h: np.ndarray, width: int, u: float
) -> tuple[np.ndarray, np.ndarray]:
    """The kept nodes' indices and their new weights (module docstring): all of them when there
    are at most ``width``, else a systematic draw of ``width`` in order of slack."""
    if len(weight) <= width:
        return np.arange(len(weight)), weight
    order = np.argsort(slack, kind="stable")
    q = weight[order] * h[order]
    counts = systematic_counts(q, width, u)
    keep = counts > 0
    new = counts[keep] * (q.sum() / width) / h[order][keep]
    return order[keep], new


@dataclass(eq=False)
class _Level:
    """Weighted nodes at one level: what the search's expansion needs, and each one's weight."""

    level: int
    C: np.ndarray
    P: np.ndarray
    Y: np.ndarray
    lb: np.ndarray
    weight: np.ndarray

    def take(self, idx: np.ndarray, weight: np.ndarray) -> _Level:
        return _Level(self.level, self.C[idx], self.P[idx], self.Y[idx], self.lb[idx], weight)


def children(t: Tables, nodes: _Level, T: float) -> _Level:
    """Every child of ``nodes`` kept at threshold T (the search's bounds), each with its
    parent's weight."""
    parent, _, C, P, Y, lb = expand_nodes(t, nodes.level, nodes.C, nodes.P, nodes.Y, T)
    return _Level(nodes.level + 1, C, P, Y, lb, nodes.weight[parent])


def _start(t: Tables, start: Nodes | None, T: float) -> _Level:
    start = Nodes.root(t) if start is None else start
    keep = np.flatnonzero(start.lb <= T)
    return _Level(
        start.level,
        start.C[keep],
        start.P[keep],
        start.Y[keep],
        start.lb[keep],
        np.ones(len(keep)),
    )


def one_run(
    t: Tables,
    best: float,
    rng: np.random.Generator,
    *,
    width: int = DEFAULT_WIDTH,
    start: Nodes | None = None,
    proxy: Proxy = slack_proxy,
) -> tuple[np.ndarray, int, bool]:
    """One run of the estimator: (the estimated kept nodes at each level below the start's,
    nodes expanded, whether every level was counted exactly)."""
    T = t.threshold(best)
    nodes = _start(t, start, T)
    per_level = np.zeros(t.d)
    probes, exact = 0, True
    while nodes.level < t.d and len(nodes.C):
        probes += len(nodes.C)
        kids = children(t, nodes, T)
        per_level[kids.level - 1] = kids.weight.sum()
        if kids.level == t.d or not len(kids.C):
            break
        exact &= len(kids.C) <= width
        slack = T - kids.lb
        h = proxy(slack, kids.level, t)
        idx, weight = resample(kids.weight, slack, h, width, float(rng.random()))
        nodes = kids.take(idx, weight)
    return per_level, probes, exact


def estimate_tree(
    t: Tables,
    best: float,
    *,
    rng: np.random.Generator,
    width: int = DEFAULT_WIDTH,
    runs: int = DEFAULT_RUNS,
    start: Nodes | Sequence[Nodes] | None = None,
    proxy: Proxy = slack_proxy,
) -> TreeEstimate:
    """The estimated number of nodes the window search makes below ``best`` from ``start``
    (default: the root; several ``Nodes``, e.g. of different levels: the sum of their trees)
    with the tables ``t`` (module docstring): the mean of ``runs`` independent runs of ``width``
    nodes a level (each start ``Nodes`` its own), with its interval."""
    if isinstance(width, bool) or not isinstance(width, int) or width < 1:
        raise ValueError(f"width must be an integer >= 1, found {width!r}")
    if isinstance(runs, bool) or not isinstance(runs, int) or runs < 1:
        raise ValueError(f"runs must be an integer >= 1, found {runs!r}")
    if math.isnan(best):
        raise ValueError(f"best must be a number, found {best!r}")
    t0 = time.perf_counter()
    starts = [start] if start is None or isinstance(start, Nodes) else list(start)
    levels, probes, exact = [], 0, True
    for _ in range(runs):
        per_level, n, ex = np.zeros(t.d), 0, True
        for group in starts:
            lv, m, e = one_run(t, best, rng, width=width, start=group, proxy=proxy)
            per_level, n, ex = per_level + lv, n + m, ex and e
        levels.append(per_level)
        probes += n
        exact &= ex
        if ex:  # counted exactly: another run would count the same
            levels, exact = [per_level], True
            break
    totals = np.array([lv.sum() for lv in levels])
    mean = float(totals.mean())
    if exact or len(totals) == 1:
        low = high = mean
    else:
        se = float(totals.std(ddof=1) / math.sqrt(len(totals)))
        low, high = max(mean - 2 * se, 0.0), mean + 2 * se
    return TreeEstimate(
        mean,
        low,
        high,
        exact,
        float(best),
        len(levels),
        width,
        probes,
        time.perf_counter() - t0,
        tuple(float(x) for x in np.mean(levels, axis=0)),
    )


def open_nodes(t: Tables, state: State) -> list[Nodes]:
    """The children still to visit on a running search's stack (``branch_kernel.State``, between
    two calls of ``branch_kernel.run``), as start nodes: the search has counted them already,
    and what it will still make is the tree below them, so

        nodes left ~ estimate_tree(t, best, start=open_nodes(t, state)).nodes

    (plus the start nodes ``branch.descend`` has not opened yet, from their own states). Reads
    the state, changes nothing."""
    left = branch_open_nodes(state, np.zeros((0, 0), np.int8))
    return [Nodes.from_states(t, states) for states in left]


def count_tree(t: Tables, best: float, *, start: Nodes | Sequence[Nodes] | None = None) -> int:
    """The exact number of nodes of the tree below ``best`` (breadth first, every node: small
    trees only; what ``estimate_tree`` estimates)."""
    T = t.threshold(best)
    total = 0
    for group in [start] if start is None or isinstance(start, Nodes) else start:
        nodes = _start(t, group, T)
        while nodes.level < t.d and len(nodes.C):
            nodes = children(t, nodes, T)
            total += len(nodes.C)
    return total


__all__ = [
    "DEFAULT_RUNS",
    "DEFAULT_WIDTH",
    "PROXIES",
    "Proxy",
    "TYPICAL_RATE",
    "TreeEstimate",
    "children",
    "count_tree",
    "estimate_tree",
    "flat_proxy",
    "one_run",
    "open_nodes",
    "remaining_message",
    "resample",
    "selection_probabilities",
    "size_message",
    "slack_proxy",
    "systematic_counts",
]
