"""DP-SGD logistic regression: the paper's private baseline (SPEC section 6; Abadi et al. 2016).

One module per concern, each with the maths in its docstring:

* ``accounting``: the Poisson-subsampled Gaussian event, the PLD replace-one accountant (the
  default, SPEC 10.4), the RDP + group-privacy cross-check, and the calibration of z;
* ``algorithm``: the parameters and the steps (clip, sum, add noise, average the iterates);
* ``tuning``: the hyperparameter search, unaccounted (warns) or by repeat-and-select.

This package re-exports their public names.
"""

from __future__ import annotations

from mechanisms.dpsgd.algorithm import (
    DEFAULT_EPOCHS,
    DPSGDParams,
    add_noise,
    clip_and_sum,
    per_example_gradients,
    run_dpsgd,
    train_dpsgd,
)
from mechanisms.dpsgd.sgd_accounting import (
    ACCOUNTANT_DESCRIPTIONS,
    ACCOUNTANTS,
    DEFAULT_PLD_DISCRETIZATION,
    PLD_RELATIVE_DISCRETIZATION,
    PLD_REPLACE_ONE,
    RDP_GROUP,
    accounted_epsilon,
    add_or_remove_epsilon,
    calibrate,
    calibrate_noise_multiplier,
    dpsgd_event,
    pld_discretization,
    pld_epsilon,
    rdp_group_epsilon,
)
from mechanisms.dpsgd.tuning import (
    DPSGDGrid,
    draw_repetitions,
    repeat_and_select_event,
    tune_dpsgd,
)

__all__ = [
    "ACCOUNTANTS",
    "ACCOUNTANT_DESCRIPTIONS",
    "DEFAULT_EPOCHS",
    "DEFAULT_PLD_DISCRETIZATION",
    "PLD_RELATIVE_DISCRETIZATION",
    "PLD_REPLACE_ONE",
    "RDP_GROUP",
    "DPSGDGrid",
    "DPSGDParams",
    "accounted_epsilon",
    "add_noise",
    "add_or_remove_epsilon",
    "calibrate",
    "calibrate_noise_multiplier",
    "clip_and_sum",
    "dpsgd_event",
    "draw_repetitions",
    "per_example_gradients",
    "pld_discretization",
    "pld_epsilon",
    "rdp_group_epsilon",
    "repeat_and_select_event",
    "run_dpsgd",
    "train_dpsgd",
    "tune_dpsgd",
]
