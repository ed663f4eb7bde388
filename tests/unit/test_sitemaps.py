"""Sitemap parsing: the protocol's forms, dates, limits, and hostile inputs."""

from __future__ import annotations

import gzip
import io
import resource
import zlib
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.discovery.sitemaps import (
    DiscoveryError,
    EntryKind,
    SitemapEntry,
    is_changed,
    parse_sitemap,
    parse_w3c_datetime,
    sitemaps_from_robots,
    skip_unchanged,
    walk_sitemaps,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "sitemaps"
NS = 'xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def urlset(*urls: str) -> bytes:
    body = "".join(f"<url><loc>{url}</loc></url>" for url in urls)
    return f'<?xml version="1.0"?><urlset {NS}>{body}</urlset>'.encode()


def index(*urls: str) -> bytes:
    body = "".join(f"<sitemap><loc>{url}</loc></sitemap>" for url in urls)
    return f"<sitemapindex {NS}>{body}</sitemapindex>".encode()


def reason_of(source: bytes | io.BytesIO, **options: int) -> str:
    with pytest.raises(DiscoveryError) as caught:
        list(parse_sitemap(source, **options))  # type: ignore[arg-type]
    return caught.value.reason


# --- the protocol ---------------------------------------------------------------------------


def test_urlset_entries_dates_and_invalid_locs() -> None:
    entries = list(parse_sitemap(fixture("urlset.xml"), base_url="https://blog.example.org/s.xml"))
    assert [e.url for e in entries] == [
        "https://blog.example.org/2024/03/understanding-async-io/",
        "https://blog.example.org/2024/02/a-tour-of-pattern-matching/",
        "https://blog.example.org/2024/01/notes-on-packaging/",
        "https://blog.example.org/2023/12/relative-but-tolerated/",
    ]
    assert all(e.kind is EntryKind.PAGE for e in entries)
    assert entries[0].lastmod == datetime(2024, 3, 18, tzinfo=UTC)
    assert entries[1].lastmod == datetime(2024, 2, 27, 16, 5, 11, tzinfo=UTC)
    assert entries[2].lastmod is None  # "not a date" loses the date, not the URL
    assert entries[3].lastmod == datetime(2023, 12, 1, tzinfo=UTC)


def test_sitemap_index_yields_child_sitemaps() -> None:
    entries = list(parse_sitemap(fixture("index.xml")))
    assert [(e.url, e.kind) for e in entries] == [
        ("https://blog.example.org/sitemap-posts.xml.gz", EntryKind.SITEMAP),
        ("https://blog.example.org/sitemap-pages.xml", EntryKind.SITEMAP),
    ]
    assert entries[0].lastmod == datetime(2024, 3, 18, 10, tzinfo=UTC)


def test_google_news_sitemap_keeps_publication_date_and_title() -> None:
    first, second = parse_sitemap(fixture("news_sitemap.xml"))
    assert first.url == "https://news.example.com/world/2024/05/12/ceasefire-talks-resume"
    assert first.published == datetime(2024, 5, 12, 8, tzinfo=timezone(timedelta(hours=2)))
    assert first.title == "Ceasefire talks resume in Cairo"  # not the image's title
    assert first.lastmod == datetime(2024, 5, 12, 9, 30, tzinfo=UTC)
    assert second.published == datetime(2024, 5, 11, tzinfo=UTC)


def test_gzip_is_recognised_by_magic_bytes_from_bytes_and_streams() -> None:
    plain = fixture("urlset.xml")
    expected = list(parse_sitemap(plain))
    assert list(parse_sitemap(gzip.compress(plain))) == expected
    assert list(parse_sitemap(io.BytesIO(gzip.compress(plain)))) == expected


def test_plain_text_sitemap_and_leading_blank_lines() -> None:
    text = b"\xef\xbb\xbfhttps://a.example/1\n\nnot a url\nhttps://a.example/2\n"
    assert [e.url for e in parse_sitemap(text)] == ["https://a.example/1", "https://a.example/2"]
    padded = b"\n\n  " + urlset("https://a.example/x")
    assert [e.url for e in parse_sitemap(padded)] == ["https://a.example/x"]


def test_w3c_dates() -> None:
    assert parse_w3c_datetime("2024") == datetime(2024, 1, 1, tzinfo=UTC)
    assert parse_w3c_datetime("2024-05-12T10:00Z") == datetime(2024, 5, 12, 10, tzinfo=UTC)
    assert parse_w3c_datetime("2024-05-12T10:00:00.123+00:00") is not None
    assert parse_w3c_datetime("2024-13-45") is None
    assert parse_w3c_datetime("") is None


# --- lastmod and robots.txt -----------------------------------------------------------------


def test_unchanged_entries_are_skipped() -> None:
    old = SitemapEntry(
        "https://a.example/old", EntryKind.PAGE, lastmod=datetime(2024, 1, 1, tzinfo=UTC)
    )
    new = SitemapEntry(
        "https://a.example/new", EntryKind.PAGE, lastmod=datetime(2024, 6, 1, tzinfo=UTC)
    )
    undated = SitemapEntry("https://a.example/undated", EntryKind.PAGE)
    unseen = SitemapEntry(
        "https://a.example/unseen", EntryKind.PAGE, lastmod=datetime(2020, 1, 1, tzinfo=UTC)
    )
    known = {e.url: datetime(2024, 3, 1) for e in (old, new, undated)}  # naive means UTC
    assert [e.url for e in skip_unchanged([old, new, undated, unseen], known.get)] == [
        new.url,
        undated.url,
        unseen.url,
    ]
    assert not is_changed(old, datetime(2024, 1, 1, tzinfo=UTC))  # equal is not newer


def test_sitemaps_from_robots() -> None:
    text = fixture("robots.txt").decode()
    assert sitemaps_from_robots(text, "https://blog.example.org/robots.txt") == [
        "https://blog.example.org/sitemap_index.xml",
        "https://blog.example.org/news-sitemap.xml",
    ]
    assert sitemaps_from_robots("", "https://a.example/robots.txt") == []


# --- nested indexes -------------------------------------------------------------------------


def test_walk_follows_nested_indexes_to_bounded_depth() -> None:
    bodies = {
        "https://s.example/root.xml": index(
            "https://s.example/a.xml.gz",
            "https://s.example/deeper.xml",
            "https://s.example/bad.xml",
        ),
        "https://s.example/a.xml.gz": gzip.compress(
            urlset("https://s.example/1", "https://s.example/2")
        ),
        "https://s.example/deeper.xml": index(
            "https://s.example/deepest.xml", "https://s.example/root.xml"
        ),
        "https://s.example/deepest.xml": index("https://s.example/too-deep.xml"),
        "https://s.example/too-deep.xml": urlset("https://s.example/unreachable"),
        "https://s.example/bad.xml": b"<urlset><url><loc>https://s.example/3</loc></url><url>",
    }
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return bodies[url]

    urls = [e.url for e in walk_sitemaps(["https://s.example/root.xml"], fetch, max_depth=2)]
    assert urls == ["https://s.example/1", "https://s.example/2", "https://s.example/3"]
    assert "https://s.example/too-deep.xml" not in fetched  # depth 3 > max_depth
    assert fetched.count("https://s.example/root.xml") == 1  # the cycle is cut


def test_walk_survives_a_fetch_that_fails() -> None:
    def fetch(url: str) -> bytes:
        if url.endswith("down.xml"):
            raise DiscoveryError("http_503")
        return urlset("https://s.example/up")

    assert [
        e.url
        for e in walk_sitemaps(["https://s.example/down.xml", "https://s.example/up.xml"], fetch)
    ] == ["https://s.example/up"]


# --- hostile inputs -------------------------------------------------------------------------


def test_external_entities_are_never_resolved_or_fetched() -> None:
    entries = list(parse_sitemap(fixture("xxe.xml")))
    assert [e.url for e in entries] == ["https://evil.example/ok"]
    assert entries[0].lastmod is None
    dumped = repr(entries)
    assert "root:" not in dumped and "passwd" not in dumped and "never-fetched" not in dumped


def test_billion_laughs_is_refused_not_expanded() -> None:
    # libxml2 measures the declared amplification before any use; we never expand either way.
    assert reason_of(fixture("billion_laughs.xml")) == "too_large"


def test_small_internal_entities_are_dropped_not_expanded() -> None:
    body = b'<!DOCTYPE u [<!ENTITY host "evil.example">]>' + urlset(
        "https://&host;/x", "https://fine.example/y"
    ).removeprefix(b'<?xml version="1.0"?>')
    assert [e.url for e in parse_sitemap(body)] == ["https://fine.example/y"]


def test_gzip_bomb_stops_at_the_decompressed_cap() -> None:
    bomb = _gzip_stream(
        urlset("https://b.example/x")[:-9], b"<url><loc>https://b.example/y</loc></url>", 2_000_000
    )
    assert len(bomb) < 1_000_000
    assert reason_of(bomb, max_bytes=2_000_000, max_entries=10**9) == "too_large"
    assert reason_of(_gzip_stream(b"<urlset>", b" " * 1024, 200_000)) in ("too_large",)


def test_truncated_gzip_is_a_clear_error() -> None:
    assert reason_of(gzip.compress(urlset("https://a.example/1"))[:-12]) == "bad_gzip"
    assert reason_of(b"\x1f\x8bnot gzip at all") == "bad_gzip"


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (b"<urlset><url><loc>https://a.example/</url></urlset>", "malformed_xml"),
        (b"<html><body>Not found</body></html>", "not_a_sitemap"),
        (b"<rss><channel></channel></rss>", "not_a_sitemap"),
        (b"<", "malformed_xml"),
    ],
)
def test_malformed_and_foreign_documents(body: bytes, reason: str) -> None:
    assert reason_of(body) == reason


