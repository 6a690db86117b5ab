"""Samplers of the continuous releases (``kind = "continuous"``: the released w, d = 1) for the
audit (mechanisms.audit.samplers):

* ``DPSGDSampler``: z, q and T from ``run_dpsgd`` itself; the T steps vectorized over the batch
  with ``clip_and_sum``'s rule and ``per_example_gradients``' formula (checked against
  ``train_dpsgd`` draw for draw).
* ``OPSampSampler``: noise from ``OPSamp.draw_noise`` (batched); each of the m one-dimensional
  convex problems solved to machine precision by bisection on the ConvexProblem's own gradient;
  the release as in ``OPSamp.finish``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.objective import MergedRows, check_data
from mechanisms.audit.sampler_base import AuditError, BatchedGenerator, first_draw
from mechanisms.dpsgd import run_dpsgd
from mechanisms.opsamp import OPSampNoise


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
            noise = run_dpsgd(X, y, self.params, np.random.default_rng(0)).noise
            _DPSGD_CALIBRATIONS[key] = {
                "z": float(noise["noise_multiplier"]),
                "q": float(noise["sampling_rate"]),
                "steps": int(noise["steps"]),
            }
        return dict(_DPSGD_CALIBRATIONS[key])

    @staticmethod
    def clip_factors(norms: np.ndarray, clip_norm: float) -> np.ndarray:
        """``clip_and_sum``'s factors min(1, C / ||g_i||)."""
        return np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))

    def train(
        self, X, y, cal: dict[str, float], uniforms: np.ndarray, normals: np.ndarray
    ) -> np.ndarray:
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
    minimizers plus noise.output_laplace; ``release`` is overridable (mutants).
    """

    mechanism: Any  # OPSamp
    bisection_steps: int = 60
    kind: str = field(default="continuous", init=False)

    def noise(self, rows: MergedRows, size: int, rng: np.random.Generator) -> OPSampNoise:
        return self.mechanism.draw_noise(BatchedGenerator(rng, size), rows.n, rows.d)

    def minimizers(self, rows: MergedRows, noise: OPSampNoise) -> np.ndarray:
        """(N, m) exact minimizers of the m problems per draw."""
        sigmas = np.asarray(noise.sigmas.value, dtype=float)  # (N, m, 1)
        if sigmas.ndim != 3 or sigmas.shape[2] != 1:
            raise AuditError(f"the OPSamp sampler needs d = 1, found sigmas {sigmas.shape}")
        problem = self.mechanism.problems(rows, first_draw(noise))[0]
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

    def release(self, minimizers: np.ndarray, noise: OPSampNoise) -> np.ndarray:
        """``finish``: the mean of the m minimizers plus the output Laplace noise."""
        return minimizers.mean(axis=1) + np.asarray(noise.output_laplace.value)[:, 0]

    def sample(self, X, y, size, rng) -> np.ndarray:
        X, y = check_data(X, y)
        rows = MergedRows.from_xy(X, y)
        noise = self.noise(rows, size, rng)
        return self.release(self.minimizers(rows, noise), noise)


__all__ = ["DPSGDSampler", "OPSampSampler"]
