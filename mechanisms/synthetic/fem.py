"""Private synthetic data as a game: a private query player against a perturbed-leader data player.

The structure of Neel, Roth and Wu's Section 4 (their formulas were lost in our copy), in the
concrete form of FEM (Vietri et al., ICML 2020); the guarantee is proven in docs/synthetic.md.
For t = 1..T, with S the synthetic records of the query player's window, its last rounds so far
(empty: every answer 0):

1. the query player selects a candidate c = (query q, sign s) with utility s (q(D) - q(S))
   (sensitivity 1/n): the query the synthetic data answers worst. ``query_player="expmech"``:
   the exponential mechanism with parameter eps0 (accounting) over the workload and its
   negations; ``"rspm"``: RSPM over every conjunction of at most ``max_literals`` literals
   (``selection``, docs/synthetic.md section 4), an exact argmax by an oracle of
   ``oracles.synthetic.query_player``, private only when that oracle certifies it;
2. the data player follows the perturbed leader: ``samples`` records, each
   argmax_x sum_{i <= t} s_i q_i(x) + <sigma, b(x)>, sigma ~ Exp(perturbation) per level of
   each attribute, fresh for each record, solved by an oracle of ``oracles.synthetic.data_player`` or
   ``oracles.synthetic.data_search`` (a round at once).

The output is the records of the last rounds (every round unless the schedule says otherwise);
T, eps0, the records a round, the perturbation, the query player's window and the output are
chosen from the budget and the public n and workload size when ``rounds`` is not stated
(``FEMParams``, docs/synthetic.md 2.6). The data player sees only the
selections and its own noise: it is post-processing, so the guarantee holds whatever its oracle
returns; its certificates say whether its best responses were exact (accuracy, not privacy).
The RSPM selection's certificates (``selection_certificates``) are what its privacy rests on.
"""

from __future__ import annotations

import dataclasses
import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Literal

import numpy as np

from core.problem import Conjunction, ConjunctionBatch, ConjunctionProblem, conjunction_index
from core.validation import check_choice, check_int, check_real
from mechanisms.privacy import PrivacyTarget, TargetRecord
from mechanisms.release import PrivacyClaim, ReleaseRecord, check_rng
from mechanisms.synthetic import selection
from mechanisms.synthetic.accounting import round_epsilon, schedule_rounds, total_epsilon
from mechanisms.synthetic.domain import (
    ConjunctionClass,
    Workload,
    check_codes,
    conjunction_count,
)
from oracles.contract.certificate import Certificate, budget_of

#: Each query player's per-round guarantee (accounting.ZCDP_DIVISOR): the exponential mechanism
#: is eps0-bounded range, RSPM's selection eps0-DP.
ROUND_RULES = {"expmech": "bounded_range", "rspm": "pure"}


#: The two regimes of a schedule from the budget (docs/synthetic.md 2.6): a game whose
#: selection is coarser than the window's own sampling error (``windowed``) answers the table of
#: its last ``SHORT_TARGET`` rounds, ``SHORT_SAMPLES`` records each, and outputs the last
#: ``SHORT_KEEP`` of its rounds; any other answers and outputs every round, ``SAMPLES`` a round.
SHORT_TARGET = 10
SHORT_KEEP = 0.5
#: Records a round: FEM's 50, and 100 in the window regime, whose window and output hold few
#: rounds.
SAMPLES = 50
SHORT_SAMPLES = 100


def window_start(keep: float, rounds: int) -> int:
    """The first of the last ``keep`` of ``rounds`` rounds (0-based; at least one of them when
    there are any): the output's first round after T (docs/synthetic.md 2.6)."""
    return rounds - math.ceil(keep * rounds - 1e-9)


def selection_precision(n: int, queries: int, round_eps: float) -> float:
    """alpha = 2 ln(2|Q|) / (eps0 n): how far below the worst candidate's utility the
    exponential mechanism's pick may fall, in the regime rule's terms (docs/synthetic.md 2.6)."""
    return 2.0 * math.log(2 * queries) / (round_eps * n)


