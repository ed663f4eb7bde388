"""Peak memory of a process tree, read from /proc (Linux)."""

from __future__ import annotations

import os
from pathlib import Path

from tests.faults.conftest import descendants

# {parent pid: child pids}, as `children_by_parent` reads it from /proc.
ProcessTree = dict[int, list[int]]


def tree_peak_mb(pid: int, tree: ProcessTree | None = None) -> float:
    """Peak resident memory (VmHWM) of a process plus its descendants, in MB (`tree`: a
    snapshot of the process tree already taken, saving a pass over /proc)."""
    total = 0
    for member in [pid, *descendants(pid, tree)]:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024


def cpu_seconds(pid: int) -> float:
    """CPU time (user + system) a process has used so far, 0 when it is gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def service_pids(name: str) -> list[int]:
    """The processes of a local service by command name (`postgres`, `redis-server`): its main
    process and every child, for the CPU the pipeline costs it."""
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            if Path(f"/proc/{entry}/comm").read_text().strip() == name:
                found.append(int(entry))
        except OSError:
            continue
    return found
