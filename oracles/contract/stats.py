"""What a solve spent and did, as typed records: one frozen record per strategy family.

A certificate (``oracles.contract.certificate.Certificate``) holds a small tuple of these (``stats``): the
window search's ``WindowStats``, and when it applies ``ClusterStats`` (the pool moved onto a Ray
cluster), ``CarryStats`` (carried on from a kept state), ``TreeStats`` (it stopped: what the
certificate would still cost); the structured oracle's ``StructuredStats``; the MIP backends'
``MipStats``; the convex oracle's ``ConvexStats``; the data player's ``ConjunctionStats``; the
routing table's ``RouteStats`` (a hand-over, a reference that followed or did not).

Code reads them as fields (``certificate.stat(WindowStats).nodes``), never by string: a typo is
an AttributeError, not a silent default. What users see keeps its old key names: ``as_dict()``
writes a record flat under the keys release.json and MLflow had before (``FLAT_PREFIX`` for
``ClusterStats``'s ``elastic_*``), leaving out what a solve did not record (None).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar


@dataclass(frozen=True)
class Stats:
    """A record of a certificate's ``stats``; at most one of each type per certificate."""

    #: prefix of every key in ``as_dict`` (the names release.json has always used)
    FLAT_PREFIX: ClassVar[str] = ""

    def as_dict(self) -> dict[str, Any]:
        """The record flat, under its old keys; a field left None was not recorded and has no
        key (as before, when the key was simply absent)."""
        return {
            self.FLAT_PREFIX + f.name: getattr(self, f.name)
            for f in dataclasses.fields(self)
            if getattr(self, f.name) is not None
        }


S = TypeVar("S", bound=Stats)


def find(stats: tuple[Stats, ...], kind: type[S]) -> S | None:
    """The record of type ``kind`` in ``stats``, None when the solve made none."""
    for record in stats:
        if type(record) is kind:
            return record
    return None


def merged(stats: tuple[Stats, ...], *records: Stats | None) -> tuple[Stats, ...]:
    """``stats`` with ``records`` added, each replacing one of its own type (None: nothing)."""
    new = [r for r in records if r is not None]
    kinds = {type(r) for r in new}
    return tuple(r for r in stats if type(r) not in kinds) + tuple(new)


def flat(stats: tuple[Stats, ...]) -> dict[str, Any]:
    """Every record's ``as_dict`` in order (the layout of release.json's ``extra``)."""
    out: dict[str, Any] = {}
    for record in stats:
        out |= record.as_dict()
    return out


# --- the window search (oracles.window) ------------------------------------------------------


@dataclass(frozen=True)
class WindowStats(Stats):
    """One window search: its plan's ``incumbent`` and ``lagrange_bound``, its ``workers``, the
    units they ``donations`` gave each other, the ``nodes`` and ``leaves`` searched, the workers'
    own CPU seconds, and ``remote_cpu_seconds``: what workers in other processes (Ray tasks)
    spent, which ``oracles.contract.certificate.counts_cpu`` adds to this process's. ``carried_open_nodes``: the
    open nodes of the state it carried on from (None when it started afresh)."""

    incumbent: float
    lagrange_bound: float
    workers: int
    donations: int
    nodes: int
    leaves: int
    worker_cpu_seconds: float
    remote_cpu_seconds: float
    carried_open_nodes: int | None = None


@dataclass(frozen=True)
class ClusterStats(Stats):
    """What a window search did on a Ray cluster once its pool moved there
    (``pipeline.distributed.ray_search``): extra workers started and recalled, the Ray nodes its
    workers ran on, when it moved (seconds after the start), and from then on its seconds, its
    workers' seconds and their CPU seconds (``tail_cpu_seconds / tail_seconds``: the CPUs it got).
    Written as ``elastic_*``."""

    FLAT_PREFIX: ClassVar[str] = "elastic_"

    extras: int
    recalled: int
    nodes: int
    grown_at: float
    tail_seconds: float
    tail_worker_seconds: float
    tail_cpu_seconds: float


@dataclass(frozen=True)
class CarryStats(Stats):
    """A solve of a problem carried over attempts (``oracles.window.checkpoint``): its
    ``attempts`` so far, this one included (so this attempt's number), what the ones before this
    spent (``carried_*``) and all of them with this one (``total_*``: ``total_cpu_seconds`` is
    the attempts' CPU in all), ``carry``, the path of the state it kept when it stopped (None
    when it certified or kept none), and ``started_from``, what this attempt started from: "kept
    state of attempt k (N open nodes, bound B)", or "from scratch on <backend>" (saying when a
    kept window state was not needed or not reached). A route with a carry directory writes it
    whatever strategy ended the attempt (``oracles.routing.routes.Route.solve``); a window search
    used alone writes it without ``started_from``."""

    attempts: int
    carried_nodes: int
    carried_cpu_seconds: float
    carried_seconds: float
    total_nodes: int
    total_cpu_seconds: float
    total_seconds: float
    carry: str | None = None
    started_from: str | None = None


