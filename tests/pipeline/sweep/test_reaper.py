"""pipeline.sweep.reaper: the watchdog that stops a driver's own Ray once the driver is gone. Which
processes belong to a session (read off a fake /proc), and, as a subprocess, that a process of
the session is stopped when the watchdog's pipe closes and that the driver is spared."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from pipeline.sweep import reaper

SESSION = "session_2026-11-24_18-45-37_000532_25262"


def _process(proc, pid: int, cmdline: bytes, fds: dict[str, str] | None = None) -> None:
    entry = proc / str(pid)
    (entry / "fd").mkdir(parents=True)
    (entry / "cmdline").write_bytes(cmdline)
    for fd, target in (fds or {}).items():
        os.symlink(target, entry / "fd" / fd)


def test_a_sessions_processes_are_named_by_their_command_line_or_open_files(tmp_path):
    proc = tmp_path / "proc"
    _process(proc, 11, b"/ray/gcs_server\0--session-name=" + SESSION.encode())
    _process(proc, 12, b"ray::DashboardAgent", {"3": f"/tmp/ray/{SESSION}/logs/agent.log"})
    _process(proc, 13, b"ray::DashboardAgent", {"3": "/tmp/ray/session_other/logs/agent.log"})
    _process(proc, 14, b"python -m pipeline", {"3": f"/tmp/ray/{SESSION}/logs/driver.log"})
    (proc / "self").mkdir()  # not a process number
    assert reaper.session_pids(SESSION, proc, spare=14) == [11, 12]
    assert reaper.session_pids(SESSION, proc) == [11, 12, 14]
    assert (
        reaper.session_pids("", proc) == [] and reaper.session_pids(SESSION, tmp_path / "x") == []
    )


def test_the_descendants_of_a_process_are_its_children_and_theirs(tmp_path):
    proc = tmp_path / "proc"
    # pid: (command, parent); a command with a space and a ") " in it
    table = {10: ("python", 1), 11: ("gcs_server", 10), 12: ("raylet", 10), 13: ("x) y", 12)}
    table |= {14: ("ray::IDLE", 13), 20: ("other", 1), 21: ("child of other", 20)}
    for pid, (command, parent) in table.items():
        (proc / str(pid)).mkdir(parents=True)
        (proc / str(pid) / "stat").write_text(f"{pid} ({command}) S {parent} {pid} 0 0\n")
    (proc / "30").mkdir()  # gone while /proc was read: no stat
    assert reaper.descendants(10, proc) == [11, 12, 13, 14]
    assert reaper.descendants(14, proc) == [] and reaper.descendants(10, tmp_path / "x") == []
    if Path("/proc").is_dir():  # the real /proc: this process is its parent's descendant
        assert os.getpid() in reaper.descendants(os.getppid())


@pytest.mark.integration
def test_the_watchdog_stops_the_session_when_its_pipe_closes_and_spares_the_driver():
    marker = f"session_test_{uuid.uuid4().hex}"
    victim = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        watchdog = reaper.watch(marker)  # this test's process is the driver it spares
        time.sleep(0.5)
        assert victim.poll() is None  # nothing happens while the pipe is open
        watchdog.stdin.close()  # the driver's exit, clean or SIGKILL
        assert victim.wait(timeout=reaper.GRACE + 5) == -signal.SIGTERM
        assert watchdog.wait(timeout=reaper.GRACE + 5) == 0
    finally:
        victim.kill()
        victim.wait()
