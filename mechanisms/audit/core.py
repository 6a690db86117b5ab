"""Auditing one mechanism variant on one neighbouring pair (statistics in mechanisms.audit.stats)."""

from __future__ import annotations

import time
import zlib
from dataclasses import dataclass, field
from typing import Any, Mapping

import numpy as np

from core.objective import check_data
from mechanisms.audit.audit_report import AuditReport
from mechanisms.audit.samplers import ReleaseSampler
from mechanisms.audit.stats import choose_event, epsilon_lower_bound, per_bound_alpha

RELATIONS = ("replace", "add_remove")


@dataclass(frozen=True, eq=False)
class NeighbouringPair:
    """Datasets D = (X0, y0) and D' = (X1, y1) that differ in one example.

    ``relation`` "replace": same size, exactly one row differs (the SPEC section 2 relation of
    OPDisc, RSPM, ExpMech and OPSamp). "add_remove": D' is D with one row more (DP-SGD's
    accountant, mechanisms.dpsgd). ``note`` says why the pair is hard for the mechanism.
    ``settings`` are mechanism parameters this pair runs with (DP-SGD: batch size, steps).
    ``finding``, when set, says why the mechanism as implemented is expected to exceed its
    claim on this pair: a reported bug, kept so that the audit shows it until it is fixed.
    """

    name: str
    X0: np.ndarray
    y0: np.ndarray
    X1: np.ndarray
    y1: np.ndarray
    relation: str = "replace"
    note: str = ""
    settings: Mapping[str, Any] = field(default_factory=dict)
    finding: str = ""

    def __post_init__(self) -> None:
        X0, y0 = check_data(self.X0, self.y0)
        X1, y1 = check_data(self.X1, self.y1)
        if X0.shape[1] != X1.shape[1]:
            raise ValueError(
                f"{self.name}: D and D' must have the same d, found {X0.shape[1]} and {X1.shape[1]}"
            )
        if self.relation not in RELATIONS:
            raise ValueError(
                f"{self.name}: relation must be one of {RELATIONS}, found {self.relation!r}"
            )
        if self.relation == "replace":
            differ = np.any(X0 != X1, axis=1) | (y0 != y1) if len(y0) == len(y1) else None
            if differ is None or int(differ.sum()) != 1:
                raise ValueError(
                    f"{self.name}: a replace pair needs equal sizes and exactly one differing row"
                )
        else:
            if len(y1) != len(y0) + 1 or not (
                np.array_equal(X1[:-1], X0) and np.array_equal(y1[:-1], y0)
            ):
                raise ValueError(f"{self.name}: an add_remove pair needs D' = D plus one last row")
        object.__setattr__(self, "settings", dict(self.settings))
        for name, value in (("X0", X0), ("y0", y0), ("X1", X1), ("y1", y1)):
            value.setflags(write=False)
            object.__setattr__(self, name, value)

    @property
    def d(self) -> int:
        return int(self.X0.shape[1])

    @property
    def n(self) -> int:
        return int(len(self.y0))


def pair_generator(seed: int, variant: str, pair: str) -> np.random.Generator:
    """A generator per (seed, variant, pair): reports do not depend on the order of the runs."""
    key = zlib.crc32(f"{variant}/{pair}".encode())
    return np.random.default_rng([int(seed), key])


def audit_pair(
    sampler: ReleaseSampler,
    pair: NeighbouringPair,
    *,
    mechanism: str,
    variant: str,
    epsilon: float,
    delta: float,
    samples: int,
    confidence: float,
    seed: int,
    claim_relation: str = "replace",
) -> AuditReport:
    """Draw ``samples`` releases on each dataset, choose events on half, bound on the rest."""
    if samples < 4:
        raise ValueError(f"samples must be >= 4, found {samples!r}")
    alpha = per_bound_alpha(confidence)
    rng = pair_generator(seed, variant, pair.name)
    start = time.perf_counter()
    out0 = sampler.sample(pair.X0, pair.y0, samples, rng)
    out1 = sampler.sample(pair.X1, pair.y1, samples, rng)
    half = samples // 2
    select0, eval0 = out0[:half], out0[half:]
    select1, eval1 = out1[:half], out1[half:]
    total = len(eval0)

    options: dict[str, Any] = {"kind": sampler.kind, "delta": delta, "alpha": alpha}
    if sampler.kind == "discrete":
        grid = sampler.grid(pair.d)
        describe = getattr(sampler, "describe", None)  # a sampler of a statistic names its cells
        options |= {
            "n_cells": len(grid),
            "describe": describe(pair.d) if describe else lambda c: _point(grid[c]),
        }
    forward = choose_event(select0, select1, **options)
    backward = choose_event(select1, select0, **options)
    fd, fd1 = int(forward.contains(eval0).sum()), int(forward.contains(eval1).sum())
    bd1, bd = int(backward.contains(eval1).sum()), int(backward.contains(eval0).sum())
    eps_forward = float(epsilon_lower_bound(fd, fd1, total, delta, alpha))
    eps_backward = float(epsilon_lower_bound(bd1, bd, total, delta, alpha))
    return AuditReport(
        mechanism=mechanism,
        variant=variant,
        pair=pair.name,
        relation=pair.relation,
        claimed_epsilon=float(epsilon),
        claimed_delta=float(delta),
        eps_lb_forward=eps_forward,
        eps_lb_backward=eps_backward,
        samples=int(samples),
        confidence=float(confidence),
        seed=int(seed),
        event_forward=forward.description,
        event_backward=backward.description,
        count_forward_d=fd,
        count_forward_d_prime=fd1,
        count_backward_d_prime=bd1,
        count_backward_d=bd,
        seconds=time.perf_counter() - start,
        claim_relation=claim_relation,
        finding=pair.finding,
    )


def _point(w: np.ndarray) -> str:
    return "w=(" + ",".join(f"{v:g}" for v in w) + ")"
