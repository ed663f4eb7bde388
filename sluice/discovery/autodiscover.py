"""Feed autodiscovery: the feeds a home page announces in `<link rel="alternate" type=...>`.

Relative hrefs are resolved against `<base href>` (itself resolved against the page URL), only
http(s) feeds are kept, and comment feeds (WordPress announces one per site and per post) are
left out unless asked for: they list comments, not articles. Plain `application/json` is a feed
(some JSON Feeds announce it) unless it points into WordPress's REST API (`/wp-json/`).
"""

from __future__ import annotations

import logging
import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import lxml.html
from lxml import etree

from sluice.urls import join_url

logger = logging.getLogger(__name__)

FEED_TYPES = frozenset(
    {
        "application/rss+xml",
        "application/atom+xml",
        "application/rdf+xml",
        "application/feed+json",
        "application/json",
    }
)
_COMMENTS = re.compile(r"\bcomments?\b|commentaires|kommentare|comentarios|댓글", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class FeedLink:
    """A feed announced by a page: its absolute URL, MIME type and title (when given)."""

    url: str
    type: str
    title: str | None = None


def find_feed_links(
    html: str | bytes, page_url: str, *, include_comments: bool = False
) -> list[FeedLink]:
    """The feeds a page announces, in document order, de-duplicated by URL."""
    root = parse_html(html)
    if root is None:
        return []
    base = base_url_of(root, page_url)
    found: dict[str, FeedLink] = {}
    for link in root.iter("link"):
        feed = _feed_from_link(link, base)
        if feed is None or feed.url in found:
            continue
        if not include_comments and _is_comment_feed(feed):
            logger.debug("comment feed %s skipped", feed.url)
            continue
        found[feed.url] = feed
    return list(found.values())


def parse_html(html: str | bytes) -> lxml.html.HtmlElement | None:
    """The document root, or None for an empty or unparseable page (not an error: no feeds)."""
    if not html or not html.strip():
        return None
    if isinstance(html, str) and html.lstrip().startswith("<?xml"):
        # lxml refuses str input that declares an encoding; the text is already decoded.
        html = html.encode("utf-8")
    try:
        return lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as exc:
        logger.debug("unparseable page: %s", exc)
        return None


def base_url_of(root: lxml.html.HtmlElement, page_url: str) -> str:
    """The URL relative links resolve against: the first `<base href>`, else the page URL."""
    for base in root.iter("base"):
        href = (base.get("href") or "").strip()
        joined = join_url(page_url, href) if href else None
        if joined:
            return joined
    return page_url


def _feed_from_link(link: lxml.html.HtmlElement, base: str) -> FeedLink | None:
    rels = (link.get("rel") or "").lower().split()
    mime = (link.get("type") or "").split(";", 1)[0].strip().lower()
    href = (link.get("href") or "").strip()
    if "alternate" not in rels or mime not in FEED_TYPES or not href:
        return None
    url = join_url(base, href)
    if url is None or urlsplit(url).scheme not in ("http", "https"):
        return None
    if mime == "application/json" and "/wp-json/" in urlsplit(url).path:
        # WordPress announces its REST API this way (a category, a post): data, not a feed.
        return None
    title = (link.get("title") or "").strip() or None
    return FeedLink(url=url.split("#", 1)[0], type=mime, title=title)


def _is_comment_feed(feed: FeedLink) -> bool:
    path = urlsplit(feed.url).path.lower()
    return "/comments/" in path or bool(feed.title and _COMMENTS.search(feed.title))
