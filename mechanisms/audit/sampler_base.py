"""What the audit's release samplers share (mechanisms.audit.samplers re-exports it): the
``ReleaseSampler`` protocol, the ``AuditError`` a sampler raises when it cannot run a mechanism
faithfully, ``FunctionSampler`` (any function as a sampler), ``BatchedGenerator`` (a batch of
every noise draw, for the mechanisms' own ``draw_noise``), and ``first_draw`` / ``with_draws``
(one draw of a batch; a draw swapped, the calibration kept)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

from mechanisms.release import Noise, Secret, check_rng


class AuditError(RuntimeError):
    """The audit cannot run this mechanism faithfully (an assumption of a sampler fails)."""


class ReleaseSampler(Protocol):
    """Draws ``size`` independent releases of one mechanism on (X, y)."""

    kind: str  # "discrete" or "continuous"

    def sample(
        self, X: np.ndarray, y: np.ndarray, size: int, rng: np.random.Generator
    ) -> np.ndarray: ...

    # discrete samplers also offer grid(d) -> (k, d): the point of each cell index


@dataclass(frozen=True)
class FunctionSampler:
    """Any ``function(X, y, size, rng) -> outputs`` as a sampler; discrete outputs are cell
    indices into ``grid_function(d)``."""

    function: Callable[..., np.ndarray]
    kind: str = "continuous"
    grid_function: Callable[[int], np.ndarray] | None = None

    def __post_init__(self) -> None:
        if self.kind not in ("discrete", "continuous"):
            raise ValueError(f"kind must be 'discrete' or 'continuous', found {self.kind!r}")
        if self.kind == "discrete" and self.grid_function is None:
            raise ValueError("a discrete FunctionSampler needs grid_function")

    def sample(self, X, y, size, rng) -> np.ndarray:
        return np.asarray(self.function(X, y, size, rng))

    def grid(self, d: int) -> np.ndarray:
        return self.grid_function(d)


# --- batched noise ------------------------------------------------------------------------------


class BatchedGenerator:
    """A stand-in for ``numpy.random.Generator`` that draws ``batch`` copies of every draw.

    ``rng.normal(0, s, size=k)`` becomes ``rng.normal(0, s, size=(batch, k))``: the same numbers,
    in the same order, as ``batch`` sequential calls when the mechanism draws once per run
    (OPDisc, RSPM); with several draws per run (OPSamp) the stream order differs but the
    distribution is the same. Only the distributions the mechanisms use are offered.
    """

    _METHODS = ("normal", "laplace", "exponential", "standard_normal", "random", "uniform")

    def __init__(self, rng: np.random.Generator, batch: int) -> None:
        self._rng, self.batch = check_rng(rng), int(batch)

    def __getattr__(self, name: str):
        if name not in self._METHODS:
            raise AttributeError(
                f"BatchedGenerator does not offer {name!r} (only {', '.join(self._METHODS)})"
            )
        method = getattr(self._rng, name)

        def draw(*args: Any, size: Any = None, **kwargs: Any) -> np.ndarray:
            shape = () if size is None else tuple(np.atleast_1d(size).tolist())
            return method(*args, size=(self.batch, *shape), **kwargs)

        return draw


def with_draws(noise: Noise, **draws: np.ndarray) -> Noise:
    """``noise`` with the named draws replaced (each wrapped in a Secret): one draw of a batch,
    or a unit vector to read the objective's slope along it."""
    return dataclasses.replace(noise, **{k: Secret(v) for k, v in draws.items()})


def first_draw(noise: Noise) -> Noise:
    """The first of a batch of draws (``BatchedGenerator``): every draw's first slice."""
    draws = (f.name for f in dataclasses.fields(noise) if f.name != "calibration")
    return with_draws(noise, **{k: getattr(noise, k).value[0] for k in draws})


__all__ = [
    "AuditError",
    "BatchedGenerator",
    "FunctionSampler",
    "ReleaseSampler",
    "first_draw",
    "with_draws",
]
