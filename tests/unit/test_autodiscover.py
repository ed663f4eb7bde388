"""Feed autodiscovery from a home page's `<link rel="alternate">` elements."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.discovery.autodiscover import FeedLink, find_feed_links

LISTING = Path(__file__).resolve().parent.parent / "fixtures" / "listing"

HOME = """<!DOCTYPE html>
<html><head>
<base href="/en/">
<link rel="stylesheet" href="/style.css">
<link rel="alternate" type="application/rss+xml" title="Top stories" href="rss/top.xml">
<link rel="alternate" type="application/atom+xml" href="https://example.com/atom.xml#x">
<link rel="alternate feed" type="application/feed+json; charset=utf-8" href="/feed.json">
<link rel="Alternate" type="APPLICATION/RSS+XML" href="rss/top.xml">
<link rel="alternate" type="application/json" href="/wp-json/wp/v2/posts">
<link rel="alternate" type="application/json" href="/feeds/all.json">
<link rel="alternate" type="text/html" hreflang="fr" href="/fr/">
<link rel="alternate" type="application/rss+xml" href="javascript:alert(1)">
<link rel="alternate" type="application/rss+xml" href="">
<link rel="alternate" type="application/rss+xml" title="Example &raquo; Comments Feed"
      href="/comments/feed/">
</head><body><link rel="alternate" type="application/rss+xml" href="/late.xml"></body></html>
"""


def test_feeds_are_found_resolved_and_deduplicated() -> None:
    feeds = find_feed_links(HOME, "https://example.com/index.html")
    assert feeds == [
        FeedLink("https://example.com/en/rss/top.xml", "application/rss+xml", "Top stories"),
        FeedLink("https://example.com/atom.xml", "application/atom+xml"),
        FeedLink("https://example.com/feed.json", "application/feed+json"),
        FeedLink("https://example.com/feeds/all.json", "application/json"),
        FeedLink("https://example.com/late.xml", "application/rss+xml"),
    ]


def test_comment_feeds_only_on_request() -> None:
    feeds = find_feed_links(HOME, "https://example.com/", include_comments=True)
    assert "https://example.com/comments/feed/" in [feed.url for feed in feeds]


def test_without_base_hrefs_resolve_against_the_page() -> None:
    html = '<link rel="alternate" type="application/rss+xml" href="feed.xml">'
    assert find_feed_links(html, "https://a.example/blog/index.html") == [
        FeedLink("https://a.example/blog/feed.xml", "application/rss+xml")
    ]


def test_wordpress_blog_fixture_announces_its_main_feed_only() -> None:
    html = (LISTING / "blog_dates.html").read_bytes()
    assert [f.url for f in find_feed_links(html, "https://notes.example.org/")] == [
        "https://notes.example.org/feed/"
    ]


@pytest.mark.parametrize(
    "html",
    [
        "",
        "   ",
        b"",
        "<?xml version='1.0' encoding='utf-8'?><html/>",
        b"\x00\x01",
        "<p>no head</p>",
    ],
)
def test_pages_without_feeds(html: str | bytes) -> None:
    assert find_feed_links(html, "https://a.example/") == []


@settings(max_examples=150, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises(html: str) -> None:
    first = find_feed_links(html, "https://a.example/")
    assert find_feed_links(html, "https://a.example/") == first
