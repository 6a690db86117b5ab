"""Why no audit can catch OPSamp's paper calibration (SPEC 10.3): two upper bounds on its epsilon.

The paper's lambda (first term 4 D_inf gamma) is an l_inf bound where the Laplace step needs l1
(SPEC 10.3), so SPEC 10.3 proves only lambda_proven / scale. An audit catches the paper's
calibration only if the true epsilon is above the requested one. Two facts bound it:

* **Diameter bound (every dataset, every oracle).** The average of m points of the box
  [lower, upper]^d lies in the box, whose l1 diameter is d D_inf. Adding Lap(scale)^d to any
  statistic with that range is (d D_inf / scale, 0)-DP: the release is at most that private
  whatever the data and the solutions. lambda's stability term alone is
  250 eta G d^2 D_inf^2 = d D_inf sqrt(250 D_2 sqrt(2d) epsilon / ((1 + ln(2/beta)) n)), so the
  scale lambda / epsilon is at least d D_inf / epsilon whenever
  n <= 250 D_2 sqrt(2d) epsilon / (1 + ln(2/beta)) (about 151 d epsilon on the box [-1, 1]^d with
  beta = 0.05): there the paper's calibration is epsilon-DP outright.
* **Coupling bound (the one-row instance).** n - 1 rows at x = 0 (no gradient) and one row at
  x = x_max 1_d whose label is flipped. With label +1 every solution is the upper corner (the
  loss and -<sigma, w> both decrease in every w_j, sigma >= 0). With label -1 the derivative in
  w_j is (x_max expit(t) / S - sigma_j) / n <= (G - sigma_j) / n, so w_j stays at the upper
  bound whenever sigma_j >= G. Coupling the two runs through the same sigma and the same
  Laplace draw, ||avg(D) - avg(D')||_1 <= D_inf K / m with K ~ Binomial(m d, 1 - exp(-eta G))
  the number of sigma_kj below G, so for every event E, P_D(E) <= e^(eps') P_D'(E) + P(K > k)
  with eps' = D_inf k / (m scale), in both directions. That is the largest epsilon any audit
  of this instance can measure at delta = P(K > k) (with exact minimizers).

Both say the same thing: the stability term 250 eta G d^2 D_inf^2 dominates lambda, and it is
hundreds of times the distance a single example can move the average, so the missing factor
d / 2 on the sampling term never shows in the released distribution.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from scipy import stats


@dataclass(frozen=True)
class OPSampPaperBounds:
    d: int
    n: int
    requested_epsilon: float
    proven_epsilon: float  # what SPEC 10.3 proves for the scale used (lambda_proven / scale)
    laplace_scale: float
    diameter_epsilon: float  # d D_inf / scale: valid for every dataset (pure DP)
    one_row_epsilon: float  # coupling bound on the one-row instance, at one_row_delta
    one_row_delta: float
    moved_bound: int  # k: at most k of the m d coordinates leave the corner, but w.p. delta

    def line(self) -> str:
        return (
            f"d={self.d} n={self.n}: scale {self.laplace_scale:.3g}, SPEC 10.3 proves "
            f"{self.proven_epsilon:.3f}; diameter bound {self.diameter_epsilon:.3f} "
            f"(any data); one-row instance <= {self.one_row_epsilon:.4f} at delta "
            f"{self.one_row_delta:.2g} (K <= {self.moved_bound})"
        )


def opsamp_paper_bounds(mechanism, n: int, d: int, delta: float) -> OPSampPaperBounds:
    """The two bounds of the module doc for ``mechanism`` (an OPSamp) at (n, d)."""
    p = mechanism.params
    if p.loss != "logistic":
        raise ValueError(f"the coupling bound is for the logistic loss, found {p.loss!r}")
    cal = mechanism.calibrate(n, d)
    scale, D_inf, m = cal.laplace_scale, cal.D_inf, int(cal.m)
    moved = stats.binom(m * d, -math.expm1(-cal.eta * cal.G))
    k = 0
    while moved.sf(k) > delta:  # sf(k) = P(K > k)
        k += 1
    return OPSampPaperBounds(
        d=d,
        n=n,
        requested_epsilon=p.epsilon,
        proven_epsilon=float(cal.proven_epsilon),
        laplace_scale=scale,
        diameter_epsilon=d * D_inf / scale,
        one_row_epsilon=D_inf * k / (m * scale),
        one_row_delta=float(moved.sf(k)),
        moved_bound=k,
    )


__all__ = ["OPSampPaperBounds", "opsamp_paper_bounds"]
