"""The data player's best record by an exact depth-first search, compiled (numba).

The problem is ``core.problem.ConjunctionProblem``'s,

    max_x  sum_c coef_c q_c(x)  +  sum_a noise_{a, x_a},

over every record x of the product domain. ``SearchConjunctionOracle`` solves it exactly, and a
``ConjunctionBatch`` asks it for many noise vectors with the same conjunctions at once (a round of
the game draws all its records against one set of selections: docs/synthetic.md 1).

**The search.** Attributes are fixed one at a time in an order (most literals first). Each
conjunction is charged to its *last* attribute in that order. A gain table G_{a, v} holds, for
every level v of an attribute a not fixed yet, the weight a record can still collect there:

- a conjunction with coef > 0 whose last literal is (a, v) and whose other literals are not
  contradicted by the fixed attributes (it may still hold);
- a conjunction with coef < 0 whose last literal is (a, v) and whose other literals all hold
  already (choosing v makes it hold).

When a is fixed to v, the record collects noise_{a, v} + G_{a, v} exactly: every literal of a
conjunction charged to a is on an attribute fixed before a. Fixing an attribute only removes
positive terms from later gains (a contradicted conjunction) or adds negative ones (a negative
conjunction that now holds on all but its last literal), so

    value so far + sum over the attributes not fixed of max_v (noise_{a, v} + G_{a, v})

is an upper bound on every completion: the search prunes a node whose bound is at most the best
value found. It visits each node's levels in decreasing noise + gain, so the first leaf is the
greedy record. The search is complete: the best value it returns is the maximum up to the
rounding of its sums, which the certificate re-evaluates exactly (``ConjunctionProblem.values``).

**The budget.** A call runs on an ``oracles.contract.budget.Budget`` (the route's: the pipeline's
``oracle.time_limit`` a round). The search's stack lives in arrays between
calls of the compiled kernel (``SearchState``), which makes ``CHUNK`` nodes at a time; between
two chunks the budget's clock and node limit are looked at. Once either has run out, the
search under way keeps the best record it has found, and every later record is its search's
first leaf (the greedy record, found before any node can be pruned). The certificate is then
TIME_LIMIT, with a proven bound: every subtree not visited yet hangs below a level still on
the stack, whose pre-bound is at least its value (``SearchState.upper``). The data player's
answer is post-processing of the private selections (docs/synthetic.md 2.4), so a stopped
round costs accuracy, never privacy.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numba import njit

from core.problem import ConjunctionBatch, ConjunctionProblem
from oracles.contract.certificate import Solution, Status, counts_cpu
from oracles.contract.budget import Budget
from oracles.synthetic.data_player import max_certificate
from oracles.contract.stats import ConjunctionStats

#: The search's own pruning slack: a node is dropped when its bound is below the best value by
#: more than this fraction of that value's size (the bounds' rounding is far smaller).
PRUNE_TOL = 1e-12
#: Nodes the search makes between two looks at its budget's clock (well under a millisecond on
#: Adult's rounds: ``run_batch``).
CHUNK = 20_000
#: ``advance``'s node count for a search run to its end.
NO_LIMIT = np.iinfo(np.int64).max


@dataclass(frozen=True)
class Compiled:
    """A problem's conjunctions in the arrays the kernel reads (one per round of the game)."""

    sizes: np.ndarray  # (m,) levels per attribute
    offsets: np.ndarray  # (m + 1,) start of each attribute's levels in the flat level arrays
    order: np.ndarray  # (m,) the attributes in the order they are fixed
    base_gain: np.ndarray  # (levels,) G before any attribute is fixed
    coef: np.ndarray  # (C,)
    last: np.ndarray  # (C,) flat index of each conjunction's last literal
    need: np.ndarray  # (C,) its literals before the last
    lit_start: np.ndarray  # (m + 1,) CSR over attributes of the literals before a last one
    lit_conj: np.ndarray  # conjunction of each such literal
    lit_level: np.ndarray  # its level


