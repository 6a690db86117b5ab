"""Releases of the synthetic-data game (mechanisms.synthetic.fem) on a tiny universe, in batches.

The audit needs hundreds of thousands of games; ``run_fem`` plays one at a time through an
oracle. On a universe small enough to list (every record of the domain), this sampler plays a
whole batch at once with the mechanism's own pieces: the per-round epsilon from the params'
``round_epsilon`` (so a mutant's calibration is the one audited), the candidates' utilities and
the exponential mechanism from ``fem.utilities`` and ``fem.select``, and the data player's best
response by listing the universe (ties: the first record, as ``EnumerationConjunctionOracle``).
With ``query_player="rspm"`` the query player is RSPM (docs/synthetic.md section 4) over its
whole class, listed (every conjunction of at most ``max_literals`` literals, in the class
order): utilities in counts, plus <eta, sig(c)> with the mechanism's own signatures and Laplace
scale (``mechanisms.synthetic.selection``), argmax (no ties: the noise is continuous).
tests/audit/test_game_sampler.py checks its distribution against ``run_fem``.

The data are coded records in X (one column per attribute, levels 0..k-1; y is unused). A
release's statistic (``kind = "discrete"``) is either the synthetic table, as the index of its
histogram over the universe (``statistic="records"``), or the first round's selection
(``statistic="selection"``: the per-round exponential mechanism alone).
"""

from __future__ import annotations

import functools
import itertools
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.objective import check_data
from mechanisms.audit.core import NeighbouringPair
from mechanisms.audit.sampler_base import AuditError
from mechanisms.synthetic import selection
from mechanisms.synthetic.domain import Workload
from mechanisms.synthetic.evaluate import onehot
from mechanisms.synthetic.fem import select, utilities

#: Universes larger than this are not listed.
MAX_UNIVERSE = 64

#: The audited universe: one attribute of two levels, its 1-way marginal (two queries, four
#: candidates with their negations). One record changed moves every utility by the most 1/n
#: allows.
GAME_WORKLOAD = Workload((2,), ((0,),))


@dataclass(frozen=True)
class GameSampler:
    """Batched games with ``params`` (a FEMParams, or a mutant's) on ``workload``."""

    params: Any
    workload: Workload
    statistic: str = "records"
    kind: str = field(default="discrete", init=False)

    def __post_init__(self) -> None:
        if self.statistic not in ("records", "selection"):
            raise AuditError(f"statistic must be records or selection, found {self.statistic!r}")
        if np.prod(self.workload.sizes) > MAX_UNIVERSE:
            raise AuditError(f"the universe is larger than {MAX_UNIVERSE} records")

    def universe(self) -> np.ndarray:
        return np.array(list(itertools.product(*(range(k) for k in self.workload.sizes))))

    @property
    def rspm(self) -> bool:
        return getattr(self.params, "query_player", "expmech") == "rspm"

    @functools.cached_property
    def queries(self) -> Workload:
        """The query player's class: the workload, or (rspm) every marginal of 1 to
        max_literals attributes, whose cells are the conjunctions in the class order."""
        if not self.rspm:
            return self.workload
        attributes = range(len(self.workload.sizes))
        marginals = [
            m for k in range(1, self.params.max_literals + 1)
            for m in itertools.combinations(attributes, k)
        ]  # fmt: skip
        return Workload(self.workload.sizes, tuple(marginals))

    @functools.cached_property
    def signatures(self) -> np.ndarray:
        """(m, 2 Q): sig of (q, +1) for every q, then of (q, -1) (``fem.utilities``' order)."""
        wl, sep = self.queries, self.params.separator
        return np.array(
            [
                selection.signature(wl.sizes, sep, wl.conjunction(q), sign)
                for sign in (1, -1)
                for q in range(wl.queries)
            ]
        ).T

    def _select(self, real, synthetic, eps0: float, n: int, size: int, rng):
        if not self.rspm:
            return select(utilities(real, synthetic), eps0, n, rng)
        scale = selection.laplace_scale(self.workload.sizes, self.params.separator, eps0)
        eta = rng.laplace(0.0, scale, size=(size, self.signatures.shape[0]))
        return np.argmax(n * utilities(real, synthetic) + eta @ self.signatures, axis=1)

    def sample(self, X, y, size: int, rng: np.random.Generator) -> np.ndarray:
        X, _ = check_data(X, y)
        codes = X.astype(np.int64)
        if not np.array_equal(codes, X) or codes.shape[1] != len(self.workload.sizes):
            raise AuditError("X must hold level codes, one column per attribute")
        p, wl = self.params, self.queries
        universe = self.universe()
        queries = np.stack([wl.answers(r[None, :]) for r in universe], axis=1)  # (Q, U)
        levels = onehot(universe, wl.sizes).T  # (levels, U): b(x) of each record
        real = wl.answers(codes)
        eps0, n = p.round_epsilon(), len(codes)
        counts = np.zeros((size, len(universe)))
        coefs = np.zeros((size, wl.queries))
        first = None
        rows = np.arange(size)
        for t in range(p.rounds):
            synthetic = counts @ queries.T / max(t * p.samples, 1)
            choice = self._select(real, synthetic, eps0, n, size, rng)
            first = choice if first is None else first
            query = choice % wl.queries
            np.add.at(coefs, (rows, query), np.where(choice < wl.queries, 1.0, -1.0))
            for _ in range(p.samples):
                noise = rng.exponential(p.noise_scale, size=(size, levels.shape[0]))
                values = coefs @ queries + noise @ levels
                counts[rows, np.argmax(values, axis=1)] += 1
        if self.statistic == "selection":
            return np.asarray(first)
        return _histogram_index(counts.astype(np.int64), p.rounds * p.samples)

    def cells(self) -> int:
        """How many values the statistic takes."""
        if self.statistic == "selection":
            return 2 * self.queries.queries
        universe = int(np.prod(self.workload.sizes))
        return (self.params.rounds * self.params.samples + 1) ** (universe - 1)

    def grid(self, d: int) -> np.ndarray:
        """One row per cell (the audit counts cells by it; ``describe`` names them)."""
        return np.arange(self.cells())[:, None]

    def describe(self, d: int):
        if self.statistic == "selection":
            q = self.queries.queries
            return lambda c: f"round 1 selects query {c % q} with sign {'+' if c < q else '-'}"
        total = self.params.rounds * self.params.samples
        return lambda c: f"histogram {c} of the {total} synthetic records"


def game_pairs() -> list[NeighbouringPair]:
    """n = 1, 2, 3 records, one of them flipped from level 0 to level 1 (the most a record moves
    a query: 1/n)."""
    pairs = []
    for n in (1, 2, 3):
        X0 = np.zeros((n, 1))
        X1 = X0.copy()
        X1[-1, 0] = 1.0
        pairs.append(
            NeighbouringPair(
                f"flip_n{n}", X0, np.ones(n), X1, np.ones(n), note="every utility moves by 1/n"
            )
        )
    return pairs


def _histogram_index(counts: np.ndarray, total: int) -> np.ndarray:
    """One integer per histogram (counts per universe record, summing to ``total``)."""
    radix = total + 1
    index = np.zeros(len(counts), dtype=np.int64)
    for column in counts[:, :-1].T:  # the last count follows from the others
        index = index * radix + column
    return index


__all__ = ["GAME_WORKLOAD", "GameSampler", "MAX_UNIVERSE", "game_pairs"]
