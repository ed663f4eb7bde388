"""The sweep hands a lost classification out again, but not forever: a page whose task fails
on every worker ends `fetch_failed`/`classify_failed`, a row that says so."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from sluice.db import articles, make_engine, store
from workers.sweep import MAX_CLASSIFY_ATTEMPTS, sweep

URL = "https://news.example/2026/11/poison"


def test_a_page_that_fails_every_classification_is_given_up(sqlite_url: str) -> None:
    engine = make_engine(sqlite_url)
    now = store.utcnow()
    with engine.begin() as conn:
        conn.execute(articles.insert().values(
            url=URL, status="pending", discovered_at=now, updated_at=now,
            lease_until=now - timedelta(seconds=1)))
    handed_out = 0
    for _ in range(MAX_CLASSIFY_ATTEMPTS + 2):
        # A lease of 0 s: each task is lost at once, as when it fails on every worker.
        handed_out += sweep(engine, None, lease_seconds=0).pending.count(URL)
    with engine.connect() as conn:
        row = conn.execute(sa.select(articles).where(articles.c.url == URL)).one()
    engine.dispose()
    assert handed_out == MAX_CLASSIFY_ATTEMPTS
    assert (row.status, row.reason, row.lease_until) == ("fetch_failed", "classify_failed", None)
