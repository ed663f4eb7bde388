"""The schedule: `sluice feeds` commands, `sluice schedule` embedded, and a real Celery beat and
worker handing a due feed to a real `sluice crawler` process over Redis and Postgres."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from sluice.config import Settings
from sluice.db import articles, feeds, make_engine
from sluice.db.feeds import add_feeds, claim_due_feeds
from sluice.demo.server import SiteServer
from sluice.feed_runs import push_due_feeds
from tests.conftest import (
    PROJECT_ROOT,
    REDIS_TEST_URL,
    WorkerProcess,
    run_sluice,
    sluice_env,
    wait_until,
)
from tests.integration.test_bulk_ingest import Crawler
from tests.sites import article_html, rss, write_site

pytestmark = pytest.mark.integration


def feed_rows(database_url: str) -> dict[str, sa.Row[tuple[object, ...]]]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = {row.url: row for row in conn.execute(sa.select(feeds))}
    engine.dispose()
    return found


def article_urls(database_url: str) -> set[str]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = set(conn.scalars(sa.select(articles.c.url).where(
            articles.c.status.notin_(["queued", "pending"]))))
    engine.dispose()
    return found


def test_feeds_commands(sqlite_url: str, tmp_path: Path) -> None:
    env = sluice_env(sqlite_url)
    added = run_sluice("feeds", "add", "https://News.example/feed.xml", "--every", "30m", env=env)
    assert added.returncode == 0, added.stderr
    assert "added https://news.example/feed.xml, every 30m" in added.stdout
    (tmp_path / "sources.txt").write_text(
        "https://a.example/rss\n{\"url\": \"https://b.example/sitemap.xml\", \"every\": \"1d\"}\n"
        "not a url\n{\"url\": \"https://c.example/rss\", \"every\": \"fortnightly\"}\n")
    imported = run_sluice("feeds", "import", str(tmp_path / "sources.txt"), "--every", "2h",
                          env=env)
    # A bad line, even a bad interval on one line, is reported; the rest is imported.
    assert "imported 2 sources (2 new, 2 invalid lines)" in imported.stdout
    assert "line 3: invalid_url" in imported.stderr
    assert "line 4: invalid_interval: not an interval: 'fortnightly'" in imported.stderr
    # An interval too long for a due date is refused, not stored to break the schedule.
    too_long = run_sluice("feeds", "add", "https://d.example/rss", "--every", "100000000w",
                          env=env)
    assert too_long.returncode == 2 and "interval too long" in too_long.stderr
    intervals = {url: row.interval_seconds for url, row in feed_rows(sqlite_url).items()}
    assert intervals == {"https://news.example/feed.xml": 1800, "https://a.example/rss": 7200,
                         "https://b.example/sitemap.xml": 86400}

    listed = run_sluice("feeds", "list", env={**env, "COLUMNS": "200"})
    assert listed.returncode == 0
    for text in ("https://a.example/rss", "30m", "2h", "1d", "now", "never fetched"):
        assert text in listed.stdout

    removed = run_sluice("feeds", "remove", "https://a.example/rss", env=env)
    assert removed.returncode == 0 and "removed" in removed.stdout
    assert run_sluice("feeds", "remove", "https://a.example/rss", env=env).returncode == 1
    assert run_sluice("feeds", "add", "x", "--every", "soon", env=env).returncode == 2
    assert set(feed_rows(sqlite_url)) == {"https://news.example/feed.xml",
                                          "https://b.example/sitemap.xml"}


def test_embedded_schedule_crawls_due_feeds_and_backs_off_failures(
    sqlite_url: str, tmp_path: Path
) -> None:
    root = write_site(tmp_path / "site", {"a.html": article_html("Scheduled story")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/a.html")]))
        env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never")
        for path in ("/feed.xml", "/missing.xml"):
            assert run_sluice("feeds", "add", site.url(path), "--every", "10m",
                              env=env).returncode == 0
        result = run_sluice("schedule", "--once", env=env)
        assert result.returncode == 0, result.stderr
        assert "2 due sources crawled" in result.stdout
        assert article_urls(sqlite_url) == {site.url("/a.html")}
        rows = feed_rows(sqlite_url)
        ok, failed = rows[site.url("/feed.xml")], rows[site.url("/missing.xml")]
        now = datetime.now(UTC)
        assert (ok.last_status, ok.consecutive_failures, ok.kind) == ("ok", 0, "rss")
        assert 540 < (ok.next_due_at.replace(tzinfo=UTC) - now).total_seconds() <= 600
        assert (failed.last_status, failed.consecutive_failures) == ("http_404", 1)
        # One failure: twice the interval.
        assert 1140 < (failed.next_due_at.replace(tzinfo=UTC) - now).total_seconds() <= 1200
        # Nothing is due now.
        assert "0 due sources crawled" in run_sluice("schedule", "--once", env=env).stdout


def test_a_source_crawled_once_is_scheduled_when_added(sqlite_url: str, tmp_path: Path) -> None:
    """`sluice crawl` remembers a source without a due time; `feeds add` must still make it
    due, not say "updated" and leave it unscheduled."""
    root = write_site(tmp_path / "site", {"a.html": article_html("Once, then scheduled")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/a.html")]))
        env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never")
        assert run_sluice("crawl", site.url("/feed.xml"), env=env).returncode == 0
        added = run_sluice("feeds", "add", site.url("/feed.xml"), "--every", "10m", env=env)
        assert added.returncode == 0, added.stderr
        assert feed_rows(sqlite_url)[site.url("/feed.xml")].next_due_at is not None
        result = run_sluice("schedule", "--once", env=env)
    assert "1 due sources crawled" in result.stdout, result.stdout + result.stderr


def test_due_sources_stay_due_when_the_frontier_is_down(sqlite_url: str) -> None:
    """The scheduler's tick claims the due sources and pushes them to Redis; with Redis down,
    the claim is undone, so they are pushed at the next tick, not an interval later."""
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        add_feeds(conn, ["https://news.example/feed.xml"], 3600)
    down = Settings(database_url=sqlite_url, redis_url="redis://127.0.0.1:9/0")
    with pytest.raises(redis.ConnectionError):
        push_due_feeds(down)
    with engine.begin() as conn:
        assert claim_due_feeds(conn) == ["https://news.example/feed.xml"]
    engine.dispose()


def beat(env: dict[str, str], tmp_path: Path) -> subprocess.Popen[bytes]:
    with (tmp_path / "beat.log").open("wb") as log:
        return subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "beat",
                                 "-s", str(tmp_path / "beat-schedule"), "--loglevel=INFO"],
                                env=env, cwd=PROJECT_ROOT, stdout=log, stderr=subprocess.STDOUT)


@pytest.fixture
def own_redis_url() -> Iterator[str]:
    """A Redis database of this test's own: crawler processes of other tests sharing the usual
    test database would pop this test's frontier entries (the keys are fixed)."""
    import redis

    url = REDIS_TEST_URL.rsplit("/", 1)[0] + "/12"
    client = redis.Redis.from_url(url)
    client.flushdb()
    yield url
    client.flushdb()
    client.close()


