"""DP-SGD logistic regression: the paper's private baseline (SPEC section 6; Abadi et al. 2016).

Loss log(1 + exp(-y <w, x>)), no intercept. Each of T steps:

    B_t      = Poisson sample of the rows, each kept with probability q = b / n
    g_i      = grad of the loss at w_t for i in B_t, clipped:  g_i * min(1, C / ||g_i||_2)
    w_{t+1}  = w_t - lr * (sum_{i in B_t} g_i + N(0, (z C)^2 I_d)) / b

normalized by the EXPECTED batch size b (so the noisy sum's sensitivity stays C). The output is
the average of the iterates w_1..w_T (post-processing).

Accounting (SPEC section 10.4): the project's neighbouring relation is replacement (SPEC
section 2), as for OPDisc and RSPM, so n and q = b / n are public. The default accountant,
``"pld_replace_one"``, is dp-accounting's ``PLDAccountant`` with
``NeighboringRelation.REPLACE_ONE`` over ``SelfComposedDpEvent(PoissonSampledDpEvent(q,
GaussianDpEvent(z)), T)``: per step the pair (1-q) N(0, z^2) + q N(-1, z^2) against
(1-q) N(0, z^2) + q N(1, z^2), composed T times. Its Gaussian PLDs are built with
``pessimistic_estimate=True`` and connect-the-dots (the installed 0.6.0's defaults, which
``PLDAccountant`` does not override), and every truncation moves mass to the infinite loss, so
the epsilon it reports is an upper bound for any value discretization interval; a coarser one
only costs noise. ``pld_discretization``: the interval is 1e-3 * the target epsilon (Adult, see
the measurements there). The older route, ``"rdp_group"`` (``rdp_group_epsilon``: the RDP
add/remove accountant and group privacy), is valid but looser; it stays as a cross-check, and as
the accountant of the repeat-and-select search, which the PLD accountant does not support.
``calibrate_noise_multiplier`` is the smallest z (bisection on log z, to a relative epsilon
precision of 1e-3) whose accounted replace-one epsilon is <= the target.

Hyperparameters (C, b, lr) are chosen per (epsilon, delta) by grid search, as in the paper
(``tune_dpsgd``). Selecting by training accuracy reads the private data: that mode warns
(``PrivacyLeakWarning``) and its release says the guarantee does not hold. The accounted mode
runs Papernot & Steinke's repeat-and-select (ICLR 2022; dp-accounting's
``RepeatAndSelectDpEvent``): a random number K of runs, each with a candidate drawn uniformly
from the grid and a noisy score, and the best noisy score wins; the budget covers all of it.
"""

from __future__ import annotations

import functools
import itertools
import math
import time
from dataclasses import asdict, dataclass
from typing import Any, Callable, Sequence

import dp_accounting
import numpy as np
from dp_accounting import dp_event, pld, rdp
from scipy.special import expit

from mechanisms.base import (
    PrivacyClaim,
    PrivacyError,
    Release,
    check_data,
    check_epsilon_delta,
    check_rng,
    warn_data_dependent,
)
from oracles.objective import predict

#: Epochs when neither ``epochs`` nor ``steps`` is given.
DEFAULT_EPOCHS = 5.0
#: Calibration stops once the accounted epsilon is within this fraction below the target.
CALIBRATION_REL_TOL = 1e-3
#: Noise multipliers searched: [_Z_MIN, _Z_MAX].
_Z_MIN, _Z_MAX = 1e-3, 1e6

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
}  # fmt: skip
#: PLD value discretization interval per unit of target epsilon (``pld_discretization``).
PLD_RELATIVE_DISCRETIZATION = 1e-3
#: ``accounted_epsilon``'s PLD discretization when none is given (1e-3 * epsilon at 0.1).
DEFAULT_PLD_DISCRETIZATION = 1e-4


# --- validation of the numbers this module takes ------------------------------------------------


