"""The `queue` spider: a long-running crawler process that consumes the shared frontier.

Any number of these run on any machine that reaches Redis and the database. Each pops a batch of
entries when it runs dry, idles while the frontier is empty and resumes when work arrives.
Popped URLs get a lease in the database: if this process dies before writing their rows, the
sweep finds them once the lease expires and pushes them again. Each process schedules its
requests in its own memory (see `crawler.settings.shared_frontier_settings`), so a URL it holds
(from the moment its request is scheduled until the request leaves the downloader) is in this
process and nowhere else. While it holds a URL, it keeps the lease alive, so a URL that waits
long for its site's turn is not taken for lost and fetched twice, and a URL that dies with
the process is not kept leased by anyone.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

import scrapy
from scrapy import signals
from scrapy.exceptions import DontCloseSpider
from scrapy_redis.spiders import RedisSpider

from crawler.middlewares.politeness import waiting_outside_downloader
from crawler.middlewares.retry import retry_waiting
from crawler.spiders.base import ArticleSpider
from crawler.spiders.feeds import FeedsSpider
from sluice import frontier
from sluice.db import make_engine, store
from sluice.frontier import FRONTIER_KEY, FrontierEntry
from sluice.records import Status

logger = logging.getLogger(__name__)

LEASE_FLUSH_SECONDS = 2.0
# A URL held longer than this many leases is no longer kept alive: its request was lost
# inside the process (or taken by another crawler), and the sweep may have it.
HOLD_LIMIT_LEASES = 4
# Requests waiting outside the downloader (for their site's turn, or a retry's back-off) may
# number this many batches before the spider stops pulling the frontier: enough that other
# sites' pages go on past a slow site's, few enough that one process does not take the frontier.
WAITING_LIMIT_BATCHES = 4


class QueueSpider(RedisSpider, FeedsSpider):  # type: ignore[misc]
    name = "queue"
    redis_key = FRONTIER_KEY

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.popped: list[str] = []
        # URL -> when it was scheduled here (monotonic seconds), and its frontier entry.
        self.held: dict[str, tuple[float, FrontierEntry]] = {}
        self.popped_lock = threading.Lock()
        self.lease_loop: Any = None
        self.last_kept = time.monotonic()

    async def start(self) -> AsyncIterator[scrapy.Request]:
        """Nothing to start with: entries arrive from the frontier whenever the spider idles."""
        self.load_site_states()
        self.engine = make_engine(self.sluice_settings.database_url)
        # Imported here: Twisted's reactor-bound helpers must not be touched before Scrapy has
        # installed its reactor.
        from twisted.internet import task

        self.lease_loop = task.LoopingCall(self._flush_leases)
        self.lease_loop.start(LEASE_FLUSH_SECONDS, now=False)
        self.crawler.signals.connect(self._hold, signal=signals.request_scheduled)
        self.crawler.signals.connect(self._hold, signal=retry_waiting)
        self.crawler.signals.connect(self._top_up, signal=signals.request_left_downloader)
        self.crawler.signals.connect(self._let_go, signal=signals.request_left_downloader)
        self.crawler.signals.connect(self._let_go, signal=signals.request_dropped)
        for request in self.next_requests():
            yield request

    def _top_up(self) -> None:
        """Pull the next batch as the downloader drains, not only once the spider is idle
        (Scrapy notices idleness on a 5-second heartbeat: a crawler would stall in waves).
        Not while requests still wait here: when extraction holds the downloader back, URLs
        stay in the frontier, for any crawler, rather than pile up in this process."""
        engine = self.crawler.engine
        if engine is None or engine.scheduler is None:
            return
        low = self.redis_batch_size // 2
        if (len(engine.downloader.active) < low and len(engine.scheduler) < low
                and not self._waiting_full()):
            self.schedule_next_requests()

    def spider_idle(self) -> None:
        """Idle, but with the limit of requests waiting outside the downloader reached: wait
        for them rather than pull more of the frontier."""
        if self._waiting_full():
            raise DontCloseSpider
        super().spider_idle()

    def _waiting_full(self) -> bool:
        return (waiting_outside_downloader(self.crawler)
                >= WAITING_LIMIT_BATCHES * self.redis_batch_size)

    def make_request_from_data(self, data: bytes) -> scrapy.Request | list[Any]:
        try:
            entry = FrontierEntry.from_json(data)
        except ValueError:
            logger.warning("ignoring a malformed frontier entry: %r", data[:200])
            return []
        with self.popped_lock:
            self.popped.append(entry.url)
        if entry.kind == "feed":
            request = self.feed_request(entry.url)
        else:
            request = ArticleSpider.article_request(self, entry.url, entry.source,
                                                    render_policy=entry.render)
        # A retry asked for by a user must not be stopped by the duplicate filter.
        return request.replace(dont_filter=request.dont_filter or entry.retry,
                               meta={**request.meta, "sluice_entry": entry})

    def _hold(self, request: scrapy.Request, spider: Any = None) -> None:
        """A request entered this process's scheduler (a URL popped from the frontier, an
        article a feed listed) or a retry started its back-off wait. Its lease is kept alive
        until it is let go."""
        url = request.meta.get("sluice_url", request.url)
        entry = request.meta.get("sluice_entry") or FrontierEntry(
            url=url, source=request.meta.get("sluice_source"))
        with self.popped_lock:
            self.held.setdefault(url, (time.monotonic(), entry))

    def _let_go(self, request: scrapy.Request, spider: Any = None) -> None:
        """The request has been fetched (or has failed, or was dropped): its row is written
        within seconds, well inside its lease."""
        with self.popped_lock:
            self.held.pop(request.meta.get("sluice_url", request.url), None)

    def _flush_leases(self) -> Any:
        """Lease the URLs popped since the last flush; every third of a lease, renew the
        leases of those still waiting here."""
        lease = self.sluice_settings.lease_seconds
        now = time.monotonic()
        waiting: list[str] = []
        with self.popped_lock:
            urls, self.popped = self.popped, []
            if now - self.last_kept >= lease / 3:
                self.last_kept = now
                self.held = {url: held for url, held in self.held.items()
                             if now - held[0] < HOLD_LIMIT_LEASES * lease}
                waiting = [url for url, (since, _) in self.held.items()
                           if now - since >= lease / 3]
        if not urls and not waiting:
            return None
        from twisted.internet import threads

        return threads.deferToThread(self._renew, urls, waiting).addErrback(
            lambda failure: logger.warning("lease renewal failed: %s", failure.value))

    def _renew(self, urls: Sequence[str], waiting: Sequence[str] = ()) -> None:
        lease = self.sluice_settings.lease_seconds
        with self.engine.begin() as conn:
            if urls:
                store.renew_lease(conn, urls, lease)
            if waiting:
                store.keep_leases(conn, waiting, lease, Status.QUEUED)

    def closed(self, reason: str) -> None:
        if self.lease_loop is not None and self.lease_loop.running:
            self.lease_loop.stop()
        with self.popped_lock:
            urls, self.popped = self.popped, []
            unfetched, self.held = list(self.held.values()), {}
        if urls:
            self._renew(urls)
        if unfetched:
            self._give_back([entry for _, entry in unfetched])
        super().closed(reason)  # FeedsSpider's: its discovery database engine

    def _give_back(self, entries: Sequence[FrontierEntry]) -> None:
        """A stopping crawler's scheduler dies with it: the URLs still waiting in it go back
        to the frontier at once (as retries: the duplicate filter has seen them), their rows
        leased to no one, rather than wait out their lease for the sweep."""
        retried = [replace(entry, retry=True) for entry in entries]
        feeds = [entry for entry in retried if entry.kind == "feed"]
        articles = [entry for entry in retried if entry.kind != "feed"]
        try:
            # The connection the spider pops the frontier with.
            frontier.push(self.server, feeds, frontier.PRIORITY_FEED)
            frontier.push(self.server, articles, frontier.PRIORITY_INGEST)
            with self.engine.begin() as conn:
                store.keep_leases(conn, [entry.url for entry in articles], None, Status.QUEUED)
        except Exception as exc:  # Redis or the database gone: the sweep takes them later
            logger.warning("could not give back %d unfetched URLs (%s); the sweep will push "
                           "them again once their lease expires", len(entries), exc)
            return
        logger.info("gave back %d unfetched URLs to the frontier", len(entries))
