"""``python -m pipeline.sweep.reaper SESSION DRIVER_PID``: stops a driver's own local Ray once the driver is gone.

A driver that starts a Ray of its own (``pipeline.sweep.fan_out.init_ray``) shuts it down at exit. A
driver killed with SIGKILL cannot: its Ray's GCS and raylet notice and exit, but the dashboard
and runtime-env agents linger for a minute or more. So the driver starts this watchdog with a
pipe on its stdin; the pipe closes when the driver ends, however it ends, and the watchdog then
stops every process whose command line names the driver's Ray session (SIGTERM, then SIGKILL
after ``GRACE`` seconds). After a clean exit there is nothing left to stop.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

#: Seconds between SIGTERM and SIGKILL.
GRACE = 5.0


def session_pids(session: str, proc: Path = Path("/proc"), spare: int | None = None) -> list[int]:
    """The processes of the Ray session ``session`` (its name, unique to one ``ray.init``), this
    one excepted: those whose command line names it, or that hold a file open under its
    directory (Ray's agents retitle themselves ``ray::DashboardAgent``, but keep their logs
    there), ``spare`` excepted (the driver, which may be exiting still). Linux's /proc;
    elsewhere, none."""
    if not session or not proc.is_dir():
        return []
    skip = {os.getpid(), spare}
    found = []
    for entry in proc.iterdir():
        if not entry.name.isdigit() or int(entry.name) in skip:
            continue
        if _names(entry, session):
            found.append(int(entry.name))
    return sorted(found)


def _names(entry: Path, session: str) -> bool:
    try:
        if session.encode() in (entry / "cmdline").read_bytes():
            return True
        for fd in (entry / "fd").iterdir():
            if session in os.readlink(fd):
                return True
    except OSError:  # gone meanwhile, or not ours to read
        pass
    return False


def descendants(pid: int, proc: Path = Path("/proc")) -> list[int]:
    """The processes below ``pid``: its children, theirs, and so on (a Ray that ``ray.init``
    started in this process and that failed half-way: its GCS, raylet, agents). Linux's /proc;
    elsewhere, none."""
    if not proc.is_dir():
        return []
    children: dict[int, list[int]] = {}
    for entry in proc.iterdir():
        if not entry.name.isdigit():
            continue
        try:  # "pid (comm) state ppid ...": comm may hold spaces and parentheses
            ppid = int((entry / "stat").read_text().rsplit(") ", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):  # gone meanwhile
            continue
        children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], list(children.get(pid, []))
    while todo:
        child = todo.pop()
        found.append(child)
        todo.extend(children.get(child, []))
    return sorted(found)


def stop(pids: list[int], grace: float = GRACE) -> None:
    """SIGTERM to each of ``pids``, SIGKILL to those still there after ``grace`` seconds."""
    for pid in pids:
        try:
            os.kill(pid, signal.SIGTERM)
        except OSError:
            pass
    deadline = time.monotonic() + grace
    while pids and time.monotonic() < deadline:
        time.sleep(0.1)
        pids = [pid for pid in pids if _alive(pid)]
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except OSError:
        return False
    try:  # a zombie has ended: only its parent's wait is missing
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (OSError, IndexError):
        return True


def watch(session: str) -> subprocess.Popen:
    """Start the watchdog for ``session``; it acts when the returned process's stdin closes
    (the driver's exit, or ``close()`` on it)."""
    return subprocess.Popen(
        [sys.executable, "-m", "pipeline.sweep.reaper", session, str(os.getpid())],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # a Ctrl-C to the driver's terminal does not stop the watchdog
    )


def main(argv: list[str]) -> int:
    session, driver = argv
    sys.stdin.buffer.read()  # returns at EOF: the driver has closed the pipe, or is gone
    stop(session_pids(session, spare=int(driver)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
