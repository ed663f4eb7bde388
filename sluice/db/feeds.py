"""The `feeds` table is the schedule: which sources exist, when each is due, what it last said.

Also the two other reads and writes a source visit needs: the conditional-GET validators of the
sources being crawled, the learned listing pattern of each site, and which discovered article
URLs are worth fetching (one query per batch).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, fields
from datetime import datetime, timedelta

import sqlalchemy as sa

from sluice.db.models import articles, feeds, sites
from sluice.db.store import as_utc, dialect_insert, upsert, utcnow
from sluice.records import Status
from sluice.schedule import is_failure, next_due_at

_CHUNK = 1000


@dataclass(frozen=True, slots=True)
class FeedRow:
    """One scheduled source as `sluice feeds list` shows it."""

    url: str
    kind: str | None
    interval_seconds: int
    next_due_at: datetime | None
    last_status: str | None
    consecutive_failures: int
    entries_seen: int
    sources_followed: int
    sources_failed: int
    first_problem: str | None


@dataclass(frozen=True, slots=True)
class SourceState:
    """What the last visit of a source left for the next one (conditional GET, counts, the
    kind it turned out to be)."""

    etag: str | None = None
    last_modified: str | None = None
    entries_seen: int = 0
    last_fetched_at: datetime | None = None
    kind: str | None = None


def add_feeds(conn: sa.Connection, urls: Sequence[str], interval_seconds: int) -> int:
    """Schedule sources, due at once; a source already scheduled gets the new interval and
    keeps its due time. A source known only from a one-off crawl (no due time) becomes due
    at once. Returns how many were new."""
    if not urls:
        return 0
    now = utcnow()
    unique = list(dict.fromkeys(urls))
    known = set(conn.scalars(sa.select(feeds.c.url).where(feeds.c.url.in_(unique))))
    rows = [{"url": url, "interval_seconds": interval_seconds, "next_due_at": now,
             "created_at": now} for url in unique]
    upsert(conn, feeds, rows, keep=("next_due_at", "created_at"))
    conn.execute(feeds.update()
                 .where(feeds.c.url.in_(unique), feeds.c.next_due_at.is_(None))
                 .values(next_due_at=now))
    return len(set(unique) - known)


def remove_feed(conn: sa.Connection, url: str) -> bool:
    return bool(conn.execute(feeds.delete().where(feeds.c.url == url)).rowcount)


def list_feeds(conn: sa.Connection) -> list[FeedRow]:
    query = sa.select(*(feeds.c[field.name] for field in fields(FeedRow))).order_by(
        feeds.c.next_due_at, feeds.c.url)
    return [FeedRow(**{**row._mapping, "next_due_at": as_utc(row.next_due_at)})
            for row in conn.execute(query)]


def claim_due_feeds(conn: sa.Connection, now: datetime | None = None,
                    limit: int = 1000) -> list[str]:
    """The scheduled sources due at `now`. Each is pushed one interval ahead at once, so a
    second beat tick (or a second scheduler) does not enqueue it again while its visit is under
    way; the visit's result then sets the real next due time. Sources only ever crawled once
    (`sluice crawl`) have no due time and are not scheduled."""
    now = now or utcnow()
    query = (sa.select(feeds.c.url, feeds.c.interval_seconds)
             .where(feeds.c.next_due_at <= now).order_by(feeds.c.next_due_at).limit(limit))
    if conn.dialect.name == "postgresql":
        query = query.with_for_update(skip_locked=True)
    due = conn.execute(query).all()
    for url, interval in due:
        conn.execute(feeds.update().where(feeds.c.url == url)
                     .values(next_due_at=now + timedelta(seconds=interval)))
    return [url for url, _ in due]


def load_source_states(conn: sa.Connection, urls: Sequence[str]) -> dict[str, SourceState]:
    states: dict[str, SourceState] = {}
    for start in range(0, len(urls), _CHUNK):
        query = sa.select(feeds.c.url, feeds.c.etag, feeds.c.last_modified, feeds.c.entries_seen,
                          feeds.c.last_fetched_at, feeds.c.kind).where(
            feeds.c.url.in_(urls[start:start + _CHUNK]))
        for row in conn.execute(query):
            states[row.url] = SourceState(row.etag, row.last_modified, row.entries_seen,
                                          as_utc(row.last_fetched_at), row.kind)
    return states


def record_source_visit(conn: sa.Connection, url: str, status: str, etag: str | None,
                        last_modified: str | None, default_interval: int, max_backoff: int
                        ) -> datetime:
    """Store a visit's validators and the source's next due time (backed off while failing).

    Runs before the visit's status is folded into `consecutive_failures`, so the count it
    backs off by is the one that write will reach. Only scheduled sources (with a due time) get
    a new one. Returns the due time computed.
    """
    now = utcnow()
    row = conn.execute(sa.select(feeds.c.interval_seconds, feeds.c.consecutive_failures,
                                 feeds.c.next_due_at).where(feeds.c.url == url)).first()
    interval = row.interval_seconds if row is not None else default_interval
    failures = 0
    if is_failure(status):
        failures = row.consecutive_failures + 1 if row is not None else 1
    due = next_due_at(now, interval, failures, max_backoff)
    values: dict[str, object] = {"url": url, "interval_seconds": interval, "created_at": now}
    if row is not None and row.next_due_at is not None:
        values["next_due_at"] = due
    if status == "ok":
        # A 200 without validators means the source stopped sending them: forget the old ones.
        values.update(etag=etag, last_modified=last_modified)
    upsert(conn, feeds, [values], keep=("created_at", "interval_seconds"))
    return due


def load_listing_patterns(conn: sa.Connection) -> dict[str, str]:
    query = sa.select(sites.c.host, sites.c.listing_pattern).where(
        sites.c.listing_pattern.is_not(None))
    return {host: pattern for host, pattern in conn.execute(query)}


def save_listing_pattern(conn: sa.Connection, host: str, pattern: str | None) -> None:
    """Store a site's proven listing pattern, or forget it (None) when it stopped holding."""
    now = utcnow()
    upsert(conn, sites, [{"host": host, "listing_pattern": pattern,
                          "listing_pattern_at": now if pattern else None, "updated_at": now}])


