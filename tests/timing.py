"""How long a solve may take on a loaded machine: near its limit, with a slack for the load.

A solve stops at a deadline on the monotonic (wall) clock, so on an idle machine it returns
within about its limit. On a machine loaded beyond its cores each process gets a share of a
core, and the work a solve does around its deadline (building the problem, certifying the
answer, collecting its parts, tearing down) takes load / cores times as long in wall-clock
seconds: on 2 cores at load 7 to 14 a 1 s routing solve took 6.4 s and a 2 s split solve 7.6 s,
against the 1.1 x limit + 5 s they were held to, with no deadline missed. So a test that a solve
returns near its limit asserts two things (``assert_returns_near``):

* the CPU the solve used is at most 1.1 x limit x its CPUs + 5 s: a solve that ignores its
  deadline keeps working and fails this on any machine, loaded or not;
* its wall-clock time is at most 1.1 x limit + 5 x slowdown s, where slowdown is the machine's
  load per core (the one-minute load average over the CPUs, at least 1, the larger of its values
  before and after the solve, and of the runnable threads sampled during it over the CPUs):
  on an idle machine the bound as before, and a solve that returns late while using no CPU
  (waiting past its deadline) still fails it. The one-minute average lags a load that has just
  begun (a 1 s routing solve failed once at 6.4 s beside a slow test that had just started);
  the samples (``/proc/loadavg``'s runnable count, every ``SAMPLE_EVERY`` s) see what the
  solve shared its cores with while it ran.
"""

from __future__ import annotations

import os
import resource
import threading
import time
from contextlib import contextmanager

#: Seconds between two samples of the runnable threads during a timed block.
SAMPLE_EVERY = 0.05


def slowdown() -> float:
    """The machine's load per core now (1: idle or loaded up to its cores)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def cpu_seconds() -> float:
    """The CPU this process and its waited-for children have used (every thread's)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def runnable() -> int | None:
    """The threads runnable on the machine now (``/proc/loadavg``'s fourth field, before the
    slash), None where there is no such file."""
    try:
        with open("/proc/loadavg") as f:
            return int(f.read().split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return None


class Sampler:
    """The runnable threads every ``every`` seconds, from a daemon thread, until ``stop``:
    ``slowdown`` is their mean over the CPUs (at least 1; 1 without a sample)."""

    def __init__(self, every: float = SAMPLE_EVERY) -> None:
        self.every, self.samples = every, []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _sample(self) -> None:
        while True:
            count = runnable()
            if count is not None:
                self.samples.append(count)
            if self._stop.wait(self.every):
                return

    def stop(self) -> float:
        self._stop.set()
        self._thread.join()
        if not self.samples:
            return 1.0
        return max(1.0, sum(self.samples) / len(self.samples) / (os.cpu_count() or 1))


@contextmanager
def timed():
    """``with timed() as took:`` then ``took.wall``, ``took.cpu`` (this process's CPU over the
    block) and ``took.slowdown`` (the largest of the load before, after, and the runnable
    threads sampled during the block)."""

    class Took:
        pass

    took = Took()
    load, cpu, start = slowdown(), cpu_seconds(), time.perf_counter()
    sampler = Sampler()
    try:
        yield took
    finally:
        during = sampler.stop()
    took.wall = time.perf_counter() - start
    took.cpu = cpu_seconds() - cpu
    took.slowdown = max(load, slowdown(), during)


def assert_returns_near(limit: float, wall: float, cpu: float, load: float, cpus: int = 1) -> None:
    """A solve of time limit ``limit`` that took ``wall`` seconds and ``cpu`` CPU seconds (on
    ``cpus`` CPUs at most) at a slowdown of ``load`` returned near its limit (module doc)."""
    assert cpu <= 1.1 * limit * cpus + 5.0, f"{cpu:.1f} CPU s on a {limit} s limit ({cpus} CPUs)"
    assert wall <= 1.1 * limit + 5.0 * load, (
        f"{wall:.1f} s on a {limit} s limit, at {load:.1f} x the machine's cores in load"
    )