def window_sampling_error(queries: int) -> float:
    """eps_W = sqrt(ln(2|Q|) / (2 W s)): the largest sampling error over the 2|Q| candidates of
    a window of W = ``SHORT_TARGET`` rounds of s = ``SHORT_SAMPLES`` records, by Hoeffding's
    bound and a union bound (2|Q| exp(-2 W s eps_W^2) = 1; docs/synthetic.md 2.6)."""
    return math.sqrt(math.log(2 * queries) / (2 * SHORT_TARGET * SHORT_SAMPLES))


@dataclass(frozen=True)
class FEMParams(TargetRecord):
    """The target (epsilon, delta) of the whole release and the game's settings."""

    epsilon: float
    delta: float
    #: T, the rounds: each selects one query privately (docs/synthetic.md). None: from the
    #: budget (``schedule``): as many rounds of eps0 = round_scale sqrt(epsilon) as it pays for.
    rounds: int | None = None
    #: Records the data player draws per round. None: by the schedule (``records_per_round``).
    samples: int | None = None
    #: The data player's exponential perturbation has scale noise_scale sqrt(T) (follow the
    #: perturbed leader; with ``rounds`` set, noise_scale itself).
    noise_scale: float = 0.16
    #: The query player: the exponential mechanism over the workload, or RSPM over every
    #: conjunction of at most ``max_literals`` literals (docs/synthetic.md section 4).
    query_player: Literal["expmech", "rspm"] = "expmech"
    #: RSPM's class: conjunctions of 1 to max_literals literals (the data player still gets
    #: conjunctions). Unused by "expmech", whose class is the workload.
    max_literals: int = 3
    #: RSPM's separator set: each literal's code, one bit per level or its level in binary
    #: (``selection``; binary needs fewer bits, so less noise).
    separator: Literal["binary", "onehot"] = "binary"
    #: With ``rounds`` None: the per-round epsilon is round_scale sqrt(epsilon) before T is
    #: fixed (FEM's rule, docs/synthetic.md 2.6), then raised to spend the whole budget in T.
    round_scale: float = 0.016
    #: The output: the records of the last ``keep`` fraction of the rounds (1: every round).
    #: None: by the schedule (``output_keep``).
    keep: float | None = None
    #: The query player answers the table of the last ``target_rounds`` rounds so far. None:
    #: by the schedule (``query_rounds``).
    target_rounds: int | None = None
    #: (n, the levels of each attribute, |Q| the exponential mechanism's queries): the public
    #: facts a schedule from the budget reads, RSPM's rounds (docs/synthetic.md 4.8) and the
    #: regime (2.6); ``run_fem`` fills them in from its table and workload. Not a setting.
    public_table: tuple[int, tuple[int, ...], int] | None = None

    def __post_init__(self) -> None:
        self.hold_target(PrivacyTarget)
        if self.rounds is not None:
            check_int("rounds", self.rounds)
        if self.samples is not None:
            check_int("samples", self.samples)
        check_real("noise_scale", self.noise_scale)
        check_real("round_scale", self.round_scale)
        if self.keep is not None:
            check_real("keep", self.keep)
            if self.keep > 1:
                raise ValueError(f"keep must be in (0, 1], found {self.keep!r}")
        if self.target_rounds is not None:
            check_int("target_rounds", self.target_rounds)
        check_choice("query_player", self.query_player, tuple(ROUND_RULES))
        check_int("max_literals", self.max_literals)
        check_choice("separator", self.separator, selection.SEPARATORS)
        if self.public_table is not None:
            n, sizes, queries = self.public_table
            check_int("public_table n", n)
            for a, k in enumerate(sizes):
                check_int(f"public_table sizes[{a}]", k)
            check_int("public_table queries", queries)
            table = (int(n), tuple(int(k) for k in sizes), int(queries))
            object.__setattr__(self, "public_table", table)

    def with_table(self, n: int, sizes: tuple[int, ...], queries: int) -> "FEMParams":
        """These parameters with ``public_table`` (n, sizes, queries), unless it is set
        already."""
        if self.public_table is not None:
            return self
        return dataclasses.replace(self, public_table=(n, tuple(sizes), queries))

    def rspm_schedule(self) -> tuple[int, int, float]:
        """RSPM's (T, records a round, modelled error) by its rule (docs/synthetic.md 4.8)."""
        if self.public_table is None:
            raise ValueError(
                "fem_rspm's rounds follow the public n and domain: set public_table (run_fem "
                "sets it from its table) or state rounds"
            )
        n, sizes, _ = self.public_table
        bits = selection.signature_length(sizes, self.separator)
        most = schedule_rounds(self.target, self.round_scale * math.sqrt(self.epsilon))
        args = (self.target, n, bits, self.max_literals)
        rounds = selection.rspm_rounds(*args, most)
        error = float(selection.rspm_error_model(*args, np.array([rounds]))[0])
        samples = selection.rspm_samples(rounds, error, conjunction_count(sizes, self.max_literals))
        return rounds, samples, error

    @property
    def round_rule(self) -> str:
        """The per-round guarantee of the query player (``ROUND_RULES``)."""
        return ROUND_RULES[self.query_player]

    @property
    def total_rounds(self) -> int:
        """T: ``rounds``, or the rounds the budget pays for (``schedule_rounds``)."""
        if self.rounds is not None:
            return self.rounds
        if self.query_player == "rspm":
            return self.rspm_schedule()[0]
        return schedule_rounds(
            self.target, self.round_scale * math.sqrt(self.epsilon), self.round_rule
        )

    def round_epsilon(self) -> float:
        """eps0 of each round's selection, calibrated so that the T rounds together are
        (epsilon, delta)-DP (docs/synthetic.md, sections 2.3 and 4.5)."""
        return round_epsilon(self.target, self.total_rounds, self.round_rule)

    def perturbation(self) -> float:
        """The scale of the data player's exponential noise: noise_scale sqrt(T) for a schedule
        from the budget, noise_scale for a stated ``rounds``."""
        if self.rounds is not None:
            return self.noise_scale
        return self.noise_scale * math.sqrt(self.total_rounds)

    @property
    def windowed(self) -> bool:
        """The exponential mechanism's schedule from the budget in the window regime: its
        selection's precision (``selection_precision``) no finer than the window's sampling
        error (``window_sampling_error``), from the public n and |Q| (2.6). RSPM's query player
        and a stated ``rounds`` answer every round so far."""
        if self.rounds is not None or self.query_player != "expmech":
            return False
        if self.public_table is None:
            raise ValueError(
                "the schedule's regime follows the public n and workload size: set "
                "public_table (run_fem sets it from its table) or state rounds"
            )
        n, _, queries = self.public_table
        alpha = selection_precision(n, queries, self.round_epsilon())
        return alpha >= window_sampling_error(queries)

    def records_per_round(self) -> int:
        """``samples``, or by the schedule: ``SHORT_SAMPLES`` in the window regime, RSPM's rule
        (``selection.rspm_samples``) for RSPM, else ``SAMPLES``."""
        if self.samples is not None:
            return self.samples
        if self.rounds is None and self.query_player == "rspm":
            return self.rspm_schedule()[1]
        return SHORT_SAMPLES if self.windowed else SAMPLES

    def output_keep(self) -> float:
        """``keep``, or by the schedule: ``SHORT_KEEP`` in the window regime, else every round."""
        if self.keep is not None:
            return self.keep
        return SHORT_KEEP if self.windowed else 1.0

    def query_rounds(self) -> int:
        """``target_rounds``, or by the schedule: ``SHORT_TARGET`` in the window regime, else
        every round so far (T)."""
        if self.target_rounds is not None:
            return self.target_rounds
        return SHORT_TARGET if self.windowed else self.total_rounds

    def first_kept(self) -> int:
        """The first round (0-based) whose records are output: the last ``keep`` of T."""
        return window_start(self.output_keep(), self.total_rounds)


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


