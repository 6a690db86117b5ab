"""DP-SGD logistic regression: the paper's private baseline (SPEC section 6; Abadi et al. 2016).

Three modules: ``accounting`` (events, accountants, calibration of z), ``algorithm`` (the
parameters and the steps) and ``tuning`` (the hyperparameter search). Summary:

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

from mechanisms.dpsgd.accounting import (
    ACCOUNTANT_DESCRIPTIONS, ACCOUNTANTS, DEFAULT_PLD_DISCRETIZATION, PLD_RELATIVE_DISCRETIZATION,
    PLD_REPLACE_ONE, RDP_GROUP, accounted_epsilon, add_or_remove_epsilon, calibrate,
    calibrate_noise_multiplier, dpsgd_event, pld_discretization, pld_epsilon, rdp_group_epsilon,
)  # fmt: skip
from mechanisms.dpsgd.algorithm import (
    DEFAULT_EPOCHS, DPSGDParams, add_noise, clip_and_sum, per_example_gradients, run_dpsgd,
    train_dpsgd,
)  # fmt: skip
from mechanisms.dpsgd.tuning import (
    DPSGDGrid, draw_repetitions, repeat_and_select_event, tune_dpsgd,
)  # fmt: skip

__all__ = [
    "ACCOUNTANTS", "ACCOUNTANT_DESCRIPTIONS", "DEFAULT_EPOCHS", "DEFAULT_PLD_DISCRETIZATION",
    "DPSGDGrid", "DPSGDParams", "PLD_RELATIVE_DISCRETIZATION", "PLD_REPLACE_ONE", "RDP_GROUP",
    "accounted_epsilon", "add_noise", "add_or_remove_epsilon", "calibrate",
    "calibrate_noise_multiplier", "clip_and_sum", "draw_repetitions", "dpsgd_event",
    "per_example_gradients", "pld_discretization", "pld_epsilon", "rdp_group_epsilon",
    "repeat_and_select_event", "run_dpsgd", "train_dpsgd", "tune_dpsgd",
]  # fmt: skip