def compile_problem(problem: ConjunctionProblem) -> Compiled:
    """The arrays of ``problem``'s conjunctions (zero coefs dropped), for ``search``."""
    sizes = np.array(problem.levels, dtype=np.int64)
    m = len(sizes)
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    active = [(c, float(w)) for c, w in zip(problem.conjunctions, problem.coefs) if w != 0]
    degree = np.zeros(m, dtype=np.int64)
    for c, _ in active:
        for a, _ in c:
            degree[a] += 1
    # most literals first (ties: the attribute with more levels, then its index): public, it
    # depends on the conjunctions only
    order = np.array(sorted(range(m), key=lambda a: (-degree[a], -sizes[a], a)), dtype=np.int64)
    position = np.empty(m, dtype=np.int64)
    position[order] = np.arange(m)
    base_gain = np.zeros(int(offsets[-1]))
    coef = np.array([w for _, w in active], dtype=float)
    last = np.empty(len(active), dtype=np.int64)
    need = np.empty(len(active), dtype=np.int64)
    early: list[list[tuple[int, int]]] = [[] for _ in range(m)]
    for i, (c, w) in enumerate(active):
        lits = sorted(c, key=lambda lit: position[lit[0]])
        a_last, v_last = lits[-1]
        last[i] = offsets[a_last] + v_last
        need[i] = len(lits) - 1
        for a, v in lits[:-1]:
            early[a].append((i, v))
        if w > 0 or need[i] == 0:
            base_gain[last[i]] += w
    lit_start = np.concatenate([[0], np.cumsum([len(e) for e in early])]).astype(np.int64)
    lit_conj = np.array([i for e in early for i, _ in e], dtype=np.int64)
    lit_level = np.array([v for e in early for _, v in e], dtype=np.int64)
    return Compiled(
        sizes, offsets, order, base_gain, coef, last, need, lit_start, lit_conj, lit_level
    )


@njit(cache=True)
def _undo(log_kind, log_conj, log_top, mark, matched, dead, gain, last, coef):
    """Undo the log's entries above ``mark``; returns the new top."""
    while log_top > mark:
        log_top -= 1
        c = log_conj[log_top]
        k = log_kind[log_top]
        if k == 0:
            matched[c] -= 1
        elif k == 1:
            dead[c] = False
            gain[last[c]] += coef[c]
        elif k == 2:
            matched[c] -= 1
            gain[last[c]] -= coef[c]
        else:
            dead[c] = False
    return log_top


@njit(cache=True)
def _rest(order, offsets, noise, gain, start):
    """The sum over the attributes order[start:] of max_v (noise + gain)."""
    total = 0.0
    for j in range(start, order.shape[0]):
        a = order[j]
        top = -np.inf
        for f in range(offsets[a], offsets[a + 1]):
            top = max(top, noise[f] + gain[f])
        total += top
    return total


#: ``SearchState.ints``: the depth of the node being visited, the undo log's top, the nodes
#: made, and the phase (``FRESH``: not opened yet, ``RUNNING``, ``DONE``: the stack is empty).
DEPTH, LOG_TOP, NODES, PHASE = 0, 1, 2, 3
FRESH, RUNNING, DONE = 0, 1, 2


