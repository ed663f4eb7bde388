"""Peak memory of a process tree, read from /proc (Linux)."""

from __future__ import annotations

import os
from pathlib import Path


def children(pid: int) -> list[int]:
    found = []
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found += [int(entry), *children(int(entry))]
    return found


def tree_peak_mb(pid: int) -> float:
    """Peak resident memory (VmHWM) of a process plus its descendants, in MB."""
    total = 0
    for member in [pid, *children(pid)]:
        try:
            for line in Path(f"/proc/{member}/status").read_text().splitlines():
                if line.startswith("VmHWM:"):
                    total += int(line.split()[1])
        except OSError:
            continue
    return total / 1024
