"""The data player's best record by an exact depth-first search, compiled (numba).

The problem is ``oracles.conjunctions.ConjunctionProblem``'s,

    max_x  sum_c coef_c q_c(x)  +  sum_a noise_{a, x_a},

over every record x of the product domain. ``SearchConjunctionOracle`` solves it exactly, and
``solve_batch`` solves it for many noise vectors with the same conjunctions at once (a round of
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
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
from numba import njit

from oracles.base import Certificate, Status, counts_cpu
from oracles.conjunctions import ConjunctionProblem, ConjunctionSolution, max_certificate

#: The search's own pruning slack: a node is dropped when its bound is below the best value by
#: more than this fraction of that value's size (the bounds' rounding is far smaller).
PRUNE_TOL = 1e-12


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


@njit(cache=True)
def _search(
    sizes, offsets, order, base_gain, coef, last, need, lit_start, lit_conj, lit_level, noise
):  # pragma: no cover - compiled; tests/oracles/test_conjunction_search.py checks it
    """The search of the module docstring for one noise vector: (record, value, nodes).

    Depth d visits the levels of attribute order[d], sorted by noise + gain (``scores``), with
    ``value[d]`` collected by the attributes before it and ``rest[d]`` the bound of the
    attributes after it, both at the gains in force when depth d was opened: the pre-bound
    value[d] + score + rest[d] holds for every child, and falls along the sorted levels."""
    m = sizes.shape[0]
    n_conj = coef.shape[0]
    gain = base_gain.copy()
    matched = np.zeros(n_conj, dtype=np.int64)
    dead = np.zeros(n_conj, dtype=np.bool_)
    max_level = 0
    for a in range(m):
        max_level = max(max_level, sizes[a])
    levels = np.zeros((m, max_level), dtype=np.int64)
    scores = np.zeros((m, max_level))
    count = np.zeros(m, dtype=np.int64)
    cursor = np.zeros(m, dtype=np.int64)
    value = np.zeros(m)
    rest = np.zeros(m)
    here_scores = np.zeros(max_level)
    # undo log: (kind, conjunction); kind 0 = matched += 1, 1 = died (positive gain removed),
    # 2 = matched += 1 and a negative coef added to the gain, 3 = died without a gain change
    log_kind = np.zeros(lit_conj.shape[0] + 1, dtype=np.int64)
    log_conj = np.zeros(lit_conj.shape[0] + 1, dtype=np.int64)
    log_top = 0
    log_mark = np.zeros(m + 1, dtype=np.int64)
    path = np.zeros(m, dtype=np.int64)
    best = np.zeros(m, dtype=np.int64)
    best_value = -np.inf
    nodes = 0
    # open depth 0
    a = order[0]
    for v in range(sizes[a]):
        scores[0, v] = noise[offsets[a] + v] + gain[offsets[a] + v]
    idx = np.argsort(-scores[0, : sizes[a]], kind="mergesort")
    for v in range(sizes[a]):
        levels[0, v] = idx[v]
    count[0] = sizes[a]
    rest[0] = _rest(order, offsets, noise, gain, 1)
    depth = 0
    while depth >= 0:
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
        here = value[depth] + noise[offsets[a] + v] + gain[offsets[a] + v]
        if depth + 1 == m:
            if here > best_value:
                best_value = here
                for j in range(m - 1):
                    best[j] = path[j]
                best[m - 1] = v
            cursor[depth] = count[depth]  # the later levels score lower
            continue
        slack = PRUNE_TOL * max(1.0, abs(best_value))
        if here + rest[depth] < best_value - slack:
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
        if here + top + after < best_value - slack:
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
    record = np.zeros(m, dtype=np.int64)
    for j in range(m):
        record[order[j]] = best[j]
    return record, best_value, nodes


def search(compiled: Compiled, noise: np.ndarray) -> tuple[np.ndarray, float, int]:
    """(the best record, its value as the search summed it, the nodes visited) for one flat
    noise vector (every attribute's levels in turn)."""
    c = compiled
    return _search(
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
        np.ascontiguousarray(noise, dtype=float),
    )


@dataclass(frozen=True)
class SearchConjunctionOracle:
    """The exact search of the module docstring (no time limit: it is complete)."""

    name: str = "search"

    @counts_cpu
    def solve(self, problem: ConjunctionProblem) -> ConjunctionSolution:
        start = time.perf_counter()
        record, _, nodes = search(compile_problem(problem), np.concatenate(problem.noise))
        value = problem.values(record)[0]
        seconds = time.perf_counter() - start
        cert = max_certificate(value, Status.OPTIMAL, value, seconds, self.name)
        cert.extra["nodes"] = int(nodes)
        return ConjunctionSolution(record, cert)

    def solve_batch(
        self, problem: ConjunctionProblem, noises: np.ndarray
    ) -> tuple[np.ndarray, Certificate]:
        """The best record for each row of ``noises`` (flat noise vectors) against
        ``problem``'s conjunctions (its own noise is not used): (records, one certificate for
        the batch: its objective and bound are the sums over the rows, exact values)."""
        start = time.perf_counter()
        compiled = compile_problem(problem)
        noises = np.atleast_2d(np.asarray(noises, dtype=float))
        records = np.empty((len(noises), len(problem.levels)), dtype=np.int64)
        nodes = 0
        for i, noise in enumerate(noises):
            records[i], _, visited = search(compiled, noise)
            nodes += visited
        flat = records + compiled.offsets[:-1]
        # exact values: the conjunctions' part as ``problem.values`` sums it, then each row's noise
        values = problem.values(records) - _noise_part(problem, records)
        values += np.take_along_axis(noises, flat, 1).sum(1)
        total = float(np.sum(values))
        seconds = time.perf_counter() - start
        cert = max_certificate(total, Status.OPTIMAL, total, seconds, self.name)
        cert.extra.update(nodes=int(nodes), records=len(noises))
        return records, cert


def _noise_part(problem: ConjunctionProblem, records: np.ndarray) -> np.ndarray:
    out = np.zeros(len(records))
    for a, n in enumerate(problem.noise):
        out += n[records[:, a]]
    return out


__all__ = ["PRUNE_TOL", "Compiled", "SearchConjunctionOracle", "compile_problem", "search"]
