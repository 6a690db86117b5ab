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
* ``DPSGDSampler``: z, q and T from ``run_dpsgd`` itself; the T steps vectorized over the batch
  with ``clip_and_sum``'s rule and ``per_example_gradients``' formula (checked against
  ``train_dpsgd`` draw for draw).
* ``OPSampSampler``: noise from ``OPSamp.draw_noise`` (batched); each of the m one-dimensional
  convex problems solved to machine precision by bisection on the ConvexProblem's own gradient;
  the release as in ``OPSamp.finish``.

A sampler returns, per release, a cell index (``kind = "discrete"``: the grid point) or a scalar
statistic (``kind = "continuous"``: the released w, d = 1).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

import numpy as np

from mechanisms.base import Secret, noise_parameters
from oracles.base import IntegerGrid, Problem
from oracles.enumerate import all_objectives, grid_points
from oracles.objective import MergedRows, check_data


class AuditError(RuntimeError):
    """The audit cannot run this mechanism faithfully (an assumption of a sampler fails)."""


class ReleaseSampler(Protocol):
    """Draws ``size`` independent releases of one mechanism on (X, y)."""

    kind: str  # "discrete" or "continuous"

    def sample(self, X: np.ndarray, y: np.ndarray, size: int,
               rng: np.random.Generator) -> np.ndarray: ...  # fmt: skip

    # discrete samplers also offer grid(d) -> (k, d): the point of each cell index


@dataclass(frozen=True)
class FunctionSampler:
    """Any ``function(X, y, size, rng) -> outputs`` as a sampler; discrete outputs are cell
    indices into ``grid_function(d)``."""

    function: Callable[..., np.ndarray]
    kind: str = "continuous"
    grid_function: Callable[[int], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("discrete", "continuous"):
            raise ValueError(f"kind must be 'discrete' or 'continuous', found {self.kind!r}")
        if self.kind == "discrete" and self.grid_function is None:
            raise ValueError("a discrete FunctionSampler needs grid_function")

    def sample(self, X, y, size, rng) -> np.ndarray:
        return np.asarray(self.function(X, y, size, rng))

    def grid(self, d: int) -> np.ndarray:
        return self.grid_function(d)


# --- batched noise ------------------------------------------------------------------------------


class BatchedGenerator:
    """A stand-in for ``numpy.random.Generator`` that draws ``batch`` copies of every draw.

    ``rng.normal(0, s, size=k)`` becomes ``rng.normal(0, s, size=(batch, k))``: the same numbers,
    in the same order, as ``batch`` sequential calls when the mechanism draws once per run
    (OPDisc, RSPM); with several draws per run (OPSamp) the stream order differs but the
    distribution is the same. Only the distributions the mechanisms use are offered.
    """

    _METHODS = ("normal", "laplace", "exponential", "standard_normal", "random", "uniform")

    def __init__(self, rng: np.random.Generator, batch: int) -> None:
        if not isinstance(rng, np.random.Generator):
            raise TypeError(f"rng must be a numpy.random.Generator, found {type(rng)}")
        self._rng, self.batch = rng, int(batch)

    def __getattr__(self, name: str):
        if name not in self._METHODS:
            raise AttributeError(f"BatchedGenerator does not offer {name!r} (only "
                                 f"{', '.join(self._METHODS)})")  # fmt: skip
        method = getattr(self._rng, name)

        def draw(*args: Any, size: Any = None, **kwargs: Any) -> np.ndarray:
            shape = () if size is None else tuple(np.atleast_1d(size).tolist())
            return method(*args, size=(self.batch, *shape), **kwargs)

        return draw


#: Objective values held at once by the grid sampler (memory bound: 8 bytes each).
_CHUNK_ENTRIES = 4_000_000


def _scalars(noise: dict[str, Any]) -> dict[str, Any]:
    """The noise parameters without the draws (``Secret``), to rebuild a noise dict around one."""
    return noise_parameters(noise)


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
    mechanism: Any, rows: MergedRows, noise: dict[str, Any], key: str = "eta",
    check: np.ndarray | None = None,
) -> AffineObjective:  # fmt: skip
    """The objective of ``mechanism.problems`` as an affine function of ``noise[key]``.

    Built from the mechanism's own problem with eta = 0 and eta = each unit vector; ``check``
    (a noise vector) is then evaluated directly and must agree, else AuditError.
    """
    scalars = _scalars(noise)
    p = int(np.shape(noise[key].value)[-1])

    def problem(eta: np.ndarray) -> Problem:
        problems = mechanism.problems(rows, {**scalars, key: Secret(eta)})
        if len(problems) != 1 or not isinstance(problems[0], Problem):
            raise AuditError(f"{type(mechanism).__name__} must build exactly one Problem, found "
                             f"{len(problems)}")  # fmt: skip
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
            raise AuditError(f"the objective of {type(mechanism).__name__} is not affine in "
                             f"noise[{key!r}]: the grid sampler does not apply")  # fmt: skip
    return affine


