"""DP-SGD's accounting (SPEC sections 6 and 10.4): events, accountants, noise calibration.

The project's neighbouring relation is replacement (SPEC section 2), as for OPDisc and RSPM, so
n and q = b / n are public. The default accountant, ``"pld_replace_one"``, is dp-accounting's
``PLDAccountant`` with ``NeighboringRelation.REPLACE_ONE`` over
``SelfComposedDpEvent(PoissonSampledDpEvent(q, GaussianDpEvent(z)), T)``: per step the pair
(1-q) N(0, z^2) + q N(-1, z^2) against (1-q) N(0, z^2) + q N(1, z^2), composed T times. Its
Gaussian PLDs are built with ``pessimistic_estimate=True`` and connect-the-dots (the installed
0.6.0's defaults, which ``PLDAccountant`` does not override), and every truncation moves mass to
the infinite loss, so the epsilon it reports is an upper bound for any value discretization
interval; a coarser one only costs noise. ``pld_discretization``: the interval is 1e-3 * the
target epsilon. The older route, ``"rdp_group"`` (``rdp_group_epsilon``: the RDP add/remove
accountant and group privacy), is valid but looser; it stays as a cross-check, and as the
accountant of the repeat-and-select search, which the PLD accountant does not support.
``calibrate_noise_multiplier`` is the smallest z (bisection on log z, to a relative epsilon
precision of 1e-3) whose accounted replace-one epsilon is <= the target. Its bracket is found
from the largest noise multiplier down, so the PLD accountant never runs at a z far below the
answer, where its grid (about one step's loss range / interval buckets) would be huge; a grid
of more than ``MAX_PLD_BUCKETS`` is refused with a ValueError rather than allocated.
"""

from __future__ import annotations

import functools
import math
from typing import Any, Callable

import dp_accounting
import numpy as np
from dp_accounting import dp_event, pld, rdp

from core.validation import check_choice, check_int, check_real, check_result
from mechanisms.privacy import ApproximateTarget, PrivacyTarget

#: Calibration stops once the accounted epsilon is within this fraction below the target.
CALIBRATION_REL_TOL = 1e-3
#: Noise multipliers searched: [_Z_MIN, _Z_MAX].
_Z_MIN, _Z_MAX = 1e-3, 1e6
#: The largest power of two in [_Z_MIN, _Z_MAX]: the PLD calibration's first bracket point.
_Z_TOP = 2.0 ** math.floor(math.log2(_Z_MAX))
#: The most buckets one step's privacy loss may take on the PLD grid (``pld_buckets``): about
#: 2 s and 0.5 GB of accounting. Near a calibrated z it is a few hundred; epsilon = 1e-6
#: bracketed from z = 1 (interval 1e-9) asked for about 1e10 (77 GiB).
MAX_PLD_BUCKETS = 1e6

#: The default accountant: dp_accounting's PLDAccountant, REPLACE_ONE, pessimistic estimate.
PLD_REPLACE_ONE = "pld_replace_one"
#: The cross-check (and repeat-and-select's accountant): RDP add/remove, then group privacy.
RDP_GROUP = "rdp_group"
ACCOUNTANTS = (PLD_REPLACE_ONE, RDP_GROUP)
#: What each accountant is, in a release's claim.
ACCOUNTANT_DESCRIPTIONS = {
    PLD_REPLACE_ONE: "pld_replace_one (dp_accounting.pld.PLDAccountant, REPLACE_ONE, "
    "pessimistic estimate)",
    RDP_GROUP: "rdp_group (dp_accounting.rdp.RdpAccountant, add-or-remove-one, to replace-one "
    "by group privacy)",
}
#: PLD value discretization interval per unit of target epsilon (``pld_discretization``).
PLD_RELATIVE_DISCRETIZATION = 1e-3
#: ``accounted_epsilon``'s PLD discretization when none is given (1e-3 * epsilon at 0.1).
DEFAULT_PLD_DISCRETIZATION = 1e-4


# --- validation of the numbers this module takes ------------------------------------------------


def _check_rate(sampling_rate: Any) -> None:
    check_real("sampling_rate", sampling_rate)
    if sampling_rate > 1:
        raise ValueError(f"sampling_rate must be in (0, 1], found {sampling_rate!r}")


def pld_buckets(
    noise_multiplier: float, sampling_rate: float, value_discretization_interval: float
) -> float:
    """About how many buckets one DP-SGD step's privacy loss takes on the PLD grid (an upper
    estimate): its range over |x| <= 12 z, beyond which dp-accounting truncates the Gaussian,
    divided by the interval.

    Per step the replace-one loss is log((1-q) + q e^(-(2x+1)/(2z^2))) minus the same with
    x -> -x (SPEC 10.4), so its range is at most 2 log((1-q) + q e^((24 z + 1) / (2 z^2))).
    """
    z, q = float(noise_multiplier), float(sampling_rate)
    exponent = (24.0 * z + 1.0) / (2.0 * z * z) if z * z > 0 else math.inf
    log_1mq = math.log1p(-q) if q < 1 else -math.inf
    spread = 2.0 * float(np.logaddexp(log_1mq, math.log(q) + exponent))
    return spread / value_discretization_interval


