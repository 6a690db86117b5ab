"""Running an objective-perturbation mechanism as explicit steps.

    X         = mechanism.enforce_bounds(X)              # the data bounds its proof assumes
    noise     = mechanism.draw_noise(rng, n, d)          # the only randomness before the oracle
    problems  = mechanism.problems(rows, noise)          # independent oracle calls (OPSamp: m)
    solutions = solve_many(oracle, problems)             # the caller decides how: loop, Ray, ...
    release   = mechanism.finish(rows, noise, solutions, rng, seconds)

The oracle calls are independent given the noise, so the pipeline can fan them out as a batch;
``run`` is the sequential reference. The data are checked against every bound the mechanism's
privacy proof assumes (mechanisms.bounds) before any noise is drawn.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, ClassVar, Protocol, Sequence

import numpy as np

from core.objective import MergedRows, check_data
from mechanisms.release import Noise, PrivacyClaim, Release, check_rng
from oracles.contract.certificate import Configured, Solution, budget_of


class OracleMechanism(Protocol):
    name: str

    def enforce_bounds(
        self, X: np.ndarray, feature_names: Sequence[str] | None = None
    ) -> np.ndarray: ...

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> Noise | None: ...

    def problems(self, rows: MergedRows, noise: Noise | None) -> list[Any]: ...

    def finish(
        self,
        rows: MergedRows,
        noise: Noise | None,
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release: ...


SolveMany = Callable[[Any, Sequence[Any]], list[Solution]]


def solve_sequentially(oracle: Configured, problems: Sequence[Any]) -> list[Solution]:
    """Each problem in turn, each on a fresh budget of the oracle's configured limits."""
    return [oracle.solve(p, budget_of(oracle)) for p in problems]


@dataclass(frozen=True, eq=False)
class Prepared:
    """What a run has before its oracle calls: the merged rows, the noise drawn and the
    problems to solve, and the seconds they took (the data check and bounds not included)."""

    rows: MergedRows
    noise: Noise | None
    problems: list[Any]
    seconds: float


def prepare(
    mechanism: OracleMechanism,
    X: np.ndarray,
    y: np.ndarray,
    rng: np.random.Generator,
    *,
    feature_names: Sequence[str] | None = None,
) -> Prepared:
    """The steps of a run before its oracle calls (module docstring): the data checked against
    the mechanism's bounds, the noise drawn from ``rng``, the problems built. ``run`` is this
    and then the calls; a preflight (``pipeline.sweep.preflight.check_tree_sizes``) builds the very
    problems a run solves with it."""
    X, y = check_data(X, y)
    rng = check_rng(rng)
    X = mechanism.enforce_bounds(X, feature_names)  # refused (or clipped) before any noise
    start = time.perf_counter()
    rows = MergedRows.from_xy(X, y)
    noise = mechanism.draw_noise(rng, rows.n, rows.d)
    problems = mechanism.problems(rows, noise)
    return Prepared(rows, noise, problems, time.perf_counter() - start)


def run(
    mechanism: OracleMechanism,
    X: np.ndarray,
    y: np.ndarray,
    oracle: Any,
    rng: np.random.Generator,
    *,
    solve_many: SolveMany = solve_sequentially,
    feature_names: Sequence[str] | None = None,
) -> Release:
    """Run ``mechanism`` on (X, y) with ``oracle`` and an explicit generator.

    ``feature_names`` name the columns in a refusal of data beyond a bound (else: indices).
    """
    prepared = prepare(mechanism, X, y, rng, feature_names=feature_names)
    built = time.perf_counter()
    solutions = solve_many(oracle, prepared.problems)
    solved = time.perf_counter()
    timings = {"prepare": prepared.seconds, "solve": solved - built}
    return mechanism.finish(prepared.rows, prepared.noise, solutions, rng, timings)


class ExactArgminRelease:
    """The ``finish`` step of a mechanism whose privacy rests on one exact argmin (OPDisc, RSPM):
    ``exact_argmin_release``, whose claim's reason names the mechanism by ``argmin_of``."""

    argmin_of: ClassVar[str]

    def finish(
        self,
        rows: MergedRows,
        noise: Noise,
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release:
        needs = f"{self.argmin_of} needs the exact argmin"
        return exact_argmin_release(self.name, self.params, noise, solutions, timings, needs=needs)


def exact_argmin_release(
    name: str,
    params: Any,
    noise: Noise,
    solutions: Sequence[Solution],
    timings: dict[str, float],
    *,
    needs: str,
) -> Release:
    """The release of a mechanism whose privacy rests on one exact argmin (OPDisc, RSPM).

    ``params`` is the mechanism's frozen params record (epsilon, delta, margin, ...); the claim
    holds only if the one oracle call was certified optimal (SPEC section 8). The claim's
    (epsilon, delta) is the one proven for the noise used (``noise.calibration``, SPEC section
    10), with the requested one beside it.
    """
    (solution,) = solutions
    calibration = noise.calibration
    claim = PrivacyClaim.from_certificates(
        calibration.proven_epsilon,
        calibration.proven_delta,
        [solution.certificate],
        needs=needs,
        requested_epsilon=params.epsilon,
        requested_delta=params.delta,
        calibration=calibration.rule,
    )
    return Release(
        mechanism=name,
        w=solution.w,
        privacy=claim,
        noise=calibration.scales(),
        params=asdict(params),
        certificates=(solution.certificate,),
        timings=timings | {"total": sum(timings.values())},
        margin=params.margin,
    )
