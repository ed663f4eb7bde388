"""Feed parsing: RSS, Atom and JSON Feed into canonical, de-duplicated article URLs."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sluice.discovery.feeds import looks_like_feed, parse_feed
from sluice.discovery.sitemaps import DEFAULT_MAX_ENTRIES
from sluice.discovery.sources import read_source
from sluice.errors import FeedError

RSS2 = b"""<?xml version="1.0" encoding="utf-8"?>
<rss version="2.0"><channel><title>Ledger</title><link>https://news.example/</link>
<item><title>One</title><link>/a/one?utm_source=rss</link>
  <pubDate>Mon, 02 Nov 2026 10:00:00 GMT</pubDate></item>
<item><title>No link at all</title><description>text</description></item>
<item><title>One again</title><link>https://news.example/a/one#top</link></item>
<item><title>Two</title><guid isPermaLink="true">https://news.example/a/two</guid></item>
</channel></rss>"""

RSS1 = b"""<?xml version="1.0"?>
<rdf:RDF xmlns:rdf="http://www.w3.org/1999/02/22-rdf-syntax-ns#" xmlns="http://purl.org/rss/1.0/">
<channel rdf:about="https://news.example/"><title>R1</title><link>https://news.example/</link></channel>
<item rdf:about="https://news.example/r1"><title>R1 item</title><link>https://news.example/r1</link></item>
</rdf:RDF>"""

RSS091 = b"""<?xml version="1.0"?><rss version="0.91"><channel><title>Old</title>
<item><title>Old one</title><link>http://old.example/x</link></item></channel></rss>"""

ATOM = b"""<?xml version="1.0" encoding="utf-8"?>
<feed xmlns="http://www.w3.org/2005/Atom" xml:base="https://blog.example/posts/">
<title>Blog</title>
<entry><title>Rel</title><link href="relative-post"/><updated>2026-01-01T00:00:00Z</updated></entry>
<entry><title>Abs</title><link rel="alternate" href="https://blog.example/abs"/></entry>
</feed>"""


def urls(body: bytes, feed_url: str = "https://news.example/feed", ctype: str = "") -> list[str]:
    return [entry.url for entry in parse_feed(body, feed_url, ctype).entries]


def test_rss2_resolves_dedupes_and_drops_tracking() -> None:
    feed = parse_feed(RSS2, "https://news.example/feed.xml")
    assert feed.kind == "rss" and feed.title == "Ledger"
    assert [entry.url for entry in feed.entries] == ["https://news.example/a/one",
                                                     "https://news.example/a/two"]
    assert feed.skipped == 1
    assert feed.entries[0].published is not None and feed.entries[0].published.day == 2


def test_rss1_and_rss091() -> None:
    assert urls(RSS1) == ["https://news.example/r1"]
    assert urls(RSS091) == ["http://old.example/x"]


def test_atom_relative_links_use_xml_base() -> None:
    feed = parse_feed(ATOM, "https://blog.example/atom.xml")
    assert feed.kind == "atom"
    assert [entry.url for entry in feed.entries] == ["https://blog.example/posts/relative-post",
                                                     "https://blog.example/abs"]


def test_json_feed() -> None:
    body = json.dumps({"version": "https://jsonfeed.org/version/1.1", "title": "J", "items": [
        {"id": "1", "url": "https://j.example/1", "date_published": "2026-02-01T00:00:00Z"},
        {"id": "2", "external_url": "/2"},
        {"id": "3"},
    ]}).encode()
    feed = parse_feed(body, "https://j.example/feed.json", "application/feed+json")
    assert feed.kind == "jsonfeed"
    assert [entry.url for entry in feed.entries] == ["https://j.example/1", "https://j.example/2"]
    assert feed.skipped == 1


def test_feed_not_in_utf8() -> None:
    body = ('<?xml version="1.0" encoding="windows-1251"?><rss version="2.0"><channel>'
            '<title>Новости</title><item><title>Статья</title><link>https://ru.example/1</link>'
            '</item></channel></rss>').encode("cp1251")
    feed = parse_feed(body, "https://ru.example/rss")
    assert feed.title == "Новости" and feed.entries[0].title == "Статья"