def test_beat_and_worker_run_a_due_feed(pg_url: str, own_redis_url: str,
                                        tmp_path: Path) -> None:
    root = write_site(tmp_path / "site", {"a.html": article_html("Beat story one"),
                                          "b.html": article_html("Beat story two")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/a.html"), site.url("/b.html")]))
        env = sluice_env(pg_url, own_redis_url, SLUICE_DISCOVERY__SCHEDULE_SECONDS="2",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        assert run_sluice("feeds", "add", site.url("/feed.xml"), "--every", "1h",
                          env=env).returncode == 0
        worker = WorkerProcess(env)
        scheduler = beat(env, tmp_path)
        crawler = Crawler(env)
        try:
            assert wait_until(lambda: article_urls(pg_url) == {site.url("/a.html"),
                                                               site.url("/b.html")},
                              timeout=240, interval=1), (site.hits, feed_rows(pg_url))
            assert wait_until(lambda: feed_rows(pg_url)[site.url("/feed.xml")].last_status
                              == "ok", timeout=60)
        finally:
            crawler.stop()
            scheduler.terminate()
            scheduler.wait()
            worker_log = worker.stop()
        assert "sluice.enqueue_due_feeds" in worker_log
        row = feed_rows(pg_url)[site.url("/feed.xml")]
        wait = (row.next_due_at - datetime.now(UTC)).total_seconds()
        assert 3000 < wait <= 3600  # visited once; next due in an hour
        assert site.hits.count("/feed.xml") == 1


def test_schedule_refresh_with_redis_says_where_refresh_is_set(sqlite_url: str) -> None:
    """With Redis the crawlers read the entries, so `--refresh` here would be silently lost."""
    env = sluice_env(sqlite_url, "redis://127.0.0.1:6379/15")
    result = run_sluice("schedule", "--once", "--refresh", env=env)
    assert result.returncode == 2
    assert "SLUICE_DISCOVERY__REFRESH=true on the crawlers" in result.stderr
