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
  before and after the solve): on an idle machine the bound as before, and a solve that returns
  late while using no CPU (waiting past its deadline) still fails it.
"""

from __future__ import annotations

import os
import resource
import time
from contextlib import contextmanager


def slowdown() -> float:
    """The machine's load per core now (1: idle or loaded up to its cores)."""
    return max(1.0, os.getloadavg()[0] / (os.cpu_count() or 1))


def cpu_seconds() -> float:
    """The CPU this process and its waited-for children have used (every thread's)."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@contextmanager
def timed():
    """``with timed() as took:`` then ``took.wall``, ``took.cpu`` (this process's CPU over the
    block) and ``took.slowdown`` (the larger before and after)."""

    class Took:
        pass

    took = Took()
    load, cpu, start = slowdown(), cpu_seconds(), time.perf_counter()
    yield took
    took.wall = time.perf_counter() - start
    took.cpu = cpu_seconds() - cpu
    took.slowdown = max(load, slowdown())


def assert_returns_near(limit: float, wall: float, cpu: float, load: float, cpus: int = 1) -> None:
    """A solve of time limit ``limit`` that took ``wall`` seconds and ``cpu`` CPU seconds (on
    ``cpus`` CPUs at most) at a slowdown of ``load`` returned near its limit (module doc)."""
    assert cpu <= 1.1 * limit * cpus + 5.0, f"{cpu:.1f} CPU s on a {limit} s limit ({cpus} CPUs)"
    assert wall <= 1.1 * limit + 5.0 * load, (
        f"{wall:.1f} s on a {limit} s limit, at {load:.1f} x the machine's cores in load"
    )
