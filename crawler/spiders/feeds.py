"""The `feeds` spider: visit each source, find its articles, fetch the ones worth fetching.

A source is whatever its URL returns (see `sluice.discovery.sources`): a feed, a sitemap or
sitemap index (gzipped or not), a robots.txt with `Sitemap:` lines, a home page announcing its
feeds, or a listing page. Feeds, sitemaps and listing pages are fetched conditionally
(`If-None-Match` / `If-Modified-Since` from the `feeds` row) and a 304 ends their visit; a source
that only points to others (robots.txt, a sitemap index, a home page announcing feeds) is fetched
in full, since what it points to may have changed when it has not. Discovered articles already
stored are not fetched again unless they are older than the maximum age, a sitemap's `lastmod`
says they changed, or a refresh is asked for.

The sources a scheduled source points to are fetched within its visit, by the callback of the
source's own response, and the visit ends with one `FeedResultItem` for the source's row: its
own status and validators, and the articles, followed sources, failures and first problem of
the whole visit (`sluice.discovery.visits`).
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator, Iterator, Sequence
from datetime import timedelta
from typing import Any

import scrapy
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
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
from sluice.discovery.visits import SourceVisit
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
        return scrapy.Request(url, callback=self.parse_feed, errback=self.feed_failed,
                              headers=headers, dont_filter=True, priority=SOURCE_PRIORITY,
                              meta={"sluice_feed": url, "sluice_role": Role.DETECT.value,
                                    "sluice_depth": 0})

    def _followed_request(self, url: str, root: str, role: Role, depth: int,
                          **meta: Any) -> scrapy.Request:
        """A source found by another: fetched by the visit itself, not through the scheduler
        (see `_visit_followed`), so it has no callback, as robots.txt requests have none."""
        return scrapy.Request(url, callback=NO_CALLBACK, dont_filter=True,
                              meta={"sluice_feed": root, "sluice_role": role.value,
                                    "sluice_depth": depth, **meta})

    # --- a visit ------------------------------------------------------------------------------

    async def parse_feed(self, response: Response) -> AsyncIterator[Any]:
        """A scheduled source's response, and then the sources it points to: the visit ends
        with one `FeedResultItem` describing all of it."""
        root = response.meta["sluice_feed"]
        if response.status == 304:
            self.crawler.stats.inc_value("sluice/sources/not_modified")
            state = self.source_states.get(root) or SourceState()
            yield FeedResultItem(root, "not_modified", entries=state.entries_seen)
            return
        reading = await self._reading(response)
        if isinstance(reading, str):
            yield FeedResultItem(root, reading)
            return
        visit = SourceVisit()
        visit.add_source(root, reading)
        async for item in self._articles(reading.articles, root):
            yield item
        async for item in self._visit_followed(reading, response, visit):
            yield item
        yield self._visit_result(root, reading, response, visit)

    async def _visit_followed(self, reading: SourceReading, response: Response,
                              visit: SourceVisit) -> AsyncIterator[Any]:
        """Fetch the sources `reading` points to, and those they point to in turn, a few at a
        time, adding each one's outcome to `visit` and crawling its articles.

        They are downloaded here (`engine.download_async`) rather than scheduled, so the whole
        visit runs in this one callback: with Redis, a scheduled request may be taken by another
        crawler process, which would never tell this one how it went. At most the site's
        concurrency of them are in hand at once, so a large index holds few bodies in memory.
        """
        root = response.meta["sluice_feed"]
        waiting = deque(self._follow_requests(reading, response))
        fetching: set[asyncio.Task[tuple[str, SourceReading | str, Response | None]]] = set()
        width = self.sluice_settings.fetch.per_site_concurrency
        try:
            while waiting or fetching:
                while waiting and len(fetching) < width:
                    fetching.add(asyncio.ensure_future(self._fetch_followed(waiting.popleft())))
                done, fetching = await asyncio.wait(fetching, return_when=asyncio.FIRST_COMPLETED)
                for task in done:
                    url, outcome, followed = task.result()
                    visit.add_followed(url, outcome)
                    if isinstance(outcome, SourceReading) and followed is not None:
                        async for item in self._articles(outcome.articles, root):
                            yield item
                        waiting.extend(self._follow_requests(outcome, followed))
        finally:
            for task in fetching:  # the crawl is closing: the visit is not recorded
                task.cancel()

    async def _fetch_followed(self, request: scrapy.Request
                              ) -> tuple[str, SourceReading | str, Response | None]:
        """A followed source's URL, its reading (or the reason it failed) and its response."""
        assert self.crawler.engine is not None
        try:
            response = await self.crawler.engine.download_async(request)
        except Exception as exc:
            # What an errback would be given for a scheduled request: every download failure
            # (network, robots.txt, SSRF guard, retries given up) maps to a reason code.
            failure = Failure(exc)
            failure.request = request  # type: ignore[attr-defined]
            reason = reason_for_failure(failure)
            self._source_failed(request.url, reason)
            return request.url, reason, None
        return request.url, await self._reading(response), response

    async def _reading(self, response: Response) -> SourceReading | str:
        """What a source's response held, or the reason code it could not be read."""
        reason = reason_for_status(response.status)
        if reason is None:
            try:
                reading = await asyncio.to_thread(self._read, response)
            except Exception:
                # The edge of discovery: a reader bug on one odd source is logged and recorded
                # on the source's row, and the crawl goes on with the other sources.
                self.logger.exception("source %s could not be read", response.url)
                reason = "unreadable_source"
            else:
                self.crawler.stats.inc_value(f"sluice/sources/{reading.kind}")
                return reading
        self._source_failed(response.url, reason)
        return reason

    def _read(self, response: Response) -> SourceReading:
        role = Role(response.meta.get("sluice_role", Role.DETECT.value))
        pattern = response.meta.get("sluice_pattern")
        if pattern is None and role is Role.DETECT:
            pattern = (self.listing_patterns or {}).get(host_of(response.url))
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        return read_source(response.body, response.url, content_type, role, pattern,
                           self.sluice_settings.discovery.max_entries)

    def _visit_result(self, root: str, reading: SourceReading, response: Response,
                      visit: SourceVisit) -> FeedResultItem:
        status = visit.status(reading.status)
        if status != "ok":
            self.logger.warning("source %s: %s %s", root, status,
                                visit.first_problem or reading.detail)
        stored = (self.listing_patterns or {}).get(host_of(response.url))
        pattern = reading.listing_pattern if reading.listing_pattern != stored else None
        return FeedResultItem(
            root, status, reading.kind, reading.title, visit.entries,
            followed=visit.followed, followed_failed=visit.failed,
            first_problem=visit.first_problem,
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

    def _follow_requests(self, reading: SourceReading, response: Response
                         ) -> list[scrapy.Request]:
        """The requests for the sources `reading` points to, within the depth limits."""
        requests = (self._follow_request(follow, response, reading) for follow in reading.follow)
        return [request for request in requests if request is not None]

    def _follow_request(self, follow: FollowUp, response: Response,
                        reading: SourceReading) -> scrapy.Request | None:
        root, depth = response.meta["sluice_feed"], response.meta.get("sluice_depth", 0)
        if follow.role is Role.SITEMAP:
            return self._sitemap_request(follow.url, root, depth, response, reading)
        if follow.role is Role.LISTING:
            if depth + 1 >= self.sluice_settings.discovery.max_listing_pages:
                return None
            return self._followed_request(follow.url, root, follow.role, depth + 1,
                                          sluice_pattern=reading.listing_pattern)
        return self._followed_request(follow.url, root, follow.role, depth + 1)

    def _sitemap_request(self, url: str, root: str, depth: int, response: Response,
                         reading: SourceReading) -> scrapy.Request | None:
        """A sitemap named by another source, unless nested too deep. Only sitemaps count as
        levels: the hops before the first (a site root to its robots.txt) do not."""
        nested = reading.kind in ("sitemap", "sitemap_index")
        level = response.meta.get("sluice_sitemap_level", 0) + 1 if nested else 0
        if level > self.sluice_settings.discovery.sitemap_max_depth:
            self.logger.debug("sitemap %s nested %s deep, skipped", url, level)
            return None
        return self._followed_request(url, root, Role.SITEMAP, depth + 1,
                                      sluice_sitemap_level=level)

    def _source_failed(self, url: str, reason: str) -> None:
        self.crawler.stats.inc_value(f"sluice/sources/failed/{reason}")
        self.logger.warning("source %s failed: %s", url, reason)

    def feed_failed(self, failure: Failure) -> Iterator[FeedResultItem]:
        if is_retry_later(failure):
            return  # the retry's outcome is recorded
        request = failure.request  # type: ignore[attr-defined]
        reason = reason_for_failure(failure)
        self._source_failed(request.url, reason)
        yield FeedResultItem(request.meta["sluice_feed"], reason)


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
