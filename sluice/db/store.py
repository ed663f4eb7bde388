"""The idempotent writes every stage uses. Each is keyed by URL, so replaying one is harmless.

Rows are passed as execute parameters (not `.values(rows)`), so rows with different keys and
both dialects share one code path.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite

from sluice.db.models import articles, page_bodies
from sluice.records import Status
from sluice.schedule import is_failure

Row = Mapping[str, Any]


def utcnow() -> datetime:
    return datetime.now(UTC)


def as_utc(value: datetime | None) -> datetime | None:
    """SQLite hands back naive datetimes; everything Sluice writes is UTC."""
    if value is None or value.tzinfo is not None:
        return value
    return value.replace(tzinfo=UTC)


def lease_end(lease_seconds: int | None, now: datetime | None = None) -> datetime | None:
    """When a lease of `lease_seconds` taken `now` ends; None for no lease (a row waiting in
    the frontier, which the crawler that pops it leases)."""
    if lease_seconds is None:
        return None
    return (now or utcnow()) + timedelta(seconds=lease_seconds)


def dialect_insert(conn: sa.Connection, table: sa.Table) -> Any:
    dialect = postgresql if conn.dialect.name == "postgresql" else sqlite
    return dialect.insert(table)


def upsert(conn: sa.Connection, table: sa.Table, rows: Sequence[Row],
           keep: Iterable[str] = (), fill: Iterable[str] = ()) -> None:
    """Insert rows, or update the existing row with the same key. Columns in `keep` are
    written on insert only (e.g. `discovered_at`); columns in `fill` keep the stored value
    when the new one is null."""
    if not rows:
        return
    keys = [column.name for column in table.primary_key.columns]
    names = set().union(*(row.keys() for row in rows)) - set(keys) - set(keep)
    for group in _group_by_keys(rows):
        statement = dialect_insert(conn, table)
        columns = set(group[0].keys()) & names
        update = {name: statement.excluded[name] for name in columns}
        for name in set(fill) & columns:
            update[name] = sa.func.coalesce(statement.excluded[name], table.c[name])
        if update:
            statement = statement.on_conflict_do_update(index_elements=keys, set_=update)
        else:
            statement = statement.on_conflict_do_nothing(index_elements=keys)
        conn.execute(statement, list(group))


def _group_by_keys(rows: Sequence[Row]) -> list[list[Row]]:
    groups: dict[frozenset[str], list[Row]] = {}
    for row in rows:
        groups.setdefault(frozenset(row.keys()), []).append(row)
    return list(groups.values())


def record_discovered(conn: sa.Connection, urls: Iterable[str], source: str | None,
                      lease_seconds: int) -> None:
    """Give each newly discovered URL a `queued` row; a URL already stored keeps its row."""
    now = utcnow()
    lease = now + timedelta(seconds=lease_seconds)
    rows = [{"url": url, "status": Status.QUEUED, "source": source, "discovered_at": now,
             "updated_at": now, "lease_until": lease} for url in urls]
    if not rows:
        return
    statement = dialect_insert(conn, articles).on_conflict_do_nothing(index_elements=["url"])
    conn.execute(statement, rows)


def requeue(conn: sa.Connection, urls: Sequence[str], lease_seconds: int | None) -> None:
    """Mark existing rows `queued` again (a refresh or a retry). Without a lease, the row waits
    in the frontier; a crawler that pops it gives it one."""
    now = utcnow()
    lease = lease_end(lease_seconds, now)
    for start in range(0, len(urls), 1000):
        conn.execute(articles.update().where(articles.c.url.in_(urls[start:start + 1000]))
                     .values(status=Status.QUEUED, lease_until=lease, updated_at=now))


def store_outcomes(conn: sa.Connection, rows: Sequence[Row],
                   bodies: Sequence[Row] = ()) -> None:
    """Write fetch outcomes (and raw bodies) in one batch. Keeps each row's `discovered_at`,
    and a publication date a source gave when extraction finds none."""
    rows = _changed_outcomes(conn, rows)
    upsert(conn, articles, rows, keep=("discovered_at",), fill=("published_at",))
    upsert(conn, page_bodies, bodies)


def _changed_outcomes(conn: sa.Connection, rows: Sequence[Row]) -> list[Row]:
    """Drop refetched pages whose text is unchanged: such a row keeps its status, verdict and
    `updated_at`; only `fetched_at` records the visit."""
    hashes = {row["url"]: row["content_hash"] for row in rows if row.get("content_hash")}
    if not hashes:
        return list(rows)
    settled = [status for status in Status if status.terminal and status is not
               Status.FETCH_FAILED]
    stored = dict(conn.execute(sa.select(articles.c.url, articles.c.content_hash).where(
        articles.c.url.in_(list(hashes)), articles.c.status.in_(settled))).all())
    unchanged = {url for url, digest in hashes.items() if stored.get(url) == digest}
    if not unchanged:
        return list(rows)
    conn.execute(articles.update().where(articles.c.url.in_(unchanged))
                 .values(fetched_at=utcnow(), lease_until=None))
    return [row for row in rows if row["url"] not in unchanged]


def body_row(url: str, body: bytes, encoding: str | None, fetched_at: datetime) -> dict[str, Any]:
    return {"url": url, "body": zlib.compress(body, 3), "encoding": encoding,
            "fetched_at": fetched_at}


def read_bodies(conn: sa.Connection, urls: Sequence[str]) -> dict[str, tuple[bytes, str | None]]:
    """The stored raw bodies (decompressed) and their encodings, by URL."""
    rows = conn.execute(sa.select(page_bodies.c.url, page_bodies.c.body, page_bodies.c.encoding)
                        .where(page_bodies.c.url.in_(urls)))
    return {row.url: (zlib.decompress(row.body), row.encoding) for row in rows}


def record_verdict(conn: sa.Connection, url: str, values: Row) -> bool:
    """Settle a `pending` row. Returns False when the row was no longer pending (idempotent)."""
    result = conn.execute(
        articles.update()
        .where(articles.c.url == url, articles.c.status == Status.PENDING)
        .values(**values, lease_until=None, updated_at=utcnow()))
    return bool(result.rowcount)


def counts_by_status(conn: sa.Connection, source: str | None = None) -> dict[str, int]:
    query = sa.select(articles.c.status, sa.func.count()).group_by(articles.c.status)
    if source is not None:
        query = query.where(articles.c.source == source)
    return {Status(status).value: count for status, count in conn.execute(query)}


def counts_by_reason(conn: sa.Connection) -> list[tuple[str, str | None, int]]:
    query = (sa.select(articles.c.status, articles.c.reason, sa.func.count())
             .group_by(articles.c.status, articles.c.reason)
             .order_by(articles.c.status, sa.func.count().desc()))
    return [(Status(status).value, reason, count) for status, reason, count in conn.execute(query)]


def waiting_since(conn: sa.Connection, before: datetime, limit: int = 10_000
                  ) -> list[tuple[str, str | None]]:
    """`queued` rows with no lease (waiting in the frontier) not touched since `before`."""
    query = (sa.select(articles.c.url, articles.c.source)
             .where(articles.c.status == Status.QUEUED, articles.c.lease_until.is_(None),
                    articles.c.updated_at < before)
             .limit(limit))
    return [(url, source) for url, source in conn.execute(query)]


def stale_in_flight(conn: sa.Connection, limit: int = 1000) -> list[tuple[str, Status]]:
    """Rows `queued` or `pending` whose lease has expired: their worker or crawler is gone."""
    query = sa.select(articles.c.url, articles.c.status).where(*_stale_conditions()).limit(limit)
    return [(url, Status(status)) for url, status in conn.execute(query)]


def count_stale_in_flight(conn: sa.Connection) -> int:
    """How many rows `stale_in_flight` would find, counted by the database."""
    return int(conn.execute(sa.select(sa.func.count()).select_from(articles)
                            .where(*_stale_conditions())).scalar_one())


def _stale_conditions() -> tuple[sa.ColumnElement[bool], ...]:
    return (articles.c.status.in_([Status.QUEUED, Status.PENDING]),
            articles.c.lease_until < utcnow())


def give_up_classifying(conn: sa.Connection, max_attempts: int) -> int:
    """Settle `pending` rows whose classification workers started `max_attempts` times and
    never finished (a page that fails every worker): `fetch_failed`/`classify_failed`, which
    `sluice retry --reason classify_failed` queues again. Returns how many."""
    result = conn.execute(
        articles.update()
        .where(articles.c.status == Status.PENDING, articles.c.lease_until < utcnow(),
               articles.c.attempts >= max_attempts)
        .values(status=Status.FETCH_FAILED, reason="classify_failed", lease_until=None,
                updated_at=utcnow()))
    return int(result.rowcount or 0)


def renew_lease(conn: sa.Connection, urls: Sequence[str], lease_seconds: int) -> None:
    """Lease rows a crawler has just popped, counting the hand-out."""
    conn.execute(articles.update().where(articles.c.url.in_(urls))
                 .values(lease_until=utcnow() + timedelta(seconds=lease_seconds),
                         attempts=articles.c.attempts + 1))


def keep_leases(conn: sa.Connection, urls: Sequence[str], lease_seconds: int | None,
                status: Status, touch: bool = False) -> None:
    """Extend the leases of rows still in `status` (nothing counted): `queued` rows a crawler
    still holds, `pending` rows the sweep hands to the workers again. No lease: the rows wait
    in the frontier again (a stopping crawler gave them back). With `touch`, their
    `updated_at` moves too (an embedded run's rows are those it touched since it started)."""
    now = utcnow()
    values: dict[str, Any] = {"lease_until": lease_end(lease_seconds, now)}
    if touch:
        values["updated_at"] = now
    for start in range(0, len(urls), 1000):
        conn.execute(articles.update()
                     .where(articles.c.url.in_(urls[start:start + 1000]),
                            articles.c.status == status)
                     .values(values))


def start_classifying(conn: sa.Connection, urls: Sequence[str]) -> None:
    """Count a classification attempt on the `pending` rows a worker is about to classify:
    counted when a worker takes them, not when the sweep hands them out, so pages waiting
    for stopped workers are never given up."""
    conn.execute(articles.update()
                 .where(articles.c.url.in_(urls), articles.c.status == Status.PENDING)
                 .values(attempts=articles.c.attempts + 1))


def record_feed_result(conn: sa.Connection, url: str, status: str, kind: str | None,
                       title: str | None, entries: int, followed: int = 0,
                       followed_failed: int = 0, first_problem: str | None = None) -> None:
    """Remember what a visit of a feed found: its kind, last status, its run of failures, and
    the articles, followed sources and first problem of the whole visit."""
    from sluice.db.models import feeds

    now = utcnow()
    failed = is_failure(status)
    statement = dialect_insert(conn, feeds).values(
        url=url, kind=kind, title=title, last_status=status, last_fetched_at=now,
        entries_seen=entries, sources_followed=followed, sources_failed=followed_failed,
        first_problem=first_problem, consecutive_failures=int(failed), created_at=now)
    excluded = statement.excluded
    statement = statement.on_conflict_do_update(index_elements=["url"], set_={
        "kind": sa.func.coalesce(excluded.kind, feeds.c.kind),
        "title": sa.func.coalesce(excluded.title, feeds.c.title),
        "last_status": excluded.last_status, "last_fetched_at": excluded.last_fetched_at,
        "entries_seen": excluded.entries_seen, "sources_followed": excluded.sources_followed,
        "sources_failed": excluded.sources_failed, "first_problem": excluded.first_problem,
        "consecutive_failures": (feeds.c.consecutive_failures + 1) if failed else 0,
    })
    conn.execute(statement)
