"""The `feeds` spider: visit each source, find its articles, fetch the ones worth fetching.

A source is whatever its URL returns (see `sluice.discovery.sources`): a feed, a sitemap or
sitemap index (gzipped or not), a robots.txt with `Sitemap:` lines, a home page announcing its
feeds, or a listing page. Feeds, sitemaps and listing pages are fetched conditionally
(`If-None-Match` / `If-Modified-Since` from the `feeds` row) and a 304 ends their visit; a source
that only points to others (robots.txt, a sitemap index, a home page announcing feeds) is fetched
in full, since what it points to may have changed when it has not. Discovered articles already
stored are not fetched again unless they are older than the maximum age, a sitemap's `lastmod`
says they changed, or a refresh is asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import timedelta
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.settings import BaseSettings
from twisted.python.failure import Failure

from crawler.failures import reason_for_failure, reason_for_status
from crawler.items import DiscoveredItem, FeedResultItem
from crawler.middlewares.retry import is_retry_later
from crawler.source_state import PRIORITY, SourceStatePipeline
from crawler.spiders.base import ArticleSpider
from sluice.db import make_engine
from sluice.db.feeds import (
    SourceState,
    articles_to_fetch,
    load_listing_patterns,
    load_source_states,
)
from sluice.discovery.sources import (
    POINTER_KINDS,
    FollowUp,
    FoundArticle,
    Role,
    SourceReading,
    read_source,
)
from sluice.urls import host_of

SOURCE_PRIORITY = 10


class FeedsSpider(ArticleSpider):
    """Crawl sources (feeds, sitemaps, home pages, listing pages) and the articles they list."""

    name = "feeds"

    def __init__(self, feed_urls: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.feed_urls = list(feed_urls)
        self.source_states: dict[str, SourceState] = {}
        self.listing_patterns: dict[str, str] | None = None
        self._discovery_engine: Any = None

    @classmethod
    def update_settings(cls, settings: BaseSettings) -> None:
        super().update_settings(settings)
        # At spider priority: the crawler process re-applies its project settings afterwards.
        pipelines = {**settings.getdict("ITEM_PIPELINES"), SourceStatePipeline: PRIORITY}
        settings.set("ITEM_PIPELINES", pipelines, priority="spider")

    async def start(self) -> AsyncIterator[scrapy.Request]:
        self.load_site_states()
        self._load_source_states(self.feed_urls)
        for url in self.feed_urls:
            yield self.feed_request(url)

    # --- state read from the database ---------------------------------------------------------

    @property
    def discovery_engine(self) -> Any:
        if self._discovery_engine is None:
            self._discovery_engine = make_engine(self.sluice_settings.database_url)
        return self._discovery_engine

    def _load_source_states(self, urls: Sequence[str]) -> None:
        with self.discovery_engine.connect() as conn:
            self.source_states.update(load_source_states(conn, list(urls)))
            if self.listing_patterns is None:
                self.listing_patterns = load_listing_patterns(conn)

    def _articles_to_fetch(self, found: Sequence[FoundArticle]) -> list[str]:
        discovery = self.sluice_settings.discovery
        max_age = (timedelta(days=discovery.article_max_age_days)
                   if discovery.article_max_age_days else None)
        urls = list(dict.fromkeys(article.url for article in found))
        lastmod = {article.url: article.lastmod for article in found if article.lastmod}
        with self.discovery_engine.connect() as conn:
            return articles_to_fetch(conn, urls, lastmod, max_age, discovery.refresh)

    def closed(self, reason: str) -> None:
        if self._discovery_engine is not None:
            self._discovery_engine.dispose()

    # --- requests -----------------------------------------------------------------------------

    def feed_request(self, url: str) -> scrapy.Request:
        """The request for a source a user scheduled: conditional when it was seen before,
        unless it only pointed to other sources (robots.txt, a sitemap index, a home page)."""
        if url not in self.source_states:
            self._load_source_states([url])
        state = self.source_states.get(url) or SourceState()
        headers = {} if state.kind in POINTER_KINDS else _validators(state)
        return self._source_request(url, url, Role.DETECT, depth=0, headers=headers)

    def _source_request(self, url: str, root: str, role: Role, depth: int,
                        headers: dict[str, str] | None = None, **meta: Any) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse_feed, errback=self.feed_failed,
                              headers=headers, dont_filter=True, priority=SOURCE_PRIORITY,
                              meta={"sluice_feed": root, "sluice_role": role.value,
                                    "sluice_depth": depth, **meta})

    # --- callbacks ----------------------------------------------------------------------------

    async def parse_feed(self, response: Response) -> AsyncIterator[Any]:
        root, depth = response.meta["sluice_feed"], response.meta.get("sluice_depth", 0)
        if response.status == 304:
            self.crawler.stats.inc_value("sluice/sources/not_modified")
            if depth == 0:
                state = self.source_states.get(root) or SourceState()
                yield FeedResultItem(root, "not_modified", entries=state.entries_seen)
            return
        reason = reason_for_status(response.status)
        if reason is not None:
            for item in self._source_failed(root, response.url, depth, reason):
                yield item
            return
        try:
            reading = await asyncio.to_thread(self._read, response)
        except Exception:
            # The edge of discovery: a reader bug on one odd source is logged and recorded
            # on the source's row, and the crawl goes on with the other sources.
            self.logger.exception("source %s could not be read", response.url)
            for item in self._source_failed(root, response.url, depth, "unreadable_source"):
                yield item
            return
        self.crawler.stats.inc_value(f"sluice/sources/{reading.kind}")
        if depth == 0:
            yield self._visit_result(root, reading, response)
        async for item in self._articles(reading.articles, root):
            yield item
        for follow in reading.follow:
            request = self._follow_request(follow, response, reading)
            if request is not None:
                yield request

    def _read(self, response: Response) -> SourceReading:
        role = Role(response.meta.get("sluice_role", Role.DETECT.value))
        pattern = response.meta.get("sluice_pattern")
        if pattern is None and role is Role.DETECT:
            pattern = (self.listing_patterns or {}).get(host_of(response.url))
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        return read_source(response.body, response.url, content_type, role, pattern,
                           self.sluice_settings.discovery.sitemap_max_entries)

    def _visit_result(self, root: str, reading: SourceReading,
                      response: Response) -> FeedResultItem:
        if reading.status != "ok":
            self.logger.warning("source %s: %s %s", root, reading.status, reading.detail)
        stored = (self.listing_patterns or {}).get(host_of(response.url))
        pattern = reading.listing_pattern if reading.listing_pattern != stored else None
        return FeedResultItem(
            root, reading.status, reading.kind, reading.title, len(reading.articles),
            etag=_header(response, b"ETag"), last_modified=_header(response, b"Last-Modified"),
            listing_pattern=pattern, listing_pattern_failed=reading.pattern_failed)

    async def _articles(self, found: Sequence[FoundArticle], source: str) -> AsyncIterator[Any]:
        if not found:
            return
        wanted = await asyncio.to_thread(self._articles_to_fetch, found)
        stats = self.crawler.stats
        stats.inc_value("sluice/discovered", len(found))
        stats.inc_value("sluice/discovery/already_stored", len(found) - len(wanted))
        chosen = set(wanted)
        published = {a.url: a.published for a in found if a.published and a.url in chosen}
        if wanted:
            yield DiscoveredItem(wanted, source, published)
        for url in wanted:
            yield self.article_request(url, source)

    def _follow_request(self, follow: FollowUp, response: Response,
                        reading: SourceReading) -> scrapy.Request | None:
        """The request for a source found by another, within the depth limits."""
        root, depth = response.meta["sluice_feed"], response.meta.get("sluice_depth", 0)
        if follow.role is Role.SITEMAP:
            return self._sitemap_request(follow.url, root, depth, response, reading)
        if follow.role is Role.LISTING:
            if depth + 1 >= self.sluice_settings.discovery.max_listing_pages:
                return None
            return self._source_request(follow.url, root, follow.role, depth + 1,
                                        sluice_pattern=reading.listing_pattern)
        return self._source_request(follow.url, root, follow.role, depth + 1)

    def _sitemap_request(self, url: str, root: str, depth: int, response: Response,
                         reading: SourceReading) -> scrapy.Request | None:
        """A sitemap named by another source, unless nested too deep. Only sitemaps count as
        levels: the hops before the first (a site root to its robots.txt) do not."""
        nested = reading.kind in ("sitemap", "sitemap_index")
        level = response.meta.get("sluice_sitemap_level", 0) + 1 if nested else 0
        if level > self.sluice_settings.discovery.sitemap_max_depth:
            self.logger.debug("sitemap %s nested %s deep, skipped", url, level)
            return None
        return self._source_request(url, root, Role.SITEMAP, depth + 1,
                                    sluice_sitemap_level=level)

    def _source_failed(self, root: str, url: str, depth: int, reason: str
                       ) -> Iterator[FeedResultItem]:
        self.crawler.stats.inc_value(f"sluice/sources/failed/{reason}")
        self.logger.warning("source %s failed: %s", url, reason)
        if depth == 0:
            yield FeedResultItem(root, reason)

    def feed_failed(self, failure: Failure) -> Iterator[FeedResultItem]:
        if is_retry_later(failure):
            return  # the retry's outcome is recorded
        request = failure.request  # type: ignore[attr-defined]
        yield from self._source_failed(request.meta["sluice_feed"], request.url,
                                       request.meta.get("sluice_depth", 0),
                                       reason_for_failure(failure))


def _validators(state: SourceState) -> dict[str, str]:
    headers = {}
    if state.etag:
        headers["If-None-Match"] = state.etag
    if state.last_modified:
        headers["If-Modified-Since"] = state.last_modified
    return headers


def _header(response: Response, name: bytes) -> str | None:
    value = response.headers.get(name)
    return value.decode("latin-1") if value else None
