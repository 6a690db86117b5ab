"""The query player's oracle of private synthetic data: the best conjunction and sign.

The transpose of ``oracles.synthetic.data_player`` (the data player's best record for given
conjunctions): here the records are given and the conjunction is sought. A candidate is (q, s),
q a conjunction of 1 to ``max_literals`` literals (a, v) on distinct attributes, s in {+1, -1}.
Given records x with real weights c_x (the game: count_D(x) - n count_S(x) / |S|), a weight per
literal and one for the sign, the oracle finds

    argmax_(q, s)  s sum_{x : q(x) = 1} c_x  +  sum_{(a, v) in q} literal_noise[a][v]
                   +  sign_noise [s = +1]

over the whole class (RSPM's selection, docs/synthetic.md section 4). Three backends behind the
one contract ``solve(problem, budget) -> Solution`` (``oracles.contract.certificate``: the answer is
``Solution.conjunction`` and ``Solution.sign``; ``w`` the literals' indicator, then the sign):

* ``EnumerationSelectionOracle``: every candidate, a marginal at a time (its cells' sums by one
  bincount). Ties go to the first candidate in the CLASS ORDER: every (q, +1) before every
  (q, -1); within a sign, conjunctions by size (1 literal first), then by their attributes in
  ``itertools.combinations`` order, then by their levels in row-major order
  (``core.problem.conjunction_index``);
* ``HighsSelectionOracle``: one MILP per sign, the better answer kept (+1 on equal values).
  Binaries y_{a,v} (literal (a, v) in q), u_a = sum_v y_{a,v} <= 1, 1 <= sum_a u_a <= k, and one
  continuous z_x in [0, 1] per record with w_x = s c_x != 0. x satisfies q iff no literal of q
  on any attribute a has a level other than x_a, i.e. iff u_a - y_{a, x_a} = 0 for every a.
  With w_x > 0 (the maximization pushes z_x up): z_x <= 1 - u_a + y_{a, x_a} for each a; with
  w_x < 0 (pushed down): z_x >= 1 - sum_a (u_a - y_{a, x_a}). At integral y both make
  z_x = q(x) at the optimum, so the MILP's optimum is the class's. On equal values within a
  sign the MILP returns one of the maximizers, not necessarily the class order's first:
  docs/synthetic.md section 4.4 says why the value is all privacy needs;
* ``SearchSelectionOracle``: an exact branch and bound over the conjunctions, literals added in
  increasing attribute order (each conjunction reached once). A node q bounds every extension
  q' of q (q' adds literals on later attributes) by

      s sum_{x : q'(x)} c_x <= sum_{x : q(x)} max(s c_x, 0),
      noise(q') <= noise(q) + (the k - |q| largest max(0, max_v literal_noise[a][v]), a later),

  and a subtree whose bound is below the best value found is never visited. Every child of a
  node is scored at once (one bincount per later attribute over the node's records). Ties
  (bounds equal to the best value are still visited) go to the class order's first, as the
  enumeration's. Measured on Adult in docs/results/synthetic.md, where the MILP is slow. A
  problem that asks for any maximizer (``first_on_ties=False``) also skips the subtrees whose
  bound only equals the best value found.

Every answer carries a ``Certificate`` (minimization form, ``conjunctions.max_certificate``):
the exact value at the answer and the larger of the two signs' proven upper bounds. Unlike the
data player's, the selection's privacy RESTS on it: a round is private only when its
certificate is.
"""

from __future__ import annotations

import itertools
import math
import time
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import scipy.sparse

from core.problem import Conjunction, SelectionProblem
from oracles.contract.certificate import Certificate, Selected, Solution, Status, counts_cpu
from oracles.contract.budget import Budget
from oracles.synthetic.data_player import max_certificate, solve_max_milp
from oracles.mip.highs import LinearModel

#: Candidates an enumeration oracle may visit (both signs).
MAX_CANDIDATES = 50_000_000


def selected(problem: SelectionProblem, conjunction: Conjunction, sign: int, cert) -> Solution:
    """The answer (``conjunction``, ``sign``) as a Solution: ``w`` the literals' indicator (one
    entry per level of each attribute in turn), then the sign."""
    starts = np.concatenate([[0], np.cumsum(problem.levels)]).astype(np.int64)
    w = np.zeros(int(starts[-1]) + 1)
    for a, v in conjunction:
        w[starts[a] + v] = 1.0
    w[-1] = sign
    return Solution(w, cert, Selected(tuple(conjunction), int(sign)))


