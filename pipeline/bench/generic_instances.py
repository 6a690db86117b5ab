"""Issue 19's instances: scikit-learn's breast-cancer table as a generic table (30 continuous
columns), and the OPDisc, Gaussian RSPM and exact 0/1 ERM problems built on it.

The table goes through the project's own loader (``pipeline.data.table.load_table``, what
``+sweep=table dataset.balance=true`` runs): label ``malignant`` = +1, every column numeric and
scaled into [0, 1] by STATED bounds, a test fraction of 0.2 drawn with ``split_seed``, the
training set balanced with ``balance_seed``. The stated bounds are each column's minimum and
maximum over the whole published table (569 rows; the summary in the dataset's description
rounds them, so the rounded values would put rows out of bounds). For a benchmark that is a
fixed, public choice; a release that wants its privacy to cover the encoding would state
bounds that do not come from the data (SPEC section 1's remark on Adult's maxima).

With the defaults: n = 326 training rows (163 of each label), all distinct, d = 30; OPDisc's
grid has B = floor(sqrt(30)) = 5 and D^2 = 30 (SPEC section 3), RSPM's is {-1, 0, 1}^30 with
60 separator rows (SPEC section 4), delta = 1/n^2. The problems are built by the mechanisms'
own code (``mechanisms.opdisc``, ``mechanisms.rspm``) from noise drawn with
``numpy.random.default_rng(seed)``, exactly as ``pipeline.bench.fast_oracle`` does for Adult.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.rspm import RSPM, RSPMParams
from oracles.base import Problem
from oracles.objective import MergedRows

MECHANISMS = ("opdisc", "rspm", "erm")


@lru_cache(maxsize=4)
def breast_cancer_rows(split_seed: int = 0, balance_seed: int = 0) -> MergedRows:
    """The balanced training rows of the breast-cancer table (module docstring)."""
    import pandas as pd
    from sklearn.datasets import load_breast_cancer

    from pipeline.data.table import load_table

    table = load_breast_cancer()
    frame = pd.DataFrame(table.data, columns=table.feature_names)
    frame["diagnosis"] = np.where(table.target == 0, "malignant", "benign")
    bounds = {c: [float(frame[c].min()), float(frame[c].max())] for c in table.feature_names}
    splits = load_table(frame, label="diagnosis", positive="malignant", numeric=bounds,
                        split_seed=split_seed, balance=True, balance_seed=balance_seed)  # fmt: skip
    return MergedRows.from_xy(splits.train.features, splits.train.labels)


@dataclass(frozen=True)
class Instance:
    """One benchmark problem and how it was made."""

    mechanism: str
    epsilon: float | None
    seed: int | None
    problem: Problem

    @property
    def name(self) -> str:
        if self.mechanism == "erm":
            return "erm"
        return f"{self.mechanism} eps={self.epsilon:g} seed={self.seed}"


def make_instance(mechanism: str, epsilon: float | None = None, seed: int | None = None,
                  rows: MergedRows | None = None) -> Instance:  # fmt: skip
    """The problem of ``mechanism`` (opdisc, rspm or erm) on ``rows`` (default: the table)."""
    rows = breast_cancer_rows() if rows is None else rows
    n, d = rows.n, rows.d
    if mechanism == "erm":
        (problem,) = ExactERM().problems(rows, {})
        return Instance("erm", None, None, problem)
    if mechanism == "opdisc":
        mech = OPDisc(OPDiscParams(epsilon, 1.0 / n**2))
    elif mechanism == "rspm":
        mech = RSPM(RSPMParams(epsilon, 1.0 / n**2, noise="gaussian"))
    else:
        raise ValueError(f"mechanism must be one of {MECHANISMS}, found {mechanism!r}")
    noise = mech.draw_noise(np.random.default_rng(seed), n, d)
    (problem,) = mech.problems(rows, noise)
    return Instance(mechanism, float(epsilon), int(seed), problem)


__all__ = ["MECHANISMS", "Instance", "breast_cancer_rows", "make_instance"]
