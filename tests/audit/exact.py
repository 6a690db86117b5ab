"""Exact privacy of the audited mechanisms on small pairs: the truth the audit is checked against.

* Gaussian OPDisc and RSPM on d = 1: the objective is base(w) + <A(w), eta> (the grid sampler's
  affine form) and, on {-1, 0, 1}, A's columns and the constant span every Delta: the data change
  Delta(w) = base'(w) - base(w) equals <A(w), v> + c for one shift v. Then M(D') has the law of
  M(D) with eta replaced by eta + v, so the pair is exactly as distinguishable as N(0, s^2 I)
  and N(v, s^2 I): the Gaussian mechanism with mu = |v| / s, whose (epsilon, delta) curve is
  delta(eps) = Phi(mu/2 - eps/mu) - e^eps Phi(-mu/2 - eps/mu) (Balle and Wang, ICML 2018).
* Laplace RSPM on d = 1: the same shift; |v|_1 / b bounds the privacy loss.
* ExpMech: the output law is known exactly; epsilon = max_w |ln P_D(w) / P_D'(w)|.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
from scipy import optimize, stats

from core.objective import MergedRows
from mechanisms.audit.core import NeighbouringPair
from mechanisms.audit.samplers import affine_objective
from mechanisms.rspm import RSPMLaplaceCalibration

#: The six kinds of d = 1 examples on the grid {-1, 0, 1} (mechanisms.audit.pairs).
D1_EXAMPLES = [((x,), y) for x in (-1.0, 0.0, 1.0) for y in (-1, 1)]


def gaussian_epsilon(mu: float, delta: float) -> float:
    """The smallest epsilon with delta(eps) <= delta for the Gaussian mechanism mu."""
    if mu <= 0:
        return 0.0

    def excess(eps: float) -> float:
        return (
            stats.norm.cdf(mu / 2 - eps / mu)
            - math.exp(eps) * stats.norm.cdf(-mu / 2 - eps / mu)
            - delta
        )

    if excess(0.0) <= 0:
        return 0.0
    return float(optimize.brentq(excess, 0.0, 100.0, xtol=1e-12))


def noise_shift(mechanism, pair: NeighbouringPair) -> np.ndarray:
    """The shift v of the noise that turns the release on D into the release on D' (d = 1)."""
    rows0 = MergedRows.from_xy(pair.X0, pair.y0)
    rows1 = MergedRows.from_xy(pair.X1, pair.y1)
    noise = mechanism.draw_noise(np.random.default_rng(0), rows0.n, rows0.d)
    a0 = affine_objective(mechanism, rows0, noise)
    a1 = affine_objective(mechanism, rows1, noise)
    if not np.allclose(a0.slopes, a1.slopes):
        raise AssertionError("the noise enters the objective the same way on D and D'")
    delta_loss = a1.base - a0.base
    system = np.hstack([a0.slopes, -np.ones((len(a0.base), 1))])
    solution, *_ = np.linalg.lstsq(system, delta_loss, rcond=None)
    if not np.allclose(system @ solution, delta_loss, atol=1e-9):
        raise AssertionError(f"{pair.name}: Delta is not a shift of the noise (d = {pair.d})")
    # F'(w; eta) = F(w; eta) + <A, v> + c = F(w; eta + v) + c: release(D') ~ release(D, eta + v)
    return solution[:-1]


def exact_epsilon(mechanism, pair: NeighbouringPair, delta: float) -> float:
    """Exact epsilon at ``delta`` of a d = 1 pair for Gaussian OPDisc / RSPM (module doc);
    for Laplace RSPM the bound |v|_1 / b (delta ignored)."""
    v = noise_shift(mechanism, pair)
    cal = mechanism.calibrate(pair.d)
    if isinstance(cal, RSPMLaplaceCalibration):
        return float(np.abs(v).sum() / cal.laplace_scale)
    return gaussian_epsilon(float(np.linalg.norm(v)) / cal.sigma, delta)


def all_d1_replacements(base_rows: int = 0):
    """Every replacement of one d = 1 example by another (30 pairs), beside ``base_rows``
    copies of (1, +1) (the base does not change the shift, only where the decision sits)."""
    for old, new in itertools.permutations(D1_EXAMPLES, 2):
        X0 = np.array([(1.0,)] * base_rows + [old[0]])
        X1 = np.array([(1.0,)] * base_rows + [new[0]])
        y0 = np.array([1] * base_rows + [old[1]])
        y1 = np.array([1] * base_rows + [new[1]])
        yield NeighbouringPair(f"{old}->{new}", X0, y0, X1, y1)


def expmech_exact_epsilon(sampler, pair: NeighbouringPair) -> float:
    p0 = sampler.probabilities(pair.X0, pair.y0)
    p1 = sampler.probabilities(pair.X1, pair.y1)
    return float(np.max(np.abs(np.log(p0) - np.log(p1))))


def _mixture_density(X, y, cal, clip_norm, grid):
    """Density of sum_i B_i clip(g_i) + N(0, (z C)^2) at w = 0, B_i ~ Bernoulli(q), over the
    rows with x != 0 (the others have zero gradient): the first DP-SGD step on the sum scale."""
    from mechanisms.dpsgd import clip_and_sum, per_example_gradients

    active = np.any(X != 0, axis=1)
    grads = per_example_gradients(X[active], y[active].astype(float), np.zeros(X.shape[1]))
    clipped = [clip_and_sum(g[None, :], clip_norm)[0] for g in grads]
    std = cal["z"] * clip_norm
    density = np.zeros_like(grid)
    for mask in itertools.product((0, 1), repeat=len(clipped)):
        weight = math.prod(cal["q"] if b else 1 - cal["q"] for b in mask)
        mean = sum((c for b, c in zip(mask, clipped) if b), np.zeros(1))[0]
        density += weight * stats.norm.pdf(grid, mean, std)
    return density


def dpsgd_exact_epsilon(sampler, pair: NeighbouringPair, delta: float) -> tuple[float, float]:
    """Exact (epsilon forward, epsilon backward) at ``delta`` of a one-step DP-SGD pair (d = 1,
    at most 3 rows with x != 0), by numerical integration of the hockey-stick divergence
    E_eps(P || Q) = int max(p - e^eps q, 0) on a fine grid (error far below 1e-6)."""
    cal0 = sampler.calibration(pair.X0, pair.y0)
    cal1 = sampler.calibration(pair.X1, pair.y1)
    if cal0["steps"] != 1 or cal1["steps"] != 1:
        raise ValueError("the exact DP-SGD epsilon is computed for one step only")
    clip_norm = sampler.params.clip_norm
    width = 40 * max(cal0["z"], cal1["z"]) * clip_norm + 4 * clip_norm
    grid = np.linspace(-width, width, 2_000_001)
    step = grid[1] - grid[0]
    p0 = _mixture_density(pair.X0, pair.y0, cal0, clip_norm, grid)
    p1 = _mixture_density(pair.X1, pair.y1, cal1, clip_norm, grid)

    def epsilon(p, q):
        def excess(eps):
            return float(np.maximum(p - math.exp(eps) * q, 0.0).sum() * step) - delta

        return 0.0 if excess(0.0) <= 0 else float(optimize.brentq(excess, 0.0, 60.0, xtol=1e-6))

    return epsilon(p0, p1), epsilon(p1, p0)