def test_malformed_xml_keeps_the_entries_read_before_the_error() -> None:
    body = urlset("https://a.example/1", "https://a.example/2")[:-5]
    seen: list[str] = []
    with pytest.raises(DiscoveryError):
        seen.extend(e.url for e in parse_sitemap(body))
    assert seen == ["https://a.example/1", "https://a.example/2"]


def test_too_many_entries_yields_the_first_ones_then_stops() -> None:
    seen: list[str] = []
    with pytest.raises(DiscoveryError) as caught:
        seen.extend(
            e.url
            for e in parse_sitemap(
                urlset(*[f"https://a.example/{i}" for i in range(10)]), max_entries=4
            )
        )
    assert caught.value.reason == "too_many_entries"
    assert len(seen) == 4


def test_300k_entries_stream_in_flat_memory() -> None:
    """A generated stream that never exists as one byte string; a parse that kept its tree would
    need well over 100 MB for it."""
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    count = sum(
        1 for _ in parse_sitemap(_GeneratedSitemap(300_000), max_entries=2_000_000, max_bytes=10**9)
    )  # type: ignore[arg-type]
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert count == 300_000
    assert grown_mb < 32


# --- properties -----------------------------------------------------------------------------


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_raise_only_discovery_errors(body: bytes) -> None:
    _assert_parses_or_fails_cleanly(body)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(
            [
                "<urlset>",
                "</urlset>",
                "<url>",
                "</url>",
                "<loc>",
                "</loc>",
                "<sitemapindex>",
                "<lastmod>",
                "</lastmod>",
                "https://a.example/p",
                "2024-01-0",
                "&amp;",
                "&x;",
                "<!DOCTYPE x>",
                "\x1f\x8b",
            ]
        ),
        max_size=30,
    )
)
def test_sitemap_like_text_raises_only_discovery_errors(parts: list[str]) -> None:
    _assert_parses_or_fails_cleanly("".join(parts).encode())


