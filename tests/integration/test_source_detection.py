"""Sources that announce or dress themselves misleadingly, crawled from a local site: each is read
as what it is and yields its articles. And sources that only point to others (robots.txt, a
sitemap index, a home page) are read again even when unchanged, to find what changed below them.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from sluice.db import feeds
from sluice.demo.server import Reply, Route, SiteHandler, SiteServer
from tests.conftest import sluice_env
from tests.integration.test_discovery import (
    article_paths_by_source,
    listing_page,
    rows,
    rss_items,
    sitemap_index,
    urlset,
)
from tests.sites import article_html, crawl_process, story_path

pytestmark = pytest.mark.integration

SLUGS = ["river-cleanup-begins", "new-ferry-timetable", "library-extends-hours"]
POSTS = {f"/blog/2024/05/{slug}" for slug in SLUGS}


@pytest.fixture
def site(tmp_path: Path) -> Iterator[SiteServer]:
    def post(handler: SiteHandler) -> Reply:
        return Reply(200, article_html(f"Post {handler.path}").encode(),
                     {"Content-Type": "text/html; charset=utf-8"})

    with SiteServer(tmp_path / "site", routes={"/blog/2024/*": post, "/news/*": post}) as server:
        yield server


def serve(site: SiteServer, path: str, body: bytes, content_type: str) -> None:
    site.routes[path] = lambda handler: Reply(200, body, {"Content-Type": content_type})


def crawl(site: SiteServer, database_url: str, tmp_path: Path, *paths: str, **settings: str
          ) -> dict[str, set[str]]:
    """Crawl `paths` once; the article paths found, by source path."""
    env = sluice_env(database_url, SLUICE_BROWSER__RENDER="never", **settings)
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


def unchanged(body: str, content_type: str) -> Route:
    """A source that never changes: it answers 304 to its ETag."""
    def route(handler: SiteHandler) -> Reply:
        if handler.headers.get("If-None-Match") == '"v1"':
            return Reply(304, headers={"ETag": '"v1"'})
        return Reply(200, body.encode(), {"Content-Type": content_type, "ETag": '"v1"'})
    return route


def listing(base: str, stories: list[str], feed: bool) -> Route:
    """A sitemap or feed listing `stories` as they are when it is fetched."""
    def route(handler: SiteHandler) -> Reply:
        body = (rss_items([f"<item><link>{base}{story}</link></item>" for story in stories])
                if feed else urlset(base, stories))
        return Reply(200, body.encode(), {"Content-Type": "application/xml"})
    return route


def test_an_unchanged_robots_txt_index_or_home_page_still_leads_to_new_articles(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    below = {"/sitemaps/listed.xml": [story_path(1)], "/sitemaps/child.xml": [story_path(2)],
             "/home/feed.xml": [story_path(3)]}
    for path, stories in below.items():
        site.routes[path] = listing(base, stories, feed=path.endswith("feed.xml"))
    site.routes["/robots.txt"] = unchanged(f"Sitemap: {base}/sitemaps/listed.xml\n", "text/plain")
    site.routes["/sitemaps/index.xml"] = unchanged(
        sitemap_index(base, ["/sitemaps/child.xml"]), "application/xml")
    site.routes["/home/"] = unchanged(
        '<html><head><link rel="alternate" type="application/rss+xml" href="/home/feed.xml">'
        "</head><body><h1>Harbour Times</h1></body></html>", "text/html")
    site.routes["/feeds/news.xml"] = unchanged(
        rss_items([f"<item><link>{base}{story_path(4)}</link></item>"]), "application/rss+xml")
    roots = ["/robots.txt", "/sitemaps/index.xml", "/home/", "/feeds/news.xml"]
    crawl(site, sqlite_url, tmp_path, *roots)

    for number, stories in enumerate(below.values(), start=5):
        stories.append(story_path(number))
    site.requests.clear()
    assert crawl(site, sqlite_url, tmp_path, *roots) == {
        "/robots.txt": {story_path(1), story_path(5)},
        "/sitemaps/index.xml": {story_path(2), story_path(6)},
        "/home/": {story_path(3), story_path(7)}, "/feeds/news.xml": {story_path(4)}}
    validators = {path: headers.get("If-None-Match") for path, headers in site.requests
                  if path in roots}
    # The feed keeps its conditional request (and its 304); the pointers are read in full.
    assert validators == {"/robots.txt": None, "/sitemaps/index.xml": None, "/home/": None,
                          "/feeds/news.xml": '"v1"'}
    assert sources(site, sqlite_url)["/feeds/news.xml"] == ("rss", "not_modified")


def feed_of(base: str, *numbers: int) -> str:
    return rss_items([f"<item><title>Grève n°{number}</title><link>{base}{story_path(number)}"
                      "</link></item>" for number in numbers])


def test_feeds_served_under_a_misleading_type_are_read_as_feeds_and_xhtml_as_a_page(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/feeds/bom.xml", b"\xef\xbb\xbf" + feed_of(base, 1).encode(), "text/html")
    serve(site, "/feeds/plain.rss", feed_of(base, 2).split("?>", 1)[1].encode(), "text/plain")
    serve(site, "/feeds/utf16.xml", feed_of(base, 3).replace(
        '<?xml version="1.0"?>', '<?xml version="1.0" encoding="UTF-16"?>').encode("utf-16"),
        "text/xml; charset=iso-8859-1")  # a server's default charset, not the feed's
    serve(site, "/feeds/bom.json", b"\xef\xbb\xbf" + json.dumps({
        "version": "https://jsonfeed.org/version/1.1", "title": "t",
        "items": [{"id": "4", "url": base + story_path(4)}]}).encode(), "text/plain")
    xhtml = ('<?xml version="1.0" encoding="UTF-8"?>\n<!DOCTYPE html PUBLIC "-//W3C//DTD XHTML '
             '1.0 Strict//EN" "http://www.w3.org/TR/xhtml1/DTD/xhtml1-strict.dtd">\n'
             + listing_page(SLUGS, None).replace(
                 "<!doctype html><html>", '<html xmlns="http://www.w3.org/1999/xhtml">'))
    serve(site, "/xhtml/", xhtml.encode(), "application/xhtml+xml; charset=utf-8")
    roots = ["/feeds/bom.xml", "/feeds/plain.rss", "/feeds/utf16.xml", "/feeds/bom.json",
             "/xhtml/"]
    assert crawl(site, sqlite_url, tmp_path, *roots) == {
        "/feeds/bom.xml": {story_path(1)}, "/feeds/plain.rss": {story_path(2)},
        "/feeds/utf16.xml": {story_path(3)}, "/feeds/bom.json": {story_path(4)},
        "/xhtml/": POSTS}
    assert sources(site, sqlite_url) == {
        "/feeds/bom.xml": ("rss", "ok"), "/feeds/plain.rss": ("rss", "ok"),
        "/feeds/utf16.xml": ("rss", "ok"), "/feeds/bom.json": ("jsonfeed", "ok"),
        "/xhtml/": ("listing", "ok")}


def test_a_feed_given_as_a_sitemap_is_read_as_a_feed(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/robots.txt", f"Sitemap: {base}/feeds/news.rss\n".encode(), "text/plain")
    serve(site, "/feeds/news.rss", feed_of(base, 1, 2).encode(), "application/rss+xml")
    serve(site, "/sitemaps/index.xml", sitemap_index(base, ["/feeds/news.atom"]).encode(),
          "application/xml")
    serve(site, "/feeds/news.atom", (
        '<?xml version="1.0" encoding="utf-8"?><feed xmlns="http://www.w3.org/2005/Atom">'
        f'<title>Harbour</title><entry><title>Three</title><link href="{story_path(3)}"/>'
        "<id>urn:3</id><updated>2026-11-30T08:00:00Z</updated></entry></feed>").encode(),
        "application/atom+xml")
    assert crawl(site, sqlite_url, tmp_path, "/robots.txt", "/sitemaps/index.xml") == {
        "/robots.txt": {story_path(1), story_path(2)}, "/sitemaps/index.xml": {story_path(3)}}


def test_a_plain_text_sitemap_given_directly_is_read_as_a_sitemap(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/sitemap.txt", f"\n{base}{story_path(1)}\r\n{base}{story_path(2)}\n".encode(),
          "text/plain; charset=utf-8")
    assert crawl(site, sqlite_url, tmp_path, "/sitemap.txt") == {
        "/sitemap.txt": {story_path(1), story_path(2)}}
    assert sources(site, sqlite_url) == {"/sitemap.txt": ("sitemap", "ok")}


def test_a_robots_txt_with_a_byte_order_mark_keeps_its_first_sitemap_line(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/robots.txt", (f"\ufeffSitemap: {base}/sitemaps/one.xml\nUser-agent: *\n"
                                f"Allow: /\nSitemap: {base}/sitemaps/two.xml\n").encode(),
          "text/plain")
    serve(site, "/sitemaps/one.xml", urlset(base, [story_path(1)]).encode(), "application/xml")
    serve(site, "/sitemaps/two.xml", urlset(base, [story_path(2)]).encode(), "application/xml")
    assert crawl(site, sqlite_url, tmp_path, "/robots.txt") == {
        "/robots.txt": {story_path(1), story_path(2)}}


def test_a_site_root_falling_back_to_robots_txt_keeps_every_sitemap_level(
    site: SiteServer, sqlite_url: str, tmp_path: Path
) -> None:
    base = site.base_url
    serve(site, "/", b"<html><body><p>Hello</p></body></html>", "text/html")
    serve(site, "/robots.txt", f"Sitemap: {base}/sitemaps/index.xml\n".encode(), "text/plain")
    indexes = {"/sitemaps/index.xml": ["/sitemaps/nested.xml"],  # level 0
               "/sitemaps/nested.xml": ["/sitemaps/pages.xml", "/sitemaps/deeper.xml"],
               "/sitemaps/deeper.xml": ["/sitemaps/too-deep.xml"]}  # level 2
    for path, children in indexes.items():
        serve(site, path, sitemap_index(base, children).encode(), "application/xml")
    serve(site, "/sitemaps/pages.xml", urlset(base, [story_path(1)]).encode(), "application/xml")
    serve(site, "/sitemaps/too-deep.xml", urlset(base, [story_path(2)]).encode(),
          "application/xml")
    assert crawl(site, sqlite_url, tmp_path, "/", SLUICE_DISCOVERY__SITEMAP_MAX_DEPTH="2") == {
        "/": {story_path(1)}}
    assert "/sitemaps/deeper.xml" in site.hits
    assert "/sitemaps/too-deep.xml" not in site.hits
