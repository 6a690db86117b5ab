"""The exponential mechanism over an enumerable grid (``mechanisms.expmech``)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from core.problem import Problem
from mechanisms.audit.samplers import ExpMechSampler
from mechanisms.expmech import ExpMechParams, run_expmech
from mechanisms.opdisc import opdisc_domain
from oracles.enumerate import all_objectives
from pipeline.data.synthetic import make_linear_threshold


def test_expmech_samples_from_the_exponential_distribution():
    # A tiny instance: the 27 points of {-1,0,1}^3 inside the norm ball; the probabilities
    # run_expmech samples from are exp(-eps L / 2), normalized; and 20,000 draws match them by a
    # chi-square test at level 1e-3. The draws are those of 20,000 calls of run_expmech: its
    # first 1,000 calls are compared draw for draw with the audit's sampler of run_expmech (one
    # call that reads run_expmech's probabilities and continues the same stream, as
    # tests/audit/test_samplers.py checks), and the sampler gives all 20,000.
    data = make_linear_threshold(12, 3, label_noise=0.2, seed=0)
    params = ExpMechParams(epsilon=1.0, B=1, D=math.sqrt(3))
    domain, _ = opdisc_domain(3, 1.0, 1, math.sqrt(3))
    W, losses = all_objectives(Problem.from_rows(data.merged(), domain))
    p = np.exp(-0.5 * (losses - losses.min()))
    p /= p.sum()
    sampler = ExpMechSampler(params)
    np.testing.assert_array_equal(sampler.grid(3), W)
    np.testing.assert_allclose(sampler.probabilities(data.features, data.labels), p, rtol=1e-12)
    rng = np.random.default_rng(11)
    calls = np.array([run_expmech(data.features, data.labels, params, rng).w for _ in range(1000)])
    draws = sampler.sample(data.features, data.labels, 20_000, np.random.default_rng(11))
    np.testing.assert_array_equal(W[draws[:1000]], calls)
    counts = np.bincount(draws, minlength=len(W))
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