def _check_real(name: str, value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a real number, found {value!r}")
    if not (math.isfinite(value) and value > 0):
        raise ValueError(f"{name} must be finite and > 0, found {value!r}")


def _check_int(name: str, value: Any, minimum: int = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an integer, found {value!r}")
    if value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, found {value!r}")


def _check_rate(sampling_rate: Any) -> None:
    _check_real("sampling_rate", sampling_rate)
    if sampling_rate > 1:
        raise ValueError(f"sampling_rate must be in (0, 1], found {sampling_rate!r}")


# --- parameters ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class DPSGDParams:
    """A DP-SGD run's privacy target and hyperparameters.

    Give ``epochs`` (T = ceil(epochs * n / batch_size)) or ``steps`` (T), not both; neither
    means ``DEFAULT_EPOCHS``. delta must be > 0 (the Gaussian mechanism has no pure epsilon).
    """

    epsilon: float
    delta: float
    clip_norm: float = 1.0
    batch_size: int = 64
    learning_rate: float = 2.0
    epochs: float | None = None
    steps: int | None = None

    def __post_init__(self) -> None:
        check_epsilon_delta(self.epsilon, self.delta, allow_zero_delta=False)
        _check_real("clip_norm", self.clip_norm)
        _check_int("batch_size", self.batch_size)
        _check_real("learning_rate", self.learning_rate)
        if self.epochs is not None and self.steps is not None:
            raise ValueError(
                f"give epochs or steps, not both: found epochs={self.epochs!r}, "
                f"steps={self.steps!r}"
            )
        if self.steps is not None:
            _check_int("steps", self.steps)
        else:
            epochs = DEFAULT_EPOCHS if self.epochs is None else self.epochs
            _check_real("epochs", epochs)
            object.__setattr__(self, "epochs", float(epochs))

    def sampling_rate(self, n: int) -> float:
        """q = batch_size / n; the batch size may not exceed n."""
        _check_int("n", n)
        if self.batch_size > n:
            raise ValueError(f"batch_size must be <= n = {n}, found {self.batch_size!r}")
        return self.batch_size / n

    def num_steps(self, n: int) -> int:
        if self.steps is not None:
            return int(self.steps)
        return max(1, math.ceil(self.epochs * n / self.batch_size))


# --- accounting ----------------------------------------------------------------------------------


def dpsgd_event(noise_multiplier: float, sampling_rate: float, steps: int) -> dp_event.DpEvent:
    """T self-composed Poisson-subsampled Gaussian steps."""
    return dp_accounting.SelfComposedDpEvent(
        dp_accounting.PoissonSampledDpEvent(
            sampling_rate, dp_accounting.GaussianDpEvent(noise_multiplier)
        ),
        steps,
    )


def pld_discretization(epsilon: float) -> float:
    """The PLD value discretization interval used to calibrate to ``epsilon``: 1e-3 * epsilon.

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
    _check_real("epsilon", epsilon)
    return PLD_RELATIVE_DISCRETIZATION * float(epsilon)


def pld_epsilon(
    event: dp_event.DpEvent, delta: float, value_discretization_interval: float
) -> float:
    """Epsilon at ``delta`` of ``event`` under REPLACE-ONE neighbours, by the PLD accountant.

    Pessimistic (an upper bound; module docstring). Raises dp-accounting's
    ``UnsupportedEventError`` for events it cannot account for replacement (e.g.
    ``RepeatAndSelectDpEvent``), before any composition.
    """
    _check_real("value_discretization_interval", value_discretization_interval)
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
    if accountant not in ACCOUNTANTS:
        raise ValueError(f"accountant must be one of {ACCOUNTANTS}, found {accountant!r}")


def _epsilon_of(accountant: str, value_discretization_interval: float
                ) -> Callable[[dp_event.DpEvent, float], float]:  # fmt: skip
    if accountant == RDP_GROUP:
        return rdp_group_epsilon
    return functools.partial(pld_epsilon,
                             value_discretization_interval=value_discretization_interval)


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
    _check_real("noise_multiplier", noise_multiplier)
    _check_rate(sampling_rate)
    _check_int("steps", steps)
    check_epsilon_delta(1.0, delta, allow_zero_delta=False)
    _check_accountant(accountant)
    epsilon_of = _epsilon_of(accountant, value_discretization_interval)
    return epsilon_of(dpsgd_event(noise_multiplier, sampling_rate, steps), delta)


def calibrate_noise_multiplier(
    epsilon: float,
    delta: float,
    sampling_rate: float,
    steps: int,
    *,
    accountant: str = PLD_REPLACE_ONE,
) -> float:
    """The smallest z whose accounted replace-one epsilon is <= ``epsilon``, to within 0.1%.

    The PLD accountant runs at ``pld_discretization(epsilon)``. Cached on the scalar arguments
    (a sweep calibrates the same (epsilon, delta, q, T) once per run).
    """
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    _check_rate(sampling_rate)
    _check_int("steps", steps)
    _check_accountant(accountant)
    return _calibrated_noise_multiplier(float(epsilon), float(delta), float(sampling_rate),
                                        int(steps), accountant)  # fmt: skip


@functools.lru_cache(maxsize=1024)
def _calibrated_noise_multiplier(epsilon: float, delta: float, sampling_rate: float, steps: int,
                                 accountant: str) -> float:  # fmt: skip
    return calibrate(lambda z: dpsgd_event(z, sampling_rate, steps), epsilon, delta,
                     epsilon_of=_epsilon_of(accountant, pld_discretization(epsilon)))  # fmt: skip


def calibrate(
    make_event: Callable[[float], dp_event.DpEvent],
    epsilon: float,
    delta: float,
    *,
    epsilon_of: Callable[[dp_event.DpEvent, float], float],
    rel_tol: float = CALIBRATION_REL_TOL,
) -> float:
    """Bisection on log z for the smallest z with epsilon_of(make_event(z), delta) <= epsilon.

    Assumes epsilon decreases with z (more noise, more privacy). The returned z always meets the
    target; the search stops once its epsilon is within ``rel_tol`` of the target, or once the
    bracket is too narrow to matter (epsilon is then as close as the accountant allows).
    """

    def eps(z: float) -> float:
        return epsilon_of(make_event(z), delta)

    hi = 1.0
    eps_hi = eps(hi)
    while eps_hi > epsilon:
        hi *= 2.0
        if hi > _Z_MAX:
            raise ValueError(f"no noise multiplier <= {_Z_MAX:g} reaches epsilon={epsilon!r}")
        eps_hi = eps(hi)
    lo = hi / 2.0
    eps_lo = eps(lo)
    while eps_lo <= epsilon:  # the target is loose: z below 1 suffices
        hi, eps_hi, lo = lo, eps_lo, lo / 2.0
        if lo < _Z_MIN:
            raise ValueError(f"epsilon={epsilon!r} is reached by any noise multiplier >= "
                             f"{_Z_MIN:g}: nothing to calibrate")  # fmt: skip
        eps_lo = eps(lo)
    while eps_hi < (1.0 - rel_tol) * epsilon and hi / lo > 1.0 + 1e-9:
        mid = math.sqrt(lo * hi)
        eps_mid = eps(mid)
        if eps_mid <= epsilon:
            hi, eps_hi = mid, eps_mid
        else:
            lo = mid
    return hi


# --- the algorithm, step by step -----------------------------------------------------------------


def per_example_gradients(X: np.ndarray, y: np.ndarray, w: np.ndarray) -> np.ndarray:
    """(b, d): grad_w log(1 + exp(-y <w, x>)) = -y sigmoid(-y <w, x>) x, one row per example."""
    return (-y * expit(-y * (X @ w)))[:, None] * X


def clip_and_sum(gradients: np.ndarray, clip_norm: float) -> np.ndarray:
    """sum_i g_i min(1, C / ||g_i||_2): each example contributes a vector of norm <= C."""
    norms = np.linalg.norm(gradients, axis=1)
    factors = np.minimum(1.0, clip_norm / np.maximum(norms, np.finfo(float).tiny))
    return factors @ gradients


def add_noise(total: np.ndarray, std: float, rng: np.random.Generator) -> np.ndarray:
    return total + rng.normal(0.0, std, size=total.shape)


def train_dpsgd(
    X: np.ndarray,
    y: np.ndarray,
    *,
    noise_multiplier: float,
    clip_norm: float,
    batch_size: int,
    learning_rate: float,
    steps: int,
    rng: np.random.Generator,
) -> np.ndarray:
    """The T steps of the module docstring; returns the average iterate. No accounting here:
    the caller calibrates ``noise_multiplier`` (``run_dpsgd``, ``tune_dpsgd``)."""
    n, d = X.shape
    y = np.asarray(y, dtype=float)
    q = batch_size / n
    w = np.zeros(d)
    total = np.zeros(d)
    for _ in range(steps):
        batch = rng.random(n) < q  # Poisson sampling
        summed = clip_and_sum(per_example_gradients(X[batch], y[batch], w), clip_norm)
        noisy = add_noise(summed, noise_multiplier * clip_norm, rng)
        w = w - learning_rate * noisy / batch_size
        total += w
    return total / steps


def run_dpsgd(X: Any, y: Any, params: DPSGDParams, rng: np.random.Generator) -> Release:
    """One DP-SGD run calibrated to (params.epsilon, params.delta) by the PLD replace-one
    accountant; the release's noise records the accountant and its discretization, and its
    claim's ``accounted_epsilon`` is the PLD epsilon of the z used."""
    X, y = check_data(X, y)
    rng = check_rng(rng)
    if not isinstance(params, DPSGDParams):
        raise TypeError(f"params must be DPSGDParams, found {type(params).__name__}")
    start = time.perf_counter()
    n = len(y)
    q, steps = params.sampling_rate(n), params.num_steps(n)
    discretization = pld_discretization(params.epsilon)
    z = calibrate_noise_multiplier(params.epsilon, params.delta, q, steps)
    eps = accounted_epsilon(z, q, steps, params.delta,
                            value_discretization_interval=discretization)  # fmt: skip
    if eps > params.epsilon:  # calibrate guarantees it; a failure here is a bug, never a release
        raise PrivacyError(f"accounted epsilon {eps!r} exceeds the target {params.epsilon!r}")
    calibrated = time.perf_counter()
    w = train_dpsgd(X, y, noise_multiplier=z, clip_norm=params.clip_norm,
                    batch_size=params.batch_size, learning_rate=params.learning_rate,
                    steps=steps, rng=rng)  # fmt: skip
    trained = time.perf_counter()
    claim = PrivacyClaim(
        params.epsilon, params.delta, True,
        f"{ACCOUNTANT_DESCRIPTIONS[PLD_REPLACE_ONE]}, value discretization "
        f"{discretization:.3g}: {steps} Poisson-subsampled Gaussian steps, q={q:.6g}, z={z:.6g}",
        accounted_epsilon=eps, requested_epsilon=params.epsilon, requested_delta=params.delta,
        calibration=PLD_REPLACE_ONE,
    )  # fmt: skip
    return Release(
        mechanism="dpsgd",
        w=w,
        privacy=claim,
        noise={"noise_multiplier": z, "sampling_rate": q, "steps": steps,
               "noise_std": z * params.clip_norm, "accountant": PLD_REPLACE_ONE,
               "pld_discretization": discretization},  # fmt: skip
        params=asdict(params),
        timings={"calibrate": calibrated - start, "train": trained - calibrated,
                 "total": trained - start},  # fmt: skip
    )


# --- hyperparameter search -----------------------------------------------------------------------


@dataclass(frozen=True)
class DPSGDGrid:
    """The (C, b, lr) candidates of the grid search, all trained for ``epochs``."""

    clip_norms: tuple[float, ...] = (0.5, 1.0, 2.0)
    batch_sizes: tuple[int, ...] = (64, 256)
    learning_rates: tuple[float, ...] = (0.5, 2.0, 8.0)
    epochs: float = DEFAULT_EPOCHS

    def __post_init__(self) -> None:
        for name, check in (("clip_norms", _check_real), ("batch_sizes", _check_int),
                            ("learning_rates", _check_real)):  # fmt: skip
            values = getattr(self, name)
            values = (values,) if np.ndim(values) == 0 else tuple(values)
            if not values:
                raise ValueError(f"{name} must not be empty")
            for value in values:
                check(name, value)
            object.__setattr__(self, name, values)
        _check_real("epochs", self.epochs)

    def candidates(self) -> list[tuple[float, int, float]]:
        """Every (clip_norm, batch_size, learning_rate), in a fixed order."""
        return list(itertools.product(self.clip_norms, self.batch_sizes, self.learning_rates))

    def params(self, epsilon: float, delta: float, candidate: Sequence[Any]) -> DPSGDParams:
        C, b, lr = candidate
        return DPSGDParams(epsilon, delta, clip_norm=C, batch_size=b, learning_rate=lr,
                           epochs=self.epochs)  # fmt: skip


def tune_dpsgd(
    X: Any,
    y: Any,
    epsilon: float,
    delta: float,
    grid: DPSGDGrid | None = None,
    rng: np.random.Generator | None = None,
    *,
    accounted: bool = False,
    mean_runs: float | None = None,
    shape: float = 1.0,
    score_noise_ratio: float = 25.0,
) -> Release:
    """DP-SGD with hyperparameters chosen by grid search for this (epsilon, delta).

    ``accounted=False`` (the paper's protocol): every candidate is trained at (epsilon, delta)
    and the one with the best training accuracy is released. Not private: it warns and the
    release's claim does not hold (``params['selection'] == 'unaccounted'``).

    ``accounted=True``: repeat-and-select (``RepeatAndSelectDpEvent``, Papernot & Steinke 2022),
    the whole selection within (epsilon, delta):

    * K ~ the distribution with mean ``mean_runs`` (default: the grid's size) and ``shape``
      (1: geometric, the default; 0: logarithmic; (0, inf): truncated negative binomial;
      inf: Poisson, where K = 0 releases w = 0). All draws of K are >= 1 except Poisson's.
    * each run draws a candidate uniformly from the grid, trains with one shared noise
      multiplier z, and scores itself by its count of correct training predictions plus
      N(0, (score_noise_ratio * z)^2) (sensitivity 1 under add/remove). The best noisy score
      is released with its w.
    * one run's event composes one DP-SGD event per distinct (batch size, steps) of the grid and
      the score's Gaussian event: with one batch size this is exact, with several it bounds the
      run's RDP from above (the RDP of a data-independent choice among mechanisms is at most the
      maximum, hence at most the sum, of theirs), so use one batch size for a tight budget.
      z is calibrated on the whole RepeatAndSelectDpEvent.
    * accounted by ``"rdp_group"`` (``rdp_group_epsilon``), not the PLD accountant: dp-accounting
      0.6.0's ``PLDAccountant`` does not support ``RepeatAndSelectDpEvent`` (its Papernot-Steinke
      bound is stated in RDP), so this path keeps the looser group-privacy route; the release
      records ``noise['accountant'] == 'rdp_group'``.
    """
    X, y = check_data(X, y)
    rng = check_rng(rng)
    check_epsilon_delta(epsilon, delta, allow_zero_delta=False)
    grid = DPSGDGrid() if grid is None else grid
    if not isinstance(grid, DPSGDGrid):
        raise TypeError(f"grid must be a DPSGDGrid, found {type(grid).__name__}")
    if not accounted:
        warn_data_dependent(
            "the choice of DP-SGD hyperparameters (clip norm, batch size, learning rate) by "
            "training accuracy over the grid"
        )
        return _tune_unaccounted(X, y, epsilon, delta, grid, rng)
    return _tune_repeat_and_select(X, y, epsilon, delta, grid, rng, mean_runs=mean_runs,
                                   shape=shape, score_noise_ratio=score_noise_ratio)  # fmt: skip


def _tune_unaccounted(X, y, epsilon, delta, grid, rng) -> Release:
    start = time.perf_counter()
    best, best_accuracy = None, -1.0
    for candidate in grid.candidates():
        release = run_dpsgd(X, y, grid.params(epsilon, delta, candidate), rng)
        accuracy = release.accuracy(X, y)
        if accuracy > best_accuracy:
            best, best_accuracy = release, accuracy
    runs = len(grid.candidates())
    claim = PrivacyClaim(
        epsilon, delta, False,
        f"each of {runs} runs is ({epsilon}, {delta})-DP "
        f"({ACCOUNTANT_DESCRIPTIONS[PLD_REPLACE_ONE]}), but the hyperparameters were selected "
        "by non-private training accuracy: the selection is unaccounted",
        accounted_epsilon=best.privacy.accounted_epsilon, requested_epsilon=epsilon,
        requested_delta=delta, calibration=PLD_REPLACE_ONE,
    )  # fmt: skip
    return Release(
        mechanism="dpsgd_tuned",
        w=best.w,
        privacy=claim,
        noise=best.noise,
        params={**best.params, "selection": "unaccounted",
                "selection_rule": "max training accuracy", "candidates": runs,
                "selected_train_accuracy": best_accuracy},  # fmt: skip
        timings={"total": time.perf_counter() - start},
    )


def repeat_and_select_event(
    noise_multiplier: float,
    configs: Sequence[tuple[float, int]],
    *,
    mean_runs: float,
    shape: float,
    score_noise_ratio: float,
) -> dp_event.DpEvent:
    """The whole accounted search: ``configs`` are the grid's distinct (q, steps)."""
    run = dp_accounting.ComposedDpEvent(
        [dpsgd_event(noise_multiplier, q, steps) for q, steps in configs]
        + [dp_accounting.GaussianDpEvent(score_noise_ratio * noise_multiplier)]
    )
    return dp_event.RepeatAndSelectDpEvent(run, mean_runs, shape)


def draw_repetitions(mean_runs: float, shape: float, rng: np.random.Generator) -> int:
    """K from the distribution of ``RepeatAndSelectDpEvent(mean_runs, shape)``.

    The success probability gamma is solved from the mean from above, so the sampled mean is at
    most ``mean_runs`` and the accountant (which uses a gamma from below) stays conservative.
    """
    if shape == math.inf:
        return int(rng.poisson(mean_runs))
    if mean_runs == 1:
        return 1
    if shape == 1:
        return int(rng.geometric(1.0 / mean_runs))
    gamma = _tnb_gamma(mean_runs, shape)
    if shape == 0:
        return int(rng.logseries(1.0 - gamma))
    while True:  # truncated negative binomial: condition NB(shape, gamma) on K >= 1
        k = int(rng.negative_binomial(shape, gamma))
        if k >= 1:
            return k


def _tnb_mean(gamma: float, shape: float) -> float:
    if shape == 0:
        return (1.0 - gamma) / (gamma * math.log(1.0 / gamma))
    return shape * (1.0 / gamma - 1.0) / (1.0 - gamma**shape)


def _tnb_gamma(mean: float, shape: float) -> float:
    lo, hi = 0.0, min(1.0, 2.0 * (shape + 1.0) / mean)  # mean decreases in gamma
    while hi - lo > 1e-12 * hi:
        mid = (lo + hi) / 2.0
        if _tnb_mean(mid, shape) > mean:
            lo = mid
        else:
            hi = mid
    return hi


def _tune_repeat_and_select(X, y, epsilon, delta, grid, rng, *, mean_runs, shape,
                            score_noise_ratio) -> Release:  # fmt: skip
    candidates = grid.candidates()
    mean_runs = float(len(candidates)) if mean_runs is None else mean_runs
    _check_real("mean_runs", mean_runs)
    if mean_runs < 1:
        raise ValueError(f"mean_runs must be >= 1, found {mean_runs!r}")
    if isinstance(shape, bool) or not isinstance(shape, (int, float, np.integer, np.floating)):
        raise TypeError(f"shape must be a real number, found {shape!r}")
    if not shape >= 0:
        raise ValueError(f"shape must be >= 0 (inf: Poisson), found {shape!r}")
    _check_real("score_noise_ratio", score_noise_ratio)
    start = time.perf_counter()
    n = len(y)
    runs_params = [grid.params(epsilon, delta, c) for c in candidates]
    configs = sorted({(p.sampling_rate(n), p.num_steps(n)) for p in runs_params})

    def make_event(z: float) -> dp_event.DpEvent:
        return repeat_and_select_event(z, configs, mean_runs=mean_runs, shape=shape,
                                       score_noise_ratio=score_noise_ratio)  # fmt: skip

    z = calibrate(make_event, epsilon, delta, epsilon_of=rdp_group_epsilon)
    eps = rdp_group_epsilon(make_event(z), delta)
    if eps > epsilon:
        raise PrivacyError(f"accounted epsilon {eps!r} exceeds the target {epsilon!r}")
    calibrated = time.perf_counter()

    runs = draw_repetitions(mean_runs, shape, rng)
    score_std = score_noise_ratio * z
    best_w, best_score, best = np.zeros(X.shape[1]), -math.inf, None
    for _ in range(runs):
        candidate = candidates[int(rng.integers(len(candidates)))]
        params = grid.params(epsilon, delta, candidate)
        w = train_dpsgd(X, y, noise_multiplier=z, clip_norm=params.clip_norm,
                        batch_size=params.batch_size, learning_rate=params.learning_rate,
                        steps=params.num_steps(n), rng=rng)  # fmt: skip
        correct = int(np.count_nonzero(predict(X, w) == y))  # the reported rule (SPEC 2)
        score = correct + rng.normal(0.0, score_std)
        if score > best_score:
            best_w, best_score, best = w, score, params
    finished = time.perf_counter()
    claim = PrivacyClaim(
        epsilon, delta, True,
        f"{ACCOUNTANT_DESCRIPTIONS[RDP_GROUP]}; the PLD accountant does not support "
        f"RepeatAndSelectDpEvent: repeat-and-select over {runs} runs (mean {mean_runs:g}, "
        f"shape {shape:g}), "
        f"candidates uniform over {len(candidates)}, noisy-count scores (std {score_std:.4g}), "
        f"shared z={z:.6g}",
        accounted_epsilon=eps, requested_epsilon=epsilon, requested_delta=delta,
        calibration=RDP_GROUP,
    )  # fmt: skip
    chosen = asdict(best) if best is not None else {}
    noise = {"noise_multiplier": z, "score_noise_std": score_std, "mean_runs": mean_runs,
             "shape": shape, "runs": runs, "accountant": RDP_GROUP}  # fmt: skip
    if best is not None:
        noise |= {"sampling_rate": best.sampling_rate(n), "steps": best.num_steps(n),
                  "noise_std": z * best.clip_norm}  # fmt: skip
    return Release(
        mechanism="dpsgd_tuned",
        w=best_w,
        privacy=claim,
        noise=noise,
        params={**chosen, "epsilon": epsilon, "delta": delta, "selection": "repeat_and_select",
                "selection_rule": "max noisy count of correct training predictions",
                "candidates": len(candidates),
                "selected_noisy_score": best_score if best is not None else None},  # fmt: skip
        timings={"calibrate": calibrated - start, "train": finished - calibrated,
                 "total": finished - start},  # fmt: skip
    )

__all__ = [
    "ACCOUNTANTS", "ACCOUNTANT_DESCRIPTIONS", "DEFAULT_EPOCHS", "DEFAULT_PLD_DISCRETIZATION",
    "DPSGDGrid", "DPSGDParams", "PLD_RELATIVE_DISCRETIZATION", "PLD_REPLACE_ONE", "RDP_GROUP",
    "accounted_epsilon", "add_noise", "add_or_remove_epsilon", "calibrate",
    "calibrate_noise_multiplier", "clip_and_sum", "draw_repetitions", "dpsgd_event",
    "per_example_gradients", "pld_discretization", "pld_epsilon", "rdp_group_epsilon",
    "repeat_and_select_event", "run_dpsgd", "train_dpsgd", "tune_dpsgd",
]  # fmt: skip
