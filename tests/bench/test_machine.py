"""What every benchmark prints (pipeline.bench.machine): the machine line and the table header."""

from __future__ import annotations

import os
import platform

from pipeline.bench.machine import describe_machine, print_header


def test_the_machine_line_names_host_cores_memory_and_python():
    line = describe_machine()
    assert line.startswith(f"{platform.node()}: ")
    assert f", {os.cpu_count()} cores, " in line
    assert " RAM, " in line and line.endswith(f"Python {platform.python_version()}")
    if os.path.exists("/proc/meminfo"):  # Linux: the memory is read, in GiB
        assert "GiB RAM" in line


def test_the_header_aligns_each_label_and_rules_its_width(capsys):
    print_header([("n", ">4"), ("method", "<8"), ("s", ">3")], "check")
    header, rule = capsys.readouterr().out.splitlines()
    assert header == "   n method     s  check"
    assert rule == "-" * len(header)
    print_header([("a", "<2")])
    assert capsys.readouterr().out == "a \n--\n"
