"""OPDisc: objective perturbation over a discrete domain (paper, Algorithm 1; SPEC section 3).

Domain W_tau = { w in tau Z^d : |w_j| <= B, ||w||_2 <= D }, normalization
pi(w) = (w, sqrt(D^2 - ||w||^2)) / D, and the release

    argmin_{w in W_tau}  L(D, w) - <eta, pi(w)>,      eta ~ N(0, sigma^2)^(d+1),
    sigma: the smallest with SPEC 10.1's delta(epsilon; sigma) <= delta (default).

sigma is calibrated by ``calibration``: ``proven`` (default) is SPEC 10.1's, whose proof is
written out there; ``paper`` is Algorithm 1's 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon) and
``paper_code`` half of it (what the paper's published code ran). Their proofs fall short, so a
release made with them records the epsilon SPEC 10.1 proves for that sigma at the same delta,
never the requested one (mechanisms.opdisc_calibration).

(epsilon, delta)-DP holds only if the argmin is exact: the release records whether the oracle
certified it (SPEC section 8). The non-private reference is the same argmin with eta = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from core.objective import DEFAULT_MARGIN, MergedRows
from core.problem import IntegerGrid, Problem
from core.validation import check_real, check_result, check_shape
from mechanisms.bounds import NoFeatureBound
from mechanisms.calibration import check_calibration
from mechanisms.opdisc_calibration import opdisc_epsilon, opdisc_sigma, opdisc_sigma_paper
from mechanisms.privacy import TargetRecord
from mechanisms.release import Calibration, Noise, PrivacyClaim, Release, Secret
from mechanisms.runner import ExactArgminRelease


def opdisc_domain(d: int, tau: float = 1.0, B: float | None = None, D: float | None = None):
    """W_tau with the paper's defaults D = sqrt(d), B = floor(sqrt(d)) (SPEC section 3)."""
    check_shape("d", d)
    D = math.sqrt(d) if D is None else float(D)
    B = math.floor(math.sqrt(d)) if B is None else B
    check_result("D^2", D * D, D=D)
    bound = int(math.floor(check_result("B / tau", B / tau, B=B, tau=tau) + 1e-9))
    if bound < 1:
        raise ValueError(f"B / tau must be >= 1, found B={B!r}, tau={tau!r}")
    return IntegerGrid(d=d, bound=bound, step=tau, norm_sq_max=D * D), D


@dataclass(frozen=True)
class OPDiscParams(TargetRecord):
    """Privacy and domain parameters of OPDisc. ``B`` and ``D`` default to the paper's."""

    epsilon: float
    delta: float
    tau: float = 1.0
    B: float | None = None
    D: float | None = None
    margin: float = DEFAULT_MARGIN
    #: ``proven`` (SPEC 10.1), ``paper`` (Algorithm 1) or ``paper_code`` (half of it).
    calibration: str = "proven"

    def __post_init__(self) -> None:
        self.hold_target()  # (epsilon, delta), delta > 0: the Gaussian noise
        check_calibration(self.calibration)
        check_real("tau", self.tau)
        for name in ("B", "D"):
            if getattr(self, name) is not None:  # None: the paper's default (SPEC section 3)
                check_real(name, getattr(self, name))
        check_real("margin", self.margin)


@dataclass(frozen=True)
class OPDiscCalibration(Calibration):
    """sigma and the domain it was calibrated for (D, B, tau; SPEC sections 3 and 10.1)."""

    sigma: float
    D: float
    B: float
    tau: float


@dataclass(frozen=True)
class OPDiscNoise(Noise):
    calibration: OPDiscCalibration
    eta: Secret  # (d + 1,): N(0, sigma^2) each


@dataclass(frozen=True)
class OPDisc(ExactArgminRelease, NoFeatureBound):
    """OPDisc as three steps (mechanisms.runner): draw eta, build the one problem, release."""

    params: OPDiscParams
    name: str = "opdisc"
    argmin_of = "OPDisc"

    def calibrate(self, d: int) -> OPDiscCalibration:
        """sigma by the configured calibration, and the (epsilon, delta) proven for it."""
        p = self.params
        domain, D = opdisc_domain(d, p.tau, p.B, p.D)
        tau = domain.step
        if p.calibration == "proven":
            sigma = opdisc_sigma(p.target, d=d, D=D, tau=tau)
            proven = p.epsilon  # sigma was chosen so that delta(epsilon; sigma) <= delta
        else:
            sigma = opdisc_sigma_paper(p.target, tau, D)
            if p.calibration == "paper_code":
                sigma /= 2.0  # the paper's published code divides Algorithm 1's sigma by 2
            proven = opdisc_epsilon(sigma, p.delta, d=d, D=D, tau=tau)
        return OPDiscCalibration(
            rule=p.calibration,
            proven_epsilon=proven,
            proven_delta=p.delta,
            sigma=sigma,
            D=D,
            B=domain.bound * domain.step,
            tau=tau,
        )

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> OPDiscNoise:
        """eta ~ N(0, sigma^2)^(d+1) (``n`` is not used: sigma does not depend on it)."""
        cal = self.calibrate(d)
        return OPDiscNoise(cal, Secret(rng.normal(0.0, cal.sigma, size=d + 1)))

    def problems(self, rows: MergedRows, noise: OPDiscNoise) -> list[Problem]:
        return [opdisc_problem(rows, noise.eta.value, self.params, label=self.name)]


def opdisc_problem(
    rows: MergedRows, eta: np.ndarray, params: OPDiscParams, *, label: str = "opdisc"
) -> Problem:
    """min over W_tau of L(D, w) - <eta, pi(w)> as a Problem (SPEC section 3).

    <eta, pi(w)> = <eta[:d], w> / D + eta[d] sqrt(D^2 - ||w||^2) / D, so linear = -eta[:d] / D
    and norm_coef = -eta[d] / D: the norm term is encoded exactly for either sign of eta[d].
    """
    d = rows.d
    domain, D = opdisc_domain(d, params.tau, params.B, params.D)
    eta = np.asarray(eta, dtype=float)
    if eta.shape != (d + 1,):
        raise ValueError(f"eta must have length d + 1 = {d + 1}, found {eta.shape}")
    return Problem.from_rows(
        rows,
        domain,
        linear=-eta[:d] / D,
        norm_coef=float(-eta[d] / D),
        norm_radius_sq=D * D,
        margin=params.margin,
        label=label,
    )


@dataclass(frozen=True)
class ExactERM(NoFeatureBound):
    """Non-private reference: the exact 0/1 ERM over the same W_tau (OPDisc with eta = 0)."""

    tau: float = 1.0
    B: float | None = None
    D: float | None = None
    margin: float = DEFAULT_MARGIN
    name: str = "erm_01"

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> None:
        return None  # no noise: the non-private reference

    def problems(self, rows: MergedRows, noise: None) -> list[Problem]:
        domain, _ = opdisc_domain(rows.d, self.tau, self.B, self.D)
        return [Problem.from_rows(rows, domain, margin=self.margin, label=self.name)]

    def finish(self, rows, noise, solutions, rng, timings) -> Release:
        (solution,) = solutions
        claim = PrivacyClaim(math.inf, 0.0, False, "non-private reference (SPEC section 7)")
        return Release(
            mechanism=self.name,
            w=solution.w,
            privacy=claim,
            params={"tau": self.tau, "B": self.B, "D": self.D},
            certificates=(solution.certificate,),
            timings=timings | {"total": sum(timings.values())},
            margin=self.margin,
        )
