"""A table's public domain, a workload of k-way marginals over it, and a class of conjunctions
too large to list.

Every attribute has finite levels stated in advance (a categorical column's values, a numeric
column's public bins): the domain is public, so nothing about it is read off the private data. A
record is coded as one level index per attribute. A k-way marginal over attributes (a_1..a_k) is
the fraction of records in each cell (v_1..v_k): the conjunction "x_{a_1} = v_1 and ... and
x_{a_k} = v_k" (oracles.synthetic.data_player), a statistical query of sensitivity 1/n.

``ConjunctionClass`` is every conjunction of 1 to k literals (37.6 million on Adult at k = 5):
never listed. Its largest error is found by the exact branch and bound of
``oracles.synthetic.query_player`` with zero noise, its mean error is taken over the cells of the
k-way marginals (docs/synthetic.md, section 5).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from core.problem import Conjunction, SelectionProblem
from core.validation import check_int
from oracles.contract.certificate import Certificate
from oracles.contract.budget import Budget
from oracles.routing.registry import make_oracle
from oracles.routing.routes import SELECTION, route_for


@dataclass(frozen=True)
class Domain:
    """Attributes ``names`` with their public ``levels`` (each a tuple of distinct strings)."""

    names: tuple[str, ...]
    levels: tuple[tuple[str, ...], ...]

    def __post_init__(self) -> None:
        names = tuple(str(n) for n in self.names)
        levels = tuple(tuple(str(v) for v in lv) for lv in self.levels)
        if not names or len(names) != len(levels) or len(set(names)) != len(names):
            raise ValueError("a domain needs distinct attribute names, one level list each")
        for name, lv in zip(names, levels):
            if len(lv) < 1 or len(set(lv)) != len(lv):
                raise ValueError(f"attribute {name!r}: its levels must be distinct, found {lv}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "levels", levels)

    @property
    def sizes(self) -> tuple[int, ...]:
        return tuple(len(lv) for lv in self.levels)

    def encode(self, rows: Sequence[Sequence[Any]]) -> np.ndarray:
        """(n, attributes) level codes of ``rows`` (values compared as text); a value outside
        its attribute's levels is a ValueError naming the row and the attribute."""
        index = [{v: i for i, v in enumerate(lv)} for lv in self.levels]
        rows = [tuple(r) for r in rows]
        codes = np.empty((len(rows), len(self.names)), dtype=np.int64)
        for i, row in enumerate(rows):
            if len(row) != len(self.names):
                raise ValueError(f"row {i} has {len(row)} values, the domain {len(self.names)}")
            for a, value in enumerate(row):
                code = index[a].get(str(value).strip())
                if code is None:
                    raise ValueError(
                        f"row {i}: {self.names[a]!r} is {value!r}, not one of its levels "
                        f"{list(self.levels[a])}"
                    )
                codes[i, a] = code
        return codes

    def decode(self, codes: np.ndarray) -> list[tuple[str, ...]]:
        """The rows of level codes as level strings."""
        return [tuple(self.levels[a][int(c)] for a, c in enumerate(row)) for row in codes]


def check_codes(codes: Any, sizes: Sequence[int]) -> np.ndarray:
    """``codes`` as an (n >= 1, attributes) int64 array of level codes within ``sizes``, else a
    ValueError saying which."""
    codes = np.asarray(codes, dtype=np.int64)
    if codes.ndim != 2 or codes.shape[1] != len(sizes) or len(codes) == 0:
        raise ValueError(f"codes must be (n >= 1, {len(sizes)}) level codes, found {codes.shape}")
    if (codes < 0).any() or (codes >= np.array(sizes)).any():
        raise ValueError("codes must lie within the domain's levels")
    return codes


