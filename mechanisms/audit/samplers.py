"""Fast samplers of a mechanism's release, built from the mechanism's own pieces.

Auditing needs hundreds of thousands of releases per dataset, far more than the mechanisms'
``run`` can produce in CI. Each sampler here draws a batch of releases at once and takes every
constant and every formula from the mechanism's code, so that the audit tests that code, not a
re-implementation of it (tests/audit/test_samplers.py checks each against the real ``run``):

* ``GridArgminSampler`` (OPDisc, RSPM and their mutants): the noise comes from the mechanism's
  own ``draw_noise`` through a ``BatchedGenerator`` (every draw gets a leading batch axis, in
  the same stream order as that many sequential calls); the objective comes from the
  mechanism's own ``problems``, evaluated on the enumerated grid once with zero noise and once
  per unit noise vector (it is affine in the noise: checked on every call); the release is the
  first minimizer in lexicographic grid order, the enumeration oracle's rule.
* ``ExpMechSampler``: the sampling probabilities are the ones ``run_expmech`` computes (read off
  a probing generator), then sampled with ``Generator.choice`` exactly as it does.
* ``DPSGDSampler`` and ``OPSampSampler`` (mechanisms.audit.continuous_samplers).

A sampler returns, per release, a cell index (``kind = "discrete"``: the grid point) or a scalar
statistic (``kind = "continuous"``: the released w, d = 1).

The discrete samplers are here; the protocol, ``AuditError``, ``FunctionSampler`` and
``BatchedGenerator`` are in mechanisms.audit.sampler_base. Every sampler is imported from here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.objective import MergedRows, check_data
from core.problem import IntegerGrid, Problem
from mechanisms.audit.continuous_samplers import DPSGDSampler, OPSampSampler
from mechanisms.audit.sampler_base import (
    AuditError,
    BatchedGenerator,
    FunctionSampler,
    ReleaseSampler,
    first_draw,
    with_draws,
)
from mechanisms.expmech import run_expmech
from mechanisms.opdisc import opdisc_domain
from mechanisms.release import Noise
from oracles.enumerate import all_objectives, grid_points

#: Objective values held at once by the grid sampler (memory bound: 8 bytes each).
_CHUNK_ENTRIES = 4_000_000


# --- OPDisc, RSPM: argmin over an enumerated grid -------------------------------------------------


@dataclass(frozen=True)
class AffineObjective:
    """F(w; eta) = base(w) + <A(w), eta> on the grid W (k points, lexicographic order)."""

    grid: np.ndarray  # (k, d)
    base: np.ndarray  # (k,)
    slopes: np.ndarray  # (k, p)

    def values(self, eta: np.ndarray) -> np.ndarray:
        return self.base[None, :] + eta @ self.slopes.T


def affine_objective(
    mechanism: Any,
    rows: MergedRows,
    noise: Noise,
    key: str = "eta",
    check: np.ndarray | None = None,
) -> AffineObjective:
    """The objective of ``mechanism.problems`` as an affine function of the draw ``key``.

    Built from the mechanism's own problem with eta = 0 and eta = each unit vector; ``check``
    (a noise vector) is then evaluated directly and must agree, else AuditError.
    """
    p = int(np.shape(getattr(noise, key).value)[-1])

    def problem(eta: np.ndarray) -> Problem:
        problems = mechanism.problems(rows, with_draws(noise, **{key: eta}))
        if len(problems) != 1 or not isinstance(problems[0], Problem):
            raise AuditError(
                f"{type(mechanism).__name__} must build exactly one Problem, found {len(problems)}"
            )
        if not isinstance(problems[0].domain, IntegerGrid):
            raise AuditError("the grid sampler needs an IntegerGrid domain")
        return problems[0]

    grid, base = all_objectives(problem(np.zeros(p)))
    slopes = np.empty((len(grid), p))
    for j in range(p):
        unit = np.zeros(p)
        unit[j] = 1.0
        slopes[:, j] = problem(unit).objective(grid) - base
    affine = AffineObjective(grid, base, slopes)
    if check is not None:
        direct = problem(np.asarray(check, dtype=float)).objective(grid)
        scale = 1.0 + np.abs(direct).max()
        if not np.allclose(affine.values(check[None, :])[0], direct, rtol=0, atol=1e-9 * scale):
            raise AuditError(
                f"the objective of {type(mechanism).__name__} is not affine in "
                f"its draw {key!r}: the grid sampler does not apply"
            )
    return affine


@dataclass(frozen=True)
class GridArgminSampler:
    """Releases of an objective-perturbation mechanism over an enumerable grid (module doc)."""

    mechanism: Any
    noise_key: str = "eta"
    kind: str = field(default="discrete", init=False)

    def noise(self, rows: MergedRows, size: int, rng: np.random.Generator) -> Noise:
        """``size`` noise draws by the mechanism's own ``draw_noise``."""
        return self.mechanism.draw_noise(BatchedGenerator(rng, size), rows.n, rows.d)

    def grid(self, d: int) -> np.ndarray:
        """The grid the releases index (for event descriptions)."""
        X = np.zeros((1, d))
        rows = MergedRows.from_xy(X, np.ones(1))
        noise = first_draw(self.noise(rows, 1, np.random.default_rng(0)))
        return affine_objective(self.mechanism, rows, noise, self.noise_key).grid

    def releases(self, rows: MergedRows, noise: Noise) -> np.ndarray:
        eta = np.asarray(getattr(noise, self.noise_key).value, dtype=float)
        single = with_draws(noise, **{self.noise_key: eta[0]})
        affine = affine_objective(self.mechanism, rows, single, self.noise_key, check=eta[0])
        step = max(1, _CHUNK_ENTRIES // len(affine.grid))  # bounds the (releases, k) matrix
        return np.concatenate(
            [
                np.argmin(
                    affine.values(eta[i : i + step]), axis=1
                )  # first minimizer: lexicographic
                for i in range(0, len(eta), step)
            ]
        )

    def sample(self, X, y, size, rng) -> np.ndarray:
        X, y = check_data(X, y)
        rows = MergedRows.from_xy(X, y)
        return self.releases(rows, self.noise(rows, size, rng))


# --- ExpMech -------------------------------------------------------------------------------------


class _ChoiceProbe(np.random.Generator):
    """A generator that records the probabilities passed to ``choice`` and returns index 0."""

    probabilities: np.ndarray | None = None

    def choice(self, a, size=None, replace=True, p=None, axis=0, shuffle=True):  # noqa: D102
        self.probabilities = np.asarray(p, dtype=float).copy()
        return 0


@dataclass(frozen=True)
class ExpMechSampler:
    """Releases of ``run_expmech`` with these parameters: its probabilities, its sampler."""

    params: Any  # ExpMechParams
    kind: str = field(default="discrete", init=False)

    def probabilities(self, X, y) -> np.ndarray:
        probe = _ChoiceProbe(np.random.PCG64(0))
        run_expmech(X, y, self.params, probe)
        if probe.probabilities is None:
            raise AuditError("run_expmech did not sample through Generator.choice")
        return probe.probabilities

    def grid(self, d: int) -> np.ndarray:
        domain, _ = opdisc_domain(d, self.params.tau, self.params.B, self.params.D)
        return np.vstack(list(grid_points(domain)))

    def sample(self, X, y, size, rng) -> np.ndarray:
        p = self.probabilities(X, y)
        return rng.choice(len(p), size=size, p=p)  # same stream as ``size`` sequential calls


__all__ = [
    "AffineObjective",
    "AuditError",
    "BatchedGenerator",
    "DPSGDSampler",
    "ExpMechSampler",
    "FunctionSampler",
    "GridArgminSampler",
    "OPSampSampler",
    "ReleaseSampler",
    "affine_objective",
]
