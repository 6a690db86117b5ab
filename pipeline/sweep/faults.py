"""Faults of the machine under a running sweep, told apart from bugs.

A full disk or a read-only output directory is not a bug of the sweep: the runs finished so far
are in the tracking store and a rerun of the same command resumes. ``storage_fault`` recognises
such an error wherever it surfaces (an ``OSError`` of the operating system, sqlite's
``OperationalError``, SQLAlchemy's or MLflow's wrapping of it), and the driver then ends with
``StorageError``: one line, the exit code of a partial sweep. Its last words (the sweep run
KILLED, summary.md) are written in the space ``SpaceReserve`` kept back for them. A SIGTERM is
such a fault too: ``stop_on_sigterm`` makes it a ``Terminated``, which ends the sweep as Ctrl-C
does.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from pathlib import Path

#: The operating system's ways of saying "this cannot be written here".
STORAGE_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "the disk quota is exceeded",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "operation not permitted",
}

#: sqlite's (hence SQLAlchemy's and MLflow's) messages for the same faults.
STORAGE_MESSAGES = {
    "database or disk is full": "the disk is full",
    "attempt to write a readonly database": "the tracking database is read-only",
    "unable to open database file": "the tracking database cannot be opened for writing",
    "disk i/o error": "a disk I/O error",
}


#: The file that holds a driver's reserve of space (``SpaceReserve``), in its output directory.
RESERVE_NAME = ".space_reserve"
#: Bytes kept back: what a driver stopped by a full disk needs to say so. Measured on a 64 MB
#: tmpfs filled under a sweep (a 1 MB store): marking the sweep run KILLED and a child FAILED,
#: then results.csv, both figures and summary.md took 68 kB in all (the figures 57 kB of it).
#: 8 MiB leaves room for a store's journal when it holds thousands of runs.
RESERVE_BYTES = 8 << 20


class SpaceReserve:
    """Space set aside on a sweep's disk while it runs, given back when the disk fills.

    A full disk stopped a sweep with no room left to mark its MLflow run KILLED or to write
    summary.md: the sweep run stayed RUNNING and the output directory had no word of what
    happened, until the sweep was rerun with space. So the driver allocates ``size`` bytes
    (blocks on the disk, not a sparse file) in each directory it writes to, before it runs, and
    frees them when a write fails for want of space: those last writes then fit (as long as no
    other process takes the space meanwhile; the next driver closes what is left RUNNING).
    ``with SpaceReserve(dirs):`` takes it and removes it at the end, however the block ends.
    """

    def __init__(self, directories: Iterable[Path], size: int = RESERVE_BYTES) -> None:
        devices: dict[int, Path] = {}  # one reserve per file system
        for directory in directories:
            directory = Path(directory)
            try:
                devices.setdefault(directory.stat().st_dev, directory)
            except OSError:  # not there (yet): nothing to reserve there
                continue
        self.paths = [directory / RESERVE_NAME for directory in devices.values()]
        self.size = size

    def take(self) -> list[Path]:
        """Allocate the reserve; returns where it could not be (a disk full already: the sweep
        will stop on it, and its last words may not fit)."""
        missed = []
        for path in self.paths:
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
                try:
                    _allocate(fd, self.size)
                finally:
                    os.close(fd)
            except OSError:
                path.unlink(missing_ok=True)
                missed.append(path)
        return missed

    def release(self) -> None:
        """Give the space back (the disk is full, or the sweep is over)."""
        for path in self.paths:
            try:
                path.unlink(missing_ok=True)
            except OSError:  # a read-only file system: nothing to free there
                pass

    def __enter__(self) -> SpaceReserve:
        self.take()
        return self

    def __exit__(self, *exc) -> None:
        self.release()


def _allocate(fd: int, size: int) -> None:
    """``size`` bytes of real blocks for ``fd``: fallocate, else zeros written (a file system
    without fallocate; ftruncate would make a sparse file, which reserves nothing)."""
    try:
        os.posix_fallocate(fd, 0, size)
        return
    except OSError as e:
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
    chunk = bytes(1 << 20)
    for start in range(0, size, len(chunk)):
        os.pwrite(fd, chunk[: size - start], start)
    os.fsync(fd)


#: What a sweep stopped by its disk tells the user to do. The directory stays where it is: its
#: mlflow.db names its artifacts by absolute path, so a copy on another disk would look for them
#: (and fail again) on the old one.
HOW_TO_RESUME = (
    "free space (or make it writable) and rerun the same command to resume (in place: the "
    "output directory cannot be moved to another disk, its mlflow.db names its files by "
    "absolute path)"
)


class StorageError(RuntimeError):
    """The sweep stopped because its output directory or tracking store cannot be written."""


class Terminated(KeyboardInterrupt):
    """SIGTERM (``timeout``, ``kill``, a scheduler's time limit, ``ray job stop``): the driver
    stops as on Ctrl-C (a KeyboardInterrupt), with a report of what finished, a KILLED parent and
    a state the same command resumes; only the exit code tells the two apart (pipeline.cli)."""


#: The exit codes of a driver stopped by Ctrl-C and by SIGTERM (pipeline.cli.ExitCode).
INTERRUPTED_EXIT = 130
TERMINATED_EXIT = 143


def stopped_before_start(stop: KeyboardInterrupt) -> tuple[int, str]:
    """The exit code and line of a driver stopped before its sweep's parent run existed."""
    if isinstance(stop, Terminated):
        return TERMINATED_EXIT, "stopped by SIGTERM before the sweep started; nothing was run"
    return INTERRUPTED_EXIT, "interrupted before the sweep started; nothing was run"


def stop_on_sigterm(signum, frame) -> None:
    """The driver's SIGTERM handler: ``Terminated`` in the main thread, wherever it is."""
    raise Terminated


def one_line(message: str) -> str:
    """``message`` as one line: its lines, stripped, joined by a space (an error line is one
    line, whatever a library put in its message)."""
    return " ".join(line.strip() for line in str(message).splitlines() if line.strip())


def _chain(error: BaseException):
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        seen.add(id(error))
        yield error
        error = error.__cause__ or error.__context__


def storage_fault(error: BaseException) -> str | None:
    """What ``error`` says of the storage ("the disk is full", ...), or None if it is not a
    storage fault: the error itself or any error it was raised from or during."""
    for link in _chain(error):
        if isinstance(link, OSError) and link.errno in STORAGE_ERRNOS:
            where = f" ({link.filename})" if link.filename else ""
            return f"{STORAGE_ERRNOS[link.errno]}{where}"
        text = str(link).lower()
        for message, meaning in STORAGE_MESSAGES.items():
            if message in text:
                return meaning
    return None


__all__ = [
    "HOW_TO_RESUME",
    "STORAGE_ERRNOS",
    "SpaceReserve",
    "StorageError",
    "Terminated",
    "one_line",
    "stop_on_sigterm",
    "storage_fault",
]
