"""The sweep: find work that a dead crawler or worker left in flight, and hand it out again.

- `pending` rows past their lease: their classification task was lost; enqueue it again.
  Once workers have started a page's classification `MAX_CLASSIFY_ATTEMPTS` times without
  settling it, record `fetch_failed`/`classify_failed` instead. While no worker runs, nothing
  is counted: pages wait for the workers to come back.
- `queued` rows past their lease: a crawler popped them and died; push them to the frontier.
- `queued` rows waiting with no lease while the frontier is empty: their entries were lost
  (a Redis restarted without persistence); push them again.
Re-pushing is safe: rows are keyed by URL and every write is an idempotent upsert.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from datetime import timedelta

import sqlalchemy as sa

from sluice import frontier
from sluice.db import store
from sluice.records import Status

logger = logging.getLogger(__name__)

ORPHAN_GRACE = timedelta(seconds=60)
# Started classifications of one page before it is given up: a page whose task fails on every
# worker must end with a row that says so, not be handed out forever.
MAX_CLASSIFY_ATTEMPTS = 5


@dataclass(frozen=True, slots=True)
class SweepResult:
    pending: list[str]
    requeued: int
    orphans: int
    given_up: int = 0


def sweep(engine: sa.Engine, redis_url: str | None, lease_seconds: int) -> SweepResult:
    with engine.begin() as conn:
        given_up = store.give_up_classifying(conn, MAX_CLASSIFY_ATTEMPTS)
        stale = store.stale_in_flight(conn, limit=5000)
        pending = [url for url, status in stale if status is Status.PENDING]
        queued = [url for url, status in stale if status is Status.QUEUED]
        if pending:
            store.keep_leases(conn, pending, lease_seconds, Status.PENDING)
        if queued and redis_url:
            store.requeue(conn, queued, lease_seconds=None)
    if given_up:
        logger.warning("sweep: %d pages failed classification %d times: recorded as "
                       "classify_failed", given_up, MAX_CLASSIFY_ATTEMPTS)
    if not redis_url:
        return SweepResult(pending, 0, 0, given_up)
    client = frontier.connect(redis_url)
    try:
        # As retries: the shared duplicate filter has seen these URLs when they were first
        # popped, and must not drop them now.
        requeued = frontier.push(client, frontier.entries_for(queued, "sweep", retry=True),
                                 frontier.PRIORITY_RETRY)
        orphans = _push_orphans(engine, client)
    finally:
        client.close()
    if queued or orphans:
        logger.info("sweep: %d stale queued rows and %d orphans pushed again", len(queued),
                    orphans)
    return SweepResult(pending, requeued, orphans, given_up)


def _push_orphans(engine: sa.Engine, client: frontier.redis.Redis) -> int:
    if frontier.depth(client):
        return 0
    with engine.connect() as conn:
        orphans = store.waiting_since(conn, store.utcnow() - ORPHAN_GRACE)
    entries = [frontier.FrontierEntry(url=url, source=source, retry=True)
               for url, source in orphans]
    return frontier.push(client, entries, frontier.PRIORITY_INGEST)