def best_records(
    oracle: Any, sizes: tuple[int, ...], coefs: dict[Conjunction, float], noises: np.ndarray
) -> tuple[np.ndarray, list[Certificate]]:
    """The data player's records of one round: for each row of ``noises`` (one weight per level
    of each attribute in turn), argmax_x sum_c coefs[c] q_c(x) + <noise, b(x)> by ``oracle``,
    the round as one ``ConjunctionBatch`` with one certificate."""
    conjunctions, weights = tuple(coefs), np.array(list(coefs.values()))
    batch = ConjunctionBatch(ConjunctionProblem(sizes, conjunctions, weights), noises)
    solution = oracle.solve(batch, budget_of(oracle))
    return solution.records, [solution.certificate]


def check_listed(workload: Workload | ConjunctionClass) -> None:
    """The exponential mechanism (fem's query player) scores every query of its workload, so it
    needs one that is listed: a ``ConjunctionClass`` (every conjunction of up to k literals,
    never listed) is a ValueError. The one refusal: ``run_fem`` and the sweep's driver
    (``pipeline.sweep.one_run.run_data``, before any run) both call it."""
    if isinstance(workload, ConjunctionClass):  # a value it cannot take, not a wrong type
        raise ValueError(  # noqa: TRY004
            f"fem's exponential mechanism scores every query of its workload, and the "
            f"{workload.queries:,} conjunctions of up to {workload.max_literals} literals are "
            "never listed: use fem_rspm (RSPM's query player) or a workload of marginals"
        )


