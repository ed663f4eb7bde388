"""Imported first by the extraction pool's fork server: it dies with the crawler that started it.

Its workers die with it already, but it did not die with a crawler killed outright (SIGKILL, the
out-of-memory killer): Python hands every worker the pipe through which the fork server watches
its parent, so it never saw the crawler go, and the fork server and its workers ran on for good.
"""

from __future__ import annotations

from crawler.parent_death import die_with_parent

die_with_parent()