@dataclass(frozen=True)
class EnumerationSelectionOracle:
    """Every candidate, a marginal at a time (ties: the first in the class order)."""

    max_candidates: int = MAX_CANDIDATES
    name: str = "enumerate"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (SelectionProblem,)

    @counts_cpu
    def solve(self, problem: SelectionProblem, budget: Budget) -> Solution:
        """Every candidate, whatever the budget (ties: the first in the class order)."""
        if problem.candidates > self.max_candidates:
            raise ValueError(
                f"the class has {problem.candidates} candidates, more than max_candidates="
                f"{self.max_candidates}: enumeration cannot cover it"
            )
        start = time.perf_counter()
        levels, records = problem.levels, problem.records
        best = {+1: (-math.inf, None), -1: (-math.inf, None)}
        for size in range(1, problem.max_literals + 1):
            for attrs in itertools.combinations(range(len(levels)), size):
                shape = [levels[a] for a in attrs]
                cell = np.ravel_multi_index(tuple(records[:, a] for a in attrs), shape)
                sums = np.bincount(cell, weights=problem.coefs, minlength=math.prod(shape))
                noise = np.zeros(shape)
                for axis, a in enumerate(attrs):
                    noise = noise + np.expand_dims(
                        problem.literal_noise[a], [i for i in range(size) if i != axis]
                    )
                noise = noise.ravel()
                for sign, values in ((+1, sums + noise + problem.sign_noise), (-1, noise - sums)):
                    i = int(np.argmax(values))
                    if values[i] > best[sign][0]:  # strict: the first in the class order stays
                        best[sign] = (float(values[i]), (attrs, shape, i))
        sign = +1 if best[+1][0] >= best[-1][0] else -1
        value, (attrs, shape, i) = best[sign]
        conjunction = tuple((a, int(v)) for a, v in zip(attrs, np.unravel_index(i, shape)))
        seconds = time.perf_counter() - start
        cert = max_certificate(value, Status.OPTIMAL, value, seconds, self.name)
        return selected(problem, conjunction, sign, cert)


@dataclass(frozen=True)
class SearchSelectionOracle:
    """The branch and bound of the module docstring (ties: the first in the class order, or
    any maximizer when the problem asks for any: ``SelectionProblem.first_on_ties``). It runs
    to its end whatever the budget."""

    name: str = "search"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (SelectionProblem,)

    @counts_cpu
    def solve(self, problem: SelectionProblem, budget: Budget) -> Solution:
        start = time.perf_counter()
        search = _ConjunctionSearch(problem, problem.first_on_ties)
        for sign in (+1, -1):
            search.run(sign)
        value, (rank, index, conjunction) = search.best
        seconds = time.perf_counter() - start
        cert = max_certificate(
            problem.value(conjunction, 1 - 2 * rank),
            Status.OPTIMAL,
            value,
            seconds,
            self.name,
            message=f"{search.nodes} nodes",
        )
        return selected(problem, conjunction, 1 - 2 * rank, cert)