@dataclass(frozen=True)
class GridArgminSampler:
    """Releases of an objective-perturbation mechanism over an enumerable grid (module doc)."""

    mechanism: Any
    noise_key: str = "eta"
    kind: str = field(default="discrete", init=False)

    def noise(self, rows: MergedRows, size: int, rng: np.random.Generator) -> dict[str, Any]:
        """``size`` noise draws by the mechanism's own ``draw_noise``."""
        return self.mechanism.draw_noise(BatchedGenerator(rng, size), rows.n, rows.d)

    def grid(self, d: int) -> np.ndarray:
        """The grid the releases index (for event descriptions)."""
        X = np.zeros((1, d))
        rows = MergedRows.from_xy(X, np.ones(1))
        noise = self.noise(rows, 1, np.random.default_rng(0))
        noise = {**_scalars(noise), self.noise_key: Secret(noise[self.noise_key].value[0])}
        return affine_objective(self.mechanism, rows, noise, self.noise_key).grid

    def releases(self, rows: MergedRows, noise: dict[str, Any]) -> np.ndarray:
        eta = np.asarray(noise[self.noise_key].value, dtype=float)
        single = {**_scalars(noise), self.noise_key: Secret(eta[0])}
        affine = affine_objective(self.mechanism, rows, single, self.noise_key, check=eta[0])
        step = max(1, _CHUNK_ENTRIES // len(affine.grid))  # bounds the (releases, k) matrix
        return np.concatenate([
            np.argmin(affine.values(eta[i:i + step]), axis=1)  # first minimizer: lexicographic
            for i in range(0, len(eta), step)
        ])  # fmt: skip

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
        from mechanisms.expmech import run_expmech

        probe = _ChoiceProbe(np.random.PCG64(0))
        run_expmech(X, y, self.params, probe)
        if probe.probabilities is None:
            raise AuditError("run_expmech did not sample through Generator.choice")
        return probe.probabilities

    def grid(self, d: int) -> np.ndarray:
        from mechanisms.opdisc import opdisc_domain

        domain, _ = opdisc_domain(d, self.params.tau, self.params.B, self.params.D)
        return np.vstack(list(grid_points(domain)))

    def sample(self, X, y, size, rng) -> np.ndarray:
        p = self.probabilities(X, y)
        return rng.choice(len(p), size=size, p=p)  # same stream as ``size`` sequential calls


# --- DP-SGD --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class DPSGDSampler:
    """Releases of ``run_dpsgd(X, y, params, rng)`` (d = 1: the statistic is w itself).

    z, q and T come from ``run_dpsgd`` itself (one real run per dataset). The steps follow
    ``train_dpsgd``: Poisson masks with rate q, per-example gradients of the logistic loss,
    each scaled by ``clip_factors`` (min(1, C / ||g||), ``clip_and_sum``'s rule), their sum plus
    N(0, (z C)^2), w -= lr * noisy / b; the release is the mean iterate.
    """

    params: Any  # DPSGDParams
    #: Releases trained at once (memory: chunk x T x n uniforms).
    chunk: int = 20_000
    kind: str = field(default="continuous", init=False)

    def calibration(self, X, y) -> dict[str, float]:
        """z, q, T exactly as ``run_dpsgd`` computes them for this n (one real run, cached)."""
        key = (self.params, len(y))
        if key not in _DPSGD_CALIBRATIONS:
            from mechanisms.dpsgd import run_dpsgd

            noise = run_dpsgd(X, y, self.params, np.random.default_rng(0)).noise
            _DPSGD_CALIBRATIONS[key] = {"z": float(noise["noise_multiplier"]),
                                        "q": float(noise["sampling_rate"]),
                                        "steps": int(noise["steps"])}  # fmt: skip
        return dict(_DPSGD_CALIBRATIONS[key])

    @staticmethod
    def clip_factors(norms: np.ndarray, clip_norm: float) -> np.ndarray:
        """``clip_and_sum``'s factors min(1, C / ||g_i||)."""
        return np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))

    def train(self, X, y, cal: dict[str, float], uniforms: np.ndarray,
              normals: np.ndarray) -> np.ndarray:  # fmt: skip
        """The batch of releases for given draws: uniforms (N, T, n), standard normals (N, T, d)."""
        from scipy.special import expit

        X = np.asarray(X, dtype=float)
        y = np.asarray(y, dtype=float)
        p = self.params
        size, steps = uniforms.shape[0], cal["steps"]
        w = np.zeros((size, X.shape[1]))
        total = np.zeros_like(w)
        std = cal["z"] * p.clip_norm
        for t in range(steps):
            mask = uniforms[:, t, :] < cal["q"]  # (N, n)
            margins = y[None, :] * (w @ X.T)  # (N, n)
            coef = -y[None, :] * expit(-margins)  # per_example_gradients: coef * x
            grads = coef[:, :, None] * X[None, :, :]  # (N, n, d)
            factors = self.clip_factors(np.linalg.norm(grads, axis=2), p.clip_norm)
            summed = np.einsum("kn,knd->kd", mask * factors, grads)
            noisy = summed + std * normals[:, t, :]
            w = w - p.learning_rate * noisy / p.batch_size
            total += w
        return total / steps

    def sample(self, X, y, size, rng) -> np.ndarray:
        """``size`` releases. Rows with x = 0 have gradient -y sigmoid(.) x = 0 at every w, so
        they are left out of the steps (exact: their sampling draws cannot change the release);
        q = b / n still counts them, as ``run_dpsgd`` does."""
        X, y = check_data(X, y)
        if X.shape[1] != 1:
            raise AuditError(f"the DP-SGD audit statistic needs d = 1, found d = {X.shape[1]}")
        cal = self.calibration(X, y)
        active = np.any(X != 0, axis=1)
        X, y = X[active], y[active]
        out = []
        for start in range(0, size, self.chunk):
            k = min(self.chunk, size - start)
            uniforms = rng.random((k, cal["steps"], len(y)))
            normals = rng.standard_normal((k, cal["steps"], X.shape[1]))
            out.append(self.train(X, y, cal, uniforms, normals)[:, 0])
        return np.concatenate(out)


