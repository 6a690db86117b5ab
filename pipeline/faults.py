"""Faults of the machine under a running sweep, told apart from bugs.

A full disk or a read-only output directory is not a bug of the sweep: the runs finished so far
are in the tracking store and a rerun of the same command resumes. ``storage_fault`` recognises
such an error wherever it surfaces (an ``OSError`` of the operating system, sqlite's
``OperationalError``, SQLAlchemy's or MLflow's wrapping of it), and the driver then ends with
``StorageError``: one line, the exit code of a partial sweep. A SIGTERM is such a fault too:
``stop_on_sigterm`` makes it a ``Terminated``, which ends the sweep as Ctrl-C does.
"""

from __future__ import annotations

import errno

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


__all__ = ["STORAGE_ERRNOS", "StorageError", "Terminated", "stop_on_sigterm", "storage_fault"]
