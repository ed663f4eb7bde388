"""robots.txt `Crawl-delay`: a site that asks for time between requests gets it.

Scrapy obeys robots.txt's rules but leaves its Crawl-delay to the project. When a site's
robots.txt has been parsed, this notes the delay the site asks for, capped at
`fetch.max_crawl_delay` (a site asking for an hour would otherwise hold its URLs for days) and
never below `fetch.per_site_delay`. Embedded, it sets the delay of the site's download slot, in
the slot and in the per-slot settings Scrapy reads when it creates the slot again after an idle
site's slot was collected. Distributed, the shared politeness (`crawler.middlewares.politeness`)
asks `delay_for` instead, so many crawler processes together keep to the delay.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.robotstxt import RobotParser

from sluice.config import Settings, get_settings
from sluice.urls import host_of

logger = logging.getLogger(__name__)


class CrawlDelay:
    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        self.crawler = crawler
        self.user_agent = settings.fetch.user_agent
        self.cap = settings.fetch.max_crawl_delay
        self.floor = settings.fetch.per_site_delay
        self.shared = bool(settings.redis_url)
        self.delays: dict[str, float] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if not settings.fetch.obey_robots or settings.fetch.max_crawl_delay <= 0:
            raise NotConfigured("robots.txt Crawl-delay ignored")
        extension = cls(crawler, settings)
        crawler.signals.connect(extension.robots_parsed, signal=signals.robots_parsed)
        return extension

    def delay_for(self, host: str) -> float:
        """Seconds between two requests to `host`."""
        return self.delays.get(host, self.floor)

    def robots_parsed(self, robotparser: RobotParser, request: Request) -> None:
        asked = robotparser.crawl_delay(self.user_agent)
        if asked is None or asked <= self.floor:
            return
        host = host_of(request.url)
        self.delays[host] = delay = min(asked, self.cap)
        if not self.shared:
            self._slow_slot(request, delay)
        assert self.crawler.stats is not None
        self.crawler.stats.inc_value("sluice/robots_crawl_delay/sites")
        logger.info("%s asks for %g s between requests (robots.txt Crawl-delay): waiting %g s",
                    host, asked, delay)

    def _slow_slot(self, request: Request, delay: float) -> None:
        """Scrapy's own per-site delay, now and for the slot created after this one."""
        assert self.crawler.engine is not None
        downloader = self.crawler.engine.downloader
        key = downloader.get_slot_key(request)
        # No jitter: the site asked for at least this long between requests.
        slot_settings: dict[str, Any] = downloader.per_slot_settings.setdefault(key, {})
        slot_settings.update(delay=delay, jitter=0.0)
        slot = downloader.slots.get(key)
        if slot is not None:
            slot.delay, slot.jitter = delay, 0.0
