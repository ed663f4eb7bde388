"""The schedule's arithmetic, the feeds table's reads and writes, and source detection."""

from __future__ import annotations

import gzip
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import make_engine
from sluice.db.feeds import (
    add_feeds,
    articles_to_fetch,
    claim_due_feeds,
    list_feeds,
    record_source_visit,
    remove_feed,
)
from sluice.db.migrate import upgrade
from sluice.db.models import articles, feeds
from sluice.discovery.sources import Role, detect_role, read_source
from sluice.records import Status
from sluice.schedule import backoff_seconds, format_interval, next_due_at, parse_interval

NOW = datetime(2026, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(("text", "seconds"), [("90", 90), ("45s", 45), ("30m", 1800),
                                               ("2h", 7200), ("1d", 86400), ("1.5h", 5400),
                                               ("1W", 604800)])
def test_parse_interval(text: str, seconds: int) -> None:
    assert parse_interval(text) == seconds


@pytest.mark.parametrize("text", ["", "soon", "-5m", "0s", "10 parsecs"])
def test_bad_intervals_are_refused(text: str) -> None:
    with pytest.raises(ValueError):
        parse_interval(text)


def test_format_interval_round_trips() -> None:
    for seconds in (45, 90, 1800, 7200, 86400, 604800):
        assert parse_interval(format_interval(seconds)) == seconds
    assert format_interval(1800) == "30m"


def test_backoff_doubles_per_failure_and_is_capped() -> None:
    waits = [backoff_seconds(600, failures, cap=6000) for failures in range(6)]
    assert waits == [600, 1200, 2400, 4800, 6000, 6000]
    # The cap never shortens the feed's own interval.
    assert backoff_seconds(86400, 3, cap=3600) == 86400
    assert backoff_seconds(60, 10_000, cap=3600) == 3600
    assert next_due_at(NOW, 600, 2, 6000) == NOW + timedelta(seconds=2400)


@pytest.fixture
def engine(tmp_path: Path) -> sa.Engine:
    url = f"sqlite:///{tmp_path / 'feeds.db'}"
    upgrade(url)
    return make_engine(url)


def test_feeds_add_list_claim_remove(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        assert add_feeds(conn, ["https://a.example/feed", "https://b.example/"], 1800) == 2
        assert add_feeds(conn, ["https://a.example/feed"], 600) == 0  # new interval only
        rows = {row.url: row for row in list_feeds(conn)}
        assert rows["https://a.example/feed"].interval_seconds == 600
        due = claim_due_feeds(conn)
        assert sorted(due) == ["https://a.example/feed", "https://b.example/"]
        assert claim_due_feeds(conn) == []  # claimed: not due again until its interval passes
        assert remove_feed(conn, "https://b.example/") is True
        assert remove_feed(conn, "https://b.example/") is False
        assert [row.url for row in list_feeds(conn)] == ["https://a.example/feed"]


def test_failing_sources_back_off(engine: sa.Engine) -> None:
    url = "https://a.example/feed"
    with engine.begin() as conn:
        add_feeds(conn, [url], 600)
        waits = []
        for failures in range(1, 4):
            due = record_source_visit(conn, url, "http_5xx", None, None, 3600, 86400)
            waits.append(round((due - datetime.now(UTC)).total_seconds() / 600))
            conn.execute(feeds.update().where(feeds.c.url == url)
                         .values(consecutive_failures=failures))
        assert waits == [2, 4, 8]
        due = record_source_visit(conn, url, "ok", '"v1"', "Wed, 01 May 2024 10:00:00 GMT",
                                  3600, 86400)
        assert round((due - datetime.now(UTC)).total_seconds() / 600) == 1
        row = conn.execute(sa.select(feeds).where(feeds.c.url == url)).one()
        assert (row.etag, row.last_modified) == ('"v1"', "Wed, 01 May 2024 10:00:00 GMT")
        record_source_visit(conn, url, "not_modified", None, None, 3600, 86400)
        assert conn.execute(sa.select(feeds.c.etag)).scalar_one() == '"v1"'


def test_sources_crawled_once_are_not_scheduled(engine: sa.Engine) -> None:
    with engine.begin() as conn:
        record_source_visit(conn, "https://once.example/feed", "ok", None, None, 3600, 86400)
        assert claim_due_feeds(conn, NOW + timedelta(days=365)) == []


def test_articles_to_fetch_skips_stored_rows(engine: sa.Engine) -> None:
    now = datetime.now(UTC)
    stored = {"https://a.example/old": now - timedelta(days=10),
              "https://a.example/new": now - timedelta(hours=1)}
    with engine.begin() as conn:
        conn.execute(articles.insert(), [
            {"url": url, "status": Status.SUCCESS, "discovered_at": at, "fetched_at": at,
             "updated_at": at} for url, at in stored.items()] + [
            {"url": "https://a.example/waiting", "status": Status.QUEUED, "discovered_at": now,
             "fetched_at": None, "updated_at": now}])
        urls = [*stored, "https://a.example/waiting", "https://a.example/unseen"]
        assert articles_to_fetch(conn, urls) == ["https://a.example/waiting",
                                                 "https://a.example/unseen"]
        assert articles_to_fetch(conn, urls, max_age=timedelta(days=7))[0] == \
            "https://a.example/old"
        assert articles_to_fetch(conn, urls, refresh=True) == urls
        changed = {"https://a.example/new": now}  # a sitemap's lastmod after the fetch
        assert "https://a.example/new" in articles_to_fetch(conn, urls, lastmod=changed)


def test_source_kinds_are_detected_from_the_response() -> None:
    index = (b'<?xml version="1.0"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/'
             b'sitemap/0.9"><sitemap><loc>https://a.example/s1.xml</loc></sitemap></sitemapindex>')
    assert detect_role(gzip.compress(index), "application/octet-stream", "https://a.example/s.gz") \
        is Role.SITEMAP
    assert detect_role(index, "application/xml", "https://a.example/s.xml") is Role.SITEMAP
    assert detect_role(b"<?xml version='1.0'?><rss version='2.0'></rss>", "text/xml",
                       "https://a.example/f") is Role.FEED
    assert detect_role(b"Sitemap: /s.xml", "text/plain", "https://a.example/robots.txt") \
        == "robots"
    assert detect_role(b"<html></html>", "text/html", "https://a.example/") == "html"
    reading = read_source(gzip.compress(index), "https://a.example/s.gz")
    assert reading.kind == "sitemap_index"
    assert [follow.url for follow in reading.follow] == ["https://a.example/s1.xml"]


def test_a_home_page_announcing_feeds_follows_them_and_skips_comment_feeds() -> None:
    page = (b'<html><head><link rel="alternate" type="application/atom+xml" href="/atom">'
            b'<link rel="alternate" type="application/rss+xml" title="Comments" '
            b'href="/comments/feed"></head><body></body></html>')
    reading = read_source(page, "https://a.example/", "text/html")
    assert reading.kind == "autodiscover"
    assert [(f.url, f.role) for f in reading.follow] == [("https://a.example/atom", Role.FEED)]


def test_a_site_root_without_feeds_or_listing_falls_back_to_robots() -> None:
    reading = read_source(b"<html><body><p>Hello</p></body></html>", "https://a.example/",
                          "text/html")
    assert reading.kind == "robots"
    assert [f.url for f in reading.follow] == ["https://a.example/robots.txt"]