class _ConjunctionSearch:
    """Depth-first branch and bound, best bounds first; ``best`` = (value, (sign rank, class
    index, conjunction)), the sign rank 0 for +1 and 1 for -1."""

    def __init__(self, problem: SelectionProblem, first_on_ties: bool = True) -> None:
        self.problem = problem
        # visit subtrees whose bound equals the best value (for the class order's first)
        self.ties = first_on_ties
        self.best: tuple[float, tuple] = (-math.inf, (2, 0, ()))
        self.nodes = 0
        levels, k = problem.levels, problem.max_literals
        gains = np.array([max(0.0, float(n.max())) for n in problem.literal_noise])
        # extra[a][j]: the j largest gains among attributes a, a+1, ... (j <= k)
        self.extra = np.zeros((len(levels) + 1, k + 1))
        for a in range(len(levels) - 1, -1, -1):
            top = np.sort(gains[a:])[::-1]
            self.extra[a, 1:] = np.cumsum(np.pad(top, (0, k)))[:k]
        # the class index of a conjunction: offset of its attributes, plus its cell
        self.offsets: dict[tuple[int, ...], int] = {}
        index = 0
        for size in range(1, k + 1):
            for attrs in itertools.combinations(range(len(levels)), size):
                self.offsets[attrs] = index
                index += math.prod(levels[a] for a in attrs)

    def run(self, sign: int) -> None:
        p = self.problem
        weights = sign * p.coefs
        self._weights, self._positive = weights, np.maximum(weights, 0.0)
        self._rank, self._constant = (0 if sign > 0 else 1), (p.sign_noise if sign > 0 else 0.0)
        self._expand((), np.arange(len(p.records)), 0.0, 0)

    def _expand(self, literals: Conjunction, rows: np.ndarray, noise: float, first: int) -> None:
        p, k = self.problem, self.problem.max_literals
        left = k - len(literals) - 1  # literals a child may still add
        children = []
        for a in range(first, len(p.levels)):
            self.nodes += 1
            codes = p.records[rows, a]
            sums = np.bincount(codes, self._weights[rows], minlength=p.levels[a])
            positive = np.bincount(codes, self._positive[rows], minlength=p.levels[a])
            base = noise + p.literal_noise[a] + self._constant
            values = sums + base
            self._offer(literals, a, values)
            if left > 0:
                bounds = positive + base + self.extra[a + 1, left]
                for v in np.flatnonzero(self._worth(bounds)):
                    children.append((float(bounds[v]), a, int(v)))
        for bound, a, v in sorted(children, key=lambda c: -c[0]):
            if not self._worth(bound):
                continue  # the best value has grown since
            sub = rows[p.records[rows, a] == v]
            self._expand(literals + ((a, v),), sub, noise + p.literal_noise[a][v], a + 1)

    def _worth(self, bounds):
        """Whether a subtree of bound ``bounds`` may hold a better answer (or, with ties
        visited, one as good that comes first)."""
        return bounds >= self.best[0] if self.ties else bounds > self.best[0]

    def _offer(self, literals: Conjunction, a: int, values: np.ndarray) -> None:
        """Take the best of the children literals + (a, v) if it beats the best so far."""
        best = self.best[0]
        for v in np.flatnonzero(values >= best):
            value = float(values[v])
            conjunction = literals + ((a, int(v)),)
            attrs = tuple(b for b, _ in conjunction)
            cell = int(
                np.ravel_multi_index(
                    [u for _, u in conjunction], [self.problem.levels[b] for b in attrs]
                )
            )
            key = (self._rank, self.offsets[attrs] + cell, conjunction)
            if value > self.best[0] or (value == self.best[0] and key[:2] < self.best[1][:2]):
                self.best = (value, key)


@dataclass(frozen=True)
class HighsSelectionOracle:
    """One MILP per sign (module docstring), solved by HiGHS, both on one budget: the second
    sign gets what the first left."""

    name: str = "highs"
    #: The problem classes it solves (``oracles.routing.routes`` checks its rows against them).
    accepts: ClassVar[tuple[type, ...]] = (SelectionProblem,)

    @counts_cpu
    def solve(self, problem: SelectionProblem, budget: Budget) -> Solution:
        start = time.perf_counter()
        answers = []
        for sign in (+1, -1):
            model, literals = _milp(problem, sign)
            answer = solve_max_milp(model, budget)
            conjunction = None
            if answer.x is not None:
                chosen = np.flatnonzero(answer.x[: len(literals)] > 0.5)
                conjunction = tuple(literals[j] for j in chosen)
                if not 1 <= len(conjunction) <= problem.max_literals or len(
                    {a for a, _ in conjunction}
                ) != len(conjunction):
                    conjunction = None  # rounding left the class: no usable answer
            answers.append((sign, conjunction, answer))
        seconds = time.perf_counter() - start
        usable = [(problem.value(c, s), s, c) for s, c, _ in answers if c is not None]
        statuses = [a.status for _, _, a in answers]
        status = next((st for st in statuses if st is not Status.OPTIMAL), Status.OPTIMAL)
        threads = answers[0][2].threads
        notes = "; ".join(
            f"sign {s:+d}: {a.note or a.message}" for s, _, a in answers if a.note or a.message
        )
        if not usable:
            cert = Certificate(
                Status.NO_SOLUTION if status is Status.OPTIMAL else status,
                math.inf,
                -math.inf,
                seconds,
                self.name,
                threads,
                None,
                notes or "no answer in the class",
            )
            return selected(problem, ((0, 0),), +1, cert)
        if len(usable) < 2 and status is Status.OPTIMAL:
            status, notes = Status.INCONSISTENT, "an optimal answer rounded outside the class"
        value, sign, conjunction = max(usable, key=lambda t: (t[0], t[1]))  # +1 on equal values
        upper = max(a.upper for _, _, a in answers)
        cert = max_certificate(value, status, upper, seconds, self.name, threads, notes)
        return selected(problem, conjunction, sign, cert)


