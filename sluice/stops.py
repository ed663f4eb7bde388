"""How a `sluice` command is stopped: Ctrl-C (SIGINT) and SIGTERM alike.

Python turns Ctrl-C into KeyboardInterrupt, so the command stops through its cleanups. SIGTERM,
left to its default, ends the process on the spot, cleanups and all: an embedded crawl's crawl
process ran on as an orphan and its run was never finished. A `sluice` command raises
`Terminated` instead, a KeyboardInterrupt, so whatever stops cleanly after a Ctrl-C does so
after a SIGTERM too; only the exit status differs, as a shell reports each signal (128 + it).
"""

from __future__ import annotations

import signal
from types import FrameType
from typing import NoReturn

INTERRUPTED = 128 + signal.SIGINT  # 130
TERMINATED = 128 + signal.SIGTERM  # 143


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised wherever the main thread is, as Ctrl-C raises KeyboardInterrupt."""


def raise_on_sigterm() -> None:
    signal.signal(signal.SIGTERM, _raise_terminated)


def _raise_terminated(signum: int, frame: FrameType | None) -> NoReturn:
    raise Terminated


def exit_status(stop: KeyboardInterrupt) -> int:
    return TERMINATED if isinstance(stop, Terminated) else INTERRUPTED


def stop_signal(stop: KeyboardInterrupt) -> signal.Signals:
    """The signal that stopped this process, to pass on to its crawl process."""
    return signal.SIGTERM if isinstance(stop, Terminated) else signal.SIGINT


def stopped(exit_code: int) -> bool:
    """Whether a run's exit status says it was stopped (Ctrl-C or SIGTERM)."""
    return exit_code in (INTERRUPTED, TERMINATED)


def raise_stop(exit_code: int) -> NoReturn:
    """Stop this process as the run with `exit_code` was stopped."""
    raise Terminated if exit_code == TERMINATED else KeyboardInterrupt