@pytest.mark.parametrize("body", [b"<html><body>not a feed</body></html>", b"", b"{broken json",
                                  b'{"no": "items"}', b"\x00\x01\x02garbage"])
def test_not_a_feed_is_a_clear_error(body: bytes) -> None:
    with pytest.raises(FeedError):
        parse_feed(body, "https://x.example/feed")


def test_xml_external_entities_are_not_resolved() -> None:
    body = b"""<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>
    <rss version="2.0"><channel><title>&xxe;</title>
    <item><title>&xxe;</title><link>https://x.example/a</link></item></channel></rss>"""
    try:
        feed = parse_feed(body, "https://x.example/feed")
    except FeedError:
        return
    assert "root:" not in (feed.title or "")
    assert all("root:" not in (entry.title or "") for entry in feed.entries)


def test_sniffing() -> None:
    assert looks_like_feed(RSS2)
    assert looks_like_feed(b"{}", "application/feed+json")
    assert not looks_like_feed(b"<!doctype html><html></html>", "text/html")
    # The root element decides, past a prolog, comments, a DOCTYPE and a byte-order mark.
    assert looks_like_feed(b'<?xml version="1.0"?>\n<?xml-stylesheet href="/rss.xsl"?>\n'
                           b"<!-- generated -->\n<!DOCTYPE rss>\n<rss version='0.91'>",
                           "text/html")
    assert looks_like_feed(b"\xef\xbb\xbf\n<rdf:RDF xmlns:rdf='x'>", "text/plain")
    assert looks_like_feed("<feed xmlns='x'>".encode("utf-16"), "")
    assert not looks_like_feed(b"<?xml version='1.0'?><html><body><p>a rss feed</p>",
                               "application/xhtml+xml")


@given(st.binary(max_size=2000))
def test_garbage_never_raises_anything_but_feed_error(body: bytes) -> None:
    try:
        first = parse_feed(body, "https://x.example/feed")
    except FeedError:
        return
    assert parse_feed(body, "https://x.example/feed") == first


def test_a_feed_past_the_entry_cap_keeps_its_first_entries_and_says_so() -> None:
    items = "".join(f"<item><link>https://news.example/{i}</link></item>" for i in range(5))
    body = f"<rss version='2.0'><channel>{items}</channel></rss>".encode()
    capped = parse_feed(body, "https://news.example/feed", max_entries=3)
    assert [entry.url for entry in capped.entries] == [f"https://news.example/{i}"
                                                       for i in range(3)]
    assert capped.partial == "too_many_entries"
    assert parse_feed(body, "https://news.example/feed", max_entries=5).partial is None


@pytest.mark.parametrize("kind", ["feed", "sitemap"])
def test_a_feed_is_capped_and_reported_as_a_sitemap_is(
        kind: str, caplog: pytest.LogCaptureFixture) -> None:
    """One entry past the cap, read as a source: the first DEFAULT_MAX_ENTRIES articles, the
    visit `ok` with the problem the scheduled source's row shows, and one warning naming the
    source and too_many_entries."""
    links = [f"https://news.example/{i}" for i in range(DEFAULT_MAX_ENTRIES + 1)]
    if kind == "feed":
        body = json.dumps({"version": "https://jsonfeed.org/version/1.1", "title": "Big",
                           "items": [{"id": link, "url": link} for link in links]}).encode()
        url, ctype = "https://news.example/feed.json", "application/feed+json"
    else:
        body = ('<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">' + "".join(
            f"<url><loc>{link}</loc></url>" for link in links) + "</urlset>").encode()
        url, ctype = "https://news.example/sitemap.xml", "application/xml"
    reading = read_source(body, url, ctype)
    assert (reading.status, reading.problem) == ("ok", "too_many_entries")
    assert [found.url for found in reading.articles] == links[:DEFAULT_MAX_ENTRIES]
    assert [record.getMessage() for record in caplog.records
            if record.levelname == "WARNING"] == [f"{kind} {url}: too_many_entries"]
