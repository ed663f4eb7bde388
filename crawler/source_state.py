"""Item pipeline: what a source visit leaves for the next one.

For each `FeedResultItem`: the ETag and Last-Modified for the next conditional GET, the next due
time (backed off while the source fails) and the site's listing pattern. For a `DiscoveredItem`
carrying publication dates (Google News sitemaps, feeds): its rows with those dates. It runs
before the store pipeline, which then folds the status into the feed's counters.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Self

from scrapy.crawler import Crawler

from crawler.items import DiscoveredItem, FeedResultItem
from sluice.config import Settings, get_settings
from sluice.db import make_engine
from sluice.db.feeds import record_discovered_with_dates, record_source_visit, save_listing_pattern
from sluice.urls import host_of

logger = logging.getLogger(__name__)

PRIORITY = 790  # before crawler.pipelines.store.StorePipeline (800)


class SourceStatePipeline:
    def __init__(self, settings: Settings) -> None:
        self.settings = settings
        self.engine = make_engine(settings.database_url)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler.settings.get("SLUICE_SETTINGS") or get_settings())

    async def close_spider(self) -> None:
        self.engine.dispose()

    async def process_item(self, item: Any) -> Any:
        if isinstance(item, FeedResultItem):
            await asyncio.to_thread(self._record_visit, item)
        elif isinstance(item, DiscoveredItem) and item.published:
            await asyncio.to_thread(self._record_dates, item)
        return item

    def _record_visit(self, item: FeedResultItem) -> None:
        discovery = self.settings.discovery
        with self.engine.begin() as conn:
            due = record_source_visit(conn, item.url, item.status, item.etag, item.last_modified,
                                      discovery.default_interval_seconds,
                                      discovery.max_backoff_seconds)
            if item.listing_pattern or item.listing_pattern_failed:
                save_listing_pattern(conn, host_of(item.url), item.listing_pattern)
        logger.debug("source %s: %s, due again at %s", item.url, item.status, due)

    def _record_dates(self, item: DiscoveredItem) -> None:
        with self.engine.begin() as conn:
            record_discovered_with_dates(conn, item.published, item.source,
                                         self.settings.lease_seconds)
