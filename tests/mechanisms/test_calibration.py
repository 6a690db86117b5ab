"""What every calibration shares (``mechanisms.calibration``): the calibration names and the root
searches on log delta, checked on functions whose roots are known in closed form.

The mechanisms' own calibrations are checked against SPEC's formulas in test_opdisc_calibration.py,
test_rspm_calibration.py and test_opsamp_calibration.py.
"""

from __future__ import annotations

import math

import pytest

from mechanisms.calibration import (
    CALIBRATIONS,
    ROOT_RTOL,
    check_calibration,
    epsilon_for,
    first_guess_tail,
    smallest_safe,
)


def test_check_calibration_takes_the_names_and_refuses_others():
    assert CALIBRATIONS == ("proven", "paper", "paper_code")
    assert check_calibration("paper_code") == "paper_code"
    with pytest.raises(ValueError, match="calibration"):
        check_calibration("paper_code", allowed=("proven", "paper"))
    with pytest.raises(ValueError, match="calibration"):
        check_calibration("exact")


@pytest.mark.parametrize("target", [0.5, 1e-6, 1e-300, 5e-324])
@pytest.mark.parametrize("x0", [1e-3, 1.0, 1e6])
def test_smallest_safe_is_the_root_on_its_safe_side(target, x0):
    # log delta(x) = -x: the root is x = -ln(target); the answer meets the target and lies
    # within a few ROOT_RTOL above the root, from any first guess
    root = -math.log(target)
    x = smallest_safe(lambda v: -v, target, x0, "sigma")
    assert -x <= math.log(target)
    assert root <= x <= root * (1 + 4 * ROOT_RTOL)


def test_smallest_safe_is_the_smallest_float_when_every_x_meets_the_target():
    x = smallest_safe(lambda v: -math.inf, 1e-6, 1.0, "sigma")
    assert 0.0 < x <= 1e-300


def test_smallest_safe_refuses_a_target_no_finite_x_meets():
    with pytest.raises(ValueError, match="no finite sigma meets the target"):
        smallest_safe(lambda v: 0.0, 0.5, 1.0, "sigma")  # delta 1 at every sigma


def test_epsilon_for_is_zero_when_epsilon_zero_is_proven():
    assert epsilon_for(lambda e: math.log(1e-9) - e, 1e-6, 1.0) == 0.0


def test_epsilon_for_is_the_smallest_proven_epsilon():
    # log delta(epsilon) = -epsilon - 1: delta(epsilon) <= 1e-6 from epsilon = ln(1e6) - 1 on
    eps = epsilon_for(lambda e: -e - 1.0, 1e-6, 0.5, sigma=1.0)
    root = math.log(1e6) - 1.0
    assert root <= eps <= root * (1 + 4 * ROOT_RTOL)


def test_first_guess_tail_is_the_gaussian_tail_width():
    assert first_guess_tail(math.exp(-8.0)) == pytest.approx(4.0)
    assert first_guess_tail(0.9) == pytest.approx(math.sqrt(2.0))  # at least one log unit
