"""Hostile feeds and sitemaps: entities are never resolved or fetched, bombs stop at a cap, and
a feed that cannot be read is recorded with its reason while the other feeds go on."""

from __future__ import annotations

import tracemalloc
import urllib.request
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import make_engine
from sluice.discovery.sitemaps import DiscoveryError, parse_sitemap
from tests.faults.conftest import all_rows, crawl_feeds, fault_env, status_of
from tests.faults.hostile import HostileServer

SECRET = "SLUICE-SECRET-MARKER-7f3a"


def feed_statuses(database_url: str) -> dict[str, str | None]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.text("SELECT url, last_status FROM feeds")).all()
    engine.dispose()
    return {url: status for url, status in rows}


def dump_database(database_url: str) -> str:
    """Every text value of `articles` and `feeds`, to look for a leaked secret."""
    engine = make_engine(database_url)
    with engine.connect() as conn:
        values = [str(row) for table in ("articles", "feeds")
                  for row in conn.execute(sa.text(f"SELECT * FROM {table}"))]  # noqa: S608
    engine.dispose()
    return "\n".join(values)


@pytest.mark.integration
def test_hostile_feeds_leak_nothing_and_lose_nothing(pg_url: str, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text(SECRET)
    with HostileServer(secret_path=str(secret)) as server:
        feeds = [server.url(path) for path in ("/feeds/xxe.xml", "/feeds/laughs.xml",
                                               "/feeds/million.xml", "/feeds/malformed.xml",
                                               "/feeds/gzip-bomb.xml")]
        stats = crawl_feeds(feeds, fault_env(pg_url), tmp_path)
        hits = dict(server.hits)
        rows = all_rows(pg_url)
        statuses = feed_statuses(pg_url)
        base = server.base_url
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    assert SECRET not in dump_database(pg_url)
    assert SECRET not in stats["_stderr"]
    assert hits.get("/xxe-probe", 0) == 0  # an external entity is never fetched
    # The usable entry of the XXE feed is still crawled; in the other the entity is left empty.
    assert status_of(rows[base + "/html/after-xxe"]) == ("success", None)
    assert [url for url in rows if "/xxe/" in url] in ([], [base + "/xxe/"])
    assert statuses[base + "/feeds/million.xml"] == "too_large"
    assert statuses[base + "/feeds/gzip-bomb.xml"] == "too_large"
    assert statuses[base + "/feeds/laughs.xml"] is not None
    assert statuses[base + "/feeds/malformed.xml"] is not None
    # Every URL a feed did yield ends in a terminal row.
    assert not [url for url, row in rows.items() if status_of(row)[0] in ("queued", "pending")]


def _open(url: str) -> object:
    return urllib.request.urlopen(url, timeout=60)  # noqa: S310 (127.0.0.1 only)


def test_gzip_bomb_sitemap_stops_at_the_cap_in_flat_memory() -> None:
    with HostileServer() as server, _open(server.url("/sitemaps/bomb.xml.gz")) as response:
        tracemalloc.start()
        try:
            with pytest.raises(DiscoveryError) as caught:
                list(parse_sitemap(response, max_bytes=8 << 20))
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert caught.value.reason in ("too_large", "malformed_xml")
    assert peak < 32 << 20


def test_million_entry_sitemap_streams_to_the_entry_cap() -> None:
    with HostileServer() as server, _open(server.url("/sitemaps/million.xml")) as response:
        tracemalloc.start()
        seen = 0
        try:
            with pytest.raises(DiscoveryError) as caught:
                for _ in parse_sitemap(response, max_entries=200_000, max_bytes=1 << 30):
                    seen += 1
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert caught.value.reason == "too_many_entries"
    assert seen == 200_000
    assert peak < 32 << 20
