"""What every benchmark prints: the machine it ran on, its load, and its table's header."""

from __future__ import annotations

import os
import platform


def describe_machine() -> str:
    cpu = platform.processor() or "unknown cpu"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    memory = "unknown"
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            memory = f"{kb / 2**20:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    return (
        f"{platform.node()}: {cpu}, {os.cpu_count()} cores, {memory} RAM, "
        f"{platform.system()} {platform.release()}, Python {platform.python_version()}"
    )


def load_loadavg() -> str:
    """The machine's load average over 1, 5 and 15 minutes (a benchmark prints it before and
    after: a shared machine's load changes wall times)."""
    try:
        return "load average %.2f %.2f %.2f" % os.getloadavg()
    except OSError:  # pragma: no cover - not on every platform
        return "load average unknown"


def print_header(columns: list[tuple[str, str]], tail: str = "") -> None:
    """A table header (each label aligned by its format spec, e.g. ``("n", ">6")``), then a rule."""
    header = " ".join(f"{label:{spec}}" for label, spec in columns) + (f"  {tail}" if tail else "")
    print(header)
    print("-" * len(header))
