"""OPSamp: objective perturbation with sampling (paper, Algorithm 2; SPEC section 5).

For a G-Lipschitz (w.r.t. l1) loss with values in [0, 1] over the box W = [lower, upper]^d
(l_inf diameter D_inf = upper - lower, l2 diameter D_2 = D_inf sqrt(d)):

    gamma  = min( sqrt(epsilon / n) d^(5/4) sqrt(D_2), 1 )
    m      = ceil( ln(4d / delta) / (2 gamma^2) )
    eta    = sqrt( D_2 sqrt(2d) epsilon / (250 G^2 d^2 D_inf^2 (1 + ln(2/beta)) n) )
    sigma^k ~ Exp(rate eta)^d  (numpy scale 1/eta),                         k = 1..m
    w_k    = an alpha-approximate argmin of (L(D, w) - <sigma^k, w>) / n over W
    lambda = 4 D_inf gamma + 250 eta G d^2 D_inf^2 + alpha / (10 G)
    output (1/m) sum_k w_k + Lap(lambda / epsilon)^d

The m oracle calls are independent given the noise: ``problems`` returns them as a batch for
the pipeline to fan out. Every random draw, the final Laplace noise included, happens in
``draw_noise``, before any oracle call.

Losses:

* ``logistic`` (default): log(1 + exp(-y <w, x>)) / S with S = log(1 + exp(R)) and
  R = max(|lower|, |upper|) * d * x_max, so the loss is in [0, 1] on the box for any x with
  entries in [0, x_max]. It is G-Lipschitz w.r.t. l1 with G = x_max / S. R, S and G come from
  public bounds (the box and the declared feature bound), never from the data.
* ``zero_one``: the 0/1 loss through a MIP oracle. It is not Lipschitz, so OPSamp's privacy
  proof does not apply: such releases are recorded as not private. The calibration uses G = 1.

Privacy holds when the loss is Lipschitz and every oracle call certifies a gap <= alpha in the
normalized objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal, Sequence

import numpy as np

from mechanisms.base import PrivacyClaim, Release, check_epsilon_delta, noise_parameters
from oracles.base import Box, Problem, Solution
from oracles.objective import DEFAULT_MARGIN, MergedRows


@dataclass(frozen=True)
class OPSampParams:
    epsilon: float
    delta: float
    loss: Literal["logistic", "zero_one"] = "logistic"
    #: Accuracy failure probability beta of Algorithm 2 (enters eta).
    beta: float = 0.05
    #: Target oracle accuracy alpha in the normalized objective; each call must certify it.
    alpha: float = 1e-4
    lower: float = -1.0
    upper: float = 1.0
    #: Public bound on the features: every entry in [0, x_max] (Adult's encoding: 1).
    x_max: float = 1.0
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta, allow_zero_delta=False)
        if self.loss not in ("logistic", "zero_one"):
            raise ValueError(f"loss must be 'logistic' or 'zero_one', found {self.loss!r}")
        if not 0 < self.beta < 1:
            raise ValueError(f"beta must be in (0, 1), found {self.beta!r}")
        if not (math.isfinite(self.alpha) and self.alpha >= 0):
            raise ValueError(f"alpha must be finite and >= 0, found {self.alpha!r}")
        if not self.lower < self.upper:
            raise ValueError(f"need lower < upper, found {self.lower!r}, {self.upper!r}")
        if not (math.isfinite(self.x_max) and self.x_max > 0):
            raise ValueError(f"x_max must be > 0, found {self.x_max!r}")


def surrogate_scale(d: int, lower: float, upper: float, x_max: float) -> tuple[float, float]:
    """(R, S): |<w, x>| <= R on the box for x in [0, x_max]^d, and S = log(1 + exp(R))."""
    R = max(abs(lower), abs(upper)) * d * x_max
    return R, float(np.logaddexp(0.0, R))


def lipschitz_constant(params: OPSampParams, d: int) -> float:
    """G w.r.t. l1: x_max / S for the scaled logistic loss; 1 (nominal) for the 0/1 loss."""
    if params.loss == "zero_one":
        return 1.0
    _, S = surrogate_scale(d, params.lower, params.upper, params.x_max)
    return params.x_max / S


def opsamp_calibration(
    epsilon: float, delta: float, n: int, d: int, *, G: float, beta: float, alpha: float,
    D_inf: float,
) -> dict[str, float]:  # fmt: skip
    """gamma, m, eta, lambda of Algorithm 2 as SPEC section 5 gives them.

    m uses ln(4d / delta), not Algorithm 2's ln(2d / delta): the Hoeffding union bound over d
    coordinates, two sides and the two neighbouring datasets then sums to delta. gamma is capped
    at 1 (Lemma 9), and lambda uses the gamma actually used.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    if n < 1 or d < 1:
        raise ValueError(f"n and d must be >= 1, found n={n!r}, d={d!r}")
    D_2 = D_inf * math.sqrt(d)
    gamma_raw = math.sqrt(epsilon / n) * d**1.25 * math.sqrt(D_2)
    gamma = min(gamma_raw, 1.0)
    m = math.ceil(math.log(4 * d / delta) / (2 * gamma**2))
    eta = math.sqrt(
        D_2 * math.sqrt(2 * d) * epsilon
        / (250 * G**2 * d**2 * D_inf**2 * (1 + math.log(2 / beta)) * n)
    )  # fmt: skip
    lam = 4 * D_inf * gamma + 250 * eta * G * d**2 * D_inf**2 + alpha / (10 * G)
    return {"gamma_raw": gamma_raw, "gamma": gamma, "m": m, "eta": eta, "lambda": lam,
            "G": G, "D_inf": D_inf, "D_2": D_2}  # fmt: skip


