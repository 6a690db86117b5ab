"""The audit at d >= 5 (SPEC 10.5): sum-cut instances and their exact fast samplers.

SPEC 10.1 and 10.2's gaps grow with d, so the audit must run where the grid has 3^d points and
enumeration per release is out of reach. The instances here are built so that the argmin has a
closed form (OPDisc) or a short dynamic programme (RSPM), exact for every noise draw:

* Domain {-1, 0, 1}^d: OPDisc with tau = 1, B = 1 and the paper's D = sqrt(d) (every point of
  the box is inside the ball; the calibration depends on d, D and tau only, not on B), RSPM's
  own domain.
* Data "sum cut": rows at x = 0 (h_w(0) = -1 for every w: a constant loss) and rows at
  x = c (1, ..., 1), c >= 2 mu. Such a row with label -1 has loss 1[sum(w) >= 1], with label
  +1 loss 1 - 1[sum(w) >= 1] (sum(w) is an integer). So L(D, w) = const + lam 1[sum(w) >= 1]
  with lam = Q - P at that point, and the neighbouring pair flips the label of one such row:
  lam = +1 on D, -1 on D'. The output lines up with the noise everywhere (constant loss)
  except across the cut sum(w) = 0 | 1, which is where the data moves it; in high dimension
  many coordinates compete at the cut, so the density of the gap there grows with d.
* The released statistic is t = sum(w) (a post-processing of w: a lower bound on it is a lower
  bound on the mechanism), a cell in {-d, ..., d}.

OPDisc (SPEC 3): maximize <eta[:d], w> / D + eta[d] sqrt(D^2 - s) / D - lam 1[t >= 1] with
s = ||w||^2 the support size. For support s and p entries +1 (t = 2p - s), the best w puts +1
on the p largest eta_j and -1 on the s - p smallest: value A[p] + Bn[s - p] (prefix sums of
eta sorted down, of -eta sorted up), concave in p and maximal at p*(s) = the number of
positive entries among the s largest |eta_j|. So the best w of each side of the cut (t >= 1:
p >= s // 2 + 1; t <= 0: p <= s // 2) is p*(s) clipped to that side: 2 (d + 1) candidates,
O(d log d) per release.

RSPM (SPEC 4): separator weights a_j = eta[j] (on (e_j, +1): loss iff w_j <= 0) and
b_j = eta[d + j] (on (-e_j, +1): loss iff w_j >= 0) give the coordinate costs
c_j(-1) = a_j, c_j(0) = a_j + b_j, c_j(1) = b_j; the minimum of sum_j c_j(w_j) over
sum(w) = t for every t is a dynamic programme over the coordinates (O(d^2) per release).

Both samplers draw the noise with the mechanism's own ``draw_noise`` (batched, the same stream
as sequential runs) and take sigma, D and the domain from the mechanism; tests/audit/
test_highdim.py checks them release for release against ``run`` with the enumeration oracle.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from core.objective import MergedRows, check_data
from mechanisms.audit.core import NeighbouringPair
from mechanisms.audit.pairs import replace_pair
from mechanisms.audit.samplers import AuditError, BatchedGenerator
from mechanisms.opdisc import opdisc_domain
from mechanisms.release import Noise

#: Releases computed at once (memory: chunk x d floats, or chunk x d x (2d + 1) for RSPM's w).
_CHUNK = 20_000


def sum_cut_pair(d: int, zero_rows: int = 2) -> NeighbouringPair:
    """D = zero rows + (1_d, -1), D' = zero rows + (1_d, +1): lam = +1 on D, -1 on D'."""
    ones = tuple([1.0] * d)
    return replace_pair(
        f"sum_cut_d{d}",
        [(tuple([0.0] * d), 1, zero_rows)],
        (ones, -1),
        (ones, 1),
        f"d = {d}: constant loss (x = 0 rows) except the flipped row at x = 1_d, which moves "
        "every w with sum(w) >= 1 against every w with sum(w) <= 0 by 2",
    )


def sum_cut_lambda(rows: MergedRows, margin: float) -> int:
    """lam of L(D, w) = const + lam 1[sum(w) >= 1] (module doc); AuditError if not a sum cut."""
    d = rows.d
    lam = 0
    for point, pos, neg in zip(rows.points, rows.pos, rows.neg):
        if not np.any(point):
            continue  # h_w(0) = -1 for every w: constant loss
        c = float(point[0])
        if not (np.all(point == c) and c >= 2 * margin):
            raise AuditError(
                f"sum-cut data needs rows at 0 or at c 1_d with c >= 2 mu, found "
                f"{point.tolist()} (d = {d})"
            )
        lam += int(neg) - int(pos)
    return lam


@dataclass(frozen=True)
class SumCutSampler:
    """Base of the sum-cut samplers: releases as cells t + d of t = sum(w) in {-d..d}."""

    mechanism: Any
    kind: str = field(default="discrete", init=False)

    def grid(self, d: int) -> np.ndarray:
        return np.arange(-d, d + 1, dtype=float)[:, None]

    def describe(self, d: int):
        """How the audit's events name a cell."""
        return lambda cell: f"sum(w)={cell - d}"

    def noise(self, rows: MergedRows, size: int, rng: np.random.Generator) -> Noise:
        return self.mechanism.draw_noise(BatchedGenerator(rng, size), rows.n, rows.d)

    def sample(self, X, y, size, rng) -> np.ndarray:
        """``size`` releases, drawn and solved in chunks (memory: chunk x m floats). One noise
        draw per release, row-major: the chunks are the same stream as one batched draw."""
        X, y = check_data(X, y)
        rows = MergedRows.from_xy(X, y)
        lam = sum_cut_lambda(rows, self.mechanism.params.margin)
        out = []
        for start in range(0, size, _CHUNK):
            noise = self.noise(rows, min(_CHUNK, size - start), rng)
            out.append(self.sums(np.asarray(noise.eta.value, dtype=float), lam, noise) + rows.d)
        return np.concatenate(out)

    def releases(self, X, y, size, rng) -> np.ndarray:
        """The released w themselves, (size, d): what tests compare with ``run``."""
        X, y = check_data(X, y)
        rows = MergedRows.from_xy(X, y)
        noise = self.noise(rows, size, rng)
        lam = sum_cut_lambda(rows, self.mechanism.params.margin)
        return self.argmin(np.asarray(noise.eta.value, dtype=float), lam, noise)

    def sums(self, eta, lam, noise) -> np.ndarray:
        raise NotImplementedError

    def argmin(self, eta, lam, noise) -> np.ndarray:
        raise NotImplementedError


