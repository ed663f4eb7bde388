"""Each crawler process reports what it is doing to Redis, for `sluice status --watch`."""

from __future__ import annotations

import json
import os
import socket
import time
from typing import Any, Self

import redis
from scrapy import signals
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from twisted.internet import task, threads

from crawler.middlewares.politeness import waiting_outside_downloader
from sluice.config import Settings, get_settings
from sluice.frontier import CRAWLERS_KEY

INTERVAL = 5.0


class Heartbeat:
    def __init__(self, crawler: Crawler, redis_url: str) -> None:
        self.crawler = crawler
        self.client = redis.Redis.from_url(redis_url, socket_timeout=5)
        self.name = f"{socket.gethostname()}:{os.getpid()}"
        self.loop = task.LoopingCall(self.beat)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if not settings.redis_url:
            raise NotConfigured("embedded")
        extension = cls(crawler, settings.redis_url)
        crawler.signals.connect(extension.opened, signal=signals.spider_opened)
        crawler.signals.connect(extension.closed, signal=signals.spider_closed)
        return extension

    def opened(self) -> None:
        self.loop.start(INTERVAL, now=True)

    def closed(self) -> None:
        if self.loop.running:
            self.loop.stop()
        self.client.hdel(CRAWLERS_KEY, self.name)

    def beat(self) -> Any:
        assert self.crawler.stats is not None
        stats = self.crawler.stats.get_stats()
        scheduler = self.crawler.engine.scheduler if self.crawler.engine else None
        waiting = ((len(scheduler) if scheduler is not None else 0)
                   + waiting_outside_downloader(self.crawler))
        report = {"at": time.time(), "waiting": waiting,
                  "pages": stats.get("response_received_count", 0),
                  "items": stats.get("item_scraped_count", 0),
                  "statuses": {key.rsplit("/", 1)[-1]: value for key, value in stats.items()
                               if key.startswith("sluice/status/") and key.count("/") == 2}}
        return threads.deferToThread(self.client.hset, CRAWLERS_KEY, self.name,
                                     json.dumps(report)).addErrback(lambda failure: None)