def _check_pld_grid(
    noise_multiplier: float, sampling_rate: float, value_discretization_interval: float
) -> None:
    buckets = pld_buckets(noise_multiplier, sampling_rate, value_discretization_interval)
    if not buckets <= MAX_PLD_BUCKETS:
        raise ValueError(
            f"PLD accounting at noise_multiplier={noise_multiplier!r}, sampling_rate="
            f"{sampling_rate!r} and value_discretization_interval="
            f"{value_discretization_interval!r} needs about {buckets:.3g} buckets per step, more "
            f"than {MAX_PLD_BUCKETS:g}: the target epsilon is too small (or the noise too small "
            f"for this interval) to account on a grid"
        )


# --- accounting ----------------------------------------------------------------------------------


def dpsgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> dp_event.DpEvent:
    """T self-composed Poisson-subsampled Gaussian steps."""
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
        ),
        steps,
    )


def pld_discretization(target: PrivacyTarget) -> float:
    """The PLD value discretization interval used to calibrate to the ``target``'s epsilon:
    1e-3 * epsilon.

    The reported epsilon is an upper bound at any interval (module docstring); the interval
    sets how much noise the rounding costs and how long accounting takes. A fixed 1e-3 is fine
    near epsilon = 1 but costs 35% more noise at 0.1 on Adult (z = 18.49 against 13.65: the
    per-step losses are far below 1e-3 and each step's rounding adds up over T = 1,226), and a
    fixed 1e-4 takes 3 s per calibration at 1.0. Relative to epsilon, the composed distribution
    has about the same number of buckets at every epsilon. Adult (q = 64/15,682, T = 1,226,
    delta = 1/n^2): the smallest z at this interval against a 30-fold finer one is 13.648 vs
    13.620 at epsilon 0.1 and 1.5324 vs 1.5285 at 1.0 (<= 0.3% more noise);
    ``calibrate_noise_multiplier`` (to 0.1% of epsilon) gives 13.656 / 2.924 / 1.533 at
    0.1 / 0.5 / 1.0 in 0.2 to 0.6 s each.
    """
    epsilon = target.epsilon
    return check_result(
        "pld_discretization", PLD_RELATIVE_DISCRETIZATION * epsilon, epsilon=epsilon
    )


def pld_epsilon(
    event: dp_event.DpEvent, delta: float, value_discretization_interval: float
) -> float:
    """Epsilon at ``delta`` of ``event`` under REPLACE-ONE neighbours, by the PLD accountant.

    Pessimistic (an upper bound; module docstring). Raises dp-accounting's
    ``UnsupportedEventError`` for events it cannot account for replacement (e.g.
    ``RepeatAndSelectDpEvent``), before any composition.
    """
    check_real("value_discretization_interval", value_discretization_interval)
    accountant = pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE,
        value_discretization_interval=value_discretization_interval,
    )
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def rdp_group_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    """Epsilon at ``delta`` of ``event`` under REPLACE-ONE neighbours, by RDP and group privacy.

    dp-accounting's RDP accountant gives the add-or-remove-one guarantee (eps', delta'(eps'))
    of a Poisson-subsampled Gaussian; it has no replace-one accounting for it. Replacing a record
    is removing it and adding another, so by group privacy (eps', delta')-DP under add/remove
    gives (2 eps', (1 + e^eps') delta')-DP under replacement. This returns 2 eps' for the
    smallest eps' (by bisection, to 1e-6) with (1 + e^eps') delta'(eps') <= delta. Valid but
    looser than ``pld_epsilon`` (SPEC 10.4): the cross-check, and the accountant of
    repeat-and-select.
    """
    accountant = rdp.RdpAccountant()
    accountant.compose(event)

    def meets(eps_ar: float) -> bool:
        return (1.0 + math.exp(eps_ar)) * accountant.get_delta(eps_ar) <= delta

    hi = max(float(accountant.get_epsilon(delta / 2.0)), 1e-6)
    while not meets(hi):
        hi *= 2.0
        if hi > 1e4:
            raise ValueError(f"no finite epsilon at delta={delta!r} for this event")
    lo = 0.0
    while hi - lo > 1e-6 * max(hi, 1e-3):
        mid = 0.5 * (lo + hi)
        if meets(mid):
            hi = mid
        else:
            lo = mid
    return 2.0 * hi


def add_or_remove_epsilon(event: dp_event.DpEvent, delta: float) -> float:
    """The RDP accountant's own add-or-remove-one epsilon at ``delta`` (for comparison only)."""
    accountant = rdp.RdpAccountant()
    accountant.compose(event)
    return float(accountant.get_epsilon(delta))


def _check_accountant(accountant: Any) -> None:
    check_choice("accountant", accountant, ACCOUNTANTS)


