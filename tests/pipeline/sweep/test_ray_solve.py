"""RaySolveMany: the sweep's solve_many, each oracle call a Ray task, answers as sequential."""

from __future__ import annotations

import numpy as np
import pytest

from core.objective import MergedRows
from mechanisms.opsamp import OPSamp, OPSampParams
from mechanisms.runner import run, solve_sequentially
from oracles.routing.registry import make_oracle
from tests.pipeline.own_ray import own_ray

pytestmark = pytest.mark.integration  # a local Ray of its own


@pytest.fixture(scope="module")
def local_ray():
    """A Ray of this test's own (one CPU), shut down after: never a cluster someone else runs."""
    with own_ray(1):
        from pipeline.sweep.fan_out import _remote_functions

        yield _remote_functions(1, 1)[1]


def _data(n=40, d=3, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.integers(0, 2, size=(n, d)).astype(float)
    y = np.where(X[:, 0] + rng.normal(0, 0.3, n) > 0.5, 1, -1)
    return X, y


def test_ray_solve_many_returns_the_sequential_solutions(local_ray):
    from pipeline.sweep.fan_out import RaySolveMany

    X, y = _data()
    # 4 calls: delta = 0.1 keeps gamma = sqrt(ln(4d / delta) / (2m)) <= 1 (Lemma 9, SPEC 5)
    mechanism = OPSamp(OPSampParams(1.0, 0.1, m=4))
    rows = MergedRows.from_xy(X, y)
    noise = mechanism.draw_noise(np.random.default_rng(1), rows.n, rows.d)
    problems = mechanism.problems(rows, noise)
    oracle = make_oracle("convex", time_limit=30.0)
    solver = RaySolveMany(local_ray)
    on_ray = solver(oracle, problems)
    sequential = solve_sequentially(oracle, problems)
    assert len(on_ray) == len(sequential) == 4
    for a, b in zip(on_ray, sequential):
        np.testing.assert_array_equal(a.w, b.w)
        assert a.certificate.status == b.certificate.status
        assert a.certificate.gap == b.certificate.gap
    assert solver.task_seconds > 0 and len(solver.nodes) == 1


def test_a_run_through_ray_is_the_sequential_release(local_ray):
    from pipeline.sweep.fan_out import RaySolveMany

    X, y = _data(seed=2)
    mechanism = OPSamp(OPSampParams(1.0, 0.1, m=3))  # gamma <= 1 at d = 3, as above
    oracle = make_oracle("convex", time_limit=30.0)
    on_ray = run(
        mechanism, X, y, oracle, np.random.default_rng(5), solve_many=RaySolveMany(local_ray)
    )
    sequential = run(mechanism, X, y, oracle, np.random.default_rng(5))
    np.testing.assert_array_equal(on_ray.w, sequential.w)
    assert on_ray.privacy == sequential.privacy
    assert on_ray.oracle_seconds > 0  # the m calls' certificates, summed