@dataclass(frozen=True)
class SumCutOPDiscSampler(SumCutSampler):
    """OPDisc (or a variant of it: another calibration) on sum-cut data (module doc)."""

    def _check_domain(self, d: int, noise: Noise) -> tuple[float, int]:
        p = self.mechanism.params
        domain, D = opdisc_domain(d, p.tau, p.B, p.D)
        if domain.step != 1.0 or domain.bound != 1:
            raise AuditError(
                f"the sum-cut sampler needs the grid {{-1, 0, 1}}^d (tau = 1, B = 1),"
                f" found tau={domain.step!r}, bound={domain.bound!r}"
            )
        if not math.isclose(float(noise.calibration.D), D):
            raise AuditError(f"D mismatch: {noise.calibration.D!r} != {D!r}")
        s_max = min(d, int(math.floor(domain.norm_sq_max + 1e-9)))
        return D, s_max

    def _candidates(self, eta: np.ndarray, lam: int, noise: Noise):
        """Best (s, p) per release: arrays s, p (the argmax over the 2 (d + 1) candidates)."""
        N, d = eta.shape[0], eta.shape[1] - 1
        D, s_max = self._check_domain(d, noise)
        e, z = eta[:, :d], eta[:, d]
        zeros = np.zeros((N, 1))
        A = np.hstack([zeros, np.cumsum(-np.sort(-e, axis=1), axis=1)])  # top-p sums
        Bn = np.hstack([zeros, np.cumsum(-np.sort(e, axis=1), axis=1)])  # -(bottom-q sums)
        by_size = np.take_along_axis(e, np.argsort(-np.abs(e), axis=1, kind="stable"), axis=1)
        cumpos = np.hstack([zeros, np.cumsum(by_size > 0, axis=1)]).astype(np.int64)
        s = np.arange(s_max + 1)
        rows = np.arange(N)[:, None]
        norm_term = z[:, None] * np.sqrt(np.maximum(D * D - s, 0.0))[None, :] / D
        p_star = cumpos[:, : s_max + 1]
        p_cut = np.minimum(np.maximum(p_star, s[None, :] // 2 + 1), s[None, :])  # t >= 1
        p_rest = np.minimum(p_star, s[None, :] // 2)  # t <= 0
        score_cut = (A[rows, p_cut] + Bn[rows, s[None, :] - p_cut]) / D + norm_term - lam
        score_cut[:, 0] = -np.inf  # s = 0 has t = 0 only
        score_rest = (A[rows, p_rest] + Bn[rows, s[None, :] - p_rest]) / D + norm_term
        scores = np.hstack([score_rest, score_cut])
        best = np.argmax(scores, axis=1)
        size = best % (s_max + 1)
        plus = np.where(best <= s_max, p_rest[np.arange(N), size], p_cut[np.arange(N), size])
        return size, plus

    def sums(self, eta, lam, noise) -> np.ndarray:
        size, plus = self._candidates(eta, lam, noise)
        return 2 * plus - size

    def argmin(self, eta, lam, noise) -> np.ndarray:
        size, plus = self._candidates(eta, lam, noise)
        N, d = eta.shape[0], eta.shape[1] - 1
        order = np.argsort(-eta[:, :d], axis=1, kind="stable")  # largest eta first
        rank = np.empty_like(order)
        np.put_along_axis(rank, order, np.arange(d)[None, :].repeat(N, 0), axis=1)
        w = np.zeros((N, d))
        w[rank < plus[:, None]] = 1.0
        w[rank >= d - (size - plus)[:, None]] = -1.0
        return w


@dataclass(frozen=True)
class SumCutRSPMSampler(SumCutSampler):
    """Gaussian or Laplace RSPM (or a variant) on sum-cut data: the DP of the module doc."""

    def _tables(self, eta: np.ndarray, lam: int, keep_choices: bool = False):
        """F (N, 2d + 1): min cost with sum(w) = t - d, and (if asked) the choices per step."""
        N, d = eta.shape[0], eta.shape[1] // 2
        if eta.shape[1] != 2 * d:
            raise AuditError(f"RSPM needs 2d separator weights, found {eta.shape[1]}")
        a, b = eta[:, :d], eta[:, d:]
        width = 2 * d + 1
        F = np.full((N, width), np.inf)
        F[:, d] = 0.0
        choices = np.zeros((N, d, width), dtype=np.int8) if keep_choices else None
        down, up = np.empty_like(F), np.empty_like(F)
        for j in range(d):
            down[:, -1] = np.inf
            np.add(F[:, 1:], a[:, j : j + 1], out=down[:, :-1])  # w_j = -1: sum t came from t + 1
            up[:, 0] = np.inf
            np.add(F[:, :-1], b[:, j : j + 1], out=up[:, 1:])  # w_j = +1: from t - 1
            stay = F + (a[:, j] + b[:, j])[:, None]  # w_j = 0
            if keep_choices:
                options = np.stack([down, stay, up])
                pick = np.argmin(options, axis=0)  # first minimum: -1, then 0, then +1
                choices[:, j] = pick
                F = np.take_along_axis(options, pick[None], axis=0)[0]
            else:
                F = np.minimum(np.minimum(down, stay), up)
        F = F + lam * (np.arange(width) >= d + 1)[None, :]
        return F, choices

    def sums(self, eta, lam, noise) -> np.ndarray:
        F, _ = self._tables(eta, lam)
        return np.argmin(F, axis=1) - eta.shape[1] // 2

    def argmin(self, eta, lam, noise) -> np.ndarray:
        F, choices = self._tables(eta, lam, keep_choices=True)
        N, d = eta.shape[0], eta.shape[1] // 2
        t = np.argmin(F, axis=1)
        w = np.zeros((N, d))
        for j in range(d - 1, -1, -1):
            step = choices[np.arange(N), j, t].astype(int) - 1
            w[:, j] = step
            t = t - step
        return w


__all__ = ["SumCutOPDiscSampler", "SumCutRSPMSampler", "sum_cut_lambda", "sum_cut_pair"]
