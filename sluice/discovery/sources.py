"""Read one fetched source, whatever it turns out to be: a feed, a sitemap, robots.txt, a home
page announcing feeds, or a listing page. Detection is from the response itself.

Each kind has one small reader; all return a `SourceReading`: the article URLs found (with the
dates the source gave), the further sources to fetch (child sitemaps, announced feeds, the next
listing page, robots.txt's sitemaps) and a status. The crawler turns that into requests; nothing
here does I/O.
"""

from __future__ import annotations

import codecs
import enum
import logging
import re
from dataclasses import dataclass, field
from datetime import datetime
from urllib.parse import urlsplit

from sluice.discovery.autodiscover import find_feed_links
from sluice.discovery.feeds import looks_like_feed, parse_feed
from sluice.discovery.listing import find_article_links
from sluice.discovery.sitemaps import (
    DEFAULT_MAX_ENTRIES,
    DiscoveryError,
    EntryKind,
    parse_sitemap,
    sitemaps_from_robots,
)
from sluice.errors import FeedError, InvalidURL
from sluice.urls import canonicalize_url

logger = logging.getLogger(__name__)

_GZIP_MAGIC = b"\x1f\x8b"
_ABSOLUTE_URL = re.compile(rb"https?://[^\s/?#]\S*", re.IGNORECASE)
# Kinds whose reading only points to other sources: their own 304 says nothing about the
# sitemaps or feeds they point to, so they are fetched without validators.
POINTER_KINDS = frozenset({"robots", "sitemap_index", "autodiscover"})


class Role(enum.StrEnum):
    """What a fetched source is expected to be: unknown (a user's URL) or known from its parent."""

    DETECT = "detect"
    FEED = "feed"
    SITEMAP = "sitemap"
    LISTING = "listing"


@dataclass(frozen=True, slots=True)
class FoundArticle:
    url: str
    lastmod: datetime | None = None
    published: datetime | None = None


@dataclass(frozen=True, slots=True)
class FollowUp:
    """Another source to fetch, and what it is expected to be."""

    url: str
    role: Role


@dataclass(frozen=True, slots=True)
class SourceReading:
    """What one source response held. `status` is `ok` or a reason code.

    `problem` is a reason code for a source read only in part (`too_many_entries`, say): its
    status is `ok` and what was read before the problem is kept. `listing_pattern` is set when
    a listing pattern proved itself on this page; `pattern_failed` when the stored pattern given
    no longer held and nothing replaced it (forget it).
    """

    kind: str
    status: str = "ok"
    title: str | None = None
    articles: tuple[FoundArticle, ...] = ()
    follow: tuple[FollowUp, ...] = ()
    listing_pattern: str | None = None
    pattern_failed: bool = False
    problem: str = ""
    detail: str = field(default="", compare=False)


def detect_role(body: bytes, content_type: str, url: str) -> Role | str:
    """The kind of a response: a `Role`, or `robots` for a robots.txt, or `html`."""
    if urlsplit(url).path == "/robots.txt":
        return "robots"
    if looks_like_sitemap(body) or looks_like_text_sitemap(body, content_type):
        return Role.SITEMAP
    if looks_like_feed(body, content_type) or "json" in content_type.lower():
        return Role.FEED
    return "html"


def looks_like_sitemap(body: bytes) -> bool:
    """Gzip (sitemaps are the gzipped sources), or an XML `urlset` / `sitemapindex` root."""
    if body[:2] == _GZIP_MAGIC:
        return True
    head = body[:2048].lower()
    return b"<urlset" in head or b"<sitemapindex" in head


def looks_like_text_sitemap(body: bytes, content_type: str) -> bool:
    """The protocol's plain-text form: text/plain, one absolute URL a line."""
    if not content_type.lower().startswith("text/plain"):
        return False
    first_line = body[:2048].removeprefix(codecs.BOM_UTF8).lstrip().split(b"\n", 1)[0]
    return _ABSOLUTE_URL.fullmatch(first_line.strip()) is not None


