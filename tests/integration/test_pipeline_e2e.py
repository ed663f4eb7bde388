"""End to end: the demo site's feeds crawled into SQLite (embedded) and Postgres (Redis + worker).

Every URL the feeds list must end with exactly one row in the status a reader would expect.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
import sqlalchemy as sa

from sluice.db import articles, crawl_runs, feeds, make_engine
from sluice.demo.server import SiteServer
from tests.conftest import rows_by_path, run_sluice, sluice_env, wait_until

pytestmark = pytest.mark.integration

FEEDS = ("/feed.xml", "/atom.xml", "/feed.json")
EXPECTED = {
    "/articles/footbridge.html": ("success", None),
    "/articles/library-reopens.html": ("success", None),
    "/articles/river-cleanup.html": ("success", None),
    "/articles/budget-in-depth.html": ("truncated", "over_max_chars"),
    "/articles/bakery-note.html": ("under_limit", "too_short"),
    "/articles/members-only.html": ("fetch_failed", "login_required"),
    "/articles/printing-press-museum.html": ("fetch_failed", "http_404"),
    "/files/annual-report.pdf": ("fetch_failed", "not_html"),
    # JavaScript-only: rendered in Chromium because its static HTML is an empty shell.
    "/articles/flood-maps.html": ("success", None),
}
# A list of teasers: long enough for the gate, but the classifier's judgement decides.
JUDGED = {"/sections/news.html"}


def crawl(site: SiteServer, env: dict[str, str]) -> None:
    result = run_sluice("crawl", *(site.url(path) for path in FEEDS), env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def assert_expected_rows(database_url: str, site: SiteServer) -> dict[str, tuple[str, str | None]]:
    rows = rows_by_path(database_url, site.base_url)
    assert set(rows) == set(EXPECTED) | JUDGED
    for path, expected in EXPECTED.items():
        assert rows[path] == expected, path
    assert rows["/sections/news.html"][0] == "unsuitable_content"
    return rows


def snapshot(database_url: str) -> list[tuple[str, object, object]]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles.c.url, articles.c.discovered_at,
                                      articles.c.content_hash).order_by(articles.c.url)).all()
    engine.dispose()
    return [tuple(row) for row in rows]


def test_embedded_crawl_into_sqlite(sqlite_url: str, demo_site: SiteServer) -> None:
    env = sluice_env(sqlite_url)
    crawl(demo_site, env)
    assert_expected_rows(sqlite_url, demo_site)
    first = snapshot(sqlite_url)

    # Stored articles are not fetched again...
    hits = len(demo_site.hits)
    crawl(demo_site, env)
    assert {path for path in demo_site.hits[hits:]} == set(FEEDS) | {"/robots.txt"}
    # ...unless asked: then every URL is fetched again and still has one row, which remembers
    # when it was first discovered.
    crawl(demo_site, {**env, "SLUICE_DISCOVERY__REFRESH": "true"})
    assert_expected_rows(sqlite_url, demo_site)
    assert snapshot(sqlite_url) == first

    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        runs = conn.execute(sa.select(crawl_runs.c.finished_at, crawl_runs.c.counts)
                            .order_by(crawl_runs.c.id)).all()
        feed_rows = {row.url: row for row in conn.execute(sa.select(feeds))}
    engine.dispose()
    assert len(runs) == 3 and all(run.finished_at is not None for run in runs)
    assert runs[0].counts["success"] == 4
    assert runs[1].counts == {}
    assert runs[2].counts["success"] == 4
    assert {row.kind for row in feed_rows.values()} == {"rss", "atom", "jsonfeed"}
    assert {row.last_status for row in feed_rows.values()} == {"ok"}


def test_distributed_crawl_into_postgres_with_a_worker(
    pg_url: str, redis_url: str, demo_site: SiteServer, start_worker: object
) -> None:
    env = sluice_env(pg_url, redis_url)
    worker = start_worker(env)  # type: ignore[operator]
    crawl(demo_site, env)

    def settled() -> bool:
        statuses = {status for status, _ in rows_by_path(pg_url, demo_site.base_url).values()}
        return bool(statuses) and not statuses & {"pending", "queued"}

    assert wait_until(settled, timeout=90), (rows_by_path(pg_url, demo_site.base_url),
                                             worker.stop())
    rows = assert_expected_rows(pg_url, demo_site)
    first = snapshot(pg_url)

    crawl(demo_site, {**env, "SLUICE_DISCOVERY__REFRESH": "true"})
    assert wait_until(settled, timeout=90)
    assert rows_by_path(pg_url, demo_site.base_url) == rows
    assert snapshot(pg_url) == first


def test_embedded_retry_keeps_each_rows_source(sqlite_url: str, demo_site: SiteServer) -> None:
    now = datetime.now(UTC)
    failed = {"status": "fetch_failed", "reason": "timeout", "discovered_at": now,
              "updated_at": now, "attempts": 1}
    listed, unlisted = (demo_site.url(path) for path in ("/articles/footbridge.html",
                                                         "/articles/library-reopens.html"))
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(articles.insert(), [{**failed, "url": listed, "source": "feeds.txt"},
                                         {**failed, "url": unlisted, "source": None}])
    result = run_sluice("retry", env=sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never"))
    assert result.returncode == 0, result.stdout + result.stderr
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(articles.c.url, articles.c.source)).all())
    engine.dispose()
    # As on the Redis path: a row keeps its source; one that had none is marked "retry".
    assert rows == {listed: "feeds.txt", unlisted: "retry"}
