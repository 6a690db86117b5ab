"""The exponential mechanism over an enumerable grid (``mechanisms.expmech``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from core.problem import Problem
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import opdisc_domain
from oracles.enumerate import all_objectives
from pipeline.data.synthetic import make_linear_threshold


def test_expmech_samples_from_the_exponential_distribution():
    # A tiny instance: the 27 points of {-1,0,1}^3 inside the norm ball; compare the empirical
    # distribution of 20,000 draws with exp(-eps L / 2) by a chi-square test at level 1e-3
    data = make_linear_threshold(12, 3, label_noise=0.2, seed=0)
    params = ExpMechParams(epsilon=1.0, B=1, D=math.sqrt(3))
    rng = np.random.default_rng(11)
    draws = [tuple(run_expmech(data.features, data.labels, params, rng).w) for _ in range(20_000)]
    domain, _ = opdisc_domain(3, 1.0, 1, math.sqrt(3))
    W, losses = all_objectives(Problem.from_rows(data.merged(), domain))
    p = np.exp(-0.5 * (losses - losses.min()))
    p /= p.sum()
    index = {tuple(w): i for i, w in enumerate(W)}
    counts = np.bincount([index[w] for w in draws], minlength=len(W))
    assert stats.chisquare(counts, p * len(draws)).pvalue > 1e-3


def test_expmech_refuses_a_grid_too_large():
    data = make_linear_threshold(20, 12, seed=0)
    with pytest.raises(ValueError, match="enumerable grid"):
        run_expmech(
            data.features,
            data.labels,
            ExpMechParams(1.0, max_points=1000),
            np.random.default_rng(0),
        )
