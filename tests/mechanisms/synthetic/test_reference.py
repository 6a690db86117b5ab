"""mechanisms.synthetic.reference: the real table released as it is, claiming no privacy."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mechanisms.synthetic.reference import NON_PRIVATE, release_real_table


def test_the_reference_is_the_table_itself_a_copy_and_not_private():
    codes = np.array([[0, 1], [1, 0], [1, 1]])
    release = release_real_table(codes)
    assert (release.records == codes).all() and release.records is not codes
    codes[0, 0] = 1  # the release does not change with the array it was given
    assert release.records[0, 0] == 0
    claim = release.privacy
    assert not claim.holds and math.isinf(claim.epsilon) and claim.reason == NON_PRIVATE
    assert release.mechanism == "real_table" and release.oracle_answers == ()


def test_the_reference_refuses_what_is_not_a_table():
    with pytest.raises(ValueError, match="level codes"):
        release_real_table(np.zeros((0, 2), dtype=int))
    with pytest.raises(ValueError, match="level codes"):
        release_real_table(np.zeros(3, dtype=int))