@dataclass(eq=False)
class SearchState:
    """One record's search between two calls of the kernel (``advance``): the stack of the
    module docstring's search, in arrays made once per problem and reused for every noise
    vector (``restart``). For each depth d <= ints[DEPTH]: ``levels[d, :count[d]]`` the
    levels of attribute order[d] sorted by ``scores`` (noise + gain when depth d was opened),
    ``cursor[d]`` the next one to visit, ``value[d]`` what the attributes before it collected
    and ``rest[d]`` the bound of those after it; ``best`` / ``best_value`` the best record
    found (in search order) and its value as the search summed it."""

    gain: np.ndarray
    matched: np.ndarray
    dead: np.ndarray
    levels: np.ndarray
    scores: np.ndarray
    count: np.ndarray
    cursor: np.ndarray
    value: np.ndarray
    rest: np.ndarray
    here_scores: np.ndarray
    log_kind: np.ndarray
    log_conj: np.ndarray
    log_mark: np.ndarray
    path: np.ndarray
    best: np.ndarray
    best_value: np.ndarray  # (1,)
    ints: np.ndarray  # (4,): DEPTH, LOG_TOP, NODES, PHASE

    @classmethod
    def empty(cls, compiled: Compiled) -> SearchState:
        m, n_conj = len(compiled.sizes), len(compiled.coef)
        width = int(compiled.sizes.max())
        log = len(compiled.lit_conj) + 1
        return cls(
            gain=compiled.base_gain.copy(),
            matched=np.zeros(n_conj, dtype=np.int64),
            dead=np.zeros(n_conj, dtype=np.bool_),
            levels=np.zeros((m, width), dtype=np.int64),
            scores=np.zeros((m, width)),
            count=np.zeros(m, dtype=np.int64),
            cursor=np.zeros(m, dtype=np.int64),
            value=np.zeros(m),
            rest=np.zeros(m),
            here_scores=np.zeros(width),
            log_kind=np.zeros(log, dtype=np.int64),
            log_conj=np.zeros(log, dtype=np.int64),
            log_mark=np.zeros(m + 1, dtype=np.int64),
            path=np.zeros(m, dtype=np.int64),
            best=np.zeros(m, dtype=np.int64),
            best_value=np.full(1, -np.inf),
            ints=np.zeros(4, dtype=np.int64),
        )

    def restart(self) -> None:
        """A fresh search (the kernel resets the arrays when it opens it)."""
        self.ints[PHASE] = FRESH

    @property
    def done(self) -> bool:
        return bool(self.ints[PHASE] == DONE)

    @property
    def nodes(self) -> int:
        return int(self.ints[NODES])

    def upper(self) -> float:
        """A bound on every record's value, as the search sums it: the best value found, or
        the largest pre-bound of a level still to visit on the stack (each depth's levels are
        sorted, so its next one has the largest; every subtree not visited yet hangs below
        one of them, and a pruned one was below the best value)."""
        top = float(self.best_value[0])
        if self.ints[PHASE] != RUNNING:
            return top
        for d in range(int(self.ints[DEPTH]) + 1):
            if self.cursor[d] < self.count[d]:
                next_level = self.levels[d, self.cursor[d]]
                top = max(top, self.value[d] + self.scores[d, next_level] + self.rest[d])
        return top

    def record(self, order: np.ndarray) -> np.ndarray:
        """The best record found so far, in attribute order (level codes)."""
        record = np.zeros(len(order), dtype=np.int64)
        record[order] = self.best
        return record


