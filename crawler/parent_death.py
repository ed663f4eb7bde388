"""Processes that must not outlive their parent: the extraction pool's fork server and workers."""

from __future__ import annotations

import ctypes
import ctypes.util
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Linux: have the kernel kill this process when its parent exits."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    except (OSError, AttributeError):
        pass  # elsewhere, workers still exit once the crawler closes their queue