def articles_to_fetch(conn: sa.Connection, urls: Sequence[str],
                      lastmod: Mapping[str, datetime | None] | None = None,
                      max_age: timedelta | None = None, refresh: bool = False) -> list[str]:
    """The discovered URLs worth fetching, in the order given.

    A URL is fetched when it has no row, or a row never fetched (still `queued`), or - for
    stored articles - when `refresh` is asked, the row is older than `max_age`, or a sitemap's
    `lastmod` says the page changed since it was fetched.
    """
    if refresh or not urls:
        return list(urls)
    fetched: dict[str, datetime | None] = {}
    for start in range(0, len(urls), _CHUNK):
        query = sa.select(articles.c.url, articles.c.fetched_at).where(
            articles.c.url.in_(urls[start:start + _CHUNK]))
        fetched.update((url, as_utc(at)) for url, at in conn.execute(query))
    stale_before = utcnow() - max_age if max_age else None
    lastmod = lastmod or {}
    return [url for url in urls if _worth_fetching(fetched, url, lastmod.get(url), stale_before)]


def _worth_fetching(fetched: Mapping[str, datetime | None], url: str,
                    lastmod: datetime | None, stale_before: datetime | None) -> bool:
    if url not in fetched:
        return True
    at = fetched[url]
    if at is None:
        return True
    if stale_before is not None and at < stale_before:
        return True
    return lastmod is not None and lastmod > at


def record_discovered_with_dates(conn: sa.Connection, published: Mapping[str, datetime],
                                 source: str | None, lease_seconds: int) -> None:
    """Give discovered URLs their `queued` rows with the publication dates a source gave
    (Google News sitemaps, feeds); a stored row keeps its own date when it has one."""
    now = utcnow()
    rows = [{"url": url, "status": Status.QUEUED, "source": source, "discovered_at": now,
             "updated_at": now, "lease_until": now + timedelta(seconds=lease_seconds),
             "published_at": value} for url, value in published.items()]
    if not rows:
        return
    statement = dialect_insert(conn, articles)
    statement = statement.on_conflict_do_update(index_elements=["url"], set_={
        "published_at": sa.func.coalesce(articles.c.published_at,
                                         statement.excluded.published_at)})
    conn.execute(statement, rows)
