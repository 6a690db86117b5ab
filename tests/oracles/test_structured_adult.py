"""The structured oracle on the paper's Adult instance (issue 6; SPEC sections 1, 3, 4, 8).

* Full Adult (n = 15,682, 2,611 distinct rows): OPDisc and Gaussian RSPM solves, and the exact
  0/1 ERM, come out certified within the time limit, and the certified w survives a check
  the oracle does not use: no move of one or two coordinates by one grid step inside the
  domain lowers F (a necessary condition for a minimum, evaluated by ``Problem.objective``).
  The instances chosen are the slowest of the benchmark grid (``pipeline.bench.fast_oracle``:
  OPDisc eps = 1 seed 2, 5.9 s; eps = 0.5 seed 4, 4.3 s; RSPM eps = 1 seed 1, 2.2 s).
* The balanced n = 4,000 subsample where HiGHS with tolerances of 1e-9 certified a false
  optimum of the reference formulation (``oracles.mip.GRID_FEASIBILITY_TOL``): the reference
  with its default tolerances and the structured oracle certify the same objective, and the
  structured w encoded into the reference MILP is feasible at that objective.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from mechanisms.opdisc import ExactERM, OPDisc, OPDiscParams
from mechanisms.rspm import RSPM, RSPMParams
from oracles.base import OBJECTIVE_TOL, Problem
from oracles.objective import MergedRows
from oracles.structured import StructuredOracle


def _problem(rows: MergedRows, mechanism: str, eps: float, seed: int) -> Problem:
    n = rows.n
    if mechanism == "opdisc":
        mech = OPDisc(OPDiscParams(eps, 1.0 / n**2))
    else:
        mech = RSPM(RSPMParams(eps, 1.0 / n**2, noise="gaussian"))
    noise = mech.draw_noise(np.random.default_rng(seed), n, rows.d)
    (problem,) = mech.problems(rows, noise)
    return problem


def _no_better_neighbour(problem: Problem, w: np.ndarray) -> None:
    """No w' in the domain differing from w by one grid step in one or two coordinates has a
    lower F (to OBJECTIVE_TOL)."""
    tau, d = problem.domain.step, problem.d
    moves = [np.eye(d)[j] * s for j in range(d) for s in (-1, 1)]
    moves += [np.eye(d)[i] * s + np.eye(d)[j] * t
              for i, j in itertools.combinations(range(d), 2) for s in (-1, 1) for t in (-1, 1)]
    candidates = w[None, :] + tau * np.asarray(moves)
    inside = np.array([problem.domain.contains(c) for c in candidates])
    assert inside.sum() > d  # the check has something to check
    values = problem.objective(candidates[inside])
    best = float(problem.objective(w))
    assert values.min() >= best - OBJECTIVE_TOL, (values.min(), best)


@pytest.fixture(scope="module")
def adult_rows(adult) -> MergedRows:
    train = adult.train
    return MergedRows.from_xy(train.features, train.labels)


@pytest.mark.parametrize(
    "mechanism, eps, seed", [("opdisc", 1.0, 2), ("opdisc", 0.5, 4), ("rspm", 1.0, 1)]
)
def test_full_adult_is_certified(adult_rows, mechanism, eps, seed):
    problem = _problem(adult_rows, mechanism, eps, seed)
    solution = StructuredOracle(time_limit=120).solve(problem)
    c = solution.certificate
    assert c.certified, c
    assert c.fallback is None and c.backend == "structured"
    assert c.extra["cells"] == 174 and c.extra["continuous_cols"] == 3  # SPEC section 1
    assert c.objective == pytest.approx(float(problem.objective(solution.w)), abs=1e-9)
    _no_better_neighbour(problem, solution.w)


def test_full_adult_exact_erm_is_certified(adult_rows):
    (problem,) = ExactERM().problems(adult_rows, {})
    solution = StructuredOracle(time_limit=300).solve(problem)
    c = solution.certificate
    assert c.certified, c
    _no_better_neighbour(problem, solution.w)
    # the certified minimum beats the best point the reference found in 60 s (session-1
    # sweep: accuracy 0.7663) and cannot beat the best possible accuracy (SPEC section 1)
    accuracy = 1.0 - c.objective / adult_rows.n
    assert 0.7663 < accuracy < 0.8256


@pytest.mark.parametrize("seed", [0, pytest.param(1, marks=pytest.mark.slow)])  # 4 s, 50 s
def test_reference_agrees_where_tight_tolerances_certified_a_false_optimum(adult, seed):
    from oracles.highs import HighsOracle
    from oracles.mip import build_milp
    from pipeline.bench.fast_oracle import balanced_subsample

    X, y = balanced_subsample(adult.train.features, adult.train.labels, 4000, 0)
    rows = MergedRows.from_xy(X, y)
    problem = _problem(rows, "opdisc", 0.5, seed)
    fast = StructuredOracle(time_limit=120).solve(problem)
    reference = HighsOracle(time_limit=300).solve(problem)
    assert fast.certificate.certified and reference.certificate.certified
    assert fast.certificate.objective == pytest.approx(reference.certificate.objective, abs=1e-6)
    milp = build_milp(problem)
    x = milp.encode(fast.w)
    assert milp.max_violation(x) == 0.0
    assert milp.objective_value(x) == pytest.approx(fast.certificate.objective, abs=1e-6)


@pytest.mark.slow  # a time-goal benchmark (50 s); test_full_adult_is_certified stays in the default run
@pytest.mark.parametrize("mechanism", ["opdisc", "rspm"])
def test_goal_grid_is_certified_within_the_time_goal(adult_rows, mechanism):
    """Issue 6's goal on full Adult: eps {0.1, 0.5, 1.0} x noise seeds 0-4 all certified, the
    median time to certificate at most 60 s and the slowest at most 10 minutes (measured: median
    1.05 s and max 5.7 s for OPDisc, 0.22 s and 2.2 s for RSPM, on 2 cores)."""
    import statistics

    seconds = []
    for eps in (0.1, 0.5, 1.0):
        for seed in range(5):
            problem = _problem(adult_rows, mechanism, eps, seed)
            c = StructuredOracle(time_limit=600).solve(problem).certificate
            assert c.certified, (eps, seed, c)
            seconds.append(c.seconds)
    assert statistics.median(seconds) <= 60 and max(seconds) <= 600, seconds
