"""A scheduled source's row describes its whole visit: the articles found in it and in every
source it led to (child sitemaps, robots.txt's sitemaps, announced feeds, next listing pages),
how many of those failed and the first problem, as `sluice feeds list` shows it.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice.db import make_engine
from sluice.demo.server import Reply, SiteHandler, SiteServer
from tests.conftest import run_sluice, sluice_env, wait_until
from tests.integration.test_bulk_ingest import Crawler
from tests.integration.test_discovery import rss_items, sitemap_index, urlset
from tests.sites import article_html, crawl_process, story_path

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> str:
    return str(request.getfixturevalue("pg_url" if request.param == "postgresql"
                                       else "sqlite_url"))


@pytest.fixture
def site(tmp_path: Path) -> Iterator[SiteServer]:
    def story(handler: SiteHandler) -> Reply:
        return Reply(200, article_html(f"Story {handler.path}").encode(),
                     {"Content-Type": "text/html; charset=utf-8"})

    with SiteServer(tmp_path / "site", routes={"/news/*": story}) as server:
        yield server


def serve(site: SiteServer, path: str, body: str, content_type: str = "application/xml") -> None:
    site.routes[path] = lambda handler: Reply(200, body.encode(), {"Content-Type": content_type})


def stories(site: SiteServer, *numbers: int) -> str:
    return urlset(site.base_url, [story_path(number) for number in numbers])


def visit(site: SiteServer, database_url: str, tmp_path: Path, *paths: str, **settings: str
          ) -> dict[str, dict[str, Any]]:
    """Schedule `paths`, crawl them once; each one's `feeds` row, by path."""
    env = sluice_env(database_url, SLUICE_BROWSER__RENDER="never", **settings)
    for path in paths:
        assert run_sluice("feeds", "add", site.url(path), "--every", "10m", env=env).returncode == 0
    stats = crawl_process([site.url(path) for path in paths], env, tmp_path)
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    return feed_rows(site, database_url)


def feed_rows(site: SiteServer, database_url: str) -> dict[str, dict[str, Any]]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = conn.execute(sa.text("SELECT * FROM feeds")).mappings().all()
    engine.dispose()
    return {row["url"][len(site.base_url):]: dict(row) for row in found}


