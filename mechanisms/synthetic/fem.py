"""Private synthetic data as a game: a private query player against a perturbed-leader data player.

The structure of Neel, Roth and Wu's Section 4 (their formulas were lost in our copy), in the
concrete form of FEM (Vietri et al., ICML 2020); the guarantee is proven in docs/synthetic.md.
For t = 1..T, with S_{t-1} the synthetic records so far (empty: every answer 0):

1. the query player selects, by the exponential mechanism with parameter eps0 (accounting), a
   candidate c = (query q, sign s) of the workload and its negations, with utility
   s (q(D) - q(S_{t-1})) of sensitivity 1/n: the query the synthetic data answers worst;
2. the data player follows the perturbed leader: ``samples`` records, each
   argmax_x sum_{i <= t} s_i q_i(x) + <sigma, b(x)>, sigma ~ Exp(noise_scale) per level of each
   attribute, fresh for each record, solved by an oracle of ``oracles.conjunctions``.

The output is every record of the T rounds (T x samples records). The data player sees only the
selections and its own noise: it is post-processing, so the guarantee holds whatever its oracle
returns; its certificates say whether its best responses were exact (accuracy, not privacy).
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from mechanisms.base import PrivacyClaim, ReleaseRecord, check_rng
from mechanisms.privacy import check_epsilon_delta
from mechanisms.synthetic.accounting import round_epsilon, total_epsilon
from mechanisms.synthetic.domain import Workload
from oracles.base import Certificate
from oracles.checks import check_int, check_real
from oracles.conjunctions import ConjunctionProblem


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

    def __post_init__(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta, allow_zero_delta=True)
        check_int("rounds", self.rounds)
        check_int("samples", self.samples)
        check_real("noise_scale", self.noise_scale)

    def round_epsilon(self) -> float:
        """eps0 of each round's selection, calibrated so that the ``rounds`` rounds together
        are (epsilon, delta)-DP (docs/synthetic.md, section 2.3)."""
        return round_epsilon(self.epsilon, self.delta, self.rounds)


@dataclass(frozen=True, eq=False)
class SyntheticRelease(ReleaseRecord):
    """The synthetic records (level codes), the privacy claim, and how they were made: the
    release of every synthetic-data mechanism (the game here, the baselines, the real table)."""

    #: The catalog entry that made it (mechanisms.catalog).
    mechanism: str
    records: np.ndarray
    privacy: PrivacyClaim
    params: dict[str, Any]
    #: (query, sign) selected in each round: the private transcript (for the audit).
    selections: tuple[tuple[int, int], ...]
    certificates: tuple[Certificate, ...]
    timings: dict[str, float]

    @property
    def oracle_certified(self) -> bool:
        return all(c.certified for c in self.certificates)

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
) -> SyntheticRelease:
    """The game of the module docstring on the private records ``codes`` (level codes of
    ``workload``'s domain), with ``oracle`` the data player's (``oracles.conjunctions``)."""
    rng = check_rng(rng)
    codes = np.asarray(codes, dtype=np.int64)
    n = len(codes)
    if codes.ndim != 2 or codes.shape[1] != len(workload.sizes) or n == 0:
        raise ValueError(
            f"codes must be (n >= 1, {len(workload.sizes)}) level codes, found {codes.shape}"
        )
    if (codes < 0).any() or (codes >= np.array(workload.sizes)).any():
        raise ValueError("codes must lie within the domain's levels")
    start = time.perf_counter()
    eps0 = params.round_epsilon()
    real = workload.answers(codes)
    coefs: dict[int, float] = {}
    records: list[np.ndarray] = []
    selections: list[tuple[int, int]] = []
    certificates: list[Certificate] = []
    for _ in range(params.rounds):
        synthetic = workload.answers(np.array(records)) if records else np.zeros_like(real)
        choice = select(utilities(real, synthetic), eps0, n, rng)
        query, sign = choice % workload.queries, 1 if choice < workload.queries else -1
        selections.append((query, sign))
        coefs[query] = coefs.get(query, 0.0) + sign
        conjunctions = tuple(workload.conjunction(q) for q in coefs)
        weights = np.array(list(coefs.values()))
        for _ in range(params.samples):
            noise = tuple(rng.exponential(params.noise_scale, size=k) for k in workload.sizes)
            solution = oracle.solve(
                ConjunctionProblem(workload.sizes, conjunctions, weights, noise)
            )
            records.append(np.asarray(solution.record, dtype=np.int64))
            certificates.append(solution.certificate)
    proven = total_epsilon(eps0, params.rounds, params.delta)
    claim = PrivacyClaim(
        proven,
        params.delta,
        True,
        f"{params.rounds} rounds of the exponential mechanism, eps0 = {eps0:.6g} each, composed "
        "by zCDP (docs/synthetic.md, section 2); the data player is post-processing",
        requested_epsilon=params.epsilon,
        requested_delta=params.delta,
        calibration="zcdp",
    )
    return SyntheticRelease(
        mechanism="fem",
        records=np.array(records),
        privacy=claim,
        params=asdict(params) | {"round_epsilon": eps0, "queries": workload.queries},
        selections=tuple(selections),
        certificates=tuple(certificates),
        timings={"total": time.perf_counter() - start},
    )


__all__ = ["FEMParams", "SyntheticRelease", "run_fem", "select", "utilities"]
