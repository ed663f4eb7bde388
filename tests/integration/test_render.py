"""Render on demand: Chromium only for pages whose static HTML does not hold the article."""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import articles, make_engine, sites
from sluice.demo.server import SiteServer
from tests.conftest import sluice_env
from tests.sites import article_html, crawl_process, js_only_html, rss, write_site

pytestmark = pytest.mark.integration


def row(database_url: str, url: str) -> sa.Row[tuple[object, ...]]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        found = conn.execute(sa.select(articles.c.status, articles.c.reason, articles.c.rendered,
                                       articles.c.char_count)
                             .where(articles.c.url == url)).one()
    engine.dispose()
    return found


def test_plain_pages_never_start_a_browser(tmp_path: Path, sqlite_url: str) -> None:
    root = write_site(tmp_path / "site", {"a.html": article_html("Plain one"),
                                          "b.html": article_html("Plain two")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/a.html"), site.url("/b.html")]))
        stats = crawl_process([site.url("/feed.xml")], sluice_env(sqlite_url), tmp_path)
        assert row(sqlite_url, site.url("/a.html")).status == "success"
        assert row(sqlite_url, site.url("/b.html")).rendered is False
    assert "playwright/browser_count" not in stats
    assert stats.get("sluice/render/requests") is None


def test_javascript_only_page_is_rendered_and_the_site_is_learned(
    tmp_path: Path, sqlite_url: str
) -> None:
    root = write_site(tmp_path / "site", {"js/1.html": js_only_html("First JS story"),
                                          "js/2.html": js_only_html("Second JS story")})
    with SiteServer(root, routes={}) as site:
        # A host of its own ("localhost"), so what is learned about it is about this site only.
        base = site.base_url.replace("127.0.0.1", "localhost")
        (root / "feed1.xml").write_text(rss([base + "/js/1.html"]))
        (root / "feed2.xml").write_text(rss([base + "/js/2.html"]))
        env = sluice_env(sqlite_url)

        stats = crawl_process([base + "/feed1.xml"], env, tmp_path)
        first = row(sqlite_url, base + "/js/1.html")
        assert (first.status, first.rendered) == ("success", True)
        assert stats["playwright/browser_count"] == 1
        assert stats["sluice/render/why/empty_app_root"] == 1
        assert site.hits.count("/js/1.html") == 2  # static, then the browser

        crawl_process([base + "/feed2.xml"], env, tmp_path)
        second = row(sqlite_url, base + "/js/2.html")
        assert (second.status, second.rendered) == ("success", True)
        assert site.hits.count("/js/2.html") == 1  # straight to the browser

    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        mode = conn.execute(sa.select(sites.c.render_mode).where(sites.c.host == "localhost"))
        assert mode.scalar_one() == "browser"
    engine.dispose()


def test_a_browser_that_cannot_start_gives_render_unavailable(
    tmp_path: Path, sqlite_url: str
) -> None:
    root = write_site(tmp_path / "site", {"js.html": js_only_html("Needs a browser"),
                                          "plain.html": article_html("Fine without one")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/js.html"), site.url("/plain.html")]))
        env = sluice_env(sqlite_url, SLUICE_BROWSER__PATH=str(tmp_path / "no-such-chromium"))
        stats = crawl_process([site.url("/feed.xml")], env, tmp_path)
        assert stats["finish_reason"] == "finished"
        failed = row(sqlite_url, site.url("/js.html"))
        assert (failed.status, failed.reason) == ("fetch_failed", "render_unavailable")
        assert row(sqlite_url, site.url("/plain.html")).status == "success"
    assert stats["_stderr"].count("the browser cannot be started") == 1


def test_render_policy_never_keeps_the_shell(tmp_path: Path, sqlite_url: str) -> None:
    root = write_site(tmp_path / "site", {"js.html": js_only_html("Never rendered")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/js.html")]))
        env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="never")
        stats = crawl_process([site.url("/feed.xml")], env, tmp_path)
        assert row(sqlite_url, site.url("/js.html")).status == "under_limit"
    assert "playwright/browser_count" not in stats


def test_render_policy_always_renders_plain_pages_too(tmp_path: Path, sqlite_url: str) -> None:
    root = write_site(tmp_path / "site", {"a.html": article_html("Always rendered")})
    with SiteServer(root, routes={}) as site:
        (root / "feed.xml").write_text(rss([site.url("/a.html")]))
        env = sluice_env(sqlite_url, SLUICE_BROWSER__RENDER="always")
        crawl_process([site.url("/feed.xml")], env, tmp_path)
        found = row(sqlite_url, site.url("/a.html"))
        assert (found.status, found.rendered) == ("success", True)
        assert site.hits.count("/a.html") == 1