def _assert_parses_or_fails_cleanly(body: bytes) -> None:
    outcomes = []
    for _ in range(2):
        try:
            outcomes.append(list(parse_sitemap(body)))
        except DiscoveryError as exc:
            outcomes.append([exc.reason])  # type: ignore[list-item]
    assert outcomes[0] == outcomes[1]


# --- helpers --------------------------------------------------------------------------------


def _gzip_stream(head: bytes, unit: bytes, repeat: int) -> bytes:
    """A gzip body of `head` plus `unit` x `repeat`, built without holding it uncompressed."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, 31)
    parts = [compressor.compress(head)]
    block = unit * max(1, 65536 // len(unit))
    for _ in range(repeat // (65536 // len(unit) or 1)):
        parts.append(compressor.compress(block))
    parts.append(compressor.flush())
    return b"".join(parts)


class _GeneratedSitemap:
    """A read()-able urlset of `count` entries, produced on demand."""

    def __init__(self, count: int) -> None:
        self._chunks = self._generate(count)
        self._buffer = b""

    @staticmethod
    def _generate(count: int) -> Iterator[bytes]:
        yield f"<urlset {NS}>".encode()
        for start in range(0, count, 1000):
            yield "".join(
                f"<url><loc>https://big.example/article/{i}</loc><lastmod>2024-01-01</lastmod></url>"
                for i in range(start, min(start + 1000, count))
            ).encode()
        yield b"</urlset>"

    def read(self, size: int = -1) -> bytes:
        while size < 0 or len(self._buffer) < size:
            chunk = next(self._chunks, b"")
            if not chunk:
                break
            self._buffer += chunk
        size = len(self._buffer) if size < 0 else size
        out, self._buffer = self._buffer[:size], self._buffer[size:]
        return out
