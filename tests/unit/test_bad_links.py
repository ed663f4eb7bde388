"""One malformed link in a source costs that link only: the source's other links still count."""

from __future__ import annotations

import json

import pytest

from sluice.discovery.sources import Role, read_source

BASE = "https://news.example/"
GOOD = "https://news.example/2026/11/a-good-story"
BAD = "http://[bad/"  # an unclosed IPv6 bracket: urljoin itself raises on it

JSON_FEED = json.dumps({
    "version": "https://jsonfeed.org/version/1.1", "title": "t",
    "items": [{"id": "1", "url": BAD}, {"id": "2", "url": GOOD}],
}).encode()
SITEMAP = (f"<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
           f"<url><loc>//[bad/x</loc></url><url><loc>{GOOD}</loc></url></urlset>").encode()
ROBOTS = b"Sitemap: //[bad/s.xml\nSitemap: https://news.example/sitemap.xml\n"
HOME = (f"<html><head><base href='{BAD}'>"
        f"<link rel='alternate' type='application/rss+xml' href='{BAD}feed'>"
        "<link rel='alternate' type='application/rss+xml' href='/feed.xml'>"
        "</head><body><p>hello</p></body></html>").encode()


@pytest.mark.parametrize(
    ("body", "url", "content_type", "expected"),
    [
        (JSON_FEED, BASE + "feed.json", "application/feed+json", GOOD),
        (SITEMAP, BASE + "sitemap.xml", "application/xml", GOOD),
        (ROBOTS, BASE + "robots.txt", "text/plain", "https://news.example/sitemap.xml"),
        (HOME, BASE, "text/html", "https://news.example/feed.xml"),
    ],
    ids=["json feed", "sitemap", "robots.txt", "home page"],
)
def test_a_malformed_link_is_skipped_and_the_rest_are_read(
    body: bytes, url: str, content_type: str, expected: str
) -> None:
    reading = read_source(body, url, content_type, Role.DETECT)
    found = [a.url for a in reading.articles] + [f.url for f in reading.follow]
    assert found == [expected]
