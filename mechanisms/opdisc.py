"""OPDisc: objective perturbation over a discrete domain (paper, Algorithm 1; SPEC section 3).

Domain W_tau = { w in tau Z^d : |w_j| <= B, ||w||_2 <= D }, normalization
pi(w) = (w, sqrt(D^2 - ||w||^2)) / D, and the release

    argmin_{w in W_tau}  L(D, w) - <eta, pi(w)>,      eta ~ N(0, sigma^2)^(d+1),
    sigma = 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon),   G = 1/tau.

(epsilon, delta)-DP holds only if the argmin is exact: the release records whether the oracle
certified it (SPEC section 8). The non-private reference is the same argmin with eta = 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from mechanisms.base import PrivacyClaim, Release, check_epsilon_delta
from oracles.base import IntegerGrid, Problem, Solution
from mechanisms.runner import exact_argmin_release
from oracles.objective import DEFAULT_MARGIN, MergedRows


def opdisc_sigma(epsilon: float, delta: float, tau: float, D: float) -> float:
    """sigma = 7 G D^2 sqrt(ln(1/delta)) / (tau epsilon) with G = 1/tau (SPEC section 3).

    Algorithm 1's value (not Lemma 3's G^2, nor the appendix's extra 2): the proof of Lemma 4
    needs a shift of norm 4 G D^2 / tau, and 3.5 x that x sqrt(ln(1/delta)) / epsilon is this.
    Adult, epsilon = 1, delta = 1/n^2, tau = 1, D^2 = 23: about 708.
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    if not (tau > 0 and D > 0):
        raise ValueError(f"tau and D must be > 0, found tau={tau!r}, D={D!r}")
    G = 1.0 / tau  # Lipschitz constant of the 0/1 loss over W_tau (SPEC section 3)
    return 7.0 * G * D**2 * math.sqrt(math.log(1.0 / delta)) / (tau * epsilon)


def opdisc_domain(d: int, tau: float = 1.0, B: float | None = None, D: float | None = None):
    """W_tau with the paper's defaults D = sqrt(d), B = floor(sqrt(d)) (SPEC section 3)."""
    D = math.sqrt(d) if D is None else float(D)
    B = math.floor(math.sqrt(d)) if B is None else B
    bound = int(math.floor(B / tau + 1e-9))
    if bound < 1:
        raise ValueError(f"B / tau must be >= 1, found B={B!r}, tau={tau!r}")
    return IntegerGrid(d=d, bound=bound, step=tau, norm_sq_max=D * D), D


@dataclass(frozen=True)
class OPDiscParams:
    """Privacy and domain parameters of OPDisc. ``B`` and ``D`` default to the paper's."""

    epsilon: float
    delta: float
    tau: float = 1.0
    B: float | None = None
    D: float | None = None
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta, allow_zero_delta=False)
        if not (math.isfinite(self.tau) and self.tau > 0):
            raise ValueError(f"tau must be finite and > 0, found {self.tau!r}")
        for name in ("B", "D"):
            value = getattr(self, name)
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"{name} must be > 0 or None, found {value!r}")
        if not (math.isfinite(self.margin) and self.margin > 0):
            raise ValueError(f"margin must be > 0, found {self.margin!r}")


@dataclass(frozen=True)
class OPDisc:
    """OPDisc as three steps (mechanisms.runner): draw eta, build the one problem, release."""

    params: OPDiscParams
    name: str = "opdisc"

    def calibrate(self, n: int, d: int) -> dict[str, float]:
        domain, D = opdisc_domain(d, self.params.tau, self.params.B, self.params.D)
        sigma = opdisc_sigma(self.params.epsilon, self.params.delta, self.params.tau, D)
        return {"sigma": sigma, "D": D, "B": domain.bound * domain.step, "tau": domain.step}

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> dict[str, Any]:
        cal = self.calibrate(n, d)
        return {**cal, "eta": rng.normal(0.0, cal["sigma"], size=d + 1)}

    def problems(self, rows: MergedRows, noise: dict[str, Any]) -> list[Problem]:
        return [opdisc_problem(rows, noise["eta"], self.params, label=self.name)]

    def finish(
        self,
        rows: MergedRows,
        noise: dict[str, Any],
        solutions: Sequence[Solution],
        rng: np.random.Generator,
        timings: dict[str, float],
    ) -> Release:
        return exact_argmin_release(self.name, self.params, noise, solutions, timings,
                                    needs="OPDisc needs the exact argmin")


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
        rows, domain, linear=-eta[:d] / D, norm_coef=float(-eta[d] / D),
        norm_radius_sq=D * D, margin=params.margin, label=label,
    )  # fmt: skip


@dataclass(frozen=True)
class ExactERM:
    """Non-private reference: the exact 0/1 ERM over the same W_tau (OPDisc with eta = 0)."""

    tau: float = 1.0
    B: float | None = None
    D: float | None = None
    margin: float = DEFAULT_MARGIN
    name: str = "erm_01"

    def draw_noise(self, rng: np.random.Generator, n: int, d: int) -> dict[str, Any]:
        return {}

    def problems(self, rows: MergedRows, noise: dict[str, Any]) -> list[Problem]:
        domain, _ = opdisc_domain(rows.d, self.tau, self.B, self.D)
        return [Problem.from_rows(rows, domain, margin=self.margin, label=self.name)]

    def finish(self, rows, noise, solutions, rng, timings) -> Release:
        (solution,) = solutions
        claim = PrivacyClaim(math.inf, 0.0, False, "non-private reference (SPEC section 7)")
        return Release(
            mechanism=self.name, w=solution.w, privacy=claim,
            params={"tau": self.tau, "B": self.B, "D": self.D},
            certificates=(solution.certificate,),
            timings=timings | {"total": sum(timings.values())}, margin=self.margin,
        )  # fmt: skip
