"""ExpMech-ERM over an enumerable grid (Smith and Ullman's notes, Algorithm 1).

Pr[w] proportional to exp(-epsilon L(D, w) / 2) over the grid, with L the unnormalized 0/1 loss,
whose sensitivity under replacement of one example is 1 (SPEC section 2). This is the notes'
exp(-epsilon n L_hat / (2 Delta)) with L_hat = L / n and Delta = 1. It is (epsilon, 0)-DP for any
grid fixed in advance, with no oracle. It is the information-theoretic reference that OPDisc is
"comparable in generality" to, and is usable wherever the grid can be enumerated.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from core.objective import DEFAULT_MARGIN, MergedRows, check_data
from core.problem import IntegerGrid, Problem
from mechanisms.opdisc import opdisc_domain
from mechanisms.privacy import PrivacyTarget, TargetRecord
from mechanisms.release import PrivacyClaim, Release, check_rng
from oracles.enumerate import DEFAULT_MAX_POINTS, all_objectives

#: Sensitivity of the unnormalized 0/1 loss under replacement of one example (SPEC section 2).
SENSITIVITY = 1.0


@dataclass(frozen=True)
class ExpMechParams(TargetRecord):
    epsilon: float
    #: The grid: OPDisc's W_tau with these parameters (SPEC section 3 defaults when None).
    tau: float = 1.0
    B: float | None = None
    D: float | None = None
    margin: float = DEFAULT_MARGIN
    max_points: int = DEFAULT_MAX_POINTS

    def __post_init__(self) -> None:
        self.hold_target(PrivacyTarget)  # pure epsilon-DP


def run_expmech(
    X: np.ndarray, y: np.ndarray, params: ExpMechParams, rng: np.random.Generator
) -> Release:
    """Sample w from the exponential mechanism over the grid."""
    X, y = check_data(X, y)
    rng = check_rng(rng)
    start = time.perf_counter()
    rows = MergedRows.from_xy(X, y)
    domain: IntegerGrid
    domain, _ = opdisc_domain(rows.d, params.tau, params.B, params.D)
    if domain.size_upper_bound > params.max_points:
        raise ValueError(
            f"the grid has up to {domain.size_upper_bound} points, more than max_points="
            f"{params.max_points}: the exponential mechanism needs an enumerable grid"
        )
    W, losses = all_objectives(Problem.from_rows(rows, domain, margin=params.margin))
    logits = -params.epsilon * losses / (2.0 * SENSITIVITY)
    probs = np.exp(logits - logits.max())
    probs /= probs.sum()
    w = W[rng.choice(len(W), p=probs)]
    claim = PrivacyClaim(
        params.epsilon,
        0.0,
        True,
        "exponential mechanism over a data-independent grid (exact sampling)",
        requested_epsilon=params.epsilon,
        requested_delta=0.0,
    )
    return Release(
        mechanism="expmech",
        w=w,
        privacy=claim,
        noise={"grid_size": len(W), "sensitivity": SENSITIVITY},
        params={"epsilon": params.epsilon, "tau": params.tau, "B": params.B, "D": params.D},
        timings={"total": time.perf_counter() - start},
        margin=params.margin,
    )