@njit(cache=True)
def _advance(
    sizes,
    offsets,
    order,
    base_gain,
    coef,
    last,
    need,
    lit_start,
    lit_conj,
    lit_level,
    noise,
    gain,
    matched,
    dead,
    levels,
    scores,
    count,
    cursor,
    value,
    rest,
    here_scores,
    log_kind,
    log_conj,
    log_mark,
    path,
    best,
    best_value,
    ints,
    max_nodes,
):  # pragma: no cover - compiled; tests/oracles/synthetic/test_data_search.py checks it
    """The search of the module docstring for one noise vector, resumed from ``SearchState``'s
    arrays: it makes at most ``max_nodes`` nodes more (past them only to reach its first leaf,
    so that a best record exists), then returns whether the search is done.

    Depth d visits the levels of attribute order[d], sorted by noise + gain (``scores``), with
    ``value[d]`` collected by the attributes before it and ``rest[d]`` the bound of the
    attributes after it, both at the gains in force when depth d was opened: the pre-bound
    value[d] + score + rest[d] holds for every child, and falls along the sorted levels.
    The undo log holds (kind, conjunction): kind 0 = matched += 1, 1 = died (positive gain
    removed), 2 = matched += 1 and a negative coef added to the gain, 3 = died without a gain
    change."""
    m = sizes.shape[0]
    if ints[3] == 2:  # DONE
        return True
    if ints[3] == 0:  # FRESH: reset the arrays and open depth 0
        for f in range(gain.shape[0]):
            gain[f] = base_gain[f]
        for c in range(coef.shape[0]):
            matched[c] = 0
            dead[c] = False
        best_value[0] = -np.inf
        ints[0] = 0
        ints[1] = 0
        ints[2] = 0
        ints[3] = 1  # RUNNING
        value[0] = 0.0
        a = order[0]
        for v in range(sizes[a]):
            scores[0, v] = noise[offsets[a] + v] + gain[offsets[a] + v]
        idx = np.argsort(-scores[0, : sizes[a]], kind="mergesort")
        for v in range(sizes[a]):
            levels[0, v] = idx[v]
        count[0] = sizes[a]
        cursor[0] = 0
        rest[0] = _rest(order, offsets, noise, gain, 1)
    depth = ints[0]
    log_top = ints[1]
    nodes = ints[2]
    made = 0
    while depth >= 0:
        if made >= max_nodes and best_value[0] > -np.inf:
            ints[0] = depth
            ints[1] = log_top
            ints[2] = nodes
            return False
        if cursor[depth] >= count[depth]:
            depth -= 1
            if depth >= 0:  # undo the assignment made at this depth
                log_top = _undo(
                    log_kind,
                    log_conj,
                    log_top,
                    log_mark[depth + 1],
                    matched,
                    dead,
                    gain,
                    last,
                    coef,
                )
            continue
        a = order[depth]
        v = levels[depth, cursor[depth]]
        cursor[depth] += 1
        nodes += 1
        made += 1
        here = value[depth] + noise[offsets[a] + v] + gain[offsets[a] + v]
        if depth + 1 == m:
            if here > best_value[0]:
                best_value[0] = here
                for j in range(m - 1):
                    best[j] = path[j]
                best[m - 1] = v
            cursor[depth] = count[depth]  # the later levels score lower
            continue
        slack = PRUNE_TOL * max(1.0, abs(best_value[0]))
        if here + rest[depth] < best_value[0] - slack:
            cursor[depth] = count[depth]  # sorted: every later level is lower
            continue
        # fix a = v: update the conjunctions with an early literal on a
        log_mark[depth + 1] = log_top
        for e in range(lit_start[a], lit_start[a + 1]):
            c = lit_conj[e]
            if dead[c]:
                continue
            if lit_level[e] == v:
                matched[c] += 1
                if coef[c] < 0 and matched[c] == need[c]:
                    gain[last[c]] += coef[c]
                    log_kind[log_top] = 2
                else:
                    log_kind[log_top] = 0
            else:
                dead[c] = True
                if coef[c] > 0:
                    gain[last[c]] -= coef[c]
                    log_kind[log_top] = 1
                else:
                    log_kind[log_top] = 3
            log_conj[log_top] = c
            log_top += 1
        # the child's bound at the new gains: its own best level and the rest after it
        b = order[depth + 1]
        top = -np.inf
        for u in range(sizes[b]):
            here_scores[u] = noise[offsets[b] + u] + gain[offsets[b] + u]
            top = max(top, here_scores[u])
        after = _rest(order, offsets, noise, gain, depth + 2)
        if here + top + after < best_value[0] - slack:
            log_top = _undo(
                log_kind, log_conj, log_top, log_mark[depth + 1], matched, dead, gain, last, coef
            )
            continue
        path[depth] = v
        depth += 1
        value[depth] = here
        rest[depth] = after
        for u in range(sizes[b]):
            scores[depth, u] = here_scores[u]
        idx = np.argsort(-scores[depth, : sizes[b]], kind="mergesort")
        for u in range(sizes[b]):
            levels[depth, u] = idx[u]
        count[depth] = sizes[b]
        cursor[depth] = 0
    ints[0] = depth
    ints[1] = log_top
    ints[2] = nodes
    ints[3] = 2  # DONE
    return True


def advance(compiled: Compiled, noise: np.ndarray, state: SearchState, max_nodes: int) -> bool:
    """Resume ``state``'s search for the flat noise vector ``noise`` (every attribute's levels
    in turn, float64, contiguous; the same on every call of one search) for at most
    ``max_nodes`` nodes more, past them only to reach its first leaf; True when it is done
    (its best record is then exact)."""
    c, s = compiled, state
    return bool(
        _advance(
            c.sizes,
            c.offsets,
            c.order,
            c.base_gain,
            c.coef,
            c.last,
            c.need,
            c.lit_start,
            c.lit_conj,
            c.lit_level,
            noise,
            s.gain,
            s.matched,
            s.dead,
            s.levels,
            s.scores,
            s.count,
            s.cursor,
            s.value,
            s.rest,
            s.here_scores,
            s.log_kind,
            s.log_conj,
            s.log_mark,
            s.path,
            s.best,
            s.best_value,
            s.ints,
            int(max_nodes),
        )
    )


def search(compiled: Compiled, noise: np.ndarray) -> tuple[np.ndarray, float, int]:
    """(the best record, its value as the search summed it, the nodes visited) for one flat
    noise vector (every attribute's levels in turn): the search run to its end."""
    state = SearchState.empty(compiled)
    advance(compiled, np.ascontiguousarray(noise, dtype=float), state, NO_LIMIT)
    return state.record(compiled.order), float(state.best_value[0]), state.nodes


