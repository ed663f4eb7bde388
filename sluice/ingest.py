"""Bulk ingestion: every URL gets its `queued` row first, then goes to the shared frontier.

Rows are written in chunks, so a file of millions of URLs streams through: what stays in memory
is a hash of each URL (about 70 MB a million), so that a URL repeated anywhere in the file is
reported as a duplicate. Invalid lines are reported with their line numbers and never stop the
batch.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice

import sqlalchemy as sa

from sluice import frontier
from sluice.db import make_engine
from sluice.db.models import articles
from sluice.db.store import dialect_insert, lease_end, utcnow
from sluice.inputs import InputProblem, ListedURL, read_url_list
from sluice.records import Status

logger = logging.getLogger(__name__)

CHUNK = 2000


@dataclass(slots=True)
class IngestReport:
    queued: int = 0
    already_stored: int = 0
    pushed: int = 0
    problems: list[InputProblem] = field(default_factory=list)

    def summary(self) -> str:
        return (f"queued {self.queued} URLs ({self.already_stored} already stored, "
                f"{len(self.problems)} invalid lines)")


def ingest_lines(lines: Iterable[str | bytes], database_url: str, redis_url: str,
                 source: str, refresh: bool = False) -> IngestReport:
    """Record and enqueue the URLs of an ingest file (distributed mode)."""
    report = IngestReport()
    engine = make_engine(database_url)
    client = frontier.connect(redis_url)
    for new in record_chunks(lines, engine, source, refresh, report):
        # A refresh passes the crawlers' duplicate filter, which holds a fetch for an hour.
        entries = [frontier.FrontierEntry(url=item.url, source=item.options.get("source", source),
                                          render=item.options.get("render"), retry=refresh)
                   for item in new]
        report.pushed += frontier.push(client, entries, frontier.PRIORITY_INGEST)
    engine.dispose()
    client.close()
    return report


def record_ingest(lines: Iterable[str | bytes], database_url: str, source: str, refresh: bool,
                  lease_seconds: int) -> tuple[IngestReport, list[ListedURL]]:
    """Record the URLs of an ingest file (embedded mode, which fetches them next); returns the
    counts and the URLs to fetch. Each row has a lease, so a run beside this one leaves it
    alone, and a run after a kill takes it back."""
    report = IngestReport()
    engine = make_engine(database_url)
    new = [item for chunk in record_chunks(lines, engine, source, refresh, report, lease_seconds)
           for item in chunk]
    engine.dispose()
    return report, new


def record_chunks(lines: Iterable[str | bytes], engine: sa.Engine, source: str, refresh: bool,
                  report: IngestReport, lease_seconds: int | None = None
                  ) -> Iterator[list[ListedURL]]:
    """Record the URLs of an ingest file a chunk at a time, counting into `report`; yields the
    URLs of each chunk that are to be fetched: those not stored yet (all, with `refresh`)."""
    seen: set[int] = set()  # every URL of the file so far, hashed: see read_url_list
    for chunk in _chunks(lines, CHUNK):
        listed, problems = read_url_list_chunk(chunk, seen)
        report.problems.extend(problems)
        with engine.begin() as conn:
            new = record_queued(conn, listed, source, refresh, lease_seconds)
        report.queued += len(new)
        report.already_stored += len(listed) - len(new)
        yield new


def read_url_list_chunk(chunk: Sequence[tuple[int, str | bytes]], seen: set[int]
                        ) -> tuple[list[ListedURL], list[InputProblem]]:
    """Parse a chunk of (line number, line), keeping the original line numbers; `seen`
    carries the URLs of the earlier chunks, so a repeat of one is a duplicate here too."""
    parsed = read_url_list((line for _, line in chunk), seen)
    numbers = [number for number, _ in chunk]
    urls = [ListedURL(item.url, numbers[item.line - 1], item.options) for item in parsed.urls]
    problems = [InputProblem(numbers[p.line - 1], p.text, p.reason, p.message)
                for p in parsed.problems]
    return urls, problems


def record_queued(conn: sa.Connection, items: Sequence[ListedURL], source: str,
                  refresh: bool, lease_seconds: int | None = None) -> list[ListedURL]:
    """Insert `queued` rows for URLs not stored yet (or all, with `refresh`, but for rows in
    flight); returns those. Without a lease, a row waits in the frontier until a crawler pops
    it and gives it one."""
    if not items:
        return []
    now = utcnow()
    lease = lease_end(lease_seconds, now)
    rows = [{"url": item.url, "status": Status.QUEUED,
             "source": str(item.options.get("source", source)), "discovered_at": now,
             "updated_at": now, "lease_until": lease} for item in items]
    statement = dialect_insert(conn, articles).on_conflict_do_nothing(index_elements=["url"])
    inserted = {row.url for row in conn.execute(statement.returning(articles.c.url), rows)}
    if refresh:
        stale = [item.url for item in items if item.url not in inserted]
        refreshed = conn.execute(articles.update().where(
            articles.c.url.in_(stale), articles.c.status.notin_([Status.QUEUED, Status.PENDING]))
            .values(status=Status.QUEUED, lease_until=lease, updated_at=now)
            .returning(articles.c.url))
        inserted.update(url for url, in refreshed)
    return [item for item in items if item.url in inserted]


def _chunks(lines: Iterable[str | bytes], size: int) -> Iterator[list[tuple[int, str | bytes]]]:
    numbered = enumerate(lines, start=1)
    while chunk := list(islice(numbered, size)):
        yield chunk
