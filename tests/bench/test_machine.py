"""What every benchmark prints (bench.machine): the machine line, its load and the table header."""

from __future__ import annotations

import os
import platform

from bench.machine import describe_machine, load_loadavg, print_header


def test_the_machine_line_names_host_cores_memory_and_python():
    line = describe_machine()
    assert line.startswith(f"{platform.node()}: ")
    assert f", {os.cpu_count()} cores, " in line
    assert " RAM, " in line and line.endswith(f"Python {platform.python_version()}")
    if os.path.exists("/proc/meminfo"):  # Linux: the memory is read, in GiB
        assert "GiB RAM" in line


def test_the_load_is_the_three_averages():
    line = load_loadavg()
    if hasattr(os, "getloadavg"):
        averages = line.removeprefix("load average ").split()
        assert line.startswith("load average ") and len(averages) == 3
        assert all(float(a) >= 0 for a in averages)
    else:  # pragma: no cover - not on every platform
        assert line == "load average unknown"


def test_the_header_aligns_each_label_and_rules_its_width(capsys):
    print_header([("n", ">4"), ("method", "<8"), ("s", ">3")], "check")
    header, rule = capsys.readouterr().out.splitlines()
    assert header == "   n method     s  check"
    assert rule == "-" * len(header)
    print_header([("a", "<2")])
    assert capsys.readouterr().out == "a \n--\n"
