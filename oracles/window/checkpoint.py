"""Carry on: the state a stopped window search keeps, and where it is kept.

A window search (``oracles.window.oracle``) that stops before it proves its point has not wasted its
work: every grid point with F at most its best value either was evaluated or lies below one of
its OPEN nodes (the prefixes it had still to search: ``branch.open_nodes``), and the least lower
bound of those nodes is a proven bound. ``Carry`` keeps exactly that: the problem's key, the
incumbent its tables were built below, the best point found, the open nodes in the order the
search would have taken them, the proven bound, and what the attempts so far spent (nodes, CPU
and wall seconds). A later solve of the SAME problem resumes from it instead of starting over:
it rebuilds the same tables (the same incumbent, the same Lagrangian steps), starts below the
best value found, and searches the open nodes alone, in their order, so it makes the nodes the
stopped search would have made.

Why the answer is the one an uninterrupted solve certifies (docs/privacy.md, "Carrying on"): the
points not below an open node were either evaluated (the best of them is the carried best) or
dropped by a bound that exceeded a value some point attains; searching every open node below the
carried best therefore finds the exact minimum of the same objective. Soundness does not rest
on the tables being the same (any valid bounds keep the coverage); only the node count does.

The key is a digest of everything the objective depends on (``problem_key``: the rows and their
weights, the noise terms, the margin, the grid), so a state is only ever read for the problem it
was made for: the release is the argmin of the same noisy objective whatever the attempts. A
``CarryStore`` is a directory of states by key (``<key>.npz``), written atomically; a state that
certifies is removed.

A kept state belongs to the problem, not to the route that wrote it (issue 45): a later solve
may take another route (a longer limit lets the structured search read the problem's shape and
certify it before any window search), so the store also keeps the problem's ATTEMPTS
(``<key>.attempts.json``, ``Attempt``): what each solve through a carrying route
(``oracles.routing.routes.Route``) spent, how it ended, what it started from and what state it
left. That route reads them before it solves and records its own after, whatever strategy ended
it, so the CPU of every attempt adds up in the certificate (``CarryStats``). When a problem
certifies, its state AND its attempts are removed (``CarryStore.finish``): the certificate that
certified holds the whole account, and a later solve of the same problem (a new sweep in the
same directory) neither resumes a finished search nor counts its CPU twice. A state kept before
the attempts were recorded (or by a ``WindowOracle`` used alone) still carries on: its own
counts (``Carry.attempts``, ``cpu_seconds``, ``seconds``) stand for the attempts that made it.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from core.problem import IntegerGrid, Problem

#: The version of the file layout (a state of another layout is not read).
LAYOUT = 1
#: The version of the attempts' file layout (a file of another layout is refused: ``CarryError``).
ATTEMPTS_LAYOUT = 1


class CarryError(ValueError):
    """A kept file that cannot be read as this version writes it (one line: which file, why)."""


def problem_key(problem: Problem) -> str:
    """A digest of the objective F and its domain (module docstring): rows, weights, the
    linear and norm terms, the margin and the grid; not the label (a name only)."""
    digest = hashlib.sha256()
    for array in (problem.points, problem.pos, problem.neg, problem.linear):
        a = np.ascontiguousarray(np.asarray(array, dtype=float))
        digest.update(repr(a.shape).encode())
        digest.update(a.tobytes())
    domain = problem.domain
    if not isinstance(domain, IntegerGrid):
        raise TypeError(f"a carried search needs an IntegerGrid, found {domain!r}")
    scalars = (
        problem.norm_coef,
        problem.norm_radius_sq,
        problem.margin,
        domain.d,
        domain.bound,
        domain.step,
        domain.norm_sq_max,
    )
    digest.update(repr(tuple(None if s is None else float(s) for s in scalars)).encode())
    return digest.hexdigest()[:32]


@dataclass(frozen=True, eq=False)
class Carry:
    """A stopped window search's state (module docstring).

    Attributes:
        key: ``problem_key`` of its problem.
        upper, w_upper: the incumbent its tables were built below (the grid search's) and its
            point; a resumed search rebuilds the same tables from them.
        best, w_best: the least exact objective found and its point.
        bound: a proven lower bound on min F.
        open: the nodes still to search ((m, level) int8 prefixes in search order, one array
            a level group), in the order the search would have taken them.
        nodes, cpu_seconds, seconds: what every attempt so far spent, summed.
        attempts: how many solves made it.
        lagrange_iterations: the tables' Lagrangian steps.
    """

    key: str
    upper: float
    w_upper: np.ndarray
    best: float
    w_best: np.ndarray
    bound: float
    open: tuple[np.ndarray, ...]
    nodes: int
    cpu_seconds: float
    seconds: float
    attempts: int
    lagrange_iterations: int

    @property
    def open_nodes(self) -> int:
        return int(sum(len(s) for s in self.open))

    def spent(self, nodes: int, cpu_seconds: float, seconds: float) -> Carry:
        """This state with one more attempt's spending added."""
        return replace(
            self,
            nodes=self.nodes + int(nodes),
            cpu_seconds=self.cpu_seconds + float(cpu_seconds),
            seconds=self.seconds + float(seconds),
            attempts=self.attempts + 1,
        )


@dataclass(frozen=True)
class Attempt:
    """One solve of a problem through a carrying route (module docstring).

    Attributes:
        number: its place among the problem's attempts (1 for the first).
        nodes: the window search's nodes in it (0 when no window search ran).
        cpu_seconds, seconds: the CPU it got (``Certificate.cpu_seconds``) and its wall time.
        backend: the strategy whose answer it returned (the certificate's ``backend``).
        certified: whether it certified.
        started_from: what it started from (``CarryStats.started_from``).
        kept: the window state it left, ``"N open nodes, bound B"``; None when it left none.
    """

    number: int
    nodes: int
    cpu_seconds: float
    seconds: float
    backend: str
    certified: bool
    started_from: str
    kept: str | None = None

    def to_json(self) -> dict:
        return dataclasses.asdict(self)


def kept_text(open_nodes: int, bound: float) -> str:
    """A kept state (its open nodes and proven bound) as an attempt's ``kept`` and a
    certificate's ``started_from`` name it."""
    nodes = f"{int(open_nodes):,} open node{'' if int(open_nodes) == 1 else 's'}"
    return f"{nodes}, bound {float(bound):.6g}"


@dataclass(frozen=True)
class CarryStore:
    """The states of stopped searches in ``directory``, one file a problem key."""

    directory: str

    def path(self, key: str) -> Path:
        return Path(self.directory) / f"{key}.npz"

    def header(self, problem: Problem) -> tuple[Path, dict] | None:
        """The file of the state kept for ``problem`` and its header (None when there is none,
        or it is another layout's or another problem's)."""
        key = problem_key(problem)
        path = self.path(key)
        if not path.exists():
            return None
        with np.load(path, allow_pickle=False) as data:
            meta = json.loads(str(data["meta"]))
        if meta.get("layout") != LAYOUT or meta.get("key") != key:
            return None
        return path, meta

    def load(self, problem: Problem) -> Carry | None:
        """The state kept for ``problem`` (None when there is none)."""
        found = self.header(problem)
        if found is None:
            return None
        path, meta = found
        with np.load(path, allow_pickle=False) as data:
            levels = int(meta["levels"])
            return Carry(
                meta["key"],
                float(meta["upper"]),
                data["w_upper"].copy(),
                float(meta["best"]),
                data["w_best"].copy(),
                float(meta["bound"]),
                tuple(data[f"open_{i}"].astype(np.int8) for i in range(levels)),
                int(meta["nodes"]),
                float(meta["cpu_seconds"]),
                float(meta["seconds"]),
                int(meta["attempts"]),
                int(meta["lagrange_iterations"]),
            )

    def save(self, carry: Carry) -> Path:
        """Keep ``carry`` (atomically: a reader sees the old state or the new one)."""
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        meta = {
            "layout": LAYOUT,
            "key": carry.key,
            "upper": carry.upper,
            "best": carry.best,
            "bound": carry.bound,  # json writes -inf as -Infinity and reads it back
            "levels": len(carry.open),
            "open_nodes": carry.open_nodes,  # read alone by ``summary``
            "nodes": carry.nodes,
            "cpu_seconds": carry.cpu_seconds,
            "seconds": carry.seconds,
            "attempts": carry.attempts,
            "lagrange_iterations": carry.lagrange_iterations,
        }
        arrays = {f"open_{i}": np.asarray(s, dtype=np.int8) for i, s in enumerate(carry.open)}
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".npz.partial")
        with os.fdopen(handle, "wb") as out:
            np.savez(
                out,
                meta=np.array(json.dumps(meta)),
                w_upper=np.asarray(carry.w_upper, dtype=float),
                w_best=np.asarray(carry.w_best, dtype=float),
                **arrays,
            )
        target = self.path(carry.key)
        os.replace(temporary, target)
        return target

    def summary(self, problem: Problem) -> str | None:
        """The state kept for ``problem`` as ``kept_text`` writes it, read from its header
        (the open nodes themselves only for a state written before the header counted them);
        None when there is none."""
        found = self.header(problem)
        if found is None:
            return None
        _, meta = found
        if "open_nodes" not in meta:
            carry = self.load(problem)
            return kept_text(carry.open_nodes, carry.bound) if carry is not None else None
        return kept_text(meta["open_nodes"], meta["bound"])

    def drop(self, problem: Problem) -> None:
        """Forget the state of ``problem`` (its search certified)."""
        self.path(problem_key(problem)).unlink(missing_ok=True)

    # --- the problem's attempts (module docstring) ----------------------------------------

    def attempts_path(self, key: str) -> Path:
        return Path(self.directory) / f"{key}.attempts.json"

    def attempts(self, problem: Problem) -> tuple[Attempt, ...]:
        """The attempts recorded for ``problem``, in order; without a record, a kept state's own
        counts as one entry numbered by its attempts (a state kept before attempts were
        recorded, or by a ``WindowOracle`` used alone), else none. A file this version cannot
        read raises ``CarryError`` naming it: its CPU would otherwise be lost silently."""
        key = problem_key(problem)
        path = self.attempts_path(key)
        if not path.exists():
            carry = self.load(problem)
            if carry is None:
                return ()
            older = "a state kept before attempts were recorded"
            return (
                Attempt(
                    carry.attempts,
                    carry.nodes,
                    carry.cpu_seconds,
                    carry.seconds,
                    "window",
                    False,
                    older,
                    kept_text(carry.open_nodes, carry.bound),
                ),
            )
        try:
            record = json.loads(path.read_text())
            if record.get("layout") != ATTEMPTS_LAYOUT or record.get("key") != key:
                raise ValueError(f"layout {record.get('layout')!r}, key {record.get('key')!r}")
            return tuple(Attempt(**entry) for entry in record["attempts"])
        except (ValueError, TypeError, KeyError, AttributeError) as why:
            raise CarryError(
                f"{path}: not a record of attempts this version reads ({why}); "
                "move it away to start this problem's account afresh"
            ) from None

    def record(self, problem: Problem, attempts: tuple[Attempt, ...]) -> Path:
        """Keep ``attempts`` as the record of ``problem``'s attempts (atomically)."""
        key = problem_key(problem)
        folder = Path(self.directory)
        folder.mkdir(parents=True, exist_ok=True)
        text = json.dumps(
            {
                "layout": ATTEMPTS_LAYOUT,
                "key": key,
                "attempts": [a.to_json() for a in attempts],
            },
            indent=1,
        )
        handle, temporary = tempfile.mkstemp(dir=folder, suffix=".json.partial")
        with os.fdopen(handle, "w") as out:
            out.write(text)
        target = self.attempts_path(key)
        os.replace(temporary, target)
        return target

    def finish(self, problem: Problem) -> None:
        """``problem`` certified: forget its state and its attempts (module docstring)."""
        key = problem_key(problem)
        self.path(key).unlink(missing_ok=True)
        self.attempts_path(key).unlink(missing_ok=True)


__all__ = [
    "ATTEMPTS_LAYOUT",
    "LAYOUT",
    "Attempt",
    "Carry",
    "CarryError",
    "CarryStore",
    "kept_text",
    "problem_key",
]
