"""Run the scheduled sources that are due.

Distributed (Redis): each due source goes to the shared frontier as a `feed` entry, where a
crawler process visits it. Embedded: the due sources are crawled now, in one child crawl process.
Either way the `feeds` row is claimed first (pushed one interval ahead) and the visit's result
sets its real next due time, backed off while it fails.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from sluice import frontier
from sluice.config import Settings
from sluice.db import make_engine
from sluice.db.feeds import claim_due_feeds
from sluice.stops import raise_stop

logger = logging.getLogger(__name__)


def claim_due(settings: Settings, limit: int = 1000) -> list[str]:
    engine = make_engine(settings.database_url)
    try:
        with engine.begin() as conn:
            return claim_due_feeds(conn, limit=limit)
    finally:
        engine.dispose()


def push_due_feeds(settings: Settings) -> int:
    """Push the due sources to the shared frontier (needs Redis). Returns how many."""
    if not settings.redis_url:
        raise ValueError("pushing to the frontier needs SLUICE_REDIS_URL")
    # The claim commits only once the push is done: with Redis down, the sources stay due
    # for the next tick instead of being skipped for a whole interval.
    engine = make_engine(settings.database_url)
    client = frontier.connect(settings.redis_url)
    try:
        with engine.begin() as conn:
            due = claim_due_feeds(conn, limit=1000)
            entries = [frontier.FrontierEntry(url=url, kind="feed", source=url) for url in due]
            frontier.push(client, entries, frontier.PRIORITY_FEED)
    finally:
        client.close()
        engine.dispose()
    if due:
        logger.info("%d due sources pushed to the frontier", len(due))
    return len(due)


@dataclass(frozen=True, slots=True)
class Round:
    """What one round of the schedule did."""

    due: int  # sources claimed, then crawled (embedded) or pushed to the frontier
    taken_back: int = 0  # embedded: rows earlier runs left in flight, fetched in this round
    pushed: bool = False  # the sources went to the frontier (Redis)

    def __str__(self) -> str:
        if self.pushed:
            return f"{self.due} due sources pushed to the frontier"
        if not self.taken_back:
            return f"{self.due} due sources crawled"
        crawled = f"{self.due} due sources crawled" if self.due else "no source due"
        return f"{crawled}; fetched {self.taken_back} rows left in flight by an earlier run"


def crawl_due_feeds(settings: Settings, refresh: bool = False) -> Round:
    """Crawl the due sources now in a child crawl process (embedded), and the rows earlier
    runs left in flight."""
    from sluice.crawl import left_in_flight, run_crawl, run_urls

    due = claim_due(settings)
    if due:
        env = {"SLUICE_DISCOVERY__REFRESH": "true"} if refresh else None
        report = run_crawl(due, settings, source="schedule", env=env)
    elif left_in_flight(settings):
        # Nothing due, but an earlier run was interrupted: fetch what it left in flight.
        report = run_urls([], settings, source="schedule")
    else:
        return Round(0)
    if report.interrupted:
        raise_stop(report.exit_code)  # a Ctrl-C or SIGTERM stops the schedule, not this round
    done = Round(len(due), report.taken_back)
    logger.info("%s (exit %s)", done, report.exit_code)
    return done


def run_schedule(settings: Settings, once: bool = False, refresh: bool = False,
                 on_round: Callable[[Round], None] | None = None) -> None:
    """The scheduler loop in one process: every `discovery.schedule_seconds`, run what is due."""
    while True:
        if settings.redis_url:
            done = Round(push_due_feeds(settings), pushed=True)
        else:
            done = crawl_due_feeds(settings, refresh)
        if on_round is not None:
            on_round(done)
        if once:
            return
        time.sleep(settings.discovery.schedule_seconds)
