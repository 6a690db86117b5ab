"""OPSamp's calibration (SPEC sections 5 and 10.3): gamma and the number of oracle calls m, the
stability step eta, the l1 sensitivity bound lambda of the averaged output and the epsilon a
Laplace scale proves for it. Closed forms: no root search.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from core.validation import check_int, check_not_both, check_real, check_result, check_shape
from mechanisms.calibration import LOG_MAX, check_calibration
from mechanisms.privacy import ApproximateTarget, PrivacyTarget


@dataclass(frozen=True)
class OPSampLambda:
    """lambda = sampling + stability + oracle, the l1 sensitivity bound of OPSamp's average.

    ``sampling`` is 2 d D_inf gamma (SPEC 10.3; the paper's 4 D_inf gamma bounds l_inf only),
    ``stability`` 250 eta G d^2 D_inf^2 and ``oracle`` alpha / (10 G) (SPEC section 5).
    """

    sampling: float
    stability: float
    oracle: float

    @property
    def total(self) -> float:
        return self.sampling + self.stability + self.oracle


def opsamp_m_floor(delta: float, d: int = 1) -> int:
    """The fewest oracle calls m with gamma = sqrt(ln(4d / delta) / (2m)) <= 1: ceil(ln(4d /
    delta) / 2). Lemma 9 needs gamma <= 1 (SPEC section 5); d = 1 gives the floor for every d."""
    return max(math.ceil(0.5 * (math.log(4 * d) - math.log(delta))), 1)


def _m_floor_reason(delta: float, d: int | None) -> str:
    where = f"d={d}, delta={delta!r}" if d is not None else f"delta={delta!r} and any d"
    return (
        f"so that gamma = sqrt(ln(4d / delta) / (2m)) <= 1, which Lemma 9 needs (SPEC "
        f"section 5), at {where}"
    )


def check_opsamp_m(m: int, delta: float, d: int | None = None) -> None:
    """m an integer >= ``opsamp_m_floor(delta, d)`` (d None: the floor for every d)."""
    check_shape("m", m)
    check_int("m", m, opsamp_m_floor(delta, 1 if d is None else d), why=_m_floor_reason(delta, d))


def opsamp_gamma_m(
    target: ApproximateTarget,
    n: int,
    d: int,
    D_inf: float,
    *,
    gamma: float | None = None,
    m: int | None = None,
) -> tuple[float, float, int]:
    """(gamma_raw, gamma, m) at the ``target`` (epsilon, delta): the paper's gamma capped at 1,
    or the one a user chose.

    m = ceil(ln(4d / delta) / (2 gamma^2)) (SPEC section 5). A user may give gamma in (0, 1]
    (m follows) or m (gamma = sqrt(ln(4d / delta) / (2 m)), the smallest gamma that m calls
    support): a smaller gamma buys a smaller lambda with more oracle calls (SPEC 10.3). Lemma 9
    needs gamma <= 1, so a given m below ``opsamp_m_floor(delta, d)`` is refused, as gamma > 1
    is. m is decreasing in gamma and increasing in d and in 1 / delta.
    """
    epsilon, delta = target.epsilon, target.delta
    check_shape("n", n)
    check_shape("d", d)
    check_real("D_inf", D_inf)
    check_not_both("gamma", gamma, "m", m)
    D_2 = float(D_inf) * math.sqrt(d)
    # gamma_raw = sqrt(epsilon / n) d^(5/4) sqrt(D_2), as a log so that nothing overflows
    log_gamma_raw = (
        0.5 * (math.log(epsilon) - math.log(n)) + 1.25 * math.log(d) + 0.5 * math.log(D_2)
    )
    gamma_raw = math.exp(log_gamma_raw) if log_gamma_raw < LOG_MAX else math.inf
    check_result(
        "gamma_raw = sqrt(epsilon / n) d^(5/4) sqrt(D_2)",
        gamma_raw,
        epsilon=epsilon,
        n=n,
        d=d,
        D_inf=D_inf,
    )
    log_term = math.log(4 * d) - math.log(delta)  # ln(4d / delta)
    if m is not None:
        check_opsamp_m(m, delta, d)
        return gamma_raw, math.sqrt(log_term / (2 * m)), int(m)
    if gamma is None:
        gamma = min(gamma_raw, 1.0)  # Lemma 9 needs gamma <= 1
    check_real("gamma", gamma, "(0, 1]")
    calls = log_term / (2 * gamma) / gamma  # gamma^2 can underflow to 0 where gamma is not
    if not calls <= 2**53:
        raise ValueError(
            f"m = ln(4d / delta) / (2 gamma^2) = {calls:.3g} oracle calls at "
            f"gamma={gamma!r}, delta={delta!r}, d={d}: more than 2**53"
        )
    return gamma_raw, gamma, math.ceil(calls)


def opsamp_eta(
    target: PrivacyTarget, n: int, d: int, *, G: float, beta: float, D_inf: float
) -> float:
    """eta = sqrt(D_2 sqrt(2d) epsilon / (250 G^2 d^2 D_inf^2 (1 + ln(2/beta)) n)) (SPEC 5), at
    the ``target``'s epsilon.

    Increasing in epsilon, decreasing in n and G.
    """
    check_shape("n", n)
    check_shape("d", d)
    check_real("G", G)
    check_real("beta", beta, "(0, 1)")
    check_real("D_inf", D_inf)
    epsilon, n, d, G, beta, D_inf = (
        target.epsilon,
        int(n),
        int(d),
        float(G),
        float(beta),
        float(D_inf),
    )
    D_2 = D_inf * math.sqrt(d)
    # divided one factor at a time, G out of the root: no product in a denominator can
    # underflow to 0 (D_inf = 1e-200 squared) where its factors are not
    eta = (
        math.sqrt(
            D_2
            * math.sqrt(2 * d)
            * epsilon
            / 250
            / d**2
            / D_inf
            / D_inf
            / (1 + math.log(2 / beta))
            / n
        )
        / G
    )
    return check_result("eta", eta, epsilon=epsilon, n=n, d=d, G=G, beta=beta, D_inf=D_inf)


def opsamp_lambda(
    d: int,
    *,
    gamma: float,
    eta: float,
    G: float,
    D_inf: float,
    alpha: float,
    calibration: str = "proven",
) -> OPSampLambda:
    """lambda's three terms. 'proven': sampling = 2 d D_inf gamma (SPEC 10.3). 'paper': the
    paper's 4 D_inf gamma, which bounds ||v||_inf, not the ||v||_1 the Laplace step needs.

    Increasing in gamma, eta and alpha.
    """
    check_shape("d", d)
    check_real("gamma", gamma, "(0, 1]")
    check_real("eta", eta)
    check_real("G", G)
    check_real("D_inf", D_inf)
    check_real("alpha", alpha, ">= 0")
    check_calibration(calibration, allowed=("proven", "paper"))
    d, gamma, eta, G, D_inf, alpha = (
        int(d),
        float(gamma),
        float(eta),
        float(G),
        float(D_inf),
        float(alpha),
    )
    sampling = 2 * d * D_inf * gamma if calibration == "proven" else 4 * D_inf * gamma
    terms = OPSampLambda(
        sampling=sampling, stability=250 * eta * G * d**2 * (D_inf * D_inf), oracle=alpha / (10 * G)
    )
    inputs = dict(d=d, gamma=gamma, eta=eta, G=G, D_inf=D_inf, alpha=alpha)
    check_result("lambda's sampling term", terms.sampling, **inputs)
    check_result("lambda's stability term", terms.stability, **inputs)
    check_result("lambda", terms.total, **inputs)  # the oracle term is finite and >= 0 too
    return terms


def opsamp_epsilon(laplace_scale: float, proven_lambda: float) -> float:
    """The epsilon a Laplace scale proves for an l1 sensitivity bound: lambda / scale (SPEC 10.3).

    The delta is unchanged: it is the probability that the bound fails (SPEC section 5).
    Decreasing in the scale.
    """
    check_real("laplace_scale", laplace_scale)
    check_real("proven_lambda", proven_lambda)
    return check_result(
        "epsilon",
        float(proven_lambda) / float(laplace_scale),
        laplace_scale=laplace_scale,
        proven_lambda=proven_lambda,
    )
