"""OPSamp: objective perturbation with sampling (paper, Algorithm 2; SPEC section 5).

For a G-Lipschitz (w.r.t. l1) loss with values in [0, 1] over the box W = [lower, upper]^d
(l_inf diameter D_inf = upper - lower, l2 diameter D_2 = D_inf sqrt(d)):

    gamma  = min( sqrt(epsilon / n) d^(5/4) sqrt(D_2), 1 )   (or the user's gamma, or m)
    m      = ceil( ln(4d / delta) / (2 gamma^2) )
    eta    = sqrt( D_2 sqrt(2d) epsilon / (250 G^2 d^2 D_inf^2 (1 + ln(2/beta)) n) )
    sigma^k ~ Exp(rate eta)^d  (numpy scale 1/eta),                         k = 1..m
    w_k    = an alpha-approximate argmin of (L(D, w) - <sigma^k, w>) / n over W
    lambda = 2 d D_inf gamma + 250 eta G d^2 D_inf^2 + alpha / (10 G)     (SPEC 10.3)
    output (1/m) sum_k w_k + Lap(lambda / epsilon)^d

lambda is an l1 sensitivity bound of the average. The paper's first term, 4 D_inf gamma, bounds
only its l_inf norm (SPEC 10.3): ``calibration: paper`` uses it to reproduce the paper, and its
release records the epsilon that the Laplace scale actually proves, lambda_proven / scale. A
smaller gamma (``gamma`` or ``m``) buys a smaller first term with m ~ 1 / gamma^2 oracle calls.

The m oracle calls are independent given the noise: ``problems`` returns them as a batch for
the pipeline to fan out. Every random draw, the final Laplace noise included, happens in
``draw_noise``, before any oracle call.

Losses:

* ``logistic`` (default): log(1 + exp(-y <w, x>)) / S with S = log(1 + exp(R)) and
  R = max(|lower|, |upper|) * d * x_max. R, S and G come from public bounds (the box and the
  declared feature bound), never from the data. The proof needs, of every row x (and y = +-1):

  - range: the loss is in [0, 1] on the box iff |<w, x>| <= R there, and
    |<w, x>| <= ||w||_inf ||x||_1 <= max(|lower|, |upper|) ||x||_1, so ||x||_1 <= d x_max is
    enough;
  - Lipschitz: the derivative of log(1 + exp(-t)) is in (-1, 0), so
    |l(w) - l(w')| <= |<w - w', x>| / S <= ||x||_inf ||w - w'||_1 / S, and G = x_max / S
    needs ||x||_inf <= x_max.

  Both follow from |x_j| <= x_max for every entry, the bound that is checked: the sign of an
  entry does not matter (nothing needs x_j >= 0). Every release checks it on the data before
  any noise touches them (``enforce_bounds``, run by ``mechanisms.runner.run``, and again in
  ``problems``) and refuses data beyond it, naming the row and column, unless
  ``out_of_bounds='clip'``: then the entries beyond it are clipped to +-x_max, with a
  PrivacyLeakWarning (mechanisms.bounds).
* ``zero_one``: the 0/1 loss through a MIP oracle. It is not Lipschitz, so OPSamp's privacy
  proof does not apply: such releases are recorded as not private. The calibration uses G = 1,
  and x_max is neither used nor checked.

Privacy holds when the loss is Lipschitz and every oracle call certifies a gap <= alpha in the
normalized objective.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Literal, Sequence

import numpy as np

from core.objective import DEFAULT_MARGIN, MergedRows
from core.problem import Box, ConvexProblem, Problem
from core.validation import check_choice, check_not_both, check_real, check_result, check_shape
from mechanisms.bounds import check_out_of_bounds, enforce_feature_bound
from mechanisms.calibration import check_calibration
from mechanisms.opsamp_calibration import (
    check_opsamp_m,
    opsamp_epsilon,
    opsamp_eta,
    opsamp_gamma_m,
    opsamp_lambda,
)
from mechanisms.privacy import ApproximateTarget, TargetRecord
from mechanisms.release import Calibration, Noise, PrivacyClaim, Release, Secret
from oracles.contract.certificate import Solution


@dataclass(frozen=True)
class OPSampParams(TargetRecord):
    epsilon: float
    delta: float
    loss: Literal["logistic", "zero_one"] = "logistic"
    #: Accuracy failure probability beta of Algorithm 2 (enters eta).
    beta: float = 0.05
    #: Target oracle accuracy alpha in the normalized objective; each call must certify it.
    alpha: float = 1e-4
    lower: float = -1.0
    upper: float = 1.0
    #: Public bound on the features: |x_ij| <= x_max for every entry (Adult's encoding: 1),
    #: checked against the data on every release (logistic loss).
    x_max: float = 1.0
    margin: float = DEFAULT_MARGIN
    #: ``proven`` (lambda's first term 2 d D_inf gamma, SPEC 10.3) or ``paper`` (4 D_inf gamma).
    calibration: str = "proven"
    #: Hoeffding accuracy gamma in (0, 1]; None: the paper's, capped at 1. Or give m instead.
    gamma: float | None = None
    #: Number of oracle calls; None: from gamma. gamma = sqrt(ln(4d / delta) / (2 m)).
    m: int | None = None
    #: Data beyond x_max: ``error`` (refused) or ``clip`` (clipped to +-x_max, with a
    #: PrivacyLeakWarning), as the table loader's ``dataset.out_of_bounds``.
    out_of_bounds: Literal["error", "clip"] = "error"

    def __post_init__(self) -> None:
        self.hold_target()
        check_calibration(self.calibration, allowed=("proven", "paper"))
        check_not_both("gamma", self.gamma, "m", self.m)
        if self.gamma is not None:
            check_real("gamma", self.gamma, "(0, 1]")  # Lemma 9 needs gamma <= 1 (SPEC 5)
        if self.m is not None:  # the same bound on gamma, at every d (calibrate checks it at d)
            check_opsamp_m(self.m, self.delta)
        check_choice("loss", self.loss, ("logistic", "zero_one"))
        check_real("beta", self.beta, "(0, 1)")
        check_real("alpha", self.alpha, ">= 0")
        check_real("lower", self.lower, "")
        check_real("upper", self.upper, "")
        if not self.lower < self.upper:
            raise ValueError(f"need lower < upper, found {self.lower!r}, {self.upper!r}")
        check_result(
            "D_inf = upper - lower", self.upper - self.lower, lower=self.lower, upper=self.upper
        )
        check_real("x_max", self.x_max)
        check_real("margin", self.margin)
        check_out_of_bounds(self.out_of_bounds)


def surrogate_scale(d: int, lower: float, upper: float, x_max: float) -> tuple[float, float]:
    """(R, S): |<w, x>| <= R on the box for every x with |x_j| <= x_max, S = log(1 + exp(R)).

    R bounds ||w||_inf ||x||_1 with ||x||_1 <= d x_max (module docstring).
    """
    R = max(abs(lower), abs(upper)) * d * x_max
    return R, float(np.logaddexp(0.0, R))


def lipschitz_constant(params: OPSampParams, d: int) -> float:
    """G w.r.t. l1: x_max / S for the scaled logistic loss (it needs ||x||_inf <= x_max, module
    docstring); 1 (nominal) for the 0/1 loss."""
    if params.loss == "zero_one":
        return 1.0
    _, S = surrogate_scale(d, params.lower, params.upper, params.x_max)
    return params.x_max / S


def opsamp_calibration(
    target: ApproximateTarget,
    n: int,
    d: int,
    *,
    G: float,
    beta: float,
    alpha: float,
    D_inf: float,
    calibration: str = "proven",
    gamma: float | None = None,
    m: int | None = None,
) -> OPSampCalibration:
    """gamma, m, eta, lambda (and its terms) at the ``target`` (epsilon, delta), and the
    (epsilon, delta) proven (SPEC 5, 10.3).

    m uses ln(4d / delta), not Algorithm 2's ln(2d / delta): the Hoeffding union bound over d
    coordinates, two sides and the two neighbouring datasets then sums to delta. gamma is capped
    at 1 (Lemma 9), and lambda uses the gamma actually used. ``lambda`` is the one that sets the
    Laplace scale; ``lambda_proven`` the l1 bound SPEC 10.3 proves; the release's epsilon is
    lambda_proven / (lambda / epsilon).
    """
    check_calibration(calibration, allowed=("proven", "paper"))
    epsilon, delta = target.epsilon, target.delta
    gamma_raw, gamma, m = opsamp_gamma_m(target, n, d, D_inf, gamma=gamma, m=m)
    eta = opsamp_eta(target, n, d, G=G, beta=beta, D_inf=D_inf)
    used = opsamp_lambda(
        d, gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha, calibration=calibration
    )
    proven = opsamp_lambda(d, gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha)
    scale = check_result(
        "laplace_scale = lambda / epsilon",
        used.total / epsilon,
        **{"lambda": used.total, "epsilon": epsilon},
    )
    return OPSampCalibration(
        rule=calibration,
        # 'proven': the scale is lambda_proven / epsilon by construction
        proven_epsilon=(
            epsilon if calibration == "proven" else opsamp_epsilon(scale, proven.total)
        ),
        proven_delta=delta,
        gamma_raw=gamma_raw,
        gamma=gamma,
        m=m,
        eta=eta,
        lambda_=used.total,
        lambda_sampling=used.sampling,
        lambda_stability=used.stability,
        lambda_oracle=used.oracle,
        lambda_proven=proven.total,
        laplace_scale=scale,
        G=G,
        D_inf=D_inf,
        D_2=D_inf * math.sqrt(d),
    )


@dataclass(frozen=True)
class OPSampCalibration(Calibration):
    """Algorithm 2's constants as calibrated (SPEC sections 5 and 10.3).

    ``eta`` is the rate of the exponential perturbations sigma^k (a public constant; the draws
    are ``OPSampNoise.sigmas``); ``lambda_`` (``lambda`` in a release) sets the output Laplace
    scale ``laplace_scale = lambda / epsilon``; ``lambda_proven`` is the l1 bound SPEC 10.3
    proves.
    """

    gamma_raw: float
    gamma: float
    m: int
    eta: float
    lambda_: float
    lambda_sampling: float
    lambda_stability: float
    lambda_oracle: float
    lambda_proven: float
    laplace_scale: float
    G: float
    D_inf: float
    D_2: float


@dataclass(frozen=True)
class OPSampNoise(Noise):
    calibration: OPSampCalibration
    sigmas: Secret  # (m, d): exponential with rate eta, one row per oracle call
    output_laplace: Secret  # (d,): Lap(laplace_scale) added to the mean


@dataclass(frozen=True)
class OPSamp:
    params: OPSampParams
    name: str = "opsamp"

    def calibrate(self, n: int, d: int) -> OPSampCalibration:
        p = self.params
        check_shape("n", n)
        check_shape("d", d)
        return opsamp_calibration(
            p.target,
            n,
            d,
            G=lipschitz_constant(p, d),
            beta=p.beta,
            alpha=p.alpha,
            D_inf=p.upper - p.lower,
            calibration=p.calibration,
            gamma=p.gamma,
            m=p.m,
        )

    def enforce_bounds(
        self, X: np.ndarray, feature_names: Sequence[str] | None = None
    ) -> np.ndarray:
        """The data the release may use: ``X`` when every |x_ij| <= x_max (the logistic loss's
        range and Lipschitz constant rest on it, module docstring), else a FeatureBoundError
        naming the first row and column beyond it, or, with ``out_of_bounds='clip'``, ``X``
        clipped into [-x_max, x_max] with a PrivacyLeakWarning. The 0/1 loss: ``X`` (no bound).
        """
        if self.params.loss == "zero_one":
            return np.asarray(X, dtype=float)
        return enforce_feature_bound(
            X,
            self.params.x_max,
            out_of_bounds=self.params.out_of_bounds,
            mechanism="OPSamp",
            feature_names=feature_names,
        )

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> OPSampNoise:
        cal = self.calibrate(n, d)
        sigmas = rng.exponential(scale=1.0 / cal.eta, size=(cal.m, d))  # rate eta
        laplace = rng.laplace(0.0, cal.laplace_scale, size=d)
        return OPSampNoise(cal, Secret(sigmas), Secret(laplace))

    def problems(self, rows: MergedRows, noise: OPSampNoise) -> list[Any]:
        """The m independent oracle calls (the pipeline's widest fan-out).

        The feature bound is enforced here too, where the noise meets the data, so that no
        caller (``mechanisms.runner.run`` has already done it, naming the data's rows) builds
        an oracle call on data beyond it.
        """
        p = self.params
        box = Box(rows.d, p.lower, p.upper)
        if p.loss == "zero_one":
            return [
                Problem.from_rows(
                    rows, box, linear=-sigma, margin=p.margin, label=f"{self.name}[{k}]"
                )
                for k, sigma in enumerate(noise.sigmas.value)
            ]
        points = enforce_feature_bound(
            rows.points,
            p.x_max,
            out_of_bounds=p.out_of_bounds,
            mechanism="OPSamp",
            rows="distinct row",
        )
        if points is not rows.points:
            rows = MergedRows(points, rows.pos, rows.neg)
        R, S = surrogate_scale(rows.d, p.lower, p.upper, p.x_max)
        return [
            ConvexProblem.from_rows(rows, sigma, box, loss="logistic", scale=S)
            for sigma in noise.sigmas.value
        ]

    def normalized_gap(self, solution: Solution, n: int) -> float:
        """The certified gap in units of (L - <sigma, w>) / n."""
        gap = solution.certificate.gap
        return gap / n if self.params.loss == "zero_one" else gap

    def finish(
        self,
        rows: MergedRows,
        noise: OPSampNoise,
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release:
        p = self.params
        cal = noise.calibration
        if len(solutions) != cal.m:
            raise ValueError(f"expected m = {cal.m} solutions, found {len(solutions)}")
        W = np.vstack([s.w for s in solutions])
        w = W.mean(axis=0) + noise.output_laplace.value
        gaps = [self.normalized_gap(s, rows.n) for s in solutions]
        bad = [
            i
            for i, (s, g) in enumerate(zip(solutions, gaps))
            if s.certificate.status.value in ("no_solution", "error", "inconsistent")
            or not g <= p.alpha + 1e-12
        ]
        proof = {
            "requested_epsilon": p.epsilon,
            "requested_delta": p.delta,
            "calibration": cal.rule,
        }
        eps, delta = cal.proven_epsilon, cal.proven_delta
        if p.loss == "zero_one":
            claim = PrivacyClaim(
                eps,
                delta,
                False,
                "the 0/1 loss is not Lipschitz: OPSamp's privacy proof needs a "
                "G-Lipschitz loss (SPEC section 5)",
                **proof,
            )
        elif bad:
            claim = PrivacyClaim(
                eps,
                delta,
                False,
                f"{len(bad)} of {len(solutions)} oracle calls did not certify "
                f"gap <= alpha = {p.alpha} (largest {max(gaps):.3g})",
                **proof,
            )
        else:
            claim = PrivacyClaim(
                eps,
                delta,
                True,
                f"all {len(solutions)} oracle calls certified gap <= alpha = "
                f"{p.alpha} (largest {max(gaps):.3g})",
                **proof,
            )
        return Release(
            mechanism=self.name,
            w=w,
            privacy=claim,
            noise=cal.scales() | {"max_gap": max(gaps)},
            params=asdict(p),
            certificates=tuple(s.certificate for s in solutions),
            timings=timings | {"total": sum(timings.values())},
            margin=p.margin,
        )
