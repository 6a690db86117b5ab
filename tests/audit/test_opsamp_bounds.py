"""Why no audit can catch OPSamp's paper calibration (mechanisms.audit.opsamp_bounds): the premise
of the coupling bound, checked with the real convex oracle, the two bounds where the audit runs,
and the bounds' arithmetic against the module's formulas."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from core.objective import MergedRows
from mechanisms.audit.opsamp_bounds import opsamp_paper_bounds
from mechanisms.audit.sampler_base import with_draws
from mechanisms.opsamp import OPSamp, OPSampParams
from oracles.contract.budget import Budget


def test_one_row_instance_premise_holds_with_the_convex_oracle():
    """With the row's label -1, w_j stays at the upper bound whenever sigma_j >= G; with +1 every
    solution is the upper corner (the coupling bound's premise), checked with the real oracle."""
    from mechanisms.opsamp import OPSamp, OPSampParams
    from oracles.convex import ConvexOracle

    d = 5
    mechanism = OPSamp(OPSampParams(1.0, 1e-5))
    X = np.zeros((4, d))
    X[-1] = 1.0
    for label in (-1, 1):
        rows = MergedRows.from_xy(X, np.array([1, 1, 1, label]))
        noise = mechanism.draw_noise(np.random.default_rng(0), rows.n, d)
        G, m = noise.calibration.G, noise.calibration.m
        sigmas = np.random.default_rng(1).uniform(0.0, 3.0 * G, size=(m, d))
        sigmas[0] = np.linspace(0.9, 1.1, d) * G
        noise = with_draws(noise, sigmas=sigmas)
        W = np.array(
            [ConvexOracle().solve(p, Budget.unlimited()).w for p in mechanism.problems(rows, noise)]
        )
        at_upper = np.isclose(W, 1.0, atol=1e-6)
        if label == 1:
            assert at_upper.all()
        else:
            assert at_upper[sigmas >= G].all() and not at_upper.all()


@pytest.mark.parametrize("d,n", [(5, 4), (5, 2000), (23, 2000), (23, 15682), (100, 15682)])
def test_opsamp_paper_calibration_is_within_the_claim_where_audited(d, n):
    from mechanisms.audit.opsamp_bounds import opsamp_paper_bounds
    from mechanisms.opsamp import OPSamp, OPSampParams

    paper = OPSamp(OPSampParams(1.0, 1e-5, calibration="paper"))
    bounds = opsamp_paper_bounds(paper, n, d, 1e-5)
    print("\n" + bounds.line())
    assert bounds.proven_epsilon > 1.0  # SPEC 10.3 does not prove the claim ...
    assert bounds.one_row_epsilon < 0.02 and bounds.one_row_delta <= 1e-5  # ... yet it holds
    if n <= 151 * d:  # the Laplace scale exceeds the box's l1 diameter: epsilon-DP on any data
        assert bounds.diameter_epsilon <= 1.0


def test_the_bounds_are_the_module_formulas_at_the_smallest_k():
    paper = OPSamp(OPSampParams(1.0, 1e-5, calibration="paper"))
    n, d, delta = 200, 3, 1e-6
    bounds = opsamp_paper_bounds(paper, n, d, delta)
    cal = paper.calibrate(n, d)
    scale, D_inf, m = cal.laplace_scale, cal.D_inf, int(cal.m)
    assert (bounds.n, bounds.d, bounds.requested_epsilon) == (n, d, 1.0)
    assert bounds.laplace_scale == scale and bounds.proven_epsilon == cal.proven_epsilon
    assert bounds.diameter_epsilon == pytest.approx(d * D_inf / scale)
    # K ~ Binomial(m d, 1 - exp(-eta G)); k is the smallest with P(K > k) <= delta
    moved = stats.binom(m * d, 1.0 - np.exp(-cal.eta * cal.G))
    k = bounds.moved_bound
    assert moved.sf(k) <= delta < moved.sf(k - 1) and k >= 1
    assert bounds.one_row_delta == pytest.approx(moved.sf(k))
    assert bounds.one_row_epsilon == pytest.approx(D_inf * k / (m * scale))
    # a larger delta needs no larger k
    assert opsamp_paper_bounds(paper, n, d, 1e-2).moved_bound <= k


def test_the_coupling_bound_is_for_the_logistic_loss_only():
    zero_one = OPSamp(OPSampParams(1.0, 1e-5, loss="zero_one", calibration="paper"))
    with pytest.raises(ValueError, match="logistic loss, found 'zero_one'"):
        opsamp_paper_bounds(zero_one, 100, 2, 1e-5)


def test_line_names_every_figure():
    paper = OPSamp(OPSampParams(1.0, 1e-5, calibration="paper"))
    bounds = opsamp_paper_bounds(paper, 40, 2, 1e-5)
    line = bounds.line()
    assert line.startswith("d=2 n=40: scale ")
    assert f"SPEC 10.3 proves {bounds.proven_epsilon:.3f}" in line
    assert f"diameter bound {bounds.diameter_epsilon:.3f} (any data)" in line
    assert line.endswith(f"(K <= {bounds.moved_bound})")
