"""Imported first by the extraction pool's fork server: it dies with the crawler that started it,
and every worker it forks dies with it, from the moment it is forked.

It did not die with a crawler killed outright (SIGKILL, the out-of-memory killer): Python hands
every worker the pipe through which the fork server watches its parent, so it never saw the
crawler go, and the fork server and its workers ran on for good. A worker forked just as the
fork server died ran on too, holding both ends of its own queue (so it never saw the end of
it): it asked to die with its parent only once set up, when that parent was already gone.
"""

from __future__ import annotations

import os

from crawler.parent_death import die_with_parent

die_with_parent()
_FORK_SERVER = os.getpid()


def _die_with_fork_server() -> None:
    if not die_with_parent(_FORK_SERVER):
        os._exit(1)


os.register_at_fork(after_in_child=_die_with_fork_server)