def _milp(problem: SelectionProblem, sign: int) -> tuple[LinearModel, list]:
    """(the model minimizing -(the objective of sign ``sign``), the literal of each y column).

    Columns: y (one per literal, binary), u (one per attribute), z (one per record with
    w_x = sign c_x != 0)."""
    levels, records = problem.levels, problem.records
    starts = np.concatenate([[0], np.cumsum(levels)]).astype(np.int64)
    literals = [(a, v) for a, k in enumerate(levels) for v in range(k)]
    n_y, n_a = int(starts[-1]), len(levels)
    weights = sign * problem.coefs
    active = np.flatnonzero(weights != 0)
    n_cols = n_y + n_a + len(active)
    u0, z0 = n_y, n_y + n_a
    cost = np.concatenate([-np.concatenate(problem.literal_noise), np.zeros(n_a), -weights[active]])
    offset = -problem.sign_noise if sign > 0 else 0.0
    rows, cols, vals, lower, upper = [], [], [], [], []

    # u_a - sum_v y_{a,v} = 0, 1 <= sum_a u_a <= k
    r = 0
    for a in range(n_a):
        ys = np.arange(starts[a], starts[a + 1])
        rows.append(np.full(len(ys) + 1, r)), cols.append(np.append(ys, u0 + a))
        vals.append(np.append(-np.ones(len(ys)), 1.0))
        lower.append(np.zeros(1)), upper.append(np.zeros(1))
        r += 1
    rows.append(np.full(n_a, r)), cols.append(u0 + np.arange(n_a)), vals.append(np.ones(n_a))
    lower.append(np.ones(1)), upper.append(np.array([float(problem.max_literals)]))
    r += 1
    # w_x > 0: z_x + u_a - y_{a, x_a} <= 1 for every attribute a with more than one level
    pos = active[weights[active] > 0]
    z_pos = z0 + np.flatnonzero(weights[active] > 0)
    for a in range(n_a):
        if levels[a] < 2 or not len(pos):
            continue
        count = len(pos)
        block_rows = r + np.arange(count)
        rows.append(np.repeat(block_rows, 3))
        cols.append(
            np.stack([z_pos, np.full(count, u0 + a), starts[a] + records[pos, a]], 1).ravel()
        )
        vals.append(np.tile([1.0, 1.0, -1.0], count))
        lower.append(np.full(count, -np.inf)), upper.append(np.ones(count))
        r += count
    # w_x < 0: z_x + sum_a (u_a - y_{a, x_a}) >= 1
    neg = active[weights[active] < 0]
    z_neg = z0 + np.flatnonzero(weights[active] < 0)
    if len(neg):
        count = len(neg)
        block_rows = r + np.arange(count)
        entries = [z_neg[:, None], np.broadcast_to(u0 + np.arange(n_a), (count, n_a))]
        entries.append(starts[:-1][None, :] + records[neg])
        rows.append(np.repeat(block_rows, 1 + 2 * n_a))
        cols.append(np.hstack(entries).ravel())
        vals.append(np.tile(np.concatenate([[1.0], np.ones(n_a), -np.ones(n_a)]), count))
        lower.append(np.ones(count)), upper.append(np.full(count, np.inf))
        r += count
    matrix = scipy.sparse.csr_array(
        (np.concatenate(vals), (np.concatenate(rows), np.concatenate(cols))), shape=(r, n_cols)
    )
    matrix.sum_duplicates()
    model = LinearModel(
        cost=cost,
        matrix=matrix,
        row_lower=np.concatenate(lower),
        row_upper=np.concatenate(upper),
        col_lower=np.zeros(n_cols),
        col_upper=np.ones(n_cols),
        integer=np.arange(n_cols) < n_y,
        offset=offset,
    )
    return model, literals


__all__ = [
    "MAX_CANDIDATES",
    "EnumerationSelectionOracle",
    "HighsSelectionOracle",
    "SearchSelectionOracle",
    "selected",
]
