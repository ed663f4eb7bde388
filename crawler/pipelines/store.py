"""Store items in batches (idempotent upserts), then enqueue classification after the commit."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from datetime import timedelta
from typing import Any, Self

import sqlalchemy as sa
from scrapy.crawler import Crawler

from crawler.items import DiscoveredItem, FailureItem, FeedResultItem, PageItem
from sluice.config import Settings, get_settings
from sluice.db import make_engine, store
from sluice.db.sites import record_render_outcomes
from sluice.pipeline import failure_row, outcome_row
from sluice.records import Status
from sluice.urls import host_of

logger = logging.getLogger(__name__)

Enqueue = Callable[[Sequence[str]], None]


def celery_enqueue(urls: Sequence[str]) -> None:
    """Hand pending URLs to the Celery workers (distributed mode)."""
    from workers.tasks import classify_batch

    for start in range(0, len(urls), 10):
        classify_batch.delay(list(urls[start:start + 10]))


WRITE_ATTEMPTS = 7


class StorePipeline:
    batch_size = 50
    flush_seconds = 1.0

    def __init__(self, crawler: Crawler, settings: Settings, enqueue: Enqueue | None) -> None:
        self.crawler = crawler
        self.settings = settings
        self.engine = make_engine(settings.database_url)
        self.enqueue = enqueue
        self.pending: list[Any] = []
        self.last_flush = time.monotonic()
        self.lock = asyncio.Lock()
        self.ticker: asyncio.Task[None] | None = None

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        return cls(crawler, settings, None if settings.embedded else celery_enqueue)

    async def open_spider(self) -> None:
        self.ticker = asyncio.ensure_future(self._flush_periodically())

    async def close_spider(self) -> None:
        if self.ticker is not None:
            self.ticker.cancel()
        await self.flush()
        self.engine.dispose()

    async def process_item(self, item: Any) -> Any:
        self.pending.append(item)
        if len(self.pending) >= self.batch_size:
            await self.flush()
        return item

    async def _flush_periodically(self) -> None:
        while True:
            await asyncio.sleep(self.flush_seconds)
            if self.pending and time.monotonic() - self.last_flush >= self.flush_seconds:
                # Shielded: stopping the ticker at close must not cut a flush between its
                # commit and its enqueue (the rows would wait, pending, for the sweep).
                await asyncio.shield(self.flush())

    async def flush(self) -> None:
        """Write what is pending and hand its pending rows to the workers. The enqueue is
        inside the lock too: a flush that finds the lock taken returns only once the flush
        before it has enqueued, so the last flush at close leaves nothing half done."""
        async with self.lock:
            items, self.pending = self.pending, []
            self.last_flush = time.monotonic()
            if not items:
                return
            pending_urls = await self._write_with_retries(items)
            if not pending_urls or self.enqueue is None:
                return
            try:
                await asyncio.to_thread(self.enqueue, pending_urls)
            except Exception as exc:
                # The rows are committed as `pending` with a lease: the sweep enqueues them
                # again once the broker is back. Nothing is lost by carrying on.
                logger.warning("could not enqueue %d pages for classification (%s); the "
                               "sweep will", len(pending_urls), type(exc).__name__)

    async def _write_with_retries(self, items: Sequence[Any]) -> list[str]:
        """Write a batch, waiting out a database restart (1, 2, 4, ... seconds). A batch that
        still cannot be written is logged: its URLs stay `queued` with a lease, and the sweep
        hands them out again."""
        for attempt in range(WRITE_ATTEMPTS):
            try:
                return await asyncio.to_thread(self._write, items)
            except sa.exc.OperationalError as exc:
                logger.warning("database unavailable (%s); retrying the batch of %d",
                               type(exc).__name__, len(items))
                await asyncio.sleep(2**attempt)
        logger.error("gave up writing a batch of %d items; the sweep will re-fetch them",
                     len(items))
        return []

    def _write(self, items: Sequence[Any]) -> list[str]:
        """One transaction for the whole batch. Returns the URLs now waiting to be classified."""
        lease = store.utcnow() + timedelta(seconds=self.settings.lease_seconds)
        rows, bodies, pending = [], [], []
        render_outcomes: list[tuple[str, bool]] = []
        with self.engine.begin() as conn:
            for item in items:
                if isinstance(item, DiscoveredItem):
                    store.record_discovered(conn, item.urls, item.source,
                                            self.settings.lease_seconds)
                elif isinstance(item, FeedResultItem):
                    store.record_feed_result(conn, item.url, item.status, item.kind, item.title,
                                             item.entries, item.followed, item.followed_failed,
                                             item.first_problem)
                elif isinstance(item, FailureItem):
                    rows.append(failure_row(item.url, item.reason, item.source, item.http_status,
                                            item.final_url, item.rendered))
                elif isinstance(item, PageItem) and item.outcome is not None:
                    row = outcome_row(item.page, item.outcome, lease)
                    rows.append(row)
                    if row["status"] is not Status.UNDER_LIMIT:
                        render_outcomes.append((host_of(item.page.url), item.page.rendered))
                    if row["status"] is Status.PENDING:
                        pending.append(row["url"])
                        page = item.page
                        bodies.append(store.body_row(page.url, page.body, page.encoding,
                                                     row["fetched_at"]))
            store.store_outcomes(conn, rows, bodies)
            learned = record_render_outcomes(conn, render_outcomes)
        site_states = getattr(self.crawler.spider, "site_states", None)
        if site_states is not None:
            site_states.update(learned)
        return pending