#: run_dpsgd's calibration per (params, n): the accountant's bisection is the slow part.
_DPSGD_CALIBRATIONS: dict[tuple[Any, int], dict[str, float]] = {}


# --- OPSamp --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class OPSampSampler:
    """Releases of OPSamp with the logistic loss, d = 1 (the statistic is the released w).

    Noise from the mechanism's ``draw_noise`` (batched). Each problem min over [lower, upper]
    of f(w) = (1/n) sum_k m_k l(y_k w x_k) - sigma w / n is convex: its minimizer is ``upper``
    when f'(upper) <= 0, ``lower`` when f'(lower) >= 0, else the root of f', found by bisection
    to machine precision with the ConvexProblem's own gradient formula (``ConvexProblem``
    built by the mechanism's ``problems``). The release is ``finish``'s: the mean of the m
    minimizers plus noise["output_laplace"]; ``release`` is overridable (mutants).
    """

    mechanism: Any  # OPSamp
    bisection_steps: int = 60
    kind: str = field(default="continuous", init=False)

    def noise(self, rows: MergedRows, size: int, rng: np.random.Generator) -> dict[str, Any]:
        return self.mechanism.draw_noise(BatchedGenerator(rng, size), rows.n, rows.d)

    def minimizers(self, rows: MergedRows, noise: dict[str, Any]) -> np.ndarray:
        """(N, m) exact minimizers of the m problems per draw."""
        sigmas = np.asarray(noise["sigmas"].value, dtype=float)  # (N, m, 1)
        if sigmas.ndim != 3 or sigmas.shape[2] != 1:
            raise AuditError(f"the OPSamp sampler needs d = 1, found sigmas {sigmas.shape}")
        single = {**_scalars(noise), "sigmas": Secret(sigmas[0]), "output_laplace":
                  Secret(noise["output_laplace"].value[0])}  # fmt: skip
        problem = self.mechanism.problems(rows, single)[0]
        lo, hi = problem.box.lower, problem.box.upper
        x = problem.points[:, 0]
        coef = problem.weights * problem.labels / problem.scale  # sum_k coef_k * slope_k(w)

        def derivative_data(w: np.ndarray) -> np.ndarray:
            # d/dw (1/n) sum_k m_k l(y_k w x_k) = (1/n) sum_k m_k (-expit(-t_k)/S) y_k x_k
            from scipy.special import expit

            t = (w[..., None] * x) * problem.labels
            return -(expit(-t) * coef * x).sum(axis=-1) / problem.n

        s = sigmas[..., 0] / problem.n  # f'(w) = derivative_data(w) - s, decreasing in s
        w = np.where(derivative_data(np.array(hi)) - s <= 0, hi, np.nan)
        w = np.where(derivative_data(np.array(lo)) - s >= 0, lo, w)
        inner = np.isnan(w)  # f' changes sign inside the box: bisection on f'
        s_in = s[inner]
        a, b = np.full(s_in.shape, float(lo)), np.full(s_in.shape, float(hi))
        for _ in range(self.bisection_steps):
            mid = 0.5 * (a + b)
            positive = derivative_data(mid) - s_in > 0
            b = np.where(positive, mid, b)
            a = np.where(positive, a, mid)
        w[inner] = 0.5 * (a + b)
        # the same derivative as ConvexProblem.gradient (whose sigma is sigmas[0, 0]) at a
        # point where it matters: guards the formula against drifting from the oracle's
        point = w[tuple(np.argwhere(inner)[0])] if inner.any() else 0.5 * (lo + hi)
        check = problem.gradient(np.array([point]))[0]
        mine = derivative_data(np.array(point)) - problem.sigma[0] / problem.n
        if not math.isclose(check, mine, rel_tol=1e-9, abs_tol=1e-12):
            raise AuditError(f"gradient mismatch with ConvexProblem: {check!r} != {mine!r}")
        return w

    def release(self, minimizers: np.ndarray, noise: dict[str, Any]) -> np.ndarray:
        """``finish``: the mean of the m minimizers plus the output Laplace noise."""
        return minimizers.mean(axis=1) + np.asarray(noise["output_laplace"].value)[:, 0]

    def sample(self, X, y, size, rng) -> np.ndarray:
        X, y = check_data(X, y)
        rows = MergedRows.from_xy(X, y)
        noise = self.noise(rows, size, rng)
        return self.release(self.minimizers(rows, noise), noise)


__all__ = [
    "AffineObjective", "AuditError", "BatchedGenerator", "DPSGDSampler", "ExpMechSampler",
    "FunctionSampler", "GridArgminSampler", "OPSampSampler", "ReleaseSampler", "affine_objective",
]  # fmt: skip