def listed(site: SiteServer, database_url: str) -> dict[str, dict[str, str]]:
    """`sluice feeds list` as a user reads it: each source's cells by column title."""
    result = run_sluice("feeds", "list", env={**sluice_env(database_url), "COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    titles = [cell.strip() for cell in next(line for line in lines if "┃" in line).split("┃")[1:-1]]
    table = {}
    for line in (line for line in lines if "│" in line):
        cells = dict(zip(titles, (cell.strip() for cell in line.split("│")[1:-1]), strict=True))
        table[cells["url"][len(site.base_url):]] = cells
    return table


def not_backed_off(row: dict[str, Any]) -> bool:
    due, fetched = row["next_due_at"], row["last_fetched_at"]
    if isinstance(due, str):  # SQLite through a plain text query
        due, fetched = datetime.fromisoformat(due), datetime.fromisoformat(fetched)
    return row["consecutive_failures"] == 0 and (due - fetched).total_seconds() < 660


def test_a_visit_counts_the_articles_of_every_source_it_followed(
    site: SiteServer, database_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/sitemaps/index.xml", sitemap_index(base, ["/sitemaps/a.xml", "/sitemaps/b.xml"]))
    serve(site, "/sitemaps/a.xml", stories(site, 1, 2))
    answers = iter([Reply(503), Reply(200, stories(site, 3, 4, 5).encode(),
                                      {"Content-Type": "application/xml"})])
    site.routes["/sitemaps/b.xml"] = lambda handler: next(answers)  # tried again, then read
    serve(site, "/home/", '<html><head><link rel="alternate" type="application/rss+xml" '
          'href="/home/feed.xml"></head><body><h1>Harbour Times</h1></body></html>', "text/html")
    serve(site, "/home/feed.xml", rss_items(
        [f"<item><link>{base}{story_path(number)}</link></item>" for number in (6, 7)]))
    rows = visit(site, database_url, tmp_path, "/sitemaps/index.xml", "/home/")

    assert site.hits.count("/sitemaps/b.xml") == 2
    index, home = rows["/sitemaps/index.xml"], rows["/home/"]
    assert (index["last_status"], index["entries_seen"]) == ("ok", 5)
    assert (index["sources_followed"], index["sources_failed"], index["first_problem"]) == (
        2, 0, None)
    assert (home["last_status"], home["entries_seen"], home["sources_followed"]) == ("ok", 2, 1)
    shown = listed(site, database_url)
    assert shown["/sitemaps/index.xml"]["entries"] == "5"
    assert shown["/sitemaps/index.xml"]["followed"] == "2"
    assert shown["/home/"]["entries"] == "2"


def test_followed_sources_that_fail_are_counted_and_the_first_problem_shown(
    site: SiteServer, database_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    gone = ["/sitemaps/gone-1.xml", "/sitemaps/gone-2.xml"]
    serve(site, "/sitemaps/all-gone.xml", sitemap_index(base, gone))
    serve(site, "/sitemaps/half-gone.xml", sitemap_index(base, ["/sitemaps/here.xml",
                                                                 "/sitemaps/gone-3.xml"]))
    serve(site, "/sitemaps/here.xml", stories(site, 1, 2, 3))
    rows = visit(site, database_url, tmp_path, "/sitemaps/all-gone.xml", "/sitemaps/half-gone.xml")

    # Nothing came of the visit: the row says so, though the index itself answered, and it is
    # not backed off (its own fetch worked; the next visit may find its sitemaps back).
    all_gone = rows["/sitemaps/all-gone.xml"]
    assert (all_gone["last_status"], all_gone["entries_seen"]) == ("followed_sources_failed", 0)
    assert (all_gone["sources_followed"], all_gone["sources_failed"]) == (2, 2)
    assert all_gone["first_problem"] in {f"{base}{path}: http_404" for path in gone}
    assert not_backed_off(all_gone)
    half_gone = rows["/sitemaps/half-gone.xml"]
    assert (half_gone["last_status"], half_gone["entries_seen"]) == ("ok", 3)
    assert (half_gone["sources_followed"], half_gone["sources_failed"]) == (2, 1)
    assert half_gone["first_problem"] == f"{base}/sitemaps/gone-3.xml: http_404"
    assert not_backed_off(half_gone)

    shown = listed(site, database_url)
    assert shown["/sitemaps/all-gone.xml"]["last status"] == "followed_sources_failed"
    assert shown["/sitemaps/all-gone.xml"]["followed"] == "2 (2 failed)"
    assert shown["/sitemaps/half-gone.xml"]["followed"] == "2 (1 failed)"
    assert shown["/sitemaps/half-gone.xml"]["first problem"] == \
        f"{base}/sitemaps/gone-3.xml: http_404"


def test_a_sitemap_read_in_part_behind_robots_txt_is_shown(
    site: SiteServer, database_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/robots.txt", f"User-agent: *\nSitemap: {base}/sitemaps/big.xml\n",
          "text/plain")
    serve(site, "/sitemaps/big.xml", stories(site, 1, 2, 3, 4, 5))
    rows = visit(site, database_url, tmp_path, "/robots.txt",
                 SLUICE_DISCOVERY__MAX_ENTRIES="3")

    robots = rows["/robots.txt"]
    problem = f"{base}/sitemaps/big.xml: too_many_entries (more than 3 entries)"
    assert (robots["last_status"], robots["entries_seen"]) == ("ok", 3)
    assert (robots["sources_followed"], robots["sources_failed"]) == (1, 0)
    assert robots["first_problem"] == problem
    assert listed(site, database_url)["/robots.txt"]["first problem"] == problem


def test_with_redis_the_crawler_that_takes_a_source_sums_up_its_visit(
    site: SiteServer, pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    children = ["/sitemaps/a.xml", "/sitemaps/b.xml", "/sitemaps/gone.xml"]
    serve(site, "/sitemaps/index.xml", sitemap_index(base, children))
    serve(site, "/sitemaps/a.xml", stories(site, 1, 2))
    serve(site, "/sitemaps/b.xml", stories(site, 3))
    env = sluice_env(pg_url, redis_url, SLUICE_BROWSER__RENDER="never",
                     SLUICE_EXTRACT_WORKERS="1")
    assert run_sluice("feeds", "add", site.url("/sitemaps/index.xml"), env=env).returncode == 0
    assert "1 due sources pushed" in run_sluice("schedule", "--once", env=env).stdout
    crawler = Crawler(env)
    try:
        assert wait_until(lambda: feed_rows(site, pg_url)["/sitemaps/index.xml"]["last_status"],
                          timeout=120)
    finally:
        crawler.stop()
    index = feed_rows(site, pg_url)["/sitemaps/index.xml"]
    assert (index["last_status"], index["entries_seen"]) == ("ok", 3)
    assert (index["sources_followed"], index["sources_failed"]) == (3, 1)
    assert index["first_problem"] == f"{base}/sitemaps/gone.xml: http_404"