@dataclass(frozen=True)
class OPSamp:
    params: OPSampParams
    name: str = "opsamp"

    def calibrate(self, n: int, d: int) -> dict[str, float]:
        p = self.params
        return opsamp_calibration(
            p.epsilon, p.delta, n, d, G=lipschitz_constant(p, d), beta=p.beta, alpha=p.alpha,
            D_inf=p.upper - p.lower,
        )  # fmt: skip

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> dict[str, Any]:
        cal = self.calibrate(n, d)
        sigmas = rng.exponential(scale=1.0 / cal["eta"], size=(cal["m"], d))  # rate eta
        laplace = rng.laplace(0.0, cal["lambda"] / self.params.epsilon, size=d)
        return {**cal, "sigmas": sigmas, "output_laplace": laplace}

    def problems(self, rows: MergedRows, noise: dict[str, Any]) -> list[Any]:
        """The m independent oracle calls (the pipeline's widest fan-out)."""
        p = self.params
        box = Box(rows.d, p.lower, p.upper)
        if p.loss == "zero_one":
            return [
                Problem.from_rows(rows, box, linear=-sigma, margin=p.margin,
                                  label=f"{self.name}[{k}]")  # fmt: skip
                for k, sigma in enumerate(noise["sigmas"])
            ]
        from oracles.convex import ConvexProblem

        R, S = surrogate_scale(rows.d, p.lower, p.upper, p.x_max)
        return [
            ConvexProblem.from_rows(rows, sigma, box, loss="logistic", scale=S)
            for sigma in noise["sigmas"]
        ]

    def normalized_gap(self, solution: Solution, n: int) -> float:
        """The certified gap in units of (L - <sigma, w>) / n."""
        gap = solution.certificate.gap
        return gap / n if self.params.loss == "zero_one" else gap

    def finish(
        self,
        rows: MergedRows,
        noise: dict[str, Any],
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release:
        p = self.params
        if len(solutions) != noise["m"]:
            raise ValueError(f"expected m = {noise['m']} solutions, found {len(solutions)}")
        W = np.vstack([s.w for s in solutions])
        w = W.mean(axis=0) + noise["output_laplace"]
        gaps = [self.normalized_gap(s, rows.n) for s in solutions]
        bad = [i for i, (s, g) in enumerate(zip(solutions, gaps))
               if s.certificate.status.value in ("no_solution", "error", "inconsistent")
               or not g <= p.alpha + 1e-12]  # fmt: skip
        if p.loss == "zero_one":
            claim = PrivacyClaim(p.epsilon, p.delta, False,
                                 "the 0/1 loss is not Lipschitz: OPSamp's privacy proof needs a "
                                 "G-Lipschitz loss (SPEC section 5)")  # fmt: skip
        elif bad:
            claim = PrivacyClaim(p.epsilon, p.delta, False,
                                 f"{len(bad)} of {len(solutions)} oracle calls did not certify "
                                 f"gap <= alpha = {p.alpha} (largest {max(gaps):.3g})")  # fmt: skip
        else:
            claim = PrivacyClaim(p.epsilon, p.delta, True,
                                 f"all {len(solutions)} oracle calls certified gap <= alpha = "
                                 f"{p.alpha} (largest {max(gaps):.3g})")  # fmt: skip
        record = noise_parameters(noise)
        return Release(
            mechanism=self.name, w=w, privacy=claim, noise=record | {"max_gap": max(gaps)},
            params=asdict(p), certificates=tuple(s.certificate for s in solutions),
            timings=timings | {"total": sum(timings.values())}, margin=p.margin,
        )  # fmt: skip
