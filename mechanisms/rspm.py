"""RSPM: Report Separator-Perturbed Min (paper, Appendix Algorithm 3; SPEC section 4).

Domain W = {-1, 0, 1}^d. Separator set U: the 2d examples (e_j, +1) and (-e_j, +1). Under the
rule h_w(x) = +1 iff <w, x> >= mu (0 < mu < 1), (e_j, +1) has loss 1 iff w_j <= 0 and
(-e_j, +1) has loss 1 iff w_j >= 0, which tells -1, 0 and 1 apart, so any two distinct w differ
in loss on some element of U. m = |U| = 2d.

The release is argmin_{w in W} sum_i l_i(w) + sum_k eta_k l_{u_k}(w), with one weight per
separator element (m weights, not d + 1):

* Gaussian, (epsilon, delta)-DP: eta_k ~ N(0, sigma^2), sigma the smallest with SPEC 10.2's
  delta(epsilon; sigma) <= delta (``calibration: proven``, default), or the paper's
  7 sqrt(m ln(1/delta)) / epsilon (``paper``), whose release records the epsilon SPEC 10.2
  proves for it at the same delta;
* Laplace, epsilon-DP: eta_k ~ Lap(2m / epsilon) (a replaced record changes a loss difference
  by at most 2; shifting every separator weight by 2 restores the minimizer; l1 norm 2m).

Weights may be negative. Privacy needs the exact argmin (SPEC section 8).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from core.objective import DEFAULT_MARGIN, MergedRows
from core.problem import IntegerGrid, Problem
from core.validation import check_choice, check_real, check_shape
from mechanisms.bounds import NoFeatureBound
from mechanisms.calibration import check_calibration
from mechanisms.privacy import ApproximateTarget, PrivacyTarget, TargetRecord
from mechanisms.release import Calibration, Noise, Secret
from mechanisms.rspm_calibration import (
    rspm_gaussian_epsilon,
    rspm_gaussian_sigma,
    rspm_gaussian_sigma_paper,
    rspm_laplace_scale,
)
from mechanisms.runner import ExactArgminRelease


def separator_set(d: int) -> tuple[np.ndarray, np.ndarray]:
    """U = {(e_j, +1)} then {(-e_j, +1)}: points (2d, d) and labels (2d,) (SPEC section 4)."""
    eye = np.eye(d)
    return np.vstack([eye, -eye]), np.ones(2 * d, dtype=np.int8)


@dataclass(frozen=True)
class RSPMParams(TargetRecord):
    epsilon: float
    delta: float = 0.0
    noise: Literal["gaussian", "laplace"] = "gaussian"
    margin: float = DEFAULT_MARGIN
    #: ``proven`` (SPEC 10.2) or ``paper`` (SPEC section 4); Laplace RSPM is the same for both.
    calibration: str = "proven"

    def __post_init__(self) -> None:
        check_choice("noise", self.noise, ("gaussian", "laplace"))
        check_calibration(self.calibration, allowed=("proven", "paper"))
        self.hold_target(PrivacyTarget if self.noise == "laplace" else ApproximateTarget)
        check_real("margin", self.margin, "(0, 1)")  # the separator argument (SPEC section 4)


@dataclass(frozen=True)
class RSPMGaussianCalibration(Calibration):
    """sigma of the m = 2d Gaussian separator weights (SPEC sections 4 and 10.2)."""

    m: int
    sigma: float


@dataclass(frozen=True)
class RSPMLaplaceCalibration(Calibration):
    """The Laplace scale 2m / epsilon of the m = 2d separator weights (SPEC section 4)."""

    m: int
    laplace_scale: float


@dataclass(frozen=True)
class RSPMNoise(Noise):
    calibration: RSPMGaussianCalibration | RSPMLaplaceCalibration
    eta: Secret  # (m,): one weight per separator element


@dataclass(frozen=True)
class RSPM(ExactArgminRelease, NoFeatureBound):
    params: RSPMParams
    argmin_of = "RSPM"

    @property
    def name(self) -> str:
        return f"rspm_{self.params.noise}"

    def calibrate(self, d: int) -> RSPMGaussianCalibration | RSPMLaplaceCalibration:
        """The noise scale by the configured calibration, and the (epsilon, delta) proven."""
        p = self.params
        check_shape("d", d)
        m = 2 * d  # the separator set's size (SPEC section 4)
        if p.noise == "laplace":  # pure DP; its proof holds as written (SPEC 10.2)
            return RSPMLaplaceCalibration(
                rule=p.calibration,
                proven_epsilon=p.epsilon,
                proven_delta=p.delta,
                m=m,
                laplace_scale=rspm_laplace_scale(p.target, m),
            )
        if p.calibration == "proven":
            sigma = rspm_gaussian_sigma(p.target, m)
            proven = p.epsilon  # sigma was chosen so that delta(epsilon; sigma) <= delta
        else:
            sigma = rspm_gaussian_sigma_paper(p.target, m)
            proven = rspm_gaussian_epsilon(sigma, p.delta, m=m)
        return RSPMGaussianCalibration(
            rule=p.calibration, proven_epsilon=proven, proven_delta=p.delta, m=m, sigma=sigma
        )

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> RSPMNoise:
        """One weight per separator element (``n`` is not used: the scale does not depend on
        it)."""
        cal = self.calibrate(d)
        if isinstance(cal, RSPMGaussianCalibration):
            eta = rng.normal(0.0, cal.sigma, size=cal.m)
        else:
            eta = rng.laplace(0.0, cal.laplace_scale, size=cal.m)
        return RSPMNoise(cal, Secret(eta))

    def problems(self, rows: MergedRows, noise: RSPMNoise) -> list[Problem]:
        return [rspm_problem(rows, noise.eta.value, margin=self.params.margin, label=self.name)]


def rspm_problem(
    rows: MergedRows, eta: np.ndarray, *, margin: float = DEFAULT_MARGIN, label: str = "rspm"
) -> Problem:
    """sum_i l_i(w) + sum_k eta_k l_{u_k}(w) over {-1, 0, 1}^d as a Problem.

    Every separator example has label +1, so its loss is 1 iff h_w(u_k) = -1: it enters as a
    row with pos weight eta_k and neg weight 0.
    """
    d = rows.d
    points, _ = separator_set(d)
    eta = np.asarray(eta, dtype=float)
    if eta.shape != (2 * d,):
        raise ValueError(
            f"eta must have one weight per separator element (2d = {2 * d}), "
            f"found shape {eta.shape}"
        )
    base = Problem.from_rows(rows, IntegerGrid(d=d, bound=1), margin=margin, label=label)
    return base.with_rows(points, eta, np.zeros(2 * d))
