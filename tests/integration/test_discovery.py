"""Every source kind crawled from a local site: each yields exactly its article URLs.

RSS (relative links, an entry without a link), Atom (not UTF-8), JSON Feed, a `urlset` sitemap
(with `lastmod`), a gzipped sitemap index holding a Google News sitemap and a gzipped `urlset`,
robots.txt `Sitemap:` lines, a home page announcing its feed, and a listing page with
navigation, tag and author links and a next page. Then: conditional GET (304 on an unchanged
feed), two new entries cause exactly two fetches, the listing pattern is stored and reused.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa

from sluice.db import articles, feeds, make_engine, sites
from sluice.demo.server import Reply, SiteHandler, SiteServer
from tests.conftest import sluice_env
from tests.sites import article_html, crawl_process, write_site

pytestmark = pytest.mark.integration

ARTICLES = {
    "rss": ["/rss/one.html", "/rss/two.html"],
    "atom": ["/atom/eins.html", "/atom/zwei.html"],
    "json": ["/json/first.html", "/json/second.html"],
    "urlset": ["/sm/a.html", "/sm/b.html", "/sm/c.html"],
    "index": ["/gn/flood-warning.html", "/gn/ferry-strike.html", "/gz/old-mill.html"],
    "robots": ["/rb/harbour.html", "/rb/market.html"],
    "home": ["/home-news/bridge.html", "/home-news/library.html"],
    "listing": [f"/blog/2024/05/{slug}" for slug in (
        "river-cleanup-begins", "new-ferry-timetable", "library-extends-hours",
        "market-square-reopens", "school-garden-harvest", "museum-night-returns")],
}


def urlset(base: str, paths: list[str], lastmod: dict[str, str] | None = None) -> str:
    entries = "".join(
        f"<url><loc>{base}{path}</loc>"
        + (f"<lastmod>{lastmod[path]}</lastmod>" if lastmod and path in lastmod else "")
        + "</url>" for path in paths)
    return ('<?xml version="1.0" encoding="UTF-8"?><urlset '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</urlset>')


def news_sitemap(base: str, dated: dict[str, str]) -> str:
    entries = "".join(
        f"<url><loc>{base}{path}</loc><news:news><news:publication><news:name>Harbour Times"
        f"</news:name><news:language>en</news:language></news:publication>"
        f"<news:publication_date>{date}</news:publication_date><news:title>{path}</news:title>"
        "</news:news></url>" for path, date in dated.items())
    return ('<?xml version="1.0" encoding="UTF-8"?><urlset '
            'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9" '
            f'xmlns:news="http://www.google.com/schemas/sitemap-news/0.9">{entries}</urlset>')


def sitemap_index(base: str, children: list[str]) -> str:
    entries = "".join(f"<sitemap><loc>{base}{child}</loc></sitemap>" for child in children)
    return ('<?xml version="1.0" encoding="UTF-8"?><sitemapindex '
            f'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>')


def rss_items(items: list[str]) -> str:
    return (f'<?xml version="1.0"?><rss version="2.0"><channel><title>Harbour RSS</title>'
            f"{''.join(items)}</channel></rss>")


ATOM_LATIN1 = ('<?xml version="1.0" encoding="iso-8859-1"?>'
               '<feed xmlns="http://www.w3.org/2005/Atom"><title>Café du port</title>'
               '<entry><title>Première</title><link href="/atom/eins.html"/>'
               "<id>urn:1</id><updated>2024-05-01T00:00:00Z</updated></entry>"
               '<entry><title>Deuxième</title><link href="/atom/zwei.html"/>'
               "<id>urn:2</id><updated>2024-05-02T00:00:00Z</updated></entry></feed>"
               ).encode("iso-8859-1")

HOME_PAGE = ("<!doctype html><html><head><title>Harbour Times</title>"
             '<link rel="alternate" type="application/rss+xml" title="News" '
             'href="/home/feed.xml">'
             '<link rel="alternate" type="application/rss+xml" title="Comments" '
             'href="/home/comments/feed.xml"></head><body><h1>Welcome</h1></body></html>')


def listing_page(slugs: list[str], next_page: str | None) -> str:
    posts = "".join(
        f"<article class='post'><h2><a href='/blog/2024/05/{slug}'>"
        f"{slug.replace('-', ' ').title()} in the harbour town</a></h2>"
        f"<p>By <a href='/author/ann-smith'>Ann Smith</a> in "
        f"<a href='/tag/harbour'>harbour</a>, <a href='/tag/town'>town</a></p></article>"
        for slug in slugs)
    nav = ("<nav class='menu'><a href='/'>Home</a><a href='/about'>About us</a>"
           "<a href='/contact'>Contact</a><a href='/tag/harbour'>Harbour</a>"
           "<a href='/author/ann-smith'>Our writers</a></nav>")
    more = f"<a rel='next' href='{next_page}'>Older posts</a>" if next_page else ""
    return (f"<!doctype html><html><head><title>Blog</title></head><body>{nav}"
            f"<main class='posts'>{posts}<div class='pager'>{more}</div></main>"
            "<footer><a href='/privacy'>Privacy</a></footer></body></html>")


class ConditionalFeed:
    """An RSS feed with an ETag and Last-Modified; answers 304 to a matching request."""

    def __init__(self, paths: list[str]) -> None:
        self.paths = list(paths)

    def body(self, base: str) -> bytes:
        items = [f"<item><title>{path}</title><link>{path}</link></item>" for path in self.paths]
        items.append("<item><title>A note without a link</title></item>")
        return rss_items(items).replace("<link>/", f"<link>{base}/", 1).encode()

    def route(self, handler: SiteHandler) -> Reply:
        base = handler.server.site.base_url
        body = self.body(base)
        etag = '"' + hashlib.sha256(body).hexdigest()[:16] + '"'
        modified = f"Wed, 0{len(self.paths)} May 2024 10:00:00 GMT"
        if handler.headers.get("If-None-Match") == etag:
            return Reply(304, headers={"ETag": etag})
        return Reply(200, body, {"Content-Type": "application/rss+xml", "ETag": etag,
                                 "Last-Modified": modified})


@pytest.fixture
def site(tmp_path: Path) -> Iterator[tuple[SiteServer, ConditionalFeed]]:
    feed = ConditionalFeed(ARTICLES["rss"])
    pages = {path.lstrip("/"): article_html(f"Story {path}")
             for paths in ARTICLES.values() for path in paths if path.endswith(".html")}
    pages.update({"rss/three.html": article_html("Three"), "rss/four.html": article_html("Four")})
    root = write_site(tmp_path / "site", pages)
    gzip_route = {"Content-Type": "application/x-gzip"}
    blog_post = {"Content-Type": "text/html; charset=utf-8"}
    routes = {"/feeds/rss.xml": feed.route, "/blog/2024/*": lambda handler: Reply(
        200, article_html(f"Post {handler.path}").encode(), blog_post)}
    with SiteServer(root, routes=routes) as server:
        base = server.base_url
        write_site(root, {
            "feeds/atom.xml": ATOM_LATIN1,
            "feeds/feed.json": json.dumps({
                "version": "https://jsonfeed.org/version/1.1", "title": "Harbour JSON",
                "items": [{"id": "1", "url": f"{base}/json/first.html"},
                          {"id": "2", "url": "/json/second.html"}]}),
            "sitemaps/pages.xml": urlset(base, ARTICLES["urlset"],
                                         {"/sm/c.html": "2099-01-01"}),
            "sitemaps/news.xml": news_sitemap(base, {
                "/gn/flood-warning.html": "2024-05-12T08:00:00+00:00",
                "/gn/ferry-strike.html": "2024-05-13"}),
            "sitemaps/robots-listed.xml": urlset(base, ARTICLES["robots"]),
            "robots.txt": f"User-agent: *\nAllow: /\nSitemap: {base}/sitemaps/robots-listed.xml\n",
            "home/index.html": HOME_PAGE,
            "home/feed.xml": rss_items([f"<item><link>{base}{path}</link></item>"
                                        for path in ARTICLES["home"]]),
            "home/comments/feed.xml": rss_items([f"<item><link>{base}/rss/one.html</link></item>"]),
            "blog/index.html": listing_page([p.rsplit("/", 1)[1] for p in ARTICLES["listing"][:3]],
                                            "/blog/page/2/"),
            "blog/page/2/index.html": listing_page(
                [p.rsplit("/", 1)[1] for p in ARTICLES["listing"][3:]], None),
        })
        server.routes["/sitemaps/index.xml.gz"] = lambda handler: Reply(200, gzip.compress(
            sitemap_index(base, ["/sitemaps/news.xml", "/sitemaps/more.xml.gz"]).encode()),
            gzip_route)
        server.routes["/sitemaps/more.xml.gz"] = lambda handler: Reply(200, gzip.compress(
            urlset(base, ["/gz/old-mill.html"]).encode()), gzip_route)
        yield server, feed


SOURCES = {"rss": "/feeds/rss.xml", "atom": "/feeds/atom.xml", "json": "/feeds/feed.json",
           "urlset": "/sitemaps/pages.xml", "index": "/sitemaps/index.xml.gz",
           "robots": "/robots.txt", "home": "/home/", "listing": "/blog/"}


def rows(database_url: str, table: sa.Table, *columns: str) -> list[Any]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = conn.execute(sa.select(*(table.c[name] for name in columns))).all()
    engine.dispose()
    return found


def article_paths_by_source(database_url: str, base: str) -> dict[str, set[str]]:
    by_source: dict[str, set[str]] = {}
    for url, source, status in rows(database_url, articles, "url", "source", "status"):
        # Fetched and settled (whether the classifier likes the test pages is not the point).
        assert getattr(status, "value", status) not in ("queued", "pending", "fetch_failed"), url
        by_source.setdefault(source[len(base):], set()).add(url[len(base):])
    return by_source


def article_hits(server: SiteServer) -> list[str]:
    return [path for path in server.hits
            if not path.startswith(("/feeds/", "/sitemaps/", "/robots.txt", "/home/"))
            and path not in ("/blog/", "/blog/page/2/")]


def test_every_source_kind_yields_exactly_its_articles(
    site: tuple[SiteServer, ConditionalFeed], sqlite_url: str, tmp_path: Path
) -> None:
    server, feed = site
    base = server.base_url
    env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never")
    stats = crawl_process([base + path for path in SOURCES.values()], env, tmp_path)
    assert stats["finish_reason"] == "finished", stats["_stderr"][-3000:]

    found = article_paths_by_source(sqlite_url, base)
    assert found == {SOURCES[kind]: set(paths) for kind, paths in ARTICLES.items()}
    kinds = {url[len(base):]: (kind, status) for url, kind, status in
             rows(sqlite_url, feeds, "url", "kind", "last_status")}
    assert kinds == {
        "/feeds/rss.xml": ("rss", "ok"), "/feeds/atom.xml": ("atom", "ok"),
        "/feeds/feed.json": ("jsonfeed", "ok"), "/sitemaps/pages.xml": ("sitemap", "ok"),
        "/sitemaps/index.xml.gz": ("sitemap_index", "ok"), "/robots.txt": ("robots", "ok"),
        "/home/": ("autodiscover", "ok"), "/blog/": ("listing", "ok")}
    # The Google News sitemap's publication dates are kept on the rows.
    dated = {url[len(base):]: published for url, published in
             rows(sqlite_url, articles, "url", "published_at") if "/gn/" in url}
    assert {path: str(value)[:10] for path, value in dated.items()} == {
        "/gn/flood-warning.html": "2024-05-12", "/gn/ferry-strike.html": "2024-05-13"}
    # The listing pattern proved itself and is stored for the site.
    patterns = rows(sqlite_url, sites, "host", "listing_pattern", "listing_pattern_at")
    assert [(host, pattern) for host, pattern, _ in patterns] == [("127.0.0.1",
                                                                   "/blog/{num}/{num}/*")]
    assert sorted(article_hits(server)) == sorted(p for ps in ARTICLES.values() for p in ps)

    # Second visit: the RSS feed answers 304 to its validators; stored articles are not fetched
    # again, except the sitemap entry whose lastmod is newer than its fetch; the stored listing
    # pattern still holds and is kept.
    server.hits.clear()
    server.requests.clear()
    stats = crawl_process([base + path for path in SOURCES.values()], env, tmp_path)
    feed_requests = [headers for path, headers in server.requests if path == "/feeds/rss.xml"]
    assert feed_requests and feed_requests[0].get("If-None-Match")
    assert feed_requests[0].get("If-Modified-Since") == "Wed, 02 May 2024 10:00:00 GMT"
    assert stats["sluice/sources/not_modified"] == 1
    assert article_hits(server) == ["/sm/c.html"]
    assert rows(sqlite_url, sites, "host", "listing_pattern", "listing_pattern_at") == patterns
    assert dict(rows(sqlite_url, feeds, "url", "last_status"))[base + "/feeds/rss.xml"] == \
        "not_modified"

    # The feed gains two entries: exactly two article fetches.
    feed.paths += ["/rss/three.html", "/rss/four.html"]
    server.hits.clear()
    crawl_process([base + SOURCES["rss"]], env, tmp_path)
    assert sorted(article_hits(server)) == ["/rss/four.html", "/rss/three.html"]
    assert article_paths_by_source(sqlite_url, base)[SOURCES["rss"]] == {
        "/rss/one.html", "/rss/two.html", "/rss/three.html", "/rss/four.html"}


def test_a_stored_listing_pattern_that_fails_is_replaced(
    site: tuple[SiteServer, ConditionalFeed], sqlite_url: str, tmp_path: Path
) -> None:
    server, _ = site
    engine = make_engine(sqlite_url)
    with engine.begin() as conn:
        conn.execute(sites.insert().values(host="127.0.0.1", listing_pattern="/news/{num}/*",
                                           updated_at=sa.func.now()))
    engine.dispose()
    env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never",
                     SLUICE_DISCOVERY__MAX_LISTING_PAGES="1")
    crawl_process([server.url("/blog/")], env, tmp_path)
    assert rows(sqlite_url, sites, "listing_pattern") == [("/blog/{num}/{num}/*",)]
    # One listing page only (the depth setting): the first three posts.
    assert article_paths_by_source(sqlite_url, server.base_url) == {
        "/blog/": set(ARTICLES["listing"][:3])}
