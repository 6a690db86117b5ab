"""The non-private reference of private synthetic data: the private table itself.

Released as a synthetic table would be, it is what every private table is measured against in the
same sweep: its workload error is 0 by definition, and a classifier trained on it is the one
trained on the real training set (docs/synthetic.md, section 3). It is not private: its claim says
so, and it runs once per sweep, like the classifiers' references (SPEC section 7).
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from mechanisms.release import PrivacyClaim
from mechanisms.synthetic.fem import SyntheticRelease

NON_PRIVATE = "non-private reference: the private table itself (docs/synthetic.md, section 3)"


@dataclass(frozen=True)
class RealTableParams:
    """The reference has no settings: it releases the records it is given."""


def release_real_table(codes: np.ndarray) -> SyntheticRelease:
    """The records ``codes`` (level codes) as a synthetic table, with a non-private claim."""
    start = time.perf_counter()
    records = np.array(codes, dtype=np.int64, copy=True)
    if records.ndim != 2 or len(records) == 0:
        raise ValueError(f"codes must be (n >= 1, attributes) level codes, found {records.shape}")
    return SyntheticRelease(
        mechanism="real_table",
        records=records,
        privacy=PrivacyClaim(math.inf, 0.0, False, NON_PRIVATE),
        params={},
        selections=(),
        certificates=(),
        timings={"total": time.perf_counter() - start},
    )


__all__ = ["NON_PRIVATE", "RealTableParams", "release_real_table"]
