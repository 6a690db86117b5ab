"""One driver per output directory (pipeline.sweep.dir_lock), in-process: two lease objects on one
directory conflict as two drivers would (flock locks conflict between open files, even in one
process). The refusal while another driver holds it is also in test_reliability.py."""

from __future__ import annotations

import fcntl
import json
import os
import socket

import pytest

from pipeline.sweep.dir_lock import LOCK_NAME, DirectoryLock, SweepBusyError, this_driver


def test_the_holder_is_written_into_the_lock_file(tmp_path):
    out = tmp_path / "a" / "b"  # created on acquire
    assert not out.parent.exists()
    with DirectoryLock(out, "sid-1") as lease:
        assert lease.path == out / LOCK_NAME
        holder = json.loads((out / LOCK_NAME).read_text())
    assert holder["host"] == socket.gethostname() and holder["pid"] == os.getpid()
    assert holder["sweep_id"] == "sid-1" and len(holder["started"]) == len("2024-01-01 00:00:00")


def test_a_second_lease_is_refused_by_name_until_the_first_is_released(tmp_path):
    first = DirectoryLock(tmp_path, "sid-1")
    first.acquire()
    second = DirectoryLock(tmp_path, "sid-2")
    with pytest.raises(SweepBusyError) as err:
        second.acquire()
    message = str(err.value)
    assert message.startswith(
        f"another driver is running in {tmp_path} (pid {os.getpid()} on "
        f"{socket.gethostname()}, sweep sid-1, started "
    )
    assert message.endswith("or use another hydra.run.dir")
    assert json.loads((tmp_path / LOCK_NAME).read_text())["sweep_id"] == "sid-1"  # untouched
    first.release()
    first.release()  # a second release is harmless
    second.acquire()
    assert json.loads((tmp_path / LOCK_NAME).read_text())["sweep_id"] == "sid-2"
    second.release()


def test_a_shorter_holder_replaces_a_longer_record_whole(tmp_path):
    (tmp_path / LOCK_NAME).write_text(json.dumps({"host": "x" * 500, "pid": 1}))
    with DirectoryLock(tmp_path, "s"):
        assert json.loads((tmp_path / LOCK_NAME).read_text())["sweep_id"] == "s"


def test_the_lease_is_released_when_the_body_raises(tmp_path):
    with pytest.raises(RuntimeError, match="boom"):
        with DirectoryLock(tmp_path, "s"):
            raise RuntimeError("boom")
    with DirectoryLock(tmp_path, "t"):  # free again
        pass


@pytest.mark.parametrize("content", ["", "{}", "not json"])
def test_a_holder_that_wrote_nothing_readable_is_unknown(tmp_path, content):
    path = tmp_path / LOCK_NAME
    path.write_text(content)
    fd = os.open(path, os.O_RDWR)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a driver that has not written yet
        with pytest.raises(SweepBusyError, match=r"\(holder unknown\)"):
            DirectoryLock(tmp_path, "s").acquire()
    finally:
        os.close(fd)


def test_this_driver_is_host_and_pid():
    assert this_driver() == f"{socket.gethostname()}:{os.getpid()}"