@dataclass(frozen=True)
class Workload:
    """The k-way marginals over ``marginals`` (tuples of attribute indices) of a domain with
    ``sizes`` levels per attribute; its queries are every cell of every marginal, in order."""

    sizes: tuple[int, ...]
    marginals: tuple[tuple[int, ...], ...]

    def __post_init__(self) -> None:
        sizes = tuple(int(k) for k in self.sizes)
        for a, k in enumerate(sizes):
            check_int(f"sizes[{a}]", k)
        marginals = tuple(tuple(int(a) for a in m) for m in self.marginals)
        if not marginals:
            raise ValueError("a workload needs at least one marginal")
        for m in marginals:
            if not m or len(set(m)) != len(m) or not all(0 <= a < len(sizes) for a in m):
                raise ValueError(f"a marginal needs distinct attributes of the domain, found {m}")
        object.__setattr__(self, "sizes", sizes)
        object.__setattr__(self, "marginals", marginals)
        cells = [math.prod(sizes[a] for a in m) for m in marginals]
        object.__setattr__(self, "_offsets", np.concatenate([[0], np.cumsum(cells)]))
        # (attributes, marginals): record x's cell in marginal i is x @ strides[:, i]
        strides = np.zeros((len(sizes), len(marginals)), dtype=np.int64)
        for i, m in enumerate(marginals):
            step = 1
            for a in reversed(m):
                strides[a, i] = step
                step *= sizes[a]
        object.__setattr__(self, "_strides", strides)

    @classmethod
    def all_k_way(cls, sizes: Sequence[int], k: int) -> "Workload":
        """Every k-way marginal of the domain."""
        check_int("k", k)
        if k > len(sizes):
            raise ValueError(f"k must be <= the {len(sizes)} attributes, found {k}")
        return cls(tuple(sizes), tuple(itertools.combinations(range(len(sizes)), k)))

    @property
    def queries(self) -> int:
        return int(self._offsets[-1])

    def answers(self, codes: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
        """Every query's answer on ``codes``: the (weighted) fraction of records in each cell."""
        codes = np.asarray(codes, dtype=np.int64)
        total = len(codes) if weights is None else float(np.sum(weights))
        out = np.empty(self.queries)
        for i, m in enumerate(self.marginals):
            cell = np.ravel_multi_index(tuple(codes[:, a] for a in m), [self.sizes[a] for a in m])
            size = int(self._offsets[i + 1] - self._offsets[i])
            counts = np.bincount(cell, weights=weights, minlength=size)
            out[self._offsets[i] : self._offsets[i + 1]] = counts / total
        return out

    def cells(self, codes: np.ndarray) -> np.ndarray:
        """(records, marginals): the query each record satisfies in each marginal (its index
        among all the workload's queries)."""
        codes = np.asarray(codes, dtype=np.int64).reshape(-1, len(self.sizes))
        return codes @ self._strides + self._offsets[:-1]

    def counts(self, codes: np.ndarray) -> np.ndarray:
        """How many records of ``codes`` satisfy each query (``answers`` times their number)."""
        flat = self.cells(codes).ravel()
        return np.bincount(flat, minlength=self.queries).astype(float)

    def conjunction(self, query: int) -> Conjunction:
        """Query ``query`` as its literals (attribute, level)."""
        i = int(np.searchsorted(self._offsets, query, side="right") - 1)
        if not 0 <= query < self.queries:
            raise IndexError(f"query must be in [0, {self.queries}), found {query}")
        m = self.marginals[i]
        cell = np.unravel_index(query - int(self._offsets[i]), [self.sizes[a] for a in m])
        return tuple((a, int(v)) for a, v in zip(m, cell))

    def errors(self, real: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
        """|answer on ``real`` - answer on ``synthetic``| for every query (fractions)."""
        return np.abs(self.answers(real) - self.answers(synthetic))


def conjunction_count(sizes: Sequence[int], max_literals: int) -> int:
    """How many conjunctions of 1 to ``max_literals`` literals (distinct attributes) there are
    over a domain with ``sizes`` levels per attribute."""
    sizes = tuple(int(k) for k in sizes)
    return sum(
        math.prod(sizes[a] for a in attrs)
        for j in range(1, max_literals + 1)
        for attrs in itertools.combinations(range(len(sizes)), j)
    )


@dataclass(frozen=True)
class ClassError:
    """The largest error over a ``ConjunctionClass``: its value (a fraction), a conjunction and
    sign where it is reached (sign +1: the real table's fraction is the larger), and the search's
    certificate (its value and proven bound, in counts times n |S|)."""

    value: float
    conjunction: Conjunction
    sign: int
    certificate: Certificate


@dataclass(frozen=True)
class ConjunctionClass:
    """Every conjunction of 1 to ``max_literals`` literals over a domain with ``sizes`` levels
    per attribute: a workload that is never listed. Its ``marginals`` are the k-way ones
    (k = ``max_literals``), whose cells and their sub-conjunctions make up the class: what a
    mechanism that lists its workload is handed."""

    sizes: tuple[int, ...]
    max_literals: int

    def __post_init__(self) -> None:
        sizes = tuple(int(k) for k in self.sizes)
        for a, k in enumerate(sizes):
            check_int(f"sizes[{a}]", k)
        check_int("max_literals", self.max_literals)
        if self.max_literals > len(sizes):
            raise ValueError(
                f"max_literals must be <= the {len(sizes)} attributes, found {self.max_literals}"
            )
        object.__setattr__(self, "sizes", sizes)

    @property
    def queries(self) -> int:
        """How many conjunctions the class holds (without their negations)."""
        return conjunction_count(self.sizes, self.max_literals)

    @property
    def marginals(self) -> tuple[tuple[int, ...], ...]:
        """Every ``max_literals``-way marginal (attribute tuples)."""
        return tuple(itertools.combinations(range(len(self.sizes)), self.max_literals))

    def max_error(self, real: np.ndarray, synthetic: np.ndarray) -> ClassError:
        """max over the class of |q(real) - q(synthetic)|, exactly: the branch and bound of
        ``SearchSelectionOracle`` (ties not visited: any maximizer) with zero noise on the weights
        c_x = |S| count_real(x) - n count_S(x), integers, so every sum is exact and a tie is a
        tie; the value is the maximum over both signs divided by n |S|."""
        real = check_codes(real, self.sizes)
        synthetic = check_codes(synthetic, self.sizes)
        n, size = len(real), len(synthetic)
        if 2.0 * n * size >= 2.0**53:  # every partial sum is at most 2 n |S| in size
            raise ValueError(f"{n} x {size} records: their weights would not be exact in floats")
        records, inverse = np.unique(np.vstack([real, synthetic]), axis=0, return_inverse=True)
        inverse = inverse.ravel()
        coefs = np.bincount(inverse[:n], minlength=len(records)) * float(size)
        coefs -= np.bincount(inverse[n:], minlength=len(records)) * float(n)
        problem = SelectionProblem(
            self.sizes, self.max_literals, records, coefs, first_on_ties=False
        )
        route = make_oracle(route_for(SELECTION), time_limit=None)
        found = route.solve(problem, Budget.unlimited())  # exact, however long it takes
        value = problem.value(found.conjunction, found.sign)
        return ClassError(value / (n * size), found.conjunction, found.sign, found.certificate)

    def mean_error(self, real: np.ndarray, synthetic: np.ndarray) -> float:
        """The mean of |q(real) - q(synthetic)| over every cell of the ``max_literals``-way
        marginals: one bincount per marginal over the records' cells (the cells neither table
        reaches add 0)."""
        real = check_codes(real, self.sizes)
        synthetic = check_codes(synthetic, self.sizes)
        total, cells = 0.0, 0
        for m in self.marginals:
            shape = [self.sizes[a] for a in m]
            size = math.prod(shape)
            a = np.bincount(np.ravel_multi_index(real[:, m].T, shape), minlength=size)
            b = np.bincount(np.ravel_multi_index(synthetic[:, m].T, shape), minlength=size)
            total += float(np.abs(a / len(real) - b / len(synthetic)).sum())
            cells += size
        return total / cells


__all__ = [
    "ClassError",
    "ConjunctionClass",
    "Domain",
    "Workload",
    "check_codes",
    "conjunction_count",
]