def read_source(body: bytes, url: str, content_type: str = "", role: Role = Role.DETECT,
                known_pattern: str | None = None,
                max_entries: int = DEFAULT_MAX_ENTRIES) -> SourceReading:
    """Read a source response as `role` (detecting it when `Role.DETECT`), at most
    `max_entries` entries of a sitemap or feed."""
    kind = detect_role(body, content_type, url) if role is Role.DETECT else role
    if kind == "robots":
        return read_robots(body, url)
    if kind is Role.SITEMAP:
        if not looks_like_sitemap(body) and looks_like_feed(body):
            # The sitemaps protocol accepts RSS 2.0 and Atom feeds as sitemaps too.
            return read_feed(body, url, content_type, max_entries)
        return read_sitemap(body, url, max_entries)
    if kind is Role.FEED:
        return read_feed(body, url, content_type, max_entries)
    if role is Role.DETECT:
        return read_home_page(body, url, known_pattern)
    return read_listing(body, url, known_pattern)


def read_feed(body: bytes, url: str, content_type: str,
              max_entries: int = DEFAULT_MAX_ENTRIES) -> SourceReading:
    try:
        feed = parse_feed(body, url, content_type, max_entries)
    except FeedError as exc:
        return SourceReading("feed", exc.reason, detail=str(exc))
    if feed.partial:
        # As a sitemap past its cap: its first entries are read, the visit goes on.
        logger.warning("feed %s: %s", url, feed.partial)
    found = tuple(FoundArticle(entry.url, published=entry.published) for entry in feed.entries)
    return SourceReading(feed.kind, title=feed.title, articles=found, problem=feed.partial or "")


def read_sitemap(body: bytes, url: str, max_entries: int = DEFAULT_MAX_ENTRIES
                 ) -> SourceReading:
    """A `urlset` gives articles (with `lastmod` and Google News dates); an index gives child
    sitemaps. Entries read before an error are kept."""
    articles: list[FoundArticle] = []
    children: list[FollowUp] = []
    problem = detail = ""
    try:
        for entry in parse_sitemap(body, base_url=url, max_entries=max_entries):
            if entry.kind is EntryKind.SITEMAP:
                children.append(FollowUp(entry.url, Role.SITEMAP))
            else:
                articles.append(_article(entry.url, entry.lastmod, entry.published))
    except DiscoveryError as exc:
        logger.warning("sitemap %s: %s", url, exc.reason)
        problem, detail = exc.reason, exc.detail
    kind = "sitemap_index" if children and not articles else "sitemap"
    found = tuple(a for a in articles if a.url)
    if not (articles or children):
        return SourceReading(kind, problem or "ok", detail=detail)
    return SourceReading(kind, articles=found, follow=tuple(children), problem=problem,
                         detail=detail)


def read_robots(body: bytes, url: str) -> SourceReading:
    sitemaps = sitemaps_from_robots(body.decode("utf-8-sig", "replace"), url)
    follow = tuple(FollowUp(sitemap, Role.SITEMAP) for sitemap in sitemaps)
    return SourceReading("robots", "ok" if follow else "no_sitemaps", follow=follow)


def read_home_page(body: bytes, url: str, known_pattern: str | None) -> SourceReading:
    """An HTML page given by a user: the feeds it announces, else its article links as a
    listing page; a site root with neither falls back to robots.txt's sitemaps."""
    feeds = find_feed_links(body, url)
    if feeds:
        follow = tuple(FollowUp(feed.url, Role.FEED) for feed in feeds)
        return SourceReading("autodiscover", follow=follow)
    reading = read_listing(body, url, known_pattern)
    parts = urlsplit(url)
    if reading.status != "ok" and parts.path in ("", "/"):
        robots = FollowUp(f"{parts.scheme}://{parts.netloc}/robots.txt", Role.DETECT)
        return SourceReading("robots", follow=(robots,), pattern_failed=reading.pattern_failed)
    return reading


def read_listing(body: bytes, url: str, known_pattern: str | None) -> SourceReading:
    result = find_article_links(body, url, known_pattern=known_pattern)
    if not result.proven:
        return SourceReading("listing", result.reason, pattern_failed=known_pattern is not None)
    # Next pages are followed only from a page whose pattern holds: it is re-validated there.
    follow = (FollowUp(result.next_page, Role.LISTING),) if result.next_page else ()
    articles = tuple(found for link in result.links if (found := _article(link)).url)
    return SourceReading("listing", articles=articles, follow=follow,
                         listing_pattern=result.pattern)


def _article(url: str, lastmod: datetime | None = None,
             published: datetime | None = None) -> FoundArticle:
    """A found article under its canonical URL (an empty URL when it cannot be crawled)."""
    try:
        return FoundArticle(canonicalize_url(url), lastmod, published)
    except InvalidURL:
        return FoundArticle("", lastmod, published)
