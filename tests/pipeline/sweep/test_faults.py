"""pipeline.sweep.faults: a full or read-only disk is recognised wherever it surfaces (the OS, sqlite,
SQLAlchemy's and MLflow's wrappings of it), and nothing else is taken for one; SIGTERM is a
KeyboardInterrupt of its own kind."""

from __future__ import annotations

import errno
import os
import signal
import sqlite3
import time
from pathlib import Path

import pytest

from pipeline.sweep.faults import (
    RESERVE_NAME,
    SpaceReserve,
    Terminated,
    stop_on_sigterm,
    storage_fault,
)


def _raised_from(outer: Exception, inner: BaseException) -> Exception:
    try:
        try:
            raise inner
        except BaseException as e:
            raise outer from e
    except Exception as caught:
        return caught


@pytest.mark.parametrize(
    "error, said",
    [
        (
            OSError(errno.ENOSPC, "No space left on device", "/out/fig.png"),
            "no space left on the device (/out/fig.png)",
        ),
        (OSError(errno.EROFS, "Read-only file system"), "the file system is read-only"),
        (PermissionError(errno.EACCES, "Permission denied"), "permission denied"),
        (sqlite3.OperationalError("database or disk is full"), "the disk is full"),
        (
            sqlite3.OperationalError("attempt to write a readonly database"),
            "the tracking database is read-only",
        ),
        (
            _raised_from(
                RuntimeError("MlflowException: (sqlite3...)"),
                sqlite3.OperationalError("database or disk is full"),
            ),
            "the disk is full",
        ),
        (
            _raised_from(ValueError("wrapped"), OSError(errno.ENOSPC, "full")),
            "no space left on the device",
        ),
    ],
)
def test_a_storage_fault_is_named_wherever_it_surfaces(error, said):
    assert storage_fault(error) == said


@pytest.mark.parametrize(
    "error",
    [
        RuntimeError("a bug"),
        OSError(errno.ECONNREFUSED, "Connection refused"),
        FileNotFoundError(errno.ENOENT, "No such file"),
        sqlite3.OperationalError("no such table: runs"),
    ],
)
def test_other_errors_are_not_taken_for_a_storage_fault(error):
    assert storage_fault(error) is None


def test_a_cycle_of_causes_ends():
    a, b = ValueError("a"), ValueError("b")
    a.__cause__, b.__cause__ = b, a
    assert storage_fault(a) is None


def test_sigterm_is_a_keyboard_interrupt_of_its_own_kind():
    previous = signal.signal(signal.SIGTERM, stop_on_sigterm)
    try:
        with pytest.raises(Terminated) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode: never this long
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert isinstance(stopped.value, KeyboardInterrupt)  # every Ctrl-C path takes it


def test_the_space_reserve_holds_real_blocks_once_per_disk_and_is_given_back(tmp_path):
    """The space kept back for a full disk's last words: blocks on the disk (a sparse file
    would give nothing back), one file per file system, gone after the sweep."""
    (tmp_path / "store").mkdir()
    reserve = SpaceReserve([tmp_path, tmp_path / "store", tmp_path / "missing"], size=1 << 20)
    assert reserve.paths == [tmp_path / RESERVE_NAME]  # the store's directory: the same disk
    with reserve:
        held = (tmp_path / RESERVE_NAME).stat()
        assert held.st_size == 1 << 20 and held.st_blocks * 512 >= 1 << 20
    assert not (tmp_path / RESERVE_NAME).exists()
    assert SpaceReserve([Path("/proc")]).take() == [Path("/proc") / RESERVE_NAME]  # not writable
