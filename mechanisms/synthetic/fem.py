"""Private synthetic data as a game: a private query player against a perturbed-leader data player.

The structure of Neel, Roth and Wu's Section 4 (their formulas were lost in our copy), in the
concrete form of FEM (Vietri et al., ICML 2020); the guarantee is proven in docs/synthetic.md.
For t = 1..T, with S_{t-1} the synthetic records so far (empty: every answer 0):

1. the query player selects a candidate c = (query q, sign s) with utility s (q(D) - q(S_{t-1}))
   (sensitivity 1/n): the query the synthetic data answers worst. ``query_player="expmech"``:
   the exponential mechanism with parameter eps0 (accounting) over the workload and its
   negations; ``"rspm"``: RSPM over every conjunction of at most ``max_literals`` literals
   (``selection``, docs/synthetic.md section 4), an exact argmax by an oracle of
   ``oracles.conjunction_select``, private only when that oracle certifies it;
2. the data player follows the perturbed leader: ``samples`` records, each
   argmax_x sum_{i <= t} s_i q_i(x) + <sigma, b(x)>, sigma ~ Exp(noise_scale) per level of each
   attribute, fresh for each record, solved by an oracle of ``oracles.conjunctions``.

The output is every record of the T rounds (T x samples records). The data player sees only the
selections and its own noise: it is post-processing, so the guarantee holds whatever its oracle
returns; its certificates say whether its best responses were exact (accuracy, not privacy).
The RSPM selection's certificates (``selection_certificates``) are what its privacy rests on.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from core.validation import check_choice, check_int, check_real
from mechanisms.privacy import check_epsilon_delta
from mechanisms.release import PrivacyClaim, ReleaseRecord, check_rng
from mechanisms.synthetic import selection
from mechanisms.synthetic.accounting import round_epsilon, total_epsilon
from mechanisms.synthetic.domain import Workload, check_codes
from oracles.base import Certificate
from oracles.conjunction_select import conjunction_index
from oracles.conjunctions import Conjunction, ConjunctionProblem
from oracles.routing import selector_for

#: Each query player's per-round guarantee (accounting.ZCDP_DIVISOR): the exponential mechanism
#: is eps0-bounded range, RSPM's selection eps0-DP.
ROUND_RULES = {"expmech": "bounded_range", "rspm": "pure"}


@dataclass(frozen=True)
class FEMParams:
    """The target (epsilon, delta) of the whole release and the game's settings."""

    epsilon: float
    delta: float
    #: T, the rounds: each selects one query privately (docs/synthetic.md).
    rounds: int = 50
    #: Records the data player draws per round.
    samples: int = 10
    #: Scale of the data player's exponential perturbation (follow the perturbed leader).
    noise_scale: float = 1.0
    #: The query player: the exponential mechanism over the workload, or RSPM over every
    #: conjunction of at most ``max_literals`` literals (docs/synthetic.md section 4).
    query_player: Literal["expmech", "rspm"] = "expmech"
    #: RSPM's class: conjunctions of 1 to max_literals literals (the data player still gets
    #: conjunctions). Unused by "expmech", whose class is the workload.
    max_literals: int = 3
    #: RSPM's separator set: each literal's code, one bit per level or its level in binary
    #: (``selection``; binary needs fewer bits, so less noise).
    separator: Literal["binary", "onehot"] = "binary"

    def __post_init__(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta, allow_zero_delta=True)
        check_int("rounds", self.rounds)
        check_int("samples", self.samples)
        check_real("noise_scale", self.noise_scale)
        check_choice("query_player", self.query_player, tuple(ROUND_RULES))
        check_int("max_literals", self.max_literals)
        check_choice("separator", self.separator, selection.SEPARATORS)

    @property
    def round_rule(self) -> str:
        """The per-round guarantee of the query player (``ROUND_RULES``)."""
        return ROUND_RULES[self.query_player]

    def round_epsilon(self) -> float:
        """eps0 of each round's selection, calibrated so that the ``rounds`` rounds together
        are (epsilon, delta)-DP (docs/synthetic.md, sections 2.3 and 4.5)."""
        return round_epsilon(self.epsilon, self.delta, self.rounds, self.round_rule)


@dataclass(frozen=True, eq=False)
class SyntheticRelease(ReleaseRecord):
    """The synthetic records (level codes), the privacy claim, and how they were made: the
    release of every synthetic-data mechanism (the game here, the baselines, the real table)."""

    #: The catalog entry that made it (mechanisms.catalog).
    mechanism: str
    records: np.ndarray
    privacy: PrivacyClaim
    params: dict[str, Any]
    #: (query, sign) selected in each round: the private transcript (for the audit). The query
    #: is its index in the query player's class: the workload (expmech), or every conjunction
    #: of at most max_literals literals in ``conjunction_index``'s order (rspm).
    selections: tuple[tuple[int, int], ...]
    #: The data player's certificates (post-processing: accuracy, not privacy).
    certificates: tuple[Certificate, ...]
    timings: dict[str, float]
    #: Each round's selected query as its literals (the game's mechanisms; else empty).
    queries: tuple[Conjunction, ...] = ()
    #: Each round's selection certificate where the selection is an oracle's argmax (rspm):
    #: the privacy claim holds only if all of them are certified.
    selection_certificates: tuple[Certificate, ...] = ()

    @property
    def oracle_certified(self) -> bool:
        """Whether every best response of the data player was certified optimal."""
        return all(c.certified for c in self.certificates)

    @property
    def oracle_answers(self) -> tuple[Certificate, ...]:
        """The selections' certificates (privacy rests on them), then the data player's."""
        return self.selection_certificates + self.certificates

    @property
    def selection_certified(self) -> bool:
        """Whether every oracle selection was certified (True when there is none)."""
        return all(c.certified for c in self.selection_certificates)

    def published_params(self) -> dict[str, Any]:
        """How many records the table has, and how many rounds selected a query."""
        return {"records": int(len(self.records)), "selections": len(self.selections)}