@dataclass(frozen=True)
class TreeStats(Stats):
    """A window search that stopped: why (``stopped``), the estimated size of the tree left to
    certify (``oracles.window.tree_size``: ``tree_nodes`` between ``tree_nodes_low`` and
    ``tree_nodes_high``, ``tree_estimate_seconds`` to estimate it), the search's measured
    ``nodes_per_cpu_second`` and ``to_certify``, the cost in words."""

    stopped: str
    tree_nodes: float
    tree_nodes_low: float
    tree_nodes_high: float
    tree_estimate_seconds: float
    nodes_per_cpu_second: float
    to_certify: str

    def cpu_seconds(self) -> float:
        """The likely CPU seconds left to certify: the tree left at the search's rate (nan
        without a rate)."""
        return self._at_rate(self.tree_nodes)

    def cpu_seconds_high(self) -> float:
        """The high end of those CPU seconds (the estimate's spread, not a bound)."""
        return self._at_rate(max(self.tree_nodes_high, self.tree_nodes))

    def _at_rate(self, nodes: float) -> float:
        rate = float(self.nodes_per_cpu_second)
        return float(nodes) / rate if rate > 0 else math.nan


# --- the other strategies -----------------------------------------------------------------------


@dataclass(frozen=True)
class StructuredStats(Stats):
    """The structured oracle (``oracles.structured.oracle``): the table's shape
    (``StructuredShape.describe``) and what its search over the combinations did."""

    binary_cols: int
    continuous_cols: int
    onehot_groups: list[int]
    cells: int
    cell_rows: int
    combinations: int
    subproblems: int
    cutoff: int
    solved: int
    max_sub_seconds: float
    sub_seconds: float
    max_breakpoints: int
    tabled: int
    combinations_pruned_by_bound: int
    searched: int = 0
    search_nodes: int = 0
    search_handed: int = 0


@dataclass(frozen=True)
class MipStats(Stats):
    """A MIP backend's solve (``oracles.mip.highs``, ``oracles.mip.gurobi``): the last model's sizes
    (``Milp.stats``), the solver's status and seconds, HiGHS's presolve settings, Gurobi's
    constraint count, the answer's largest violation, the margin band's rounds and cuts
    (``oracles.mip.formulation.solve_resolving_band``), the feasibility tolerance, and HiGHS's second opinion
    (``first_bound``, ``second_opinion_*``)."""

    n_cols: int
    n_rows: int
    n_integer: int
    n_nonzeros: int
    n_active_rows: int
    n_problem_rows: int
    n_band_cuts: int
    solver_status: str | int | None = None  # None: the solver refused the model
    solver_seconds: float | None = None
    solver_status_name: str | None = None
    presolve: str | None = None
    presolve_rule_off: int | None = None
    n_constraints: int | None = None
    max_violation: float | None = None
    band_rounds: int | None = None
    band_cuts: int | None = None
    feasibility_tol: float | None = None
    first_bound: float | None = None
    second_opinion_bound: float | None = None
    second_opinion_seconds: float | None = None
    second_opinion_band_rounds: int | None = None


@dataclass(frozen=True)
class ConvexStats(Stats):
    """The convex oracle (``oracles.convex``): the surrogate's loss, the certified gap
    ``alpha`` and how its bound was proven, the scale and where it came from, the Lipschitz
    constant, the rows, and the solver's iterations (and L-BFGS-B's restarts, ``rounds``)."""

    loss: str
    alpha: float
    bound_kind: str
    scale: float
    scale_source: str
    lipschitz_l1: float
    rows: int
    iterations: int | None = None
    rounds: int | None = None


@dataclass(frozen=True)
class ConjunctionStats(Stats):
    """The data player's oracles (``oracles.synthetic.data_player``, ``oracles.synthetic.data_search``): a
    batch's ``records``, how many did not finish, and the search's ``nodes``."""

    records: int
    unfinished: int
    nodes: int | None = None


@dataclass(frozen=True)
class RouteStats(Stats):
    """The routing table's (``oracles.routing.routes``): why the reference formulation did not follow a
    stopped search (``reference_skipped``), or how the one that followed or raced it ended
    (``fallback_status``, ``fallback_bound``, ``fallback_objective``); ``went_on``: why a
    stopped window search went on from its kept state (``Route.go_on``)."""

    reference_skipped: str | None = None
    went_on: str | None = None
    fallback_status: str | None = None
    fallback_bound: float | None = None
    fallback_objective: float | None = None


__all__ = [
    "CarryStats",
    "ClusterStats",
    "ConjunctionStats",
    "ConvexStats",
    "MipStats",
    "RouteStats",
    "Stats",
    "StructuredStats",
    "TreeStats",
    "WindowStats",
    "find",
    "flat",
    "merged",
]
