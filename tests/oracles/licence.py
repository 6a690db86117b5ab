"""One rule for tests that need Gurobi's licence.

gurobipy is a dependency and its pip wheel carries a size-limited licence, so a small model
always fits: a missing licence (errno 10009) is a broken installation. Under CI it fails the
test; on a developer's machine (e.g. an expired academic licence file that shadows the pip one)
it skips with Gurobi's own message.
"""

from __future__ import annotations

import numpy as np

from core.problem import IntegerGrid, Problem
from oracles.mip.gurobi import ERRNO_NO_LICENSE, GurobiOracle, LicenceLimitError
from tests.oracles.limited import limited, on_limits
from tests.requirements import missing


def require_gurobi_licence() -> None:
    """Solve a two-row model on Gurobi; no licence at all is a skip, or a failure under CI."""
    problem = Problem(np.eye(2), np.ones(2), np.zeros(2), IntegerGrid(2, 1))
    try:
        on_limits(limited(GurobiOracle(), 10.0), problem)
    except LicenceLimitError as err:
        if err.errno != ERRNO_NO_LICENSE:
            raise
        missing(f"Gurobi has no licence here: {err}")