def run_fem(
    codes: np.ndarray,
    workload: Workload | ConjunctionClass,
    params: FEMParams,
    rng: np.random.Generator,
    oracle: Any,
    selector: Any = None,
) -> SyntheticRelease:
    """The game of the module docstring on the private records ``codes`` (level codes of
    ``workload``'s domain), with ``oracle`` the data player's (``oracles.synthetic.data_player``) and
    ``selector`` RSPM's (``oracles.synthetic.query_player``; by default ``oracle``, whose route's
    row for a selection says how, ``oracles.routing.routes``).
    With ``query_player="rspm"`` only the workload's domain (``sizes``) is used. n, the domain
    and the workload's size are public and fix the schedule (``FEMParams.public_table``: RSPM's
    rounds, the exponential mechanism's regime); the exponential mechanism lists its workload,
    so it refuses a ``ConjunctionClass`` (``check_listed``)."""
    rng = check_rng(rng)
    codes = check_codes(codes, workload.sizes)
    n = len(codes)
    rspm = params.query_player == "rspm"
    if rspm:
        selector = selector or oracle
    else:
        check_listed(workload)
    params = params.with_table(n, workload.sizes, workload.queries)
    start = time.perf_counter()
    rounds, eps0, scale = params.total_rounds, params.round_epsilon(), params.perturbation()
    kept_from, target = params.first_kept(), params.query_rounds()
    samples = params.records_per_round()
    real = None if rspm else workload.answers(codes)
    # the synthetic table's count of every query, kept up to date round by round (2.6)
    counts = None if rspm else np.zeros(workload.queries)
    weights_of = selection.CountWeights(codes) if rspm else None
    coefs: dict[Conjunction, float] = {}
    blocks: list[np.ndarray] = []
    drawn = window = 0
    selections: list[tuple[int, int]] = []
    queries: list[Conjunction] = []
    certificates: list[Certificate] = []
    selection_certificates: list[Certificate] = []
    selection_seconds = data_seconds = 0.0
    levels = int(sum(workload.sizes))
    for t in range(rounds):
        if rspm:
            tick = time.perf_counter()
            noise = selection.draw_noise(workload.sizes, params.separator, eps0, rng)
            so_far = np.concatenate(blocks) if blocks else np.zeros((0, len(workload.sizes)))
            weights = weights_of.weights(so_far.astype(np.int64))
            problem = selection.problem(workload.sizes, params.max_literals, weights, noise)
            chosen = selector.solve(problem, budget_of(selector))
            conjunction, sign = chosen.conjunction, chosen.sign
            query = conjunction_index(workload.sizes, params.max_literals, conjunction)
            selection_certificates.append(chosen.certificate)
            selection_seconds += time.perf_counter() - tick
        else:
            # the table the query player answers: its last ``target`` rounds so far
            while window < t - target:
                counts -= workload.counts(blocks[window])
                drawn -= len(blocks[window])
                window += 1
            synthetic = counts / drawn if drawn else counts
            choice = select(utilities(real, synthetic), eps0, n, rng)
            query, sign = choice % workload.queries, 1 if choice < workload.queries else -1
            conjunction = workload.conjunction(query)
        selections.append((query, sign))
        queries.append(conjunction)
        coefs[conjunction] = coefs.get(conjunction, 0.0) + sign
        tick = time.perf_counter()
        # the round's noise, one row per record (each attribute's levels in turn)
        noises = rng.exponential(scale, size=(samples, levels))
        records, round_certificates = best_records(oracle, workload.sizes, coefs, noises)
        data_seconds += time.perf_counter() - tick
        certificates.extend(round_certificates)
        blocks.append(records)
        drawn += len(records)
        if counts is not None:
            counts += workload.counts(records)
    proven = total_epsilon(eps0, rounds, params.delta, params.round_rule)
    provenance = dict(
        requested_epsilon=params.epsilon, requested_delta=params.delta, calibration="zcdp"
    )
    extra: dict[str, Any] = {
        "round_epsilon": eps0,
        "queries": workload.queries,
        "rounds": rounds,
        "perturbation": scale,
        "kept_from_round": kept_from,
        "samples": samples,
        "keep": params.output_keep(),
        "target_rounds": target,
        # the data player's answers not certified optimal (its time limit): accuracy, not
        # privacy (docs/synthetic.md 2.4)
        "data_player_uncertified": sum(not c.certified for c in certificates),
    }
    timings = {"total": time.perf_counter() - start, "data_player": data_seconds}
    if rspm:
        bits = selection.signature_length(workload.sizes, params.separator)
        claim = PrivacyClaim.from_certificates(
            proven,
            params.delta,
            selection_certificates,
            needs=f"an exact argmax in each of the {rounds} RSPM selections, eps0 = "
            f"{eps0:.6g} each, m = {bits}, composed by zCDP or basic composition "
            "(docs/synthetic.md, section 4); the data player is post-processing",
            **provenance,
        )
        extra |= {
            "queries": problem.candidates // 2,
            "signature_bits": bits,
            "laplace_scale": selection.laplace_scale(workload.sizes, params.separator, eps0),
            # the strategy that selected (its route's row for a selection)
            "selector": selection_certificates[-1].backend,
        }
        if params.rounds is None:
            extra["modelled_error"] = params.rspm_schedule()[2]
        timings["selection"] = selection_seconds
    else:
        claim = PrivacyClaim(
            proven,
            params.delta,
            True,
            f"{rounds} rounds of the exponential mechanism, eps0 = {eps0:.6g} each, "
            "composed by zCDP (docs/synthetic.md, section 2); the data player is post-processing",
            **provenance,
        )
    recorded = {k: v for k, v in asdict(params).items() if k != "public_table"}
    if params.public_table is not None:
        recorded["n"] = params.public_table[0]
    return SyntheticRelease(
        mechanism="fem_rspm" if rspm else "fem",  # the catalog entry of each query player
        records=np.concatenate(blocks[kept_from:]),
        privacy=claim,
        params=recorded | extra,
        selections=tuple(selections),
        certificates=tuple(certificates),
        timings=timings,
        queries=tuple(queries),
        selection_certificates=tuple(selection_certificates),
    )


__all__ = [
    "ROUND_RULES",
    "SAMPLES",
    "SHORT_KEEP",
    "SHORT_SAMPLES",
    "SHORT_TARGET",
    "FEMParams",
    "SyntheticRelease",
    "best_records",
    "run_fem",
    "select",
    "selection_precision",
    "utilities",
    "window_sampling_error",
    "window_start",
]
