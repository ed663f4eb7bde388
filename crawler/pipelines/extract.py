"""Extract and gate each page in a pool of worker processes, off the reactor thread.

Embedded crawls also classify in the pool, so a page is stored once, in its final status;
distributed crawls leave classification to the Celery workers.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import multiprocessing
import os
import signal
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from multiprocessing import forkserver
from typing import Any, Self

from scrapy.crawler import Crawler
from scrapy.exceptions import DropItem

from crawler.items import FailureItem, PageItem
from sluice.config import Settings, get_settings
from sluice.gate import GateOptions
from sluice.pipeline import process_page

logger = logging.getLogger(__name__)


def _warm_up() -> None:
    """Set up one worker process. (The heavy modules, and the page-type model when the crawl
    classifies, were loaded once by the fork server the worker is forked from.)

    A worker leaves the crawler's process group, so a stop signal sent to the whole group (a
    terminal's Ctrl-C, `docker stop`) reaches only the crawler, which finishes the pages in hand
    and shuts its pool down in order; and it dies with the fork server (from the moment it is
    forked: `crawler.fork_server_preload`), which dies with the crawler, so a crawler killed
    outright leaves no worker behind.
    """
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def _ready() -> int:
    return os.getpid()


# Tries of one page in the pool: a page beside a dying worker is tried again in a fresh pool.
EXTRACT_ATTEMPTS = 3


class ExtractPipeline:
    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        self.crawler = crawler
        self.gate = GateOptions(settings.gate.min_chars, settings.gate.max_chars)
        self.classify_inline = settings.embedded
        self.render_policy = settings.browser.render
        self.workers = settings.extract_workers or os.cpu_count() or 1
        self.pool: ProcessPoolExecutor | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, crawler.settings.get("SLUICE_SETTINGS") or get_settings())

    def open_spider(self) -> None:
        self.pool = self._new_pool()
        # Start every worker now, so the fork server's set-up (imports, the model: about two
        # seconds) overlaps the first fetches instead of delaying the first pages.
        for _ in range(self.workers):
            self.pool.submit(_ready)

    def close_spider(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)

    async def process_item(self, item: Any) -> Any:
        if not isinstance(item, PageItem):
            return item
        try:
            item.outcome = await self._run(item)
        except BrokenProcessPool:
            # The page broke every pool it was tried in: it still gets a row.
            return self._failed(item, "extract_crashed")
        except Exception:
            # A process edge: whatever went wrong, the URL still ends with an explained row.
            logger.exception("extraction failed on %s", item.page.url)
            return self._failed(item, "extract_error")
        if self._wants_render(item):
            self._schedule_render(item)
        self.crawler.stats.inc_value(f"sluice/status/{item.outcome.status_and_reason[0].value}")
        return item

    def _wants_render(self, item: PageItem) -> bool:
        decision = item.outcome.render if item.outcome else None
        policy = item.render_policy or self.render_policy
        return bool(decision and decision.render and policy != "never")

    def _schedule_render(self, item: PageItem) -> None:
        """Fetch the page again through the browser; its row is written when that returns."""
        assert item.outcome is not None and item.outcome.render is not None
        page, reason = item.page, item.outcome.render.reason
        spider: Any = self.crawler.spider
        request = spider.article_request(page.url, page.source, render_policy=item.render_policy,
                                         sluice_render=True, sluice_render_reason=reason)
        assert self.crawler.engine is not None
        self.crawler.engine.crawl(request)
        raise DropItem(f"static page of {page.url} is a JavaScript shell ({reason}); rendering",
                       log_level="DEBUG")

    async def _run(self, item: PageItem) -> Any:
        """The page's outcome from the pool. A worker that dies (out of memory, a crash in a
        C extension) breaks the pool for every page in it, not only its own: the first page
        to see it starts a fresh pool, and each page is tried again there, up to
        `EXTRACT_ATTEMPTS` times, so only a page that keeps killing workers fails."""
        for _ in range(EXTRACT_ATTEMPTS - 1):
            with contextlib.suppress(BrokenProcessPool):
                return await self._submit(item)
        return await self._submit(item)

    async def _submit(self, item: PageItem) -> Any:
        pool = self.pool
        assert pool is not None
        try:
            future = pool.submit(process_page, item.page, self.gate, self.classify_inline)
            return await asyncio.wrap_future(future)
        except BrokenProcessPool:
            if self.pool is pool:  # the first page to see this pool broken replaces it
                logger.error("an extraction worker died (on %s or a page beside it); "
                             "restarting the pool", item.page.url)
                pool.shutdown(wait=False, cancel_futures=True)
                self.pool = self._new_pool()
            raise

    def _failed(self, item: PageItem, reason: str) -> FailureItem:
        self.crawler.stats.inc_value(f"sluice/status/fetch_failed/{reason}")
        page = item.page
        return FailureItem(page.url, reason, page.source, page.http_status, page.final_url)

    def _new_pool(self) -> ProcessPoolExecutor:
        context = multiprocessing.get_context("forkserver")
        preload = ["crawler.fork_server_preload", "sluice.pipeline"]
        if self.classify_inline:
            preload.append("sluice.classification.preload")
        context.set_forkserver_preload(preload)
        _start_forkserver_deaf_to_stop_signals()
        return ProcessPoolExecutor(self.workers, mp_context=context, initializer=_warm_up)


def _start_forkserver_deaf_to_stop_signals() -> None:
    """Start the fork server with SIGINT and SIGTERM ignored (inherited across its exec).

    The pool watches its workers through the fork server: were a stop signal sent to the whole
    process group to kill it, every worker would look dead and the pages in hand would fail.
    This way only the crawler process acts on the signal, and shuts its pool down in order.
    """
    stop_signals = (signal.SIGINT, signal.SIGTERM)
    previous = {number: signal.signal(number, signal.SIG_IGN) for number in stop_signals}
    try:
        forkserver.ensure_running()
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
