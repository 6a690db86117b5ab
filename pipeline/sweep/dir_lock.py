"""One driver per output directory at a time: an exclusive lock the kernel releases on any exit.

Two drivers of the same sweep used to run every run twice (each saw the other's runs as not yet
FINISHED) and, started together, raced to create the sqlite store. A driver therefore takes an
exclusive, non-blocking ``flock`` on ``OUTPUT_DIR/.driver.lock`` before it touches the tracking
store. A second driver refuses at once with a one-line message that names the holder (host, pid,
start time, sweep id); nothing waits, nothing is duplicated. The kernel drops the lock when its
holder exits, even by ``kill -9``, so there is never a stale lock to clear by hand: rerun the
command and it resumes.

The file keeps naming its last holder after the lock is gone. A driver that takes the lock reads
that name first (``DirectoryLock.previous``): a driver killed with ``kill -9`` (or out of memory,
or left without a disk to write its last words on) cannot close its runs in the tracking store,
so the next driver closes what it left RUNNING, and says whose they were (pipeline.run).

The lock is as good as ``flock`` on the file system holding the output directory: local disks,
and the one shared directory that drivers of a ``ray job submit`` write to on one host. Drivers
on different hosts that share only a tracking server (and write to different output
directories) are not serialized by it: give them the same ``hydra.run.dir`` on a file system
with working locks, or run one at a time.
"""

from __future__ import annotations

import fcntl
import json
import os
import socket
import time
from pathlib import Path

LOCK_NAME = ".driver.lock"
#: The file that names the sweep an output directory holds (one grid per directory).
SWEEP_MARKER = ".sweep_id"


class SweepBusyError(RuntimeError):
    """Another driver holds the output directory; the message names it."""


class DirectoryLock:
    """``with DirectoryLock(output_dir, sweep_id):`` holds the directory or raises SweepBusyError."""

    def __init__(self, output_dir: Path, sweep_id: str) -> None:
        self.path = Path(output_dir) / LOCK_NAME
        self.sweep_id = sweep_id
        #: The driver the file named before this one took the lock (its host, pid, sweep id and
        #: start time), or None: no driver used the directory before.
        self.previous: dict | None = None
        self._fd: int | None = None

    def acquire(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_holder(fd)
            os.close(fd)
            raise SweepBusyError(
                f"another driver is running in {self.path.parent} ({holder}); wait for it to "
                f"finish (rerunning then resumes), or use another hydra.run.dir"
            ) from None
        self.previous = _holder_record(fd)
        holder = {
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "sweep_id": self.sweep_id,
            "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        }
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(holder).encode(), 0)
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> "DirectoryLock":
        self.acquire()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def sweep_in(output_dir: Path) -> str | None:
    """The id of the sweep whose report ``output_dir`` holds: its ``.sweep_id`` marker, else
    (a directory written before the marker existed) its summary.json's; None when it holds
    none (an empty marker, left by a crash mid-write, claims nothing)."""
    output_dir = Path(output_dir)
    marker = output_dir / SWEEP_MARKER
    try:
        other = marker.read_text().strip() or None if marker.is_file() else None
    except OSError:
        other = None
    if other is None and (output_dir / "summary.json").is_file():
        try:
            other = json.loads((output_dir / "summary.json").read_text())["sweep"]["sweep_id"]
        except (OSError, ValueError, KeyError, TypeError):
            other = None
    return other if isinstance(other, str) else None


def another_sweep(output_dir: Path, other: str, sid: str | None) -> str:
    """The one-line refusal of a command whose output directory holds sweep ``other``'s report
    (``sid``: this command's sweep, None for a command that runs no sweep)."""
    this = (
        f"this one is {sid}: a different grid or config"
        if sid is not None
        else "this command runs no sweep"
    )
    return (
        f"hydra.run.dir: {output_dir} holds the report of another sweep ({other}; {this}) and "
        f"would be overwritten; give another hydra.run.dir, found {str(output_dir)!r}"
    )


def this_driver() -> str:
    """``host:pid`` of this process, as the tracking store's lease names a driver."""
    return f"{socket.gethostname()}:{os.getpid()}"


def _holder_record(fd: int) -> dict | None:
    """The holder the lock file names, or None (an empty, a cut or an unreadable file)."""
    try:
        holder = json.loads(os.pread(fd, 4096, 0).decode() or "{}")
    except (OSError, ValueError):
        return None
    return holder if isinstance(holder, dict) and holder else None


def holder_text(holder: dict | None) -> str:
    """``pid P on HOST, sweep S, started T``: a lock file's holder, as messages name it."""
    if not holder:
        return "holder unknown"
    return (
        f"pid {holder.get('pid')} on {holder.get('host')}, sweep {holder.get('sweep_id')}, "
        f"started {holder.get('started')}"
    )


def _read_holder(fd: int) -> str:
    return holder_text(_holder_record(fd))
