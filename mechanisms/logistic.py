"""Non-private logistic regression without intercept: a reference beside the private mechanisms
(SPEC section 7).

    w* = argmin_w (1/n) sum_i log(1 + exp(-y_i <w, x_i>)) + (l2 / 2) ||w||^2

solved by scipy's L-BFGS on the exact loss (``logaddexp``, analytic gradient). No intercept: on
Adult the one-hot groups carry it. Accuracy is measured, as everywhere, with the threshold rule
of SPEC section 2 (``core.objective.predict``): on the paper's Adult instance this reaches
training accuracy about 0.788 (SPEC section 1).

The release is not private: its claim is epsilon = inf, delta = 0, holds = False.
"""

from __future__ import annotations

import math
import time
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
from scipy.optimize import minimize
from scipy.special import expit

from core.objective import DEFAULT_MARGIN, check_data
from core.validation import check_int, check_real, check_type
from mechanisms.release import PrivacyClaim, Release, check_rng

NON_PRIVATE = "non-private reference (SPEC section 7)"


@dataclass(frozen=True)
class LogisticParams:
    """``l2`` >= 0 is the ridge weight; ``tol`` L-BFGS's gradient tolerance."""

    l2: float = 0.0
    tol: float = 1e-10
    max_iter: int = 10_000
    margin: float = DEFAULT_MARGIN

    def __post_init__(self) -> None:
        check_real("l2", self.l2, ">= 0")
        check_real("tol", self.tol)
        check_real("margin", self.margin)
        check_int("max_iter", self.max_iter)


def logistic_loss(w: np.ndarray, X: np.ndarray, y: np.ndarray, l2: float = 0.0) -> float:
    """(1/n) sum_i log(1 + exp(-y_i <w, x_i>)) + (l2 / 2) ||w||^2."""
    return float(np.logaddexp(0.0, -y * (X @ w)).mean() + 0.5 * l2 * (w @ w))


def _value_and_gradient(w, X, y, l2):
    margins = y * (X @ w)
    value = np.logaddexp(0.0, -margins).mean() + 0.5 * l2 * (w @ w)
    gradient = -(X.T @ (y * expit(-margins))) / len(y) + l2 * w
    return value, gradient


def run_logistic(
    X: Any, y: Any, params: LogisticParams | None = None, rng: np.random.Generator | None = None
) -> Release:
    """Fit w*; ``rng`` is accepted for the mechanisms' common signature and not used."""
    X, y = check_data(X, y)
    params = LogisticParams() if params is None else params
    check_type("params", params, LogisticParams)
    if rng is not None:
        check_rng(rng)
    start = time.perf_counter()
    yf = y.astype(float)
    result = minimize(
        _value_and_gradient,
        np.zeros(X.shape[1]),
        args=(X, yf, params.l2),
        jac=True,
        method="L-BFGS-B",
        options={"maxiter": params.max_iter, "gtol": params.tol, "ftol": 1e-15},
    )
    seconds = time.perf_counter() - start
    gradient_norm = float(np.abs(result.jac).max())
    return Release(
        mechanism="logistic_regression",
        w=result.x,
        privacy=PrivacyClaim(math.inf, 0.0, False, NON_PRIVATE),
        params={
            **asdict(params),
            "iterations": int(result.nit),
            "loss": float(result.fun),
            "gradient_max_abs": gradient_norm,
            "converged": bool(result.success),
            "solver_message": str(result.message),
        },
        timings={"fit": seconds, "total": seconds},
        margin=params.margin,
    )


def fit_logistic(
    X: Any,
    y: Any,
    l2: float = 0.0,
    *,
    tol: float = 1e-10,
    max_iter: int = 10_000,
    margin: float = DEFAULT_MARGIN,
) -> Release:
    """``run_logistic`` with the parameters as keywords."""
    return run_logistic(X, y, LogisticParams(l2=l2, tol=tol, max_iter=max_iter, margin=margin))


__all__ = ["NON_PRIVATE", "LogisticParams", "fit_logistic", "logistic_loss", "run_logistic"]
