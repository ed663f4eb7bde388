"""Sources that announce or dress themselves misleadingly, crawled from a local site: each is read
as what it is and yields its articles.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.db import feeds
from sluice.demo.server import Reply, SiteHandler, SiteServer
from tests.conftest import sluice_env
from tests.integration.test_discovery import article_paths_by_source, listing_page, rows
from tests.sites import article_html, crawl_process

pytestmark = pytest.mark.integration

SLUGS = ["river-cleanup-begins", "new-ferry-timetable", "library-extends-hours"]
POSTS = {f"/blog/2024/05/{slug}" for slug in SLUGS}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[SiteServer]:
    def post(handler: SiteHandler) -> Reply:
        return Reply(200, article_html(f"Post {handler.path}").encode(),
                     {"Content-Type": "text/html; charset=utf-8"})

    with SiteServer(tmp_path / "site", routes={"/blog/2024/*": post}) as server:
        yield server


def serve(site: SiteServer, path: str, body: bytes, content_type: str) -> None:
    site.routes[path] = lambda handler: Reply(200, body, {"Content-Type": content_type})


def crawl(site: SiteServer, database_url: str, tmp_path: Path, *paths: str
          ) -> dict[str, set[str]]:
    """Crawl `paths` once; the article paths found, by source path."""
    env = sluice_env(database_url, SLUICE_BROWSER__RENDER="never")
    stats = crawl_process([site.url(path) for path in paths], env, tmp_path)
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]
    return article_paths_by_source(database_url, site.base_url)


def sources(site: SiteServer, database_url: str) -> dict[str, tuple[str, str]]:
    """{source path: (kind, last status)}"""
    base = site.base_url
    return {url[len(base):]: (kind, status)
            for url, kind, status in rows(database_url, feeds, "url", "kind", "last_status")}


def test_a_wordpress_page_announcing_its_rest_api_is_read_as_a_listing(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    page = listing_page(SLUGS, None).replace("<head>", (
        '<head><link rel="alternate" type="application/json" '
        'href="/wp-json/wp/v2/categories/3">'))
    serve(site, "/category/harbour/", page.encode(), "text/html; charset=UTF-8")
    serve(site, "/wp-json/wp/v2/categories/3",
          json.dumps({"id": 3, "name": "Harbour", "link": "/category/harbour/"}).encode(),
          "application/json; charset=UTF-8")
    assert crawl(site, sqlite_url, tmp_path, "/category/harbour/") == {
        "/category/harbour/": POSTS}
    assert sources(site, sqlite_url) == {"/category/harbour/": ("listing", "ok")}
    assert "/wp-json/wp/v2/categories/3" not in site.hits
