"""Feed parsing: RSS 0.9x/1.0/2.0, Atom and JSON Feed bodies into article entries.

feedparser reads the XML kinds (and JSON Feed); this module resolves relative links against the
feed's own URL, canonicalises them, drops duplicates and entries without a usable link. A feed is
capped in bytes and, as one sitemap is, in entries: past the cap its first entries are kept and
the reading says it stopped short (`too_many_entries`).
"""

from __future__ import annotations

import calendar
import codecs
import json
import logging
import re
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import feedparser

from sluice.discovery.sitemaps import DEFAULT_MAX_ENTRIES
from sluice.errors import FeedError, InvalidURL
from sluice.urls import canonicalize_url, join_url

logger = logging.getLogger(__name__)

MAX_FEED_BYTES = 20 * 1024 * 1024
_FEED_TYPE_HINTS = ("rss", "atom", "feed+json", "/xml", "+xml")
_FEED_ROOTS = (b"<rss", b"<feed", b"<rdf:rdf")
_BOMS = (codecs.BOM_UTF8, codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
# What may come before a feed's root element: the XML declaration and other processing
# instructions (a stylesheet), comments, a DOCTYPE, whitespace.
_PROLOG = re.compile(rb"\A(?:\s+|<\?.*?\?>|<!--.*?-->|<!doctype[^>]*>)*", re.DOTALL)


@dataclass(frozen=True, slots=True)
class FeedEntry:
    """One article a feed points to."""

    url: str
    title: str | None = None
    published: datetime | None = None


@dataclass(frozen=True, slots=True)
class ParsedFeed:
    """A feed's kind, title and entries (canonical, de-duplicated, in feed order)."""

    kind: str
    title: str | None
    entries: tuple[FeedEntry, ...]
    skipped: int = 0
    partial: str | None = None  # why entries past the first were left out: too_many_entries


def looks_like_feed(body: bytes, content_type: str = "") -> bool:
    """A cheap sniff: does this response look like a feed rather than an HTML page?

    An XML type says so, except XHTML's; else the body's root element does, whatever the
    type (feeds are often served as text/html or text/plain)."""
    ctype = content_type.lower()
    if "xhtml" not in ctype and any(kind in ctype for kind in _FEED_TYPE_HINTS):
        return True
    head = _sniff_head(body)
    if head.startswith(b"{") and b"jsonfeed.org" in head:
        return True
    return _PROLOG.sub(b"", head, count=1).startswith(_FEED_ROOTS)


def _sniff_head(body: bytes) -> bytes:
    """The start of a body, lower-case, as UTF-8 without a byte-order mark (UTF-16 decoded)."""
    head = body[:4096]
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        head = head.decode("utf-16", "replace").encode("utf-8")
    return head.removeprefix(codecs.BOM_UTF8).lstrip().lower()


def parse_feed(body: bytes, feed_url: str, content_type: str = "",
               max_entries: int = DEFAULT_MAX_ENTRIES) -> ParsedFeed:
    """Parse a feed body, keeping its first `max_entries` entries (`partial` says when there
    were more). Raises `FeedError` when it is not a feed at all."""
    if len(body) > MAX_FEED_BYTES:
        raise FeedError(f"feed larger than {MAX_FEED_BYTES} bytes", "too_large")
    if _is_json_feed(body, content_type):
        return _parse_json_feed(body, feed_url, max_entries)
    headers = {"content-location": feed_url}
    if body.startswith(_BOMS):
        # The byte-order mark says the encoding: a served type (text/html, a charset) would
        # only mislead feedparser, and with no type at all it cannot read UTF-16.
        headers["content-type"] = "application/xml"
    elif content_type:
        headers["content-type"] = content_type
    parsed = feedparser.parse(body, response_headers=headers, resolve_relative_uris=True,
                              sanitize_html=False)
    version = str(parsed.get("version") or "")
    if not version and not parsed.entries:
        detail = parsed.get("bozo_exception")
        raise FeedError(f"not a feed ({detail or 'no entries and no feed version'})")
    entries, skipped, partial = _collect_entries(parsed.entries, feed_url, max_entries)
    title = parsed.feed.get("title") or None
    return ParsedFeed(kind=_kind_of(version), title=title, entries=entries, skipped=skipped,
                      partial=partial)


def _is_json_feed(body: bytes, content_type: str) -> bool:
    return "json" in content_type.lower() or _sniff_head(body).startswith(b"{")


def _parse_json_feed(body: bytes, feed_url: str, max_entries: int) -> ParsedFeed:
    """JSON Feed 1.0/1.1 (feedparser reads only the XML kinds)."""
    try:
        document = json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        raise FeedError(f"malformed JSON feed: {exc}") from None
    if not isinstance(document, dict) or not isinstance(document.get("items"), list):
        raise FeedError("JSON document is not a JSON Feed (no 'items' list)")
    raw_entries = [
        {"link": item.get("url") or item.get("external_url"), "title": item.get("title"),
         "id": item.get("id"), "published_parsed": _iso_struct(item.get("date_published"))}
        for item in document["items"] if isinstance(item, dict)
    ]
    entries, skipped, partial = _collect_entries(raw_entries, feed_url, max_entries)
    title = document.get("title") if isinstance(document.get("title"), str) else None
    return ParsedFeed(kind="jsonfeed", title=title, entries=entries, skipped=skipped,
                      partial=partial)


def _iso_struct(value: object) -> time.struct_time | None:
    if not isinstance(value, str):
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00")).utctimetuple()
    except ValueError:
        return None


def _kind_of(version: str) -> str:
    if version.startswith("atom"):
        return "atom"
    if version.startswith("json"):
        return "jsonfeed"
    if version.startswith("rss") or version.startswith("cdf"):
        return "rss"
    return "feed"


def _collect_entries(raw_entries: list[Any], feed_url: str, max_entries: int
                     ) -> tuple[tuple[FeedEntry, ...], int, str | None]:
    """The first `max_entries` raw entries as `FeedEntry`s; how many had no usable link; and
    `too_many_entries` when there were more."""
    partial = "too_many_entries" if len(raw_entries) > max_entries else None
    seen: set[str] = set()
    entries: list[FeedEntry] = []
    skipped = 0
    for raw in raw_entries[:max_entries]:
        url = _entry_url(raw, feed_url)
        if url is None:
            skipped += 1
            continue
        if url in seen:
            continue
        seen.add(url)
        entries.append(FeedEntry(url=url, title=raw.get("title") or None,
                                 published=_entry_date(raw)))
    if skipped:
        logger.info("feed %s: %d entries without a usable link skipped", feed_url, skipped)
    return tuple(entries), skipped, partial


def _entry_url(raw: Any, feed_url: str) -> str | None:
    candidates = [raw.get("link")]
    candidates += [link.get("href") for link in raw.get("links", []) if link.get("rel") in
                   (None, "alternate")]
    guid = raw.get("id")
    if raw.get("guidislink") or (isinstance(guid, str) and guid.startswith("http")):
        candidates.append(guid)
    for candidate in candidates:
        if not candidate:
            continue
        joined = join_url(feed_url, str(candidate).strip())
        try:
            return canonicalize_url(joined) if joined else None
        except InvalidURL:
            continue
    return None


def _entry_date(raw: Any) -> datetime | None:
    struct: time.struct_time | None = raw.get("published_parsed") or raw.get("updated_parsed")
    if struct is None:
        return None
    try:
        return datetime.fromtimestamp(calendar.timegm(struct), tz=UTC)
    except (OverflowError, ValueError):
        return None
