"""Processes that must not outlive their parent: a crawl run by the `sluice` command, and the
extraction pool's fork server and workers."""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent: int | None = None) -> bool:
    """Linux: have the kernel kill this process when its parent exits. Given the pid of the
    parent that started this process, returns False when that parent has already exited (the
    kernel will not kill this process then): the caller should exit itself."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # elsewhere, workers still exit once the crawler closes their queue
    return parent is None or os.getppid() == parent
