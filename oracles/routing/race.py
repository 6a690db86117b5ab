"""A race between two strategies on one problem: the window search in this
process, a RIVAL (the reference formulation, ``oracles.routing.routes``'s ``auto`` route) in another.

Why another process: HiGHS reads its thread count once per process and can be stopped only
through a callback it calls at every node (``oracles.mip.highs.watch`` says what that cost), and a
Gurobi model cannot leave the process that built it; a process is stopped at once, whatever
runs in it. The rival is ``python -m oracles.routing.race IN OUT``: it reads the problem, its route and
its budget (``oracles.contract.budget``: read on its own clock) from the pickle IN, solves, and writes the
Solution to OUT. Its stdout is discarded (solver banners), its stderr kept for the message of a
rival that failed.

How the race goes (``Rival``):

1. the search starts alone; when it has not ended after ``HEAD_START`` seconds, the rival
   starts (problems the search ends sooner, the small ones, never start a process);
2. a watcher thread polls the rival; when it ends with a certificate, the search is told to
   stop (``RaceStop``: the search's workers see it at their next look at their pool, within a
   chunk of nodes, and stop with their open nodes and proven bound);
3. when the search ends with a certificate, the rival is killed; otherwise its answer is awaited
   until the budget's deadline (plus ``GRACE`` seconds for it to write its answer) and the two
   are joined by ``oracles.routing.routes.join``: the better point, the larger proven bound, certified
   only when the point meets it. A rival that fails, is killed or never started contributes
   nothing (no point, no bound): the search's answer stands alone.

Both answers are proofs on their own (``oracles.contract.certificate.certify`` re-evaluates every point
exactly), so which member ends first changes the time a certificate takes, never its meaning.
"""

from __future__ import annotations

import os
import pickle
import subprocess
import sys
import tempfile
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from oracles.contract.certificate import Solution
from oracles.contract.budget import Budget, now

#: Seconds the search runs alone before the rival starts (module docstring, step 1).
HEAD_START = 2.0
#: Seconds past the deadline a rival is given to write its answer before it is killed.
GRACE = 3.0
#: How often (seconds) the watcher looks at the rival.
POLL = 0.1
#: The directory that holds the ``oracles`` package: the rival's PYTHONPATH starts with it, so
#: it runs the code this process runs (an installed package, a checkout or a worktree).
CODE_ROOT = str(Path(__file__).resolve().parents[2])


class RaceStop:
    """The stop signal of a race (module docstring, step 2): ``stop(reason)`` once the rival
    certified; calling it says why the search is to stop ("" while it goes on: the window
    search's ``pool.StopSignal``)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._reason = ""

    def stop(self, reason: str) -> None:
        with self._lock:
            self._reason = str(reason) or "stopped"

    def __call__(self) -> str:
        with self._lock:
            return self._reason


@dataclass(frozen=True)
class Entry:
    """What the rival process solves: ``route`` (an oracle with ``solve(problem, budget)``) on
    ``problem`` within ``budget`` (pickled, it is read on the rival's own clock:
    ``oracles.contract.budget``)."""

    route: Any
    problem: Any
    budget: Budget


class Rival:
    """The rival of one race (module docstring): started after ``head_start`` seconds (default
    ``HEAD_START``) unless ``stop`` was called first, watched, killed by ``stop``. ``on_certified`` is called (from the
    watcher thread) when it ends with a certificate."""

    def __init__(
        self,
        entry: Entry,
        *,
        head_start: float | None = None,
        on_certified: Callable[[], None] = lambda: None,
    ) -> None:
        self.entry = entry
        self.on_certified = on_certified
        self.solution: Solution | None = None
        self.error = ""
        self.started = False
        self._cancel = threading.Event()
        self._done = threading.Event()
        self._process: subprocess.Popen | None = None
        self._dir = tempfile.TemporaryDirectory(prefix="oracle-race-")
        wait = HEAD_START if head_start is None else head_start
        self._thread = threading.Thread(target=self._watch, args=(wait,), daemon=True)
        self._thread.start()

    def _watch(self, head_start: float) -> None:
        try:
            if self._cancel.wait(head_start):
                return
            self._start()
            while self._process.poll() is None:
                if self._cancel.wait(POLL):
                    return
            self._read()
            if self.solution is not None and self.solution.certificate.certified:
                self.on_certified()
        except Exception as err:  # noqa: BLE001 - a failed rival contributes nothing
            self.error = f"{type(err).__name__}: {err}"
        finally:
            self._done.set()

    def _start(self) -> None:
        folder = Path(self._dir.name)
        (folder / "in.pkl").write_bytes(pickle.dumps(self.entry))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (CODE_ROOT, env.get("PYTHONPATH", "")) if p)
        with open(folder / "stderr", "wb") as err:
            self._process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "oracles.routing.race",
                    str(folder / "in.pkl"),
                    str(folder / "out"),
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=err,
                env=env,
            )
        self.started = True

    def _read(self) -> None:
        folder = Path(self._dir.name)
        out = folder / "out"
        if self._process.returncode == 0 and out.exists():
            self.solution = pickle.loads(out.read_bytes())
            return
        tail = (folder / "stderr").read_text(errors="replace").strip().splitlines()[-1:]
        self.error = f"exit {self._process.returncode}: {' '.join(tail) or 'no output'}"

    def result(self, until: float) -> Solution | None:
        """The rival's answer, waiting for it until ``until`` (``budget.now()`` seconds); None
        when it did not start, failed or is still running then (it is stopped)."""
        if self.started or not self._cancel.is_set():
            self._done.wait(max(0.0, until - now()))
        self.stop()
        return self.solution

    def stop(self) -> None:
        """Cancel a rival that has not started, kill one that runs; idempotent."""
        self._cancel.set()
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()
        self._thread.join()
        self._dir.cleanup()

    def __enter__(self) -> Rival:
        return self

    def __exit__(self, *exc) -> None:
        self.stop()


def main(argv: list[str] | None = None) -> int:
    """The rival process: ``python -m oracles.routing.race IN OUT`` (module docstring)."""
    source, target = argv if argv is not None else sys.argv[1:]
    entry: Entry = pickle.loads(Path(source).read_bytes())
    solution = entry.route.solve(entry.problem, entry.budget)
    partial = Path(target + ".partial")
    partial.write_bytes(pickle.dumps(solution))
    partial.replace(target)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())


__all__ = ["RaceStop", "CODE_ROOT", "Entry", "GRACE", "HEAD_START", "POLL", "Rival", "main"]
