"""What the audit's samplers share (mechanisms.audit.sampler_base): ``BatchedGenerator`` draws the
sequential stream in one batch, ``FunctionSampler`` wraps any function, ``first_draw`` and
``with_draws`` take one draw of a batch or swap a draw, keeping the calibration."""

from __future__ import annotations

import numpy as np
import pytest

from mechanisms.audit.sampler_base import (
    BatchedGenerator,
    FunctionSampler,
    first_draw,
    with_draws,
)
from mechanisms.opsamp import OPSamp, OPSampParams


def test_batched_generator_draws_the_sequential_stream():
    a, b = np.random.default_rng(3), np.random.default_rng(3)
    sequential = np.stack([a.normal(0.0, 2.0, size=3) for _ in range(5)])
    np.testing.assert_array_equal(BatchedGenerator(b, 5).normal(0.0, 2.0, size=3), sequential)
    sequential = np.stack([a.laplace(0.0, 1.5, size=(2, 2)) for _ in range(4)])
    np.testing.assert_array_equal(BatchedGenerator(b, 4).laplace(0.0, 1.5, size=(2, 2)), sequential)
    with pytest.raises(AttributeError, match="does not offer 'choice'"):
        BatchedGenerator(b, 2).choice(3)


def test_batched_generator_adds_the_batch_axis_and_takes_only_a_generator():
    batched = BatchedGenerator(np.random.default_rng(0), 3)
    assert batched.batch == 3
    assert batched.standard_normal().shape == (3,)  # one scalar per run
    assert batched.random(size=4).shape == (3, 4)
    assert batched.exponential(2.0, size=(2, 5)).shape == (3, 2, 5)
    draws = batched.uniform(-1.0, 1.0, size=1000)
    assert draws.min() >= -1.0 and draws.max() < 1.0
    with pytest.raises(TypeError, match="rng must be a numpy.random.Generator"):
        BatchedGenerator(np.random.RandomState(0), 3)
    with pytest.raises(AttributeError, match="only normal, laplace"):
        batched.integers(5)


def test_function_sampler_passes_the_call_through_and_checks_its_kind():
    calls = []

    def twice_the_labels(X, y, size, rng):
        calls.append((X.shape, size))
        return [2 * int(y[0])] * size

    sampler = FunctionSampler(twice_the_labels)
    out = sampler.sample(np.zeros((2, 1)), np.array([1, -1]), 3, np.random.default_rng(0))
    assert isinstance(out, np.ndarray) and out.tolist() == [2, 2, 2]
    assert calls == [((2, 1), 3)] and sampler.kind == "continuous"
    grid = FunctionSampler(twice_the_labels, kind="discrete", grid_function=lambda d: np.eye(d))
    np.testing.assert_array_equal(grid.grid(2), np.eye(2))
    with pytest.raises(ValueError, match="kind must be 'discrete' or 'continuous', found 'grid'"):
        FunctionSampler(twice_the_labels, kind="grid")


def test_first_draw_takes_every_draws_first_slice_and_keeps_the_calibration():
    mechanism = OPSamp(OPSampParams(1.0, 0.1, m=3))
    batch = mechanism.draw_noise(BatchedGenerator(np.random.default_rng(0), 4), 10, 2)
    assert batch.sigmas.value.shape == (4, 3, 2) and batch.output_laplace.value.shape == (4, 2)
    one = first_draw(batch)
    assert one.calibration == batch.calibration
    np.testing.assert_array_equal(one.sigmas.value, batch.sigmas.value[0])
    np.testing.assert_array_equal(one.output_laplace.value, batch.output_laplace.value[0])
    swapped = with_draws(one, output_laplace=np.zeros(2))
    assert swapped.output_laplace.value.tolist() == [0.0, 0.0] and swapped.sigmas is one.sigmas