def select(utilities: np.ndarray, round_eps: float, n: int, rng: np.random.Generator):
    """The exponential mechanism: index i with probability proportional to
    exp(round_eps * n * u_i / 2) (utility sensitivity 1/n), sampled exactly by Gumbel-max. A
    2-D ``utilities`` selects once per row (the audit's batches)."""
    logits = round_eps * n * np.asarray(utilities, dtype=float) / 2.0
    chosen = np.argmax(logits + rng.gumbel(size=logits.shape), axis=-1)
    return int(chosen) if chosen.ndim == 0 else chosen


def utilities(real: np.ndarray, synthetic: np.ndarray) -> np.ndarray:
    """Each candidate's utility: (q, +1) then (q, -1) for every query q, s (q(D) - q(S))."""
    diff = real - synthetic
    return np.concatenate([diff, -diff], axis=-1)


def run_fem(
    codes: np.ndarray,
    workload: Workload,
    params: FEMParams,
    rng: np.random.Generator,
    oracle: Any,
    selector: Any = None,
) -> SyntheticRelease:
    """The game of the module docstring on the private records ``codes`` (level codes of
    ``workload``'s domain), with ``oracle`` the data player's (``oracles.conjunctions``) and
    ``selector`` RSPM's (``oracles.conjunction_select``; by default the ``selection`` route's,
    ``oracles.routing.selector_for``).
    With ``query_player="rspm"`` only the workload's domain (``sizes``) is used."""
    rng = check_rng(rng)
    codes = check_codes(codes, workload.sizes)
    n = len(codes)
    rspm = params.query_player == "rspm"
    if rspm:
        selector = selector or selector_for(oracle)
    start = time.perf_counter()
    eps0 = params.round_epsilon()
    real = None if rspm else workload.answers(codes)
    weights_of = selection.CountWeights(codes) if rspm else None
    coefs: dict[Conjunction, float] = {}
    records: list[np.ndarray] = []
    selections: list[tuple[int, int]] = []
    queries: list[Conjunction] = []
    certificates: list[Certificate] = []
    selection_certificates: list[Certificate] = []
    selection_seconds = 0.0
    for _ in range(params.rounds):
        if rspm:
            tick = time.perf_counter()
            noise = selection.draw_noise(workload.sizes, params.separator, eps0, rng)
            weights = weights_of.weights(np.array(records, dtype=np.int64))
            problem = selection.problem(workload.sizes, params.max_literals, weights, noise)
            chosen = selector.solve(problem)
            conjunction, sign = chosen.conjunction, chosen.sign
            query = conjunction_index(workload.sizes, params.max_literals, conjunction)
            selection_certificates.append(chosen.certificate)
            selection_seconds += time.perf_counter() - tick
        else:
            synthetic = workload.answers(np.array(records)) if records else np.zeros_like(real)
            choice = select(utilities(real, synthetic), eps0, n, rng)
            query, sign = choice % workload.queries, 1 if choice < workload.queries else -1
            conjunction = workload.conjunction(query)
        selections.append((query, sign))
        queries.append(conjunction)
        coefs[conjunction] = coefs.get(conjunction, 0.0) + sign
        conjunctions = tuple(coefs)
        weights = np.array(list(coefs.values()))
        for _ in range(params.samples):
            noise = tuple(rng.exponential(params.noise_scale, size=k) for k in workload.sizes)
            solution = oracle.solve(
                ConjunctionProblem(workload.sizes, conjunctions, weights, noise)
            )
            records.append(np.asarray(solution.record, dtype=np.int64))
            certificates.append(solution.certificate)
    proven = total_epsilon(eps0, params.rounds, params.delta, params.round_rule)
    provenance = dict(
        requested_epsilon=params.epsilon, requested_delta=params.delta, calibration="zcdp"
    )
    extra: dict[str, Any] = {"round_epsilon": eps0, "queries": workload.queries}
    timings = {"total": time.perf_counter() - start}
    if rspm:
        bits = selection.signature_length(workload.sizes, params.separator)
        claim = PrivacyClaim.from_certificates(
            proven,
            params.delta,
            selection_certificates,
            needs=f"an exact argmax in each of the {params.rounds} RSPM selections, eps0 = "
            f"{eps0:.6g} each, m = {bits}, composed by zCDP or basic composition "
            "(docs/synthetic.md, section 4); the data player is post-processing",
            **provenance,
        )
        extra |= {
            "queries": problem.candidates // 2,
            "signature_bits": bits,
            "laplace_scale": selection.laplace_scale(workload.sizes, params.separator, eps0),
            "selector": getattr(selector, "name", type(selector).__name__),
        }
        timings["selection"] = selection_seconds
    else:
        claim = PrivacyClaim(
            proven,
            params.delta,
            True,
            f"{params.rounds} rounds of the exponential mechanism, eps0 = {eps0:.6g} each, "
            "composed by zCDP (docs/synthetic.md, section 2); the data player is post-processing",
            **provenance,
        )
    return SyntheticRelease(
        mechanism="fem_rspm" if rspm else "fem",  # the catalog entry of each query player
        records=np.array(records),
        privacy=claim,
        params=asdict(params) | extra,
        selections=tuple(selections),
        certificates=tuple(certificates),
        timings=timings,
        queries=tuple(queries),
        selection_certificates=tuple(selection_certificates),
    )


__all__ = ["ROUND_RULES", "FEMParams", "SyntheticRelease", "run_fem", "select", "utilities"]
