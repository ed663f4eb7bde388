"""The `feeds` spider: fetch each feed, then every article it lists."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator, Sequence
from typing import Any

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure

from crawler.failures import reason_for_failure, reason_for_status
from crawler.items import DiscoveredItem, FeedResultItem
from crawler.spiders.base import ArticleSpider
from sluice.discovery.feeds import parse_feed
from sluice.errors import FeedError


class FeedsSpider(ArticleSpider):
    """Crawl feed URLs (RSS, Atom, JSON Feed) and the articles they point to."""

    name = "feeds"

    def __init__(self, feed_urls: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.feed_urls = list(feed_urls)

    async def start(self) -> AsyncIterator[scrapy.Request]:
        self.load_site_states()
        for url in self.feed_urls:
            yield self.feed_request(url)

    def feed_request(self, url: str) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse_feed, errback=self.feed_failed,
                              meta={"sluice_feed": url}, dont_filter=True, priority=10)

    def parse_feed(self, response: Response) -> Iterator[Any]:
        feed_url = response.meta["sluice_feed"]
        reason = reason_for_status(response.status)
        if reason is not None:
            yield FeedResultItem(feed_url, reason)
            return
        content_type = (response.headers.get(b"Content-Type") or b"").decode("latin-1")
        try:
            feed = parse_feed(response.body, response.url, content_type)
        except FeedError as exc:
            self.logger.warning("feed %s: %s", feed_url, exc)
            yield FeedResultItem(feed_url, exc.reason)
            return
        urls = [entry.url for entry in feed.entries]
        self.crawler.stats.inc_value("sluice/discovered", len(urls))
        yield FeedResultItem(feed_url, "ok", feed.kind, feed.title, len(urls))
        yield DiscoveredItem(urls, feed_url)
        for url in urls:
            yield self.article_request(url, feed_url)

    def feed_failed(self, failure: Failure) -> Iterator[FeedResultItem]:
        feed_url = failure.request.meta["sluice_feed"]  # type: ignore[attr-defined]
        reason = reason_for_failure(failure)
        self.logger.warning("feed %s failed: %s", feed_url, reason)
        yield FeedResultItem(feed_url, reason)