def _epsilon_of(
    accountant: str, value_discretization_interval: float
) -> Callable[[dp_event.DpEvent, float], float]:
    if accountant == RDP_GROUP:
        return rdp_group_epsilon
    return functools.partial(
        pld_epsilon, value_discretization_interval=value_discretization_interval
    )


def accounted_epsilon(
    noise_multiplier: float,
    sampling_rate: float,
    steps: int,
    delta: float,
    *,
    accountant: str = PLD_REPLACE_ONE,
    value_discretization_interval: float = DEFAULT_PLD_DISCRETIZATION,
) -> float:
    """Replace-one epsilon of T DP-SGD steps with noise multiplier z and rate q, at ``delta``.

    ``value_discretization_interval`` is the PLD's (ignored by ``"rdp_group"``); pass
    ``pld_discretization(target)`` to reproduce a calibration's own number.
    """
    check_real("noise_multiplier", noise_multiplier)
    _check_rate(sampling_rate)
    check_int("steps", steps)
    check_real("delta", delta, "(0, 1)")  # the delta the epsilon is accounted at (a query)
    _check_accountant(accountant)
    if accountant == PLD_REPLACE_ONE:
        check_real("value_discretization_interval", value_discretization_interval)
        _check_pld_grid(noise_multiplier, sampling_rate, value_discretization_interval)
    epsilon_of = _epsilon_of(accountant, value_discretization_interval)
    return epsilon_of(dpsgd_event(noise_multiplier, sampling_rate, steps), delta)


def calibrate_noise_multiplier(
    target: ApproximateTarget,
    sampling_rate: float,
    steps: int,
    *,
    accountant: str = PLD_REPLACE_ONE,
) -> float:
    """The smallest z whose accounted replace-one epsilon at the ``target``'s delta is <= its
    epsilon, to within 0.1%.

    The PLD accountant runs at ``pld_discretization(target)``. Cached on the scalar arguments
    (a sweep calibrates the same (epsilon, delta, q, T) once per run).
    """
    _check_rate(sampling_rate)
    check_int("steps", steps)
    _check_accountant(accountant)
    return _calibrated_noise_multiplier(target, float(sampling_rate), int(steps), accountant)


@functools.lru_cache(maxsize=1024)
def _calibrated_noise_multiplier(
    target: ApproximateTarget, sampling_rate: float, steps: int, accountant: str
) -> float:
    epsilon, delta = target.epsilon, target.delta
    interval = pld_discretization(target)

    def make_event(z: float) -> dp_event.DpEvent:
        if accountant == PLD_REPLACE_ONE:
            _check_pld_grid(z, sampling_rate, interval)
        return dpsgd_event(z, sampling_rate, steps)

    # PLD: bracket from the top, where its grid is smallest (module docstring); RDP costs the
    # same at every z, and from z = 1 takes fewer steps
    start = _Z_TOP if accountant == PLD_REPLACE_ONE else 1.0
    return calibrate(
        make_event, epsilon, delta, epsilon_of=_epsilon_of(accountant, interval), start=start
    )


def calibrate(
    make_event: Callable[[float], dp_event.DpEvent],
    epsilon: float,
    delta: float,
    *,
    epsilon_of: Callable[[dp_event.DpEvent, float], float],
    rel_tol: float = CALIBRATION_REL_TOL,
    start: float = 1.0,
) -> float:
    """Bisection on log z for the smallest z with epsilon_of(make_event(z), delta) <= epsilon.

    Assumes epsilon decreases with z (more noise, more privacy). The bracket is [p / 2, p] for
    the smallest power of two p with epsilon <= the target, found by doubling or halving from
    ``start`` (a power of two): with epsilon monotone, every start gives the same bracket, so
    ``start`` changes only which z are evaluated on the way. The returned z always meets the
    target; the search stops once its epsilon is within ``rel_tol`` of the target, or once the
    bracket is too narrow to matter (epsilon is then as close as the accountant allows).
    """

    def eps(z: float) -> float:
        return epsilon_of(make_event(z), delta)

    hi = start
    eps_hi = eps(hi)
    while eps_hi > epsilon:
        hi *= 2.0
        if hi > _Z_MAX:
            raise ValueError(
                f"no noise multiplier <= {hi / 2:g} reaches epsilon={epsilon!r} at delta={delta!r}"
            )
        eps_hi = eps(hi)
    lo = hi / 2.0
    eps_lo = eps(lo)
    while eps_lo <= epsilon:  # the target is loose: z below 1 suffices
        hi, eps_hi, lo = lo, eps_lo, lo / 2.0
        if lo < _Z_MIN:
            raise ValueError(
                f"epsilon={epsilon!r} is reached by any noise multiplier >= "
                f"{_Z_MIN:g}: nothing to calibrate"
            )
        eps_lo = eps(lo)
    while eps_hi < (1.0 - rel_tol) * epsilon and hi / lo > 1.0 + 1e-9:
        mid = math.sqrt(lo * hi)
        eps_mid = eps(mid)
        if eps_mid <= epsilon:
            hi, eps_hi = mid, eps_mid
        else:
            lo = mid
    return hi
