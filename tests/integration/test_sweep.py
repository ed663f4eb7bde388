"""The sweep hands a lost classification out again, but not forever: a page whose task fails
on every worker ends `fetch_failed`/`classify_failed`, a row that says so. Pages that merely
wait for stopped workers are never given up."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa

from sluice.db import articles, make_engine, page_bodies, store
from sluice.gate import GateOptions
from sluice.pipeline import classify_stored
from workers.sweep import MAX_CLASSIFY_ATTEMPTS, sweep

URL = "https://news.example/2026/11/poison"


def _pending_page(engine: sa.Engine, body: bytes) -> None:
    now = store.utcnow()
    with engine.begin() as conn:
        conn.execute(articles.insert().values(
            url=URL, status="pending", discovered_at=now, updated_at=now, text="words " * 300,
            char_count=1800, lease_until=now - timedelta(seconds=1)))
        conn.execute(page_bodies.insert().values(url=URL, body=body, fetched_at=now))


def _row(engine: sa.Engine) -> sa.Row:
    with engine.connect() as conn:
        return conn.execute(sa.select(articles).where(articles.c.url == URL)).one()


def test_a_page_that_fails_every_classification_is_given_up(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    _pending_page(engine, b"not a compressed body: reading it fails on every worker")
    started = 0
    for _ in range(MAX_CLASSIFY_ATTEMPTS + 2):
        # A lease of 0 s: each hand-out is stale again by the next sweep.
        if URL in sweep(engine, None, lease_seconds=0).pending:
            started += 1
            with pytest.raises(Exception, match="decompressing"):
                classify_stored(engine, [URL], GateOptions())  # what the worker's task runs
    row = _row(engine)
    engine.dispose()
    assert started == MAX_CLASSIFY_ATTEMPTS
    assert (row.status, row.reason, row.lease_until) == ("fetch_failed", "classify_failed", None)


def test_pages_waiting_for_stopped_workers_are_not_given_up(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    _pending_page(engine, b"")
    for _ in range(3 * MAX_CLASSIFY_ATTEMPTS):
        # No worker takes the tasks (a maintenance stop): each sweep hands the page out again.
        assert URL in sweep(engine, None, lease_seconds=0).pending
    assert (_row(engine).status, _row(engine).attempts) == ("pending", 0)
    engine.dispose()