@dataclass(frozen=True)
class BatchAnswer:
    """What ``run_batch`` found: each row's best record, a bound on each row's value as the
    search sums it (the value found, when the row's search is done), whether each row's search
    is done, and the nodes made."""

    records: np.ndarray
    uppers: np.ndarray
    done: np.ndarray
    nodes: int


def run_batch(
    compiled: Compiled, noises: np.ndarray, budget: Budget, chunk: int = CHUNK
) -> BatchAnswer:
    """The search for each row of ``noises`` in turn, on ``budget``: ``chunk`` nodes between
    two looks at its clock (``Budget.expired``) and its node limit. Once either has run out,
    the search under way stops where it is and every later one at its first leaf (the greedy
    record), each with its bound (``SearchState.upper``)."""
    noises = np.atleast_2d(np.asarray(noises, dtype=float))
    state = SearchState.empty(compiled)
    records = np.empty((len(noises), len(compiled.sizes)), dtype=np.int64)
    uppers, done = np.empty(len(noises)), np.zeros(len(noises), dtype=bool)
    limit = budget.node_limit
    nodes, stop = 0, budget.expired()
    for i, row in enumerate(noises):
        noise = np.ascontiguousarray(row)
        state.restart()
        while True:
            allowed = chunk if limit is None else min(chunk, limit - nodes - state.nodes)
            stop = stop or allowed <= 0
            if advance(compiled, noise, state, 0 if stop else allowed) or stop:
                break
            stop = budget.expired()
        records[i], uppers[i], done[i] = state.record(compiled.order), state.upper(), state.done
        nodes += state.nodes
    return BatchAnswer(records, uppers, done, nodes)


@dataclass(frozen=True)
class SearchConjunctionOracle:
    """The exact search of the module docstring, on a budget (``oracles.contract.budget``): past it the
    answer is the best record found so far for each row, under a TIME_LIMIT certificate
    (``solve``). It runs on one thread whatever the budget's."""

    name: str = "search"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (
        ConjunctionProblem,
        ConjunctionBatch,
    )

    @counts_cpu
    def solve(self, problem: ConjunctionProblem | ConjunctionBatch, budget: Budget) -> Solution:
        """The best record for ``problem`` (its own noise), or for each row of a batch (one
        round of the game, searched at once), on ``budget``: one certificate for the batch. Its
        objective is the sum of the rows' exact values; OPTIMAL when every row's search ran to
        its end (bound = objective), else TIME_LIMIT with the sum of the rows' bounds
        (``run_batch``: a stopped row's best record so far, a row never reached its greedy
        record) and its ``ConjunctionStats.unfinished`` rows."""
        if isinstance(problem, ConjunctionProblem):
            single = self.solve(ConjunctionBatch(problem, np.concatenate(problem.noise)), budget)
            return Solution(single.w[0], single.certificate)
        start = time.perf_counter()
        problem, noises = problem.problem, problem.noises
        compiled = compile_problem(problem)
        answer = run_batch(compiled, noises, budget)
        records = answer.records
        flat = records + compiled.offsets[:-1]
        # exact values: the conjunctions' part as ``problem.values`` sums it, then each row's noise
        values = problem.values(records) - _noise_part(problem, records)
        values += np.take_along_axis(noises, flat, 1).sum(1)
        total = float(np.sum(values))
        unfinished = int(np.sum(~answer.done))
        seconds = time.perf_counter() - start
        if unfinished:
            upper = float(np.sum(np.where(answer.done, values, np.maximum(values, answer.uppers))))
            why = "deadline" if budget.expired() else f"node limit {budget.node_limit}"
            message = f"stopped at the {why}: {unfinished} of {len(noises)} searches unfinished"
            cert = max_certificate(total, Status.TIME_LIMIT, upper, seconds, self.name, 1, message)
        else:
            cert = max_certificate(total, Status.OPTIMAL, total, seconds, self.name)
        stats = ConjunctionStats(
            records=len(noises), unfinished=unfinished, nodes=int(answer.nodes)
        )
        return Solution(records, cert.with_stats(stats))


def _noise_part(problem: ConjunctionProblem, records: np.ndarray) -> np.ndarray:
    out = np.zeros(len(records))
    for a, n in enumerate(problem.noise):
        out += n[records[:, a]]
    return out


__all__ = [
    "CHUNK",
    "PRUNE_TOL",
    "BatchAnswer",
    "Compiled",
    "SearchConjunctionOracle",
    "SearchState",
    "advance",
    "compile_problem",
    "run_batch",
    "search",
]
