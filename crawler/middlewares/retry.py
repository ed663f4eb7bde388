"""Retries with back-off: transient failures (timeouts, 5xx, 429) are tried again after a wait
that doubles each time, or after the server's own `Retry-After` (capped), then given up, and the
spider records `fetch_failed` with the reason.

The wait does not hold a download slot: the failed attempt ends at once (with `RetryLater`,
which the spider's errbacks pass over), and the retry is handed to the engine when its wait is
over. A site that answers 429 with a long Retry-After so delays only its own pages. While
retries wait, the crawl is kept open, and each waiting retry is announced (`retry_waiting`) so
the queue spider keeps holding its URL: its lease kept alive, given back if the crawler stops.
(robots.txt, which Scrapy fetches outside the scheduler for a caller that awaits it, still
waits in place.)
"""

from __future__ import annotations

import asyncio
import time
from email.utils import parsedate_to_datetime
from typing import Self

from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.exceptions import DontCloseSpider, IgnoreRequest
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK
from scrapy.utils.misc import load_object
from twisted.python.failure import Failure

from crawler.middlewares.render import without_browser_options
from sluice.config import Settings, get_settings

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504, 522, 524, 408})
BASE_DELAY = 1.0
MAX_DELAY = 60.0


def retry_after_seconds(value: bytes | None, now: float | None = None) -> float | None:
    """Seconds from a Retry-After header (delta-seconds or an HTTP date), or None."""
    if not value:
        return None
    text = value.decode("latin-1").strip()
    if text.isdigit():
        return float(text)
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


# Sent with `request=` when a retry starts its wait outside the scheduler.
retry_waiting = object()


class RetryLater(IgnoreRequest):
    """This attempt is over and the request will be tried again: nothing to record yet."""


def is_retry_later(failure: Failure) -> bool:
    return isinstance(failure.value, RetryLater)


class BackoffRetryMiddleware:
    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        self.crawler = crawler
        self.max_retries = settings.fetch.retries
        self.base_delay = crawler.settings.getfloat("SLUICE_RETRY_BASE_DELAY", BASE_DELAY)
        self.exceptions = tuple(load_object(name) if isinstance(name, str) else name
                                for name in crawler.settings.getlist("RETRY_EXCEPTIONS"))
        self.waiting = 0  # retries whose wait is not over
        crawler.signals.connect(self._keep_open, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, crawler.settings.get("SLUICE_SETTINGS") or get_settings())

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in RETRY_STATUSES or request.meta.get("dont_retry"):
            return response
        retry = self._retry(request, f"http_{response.status}")
        if retry is None:
            return response
        return await self._wait_or_send_later(retry, self._delay(request, response))

    async def process_exception(self, request: Request, exception: BaseException
                                ) -> Request | None:
        if not isinstance(exception, self.exceptions) or request.meta.get("dont_retry"):
            return None
        retry = self._retry(request, type(exception).__name__)
        if retry is None:
            return None
        return await self._wait_or_send_later(retry, self._delay(request, None))

    async def _wait_or_send_later(self, retry: Request, delay: float) -> Request:
        """Hand `retry` to the engine after `delay` seconds, and end this attempt now. A
        request made outside the scheduler (robots.txt: its caller awaits this very download)
        waits here instead, and is returned to be downloaded again."""
        if retry.callback is NO_CALLBACK:
            await asyncio.sleep(delay)
            return retry
        self.waiting += 1
        self.crawler.signals.send_catch_log(retry_waiting, request=retry)
        asyncio.get_running_loop().call_later(delay, self._send, retry)
        raise RetryLater(f"tried again in {delay:.1f} s")

    def _send(self, retry: Request) -> None:
        self.waiting -= 1
        if self.crawler.engine is not None and self.crawler.engine.running:
            self.crawler.engine.crawl(retry)

    def _keep_open(self) -> None:
        if self.waiting:
            raise DontCloseSpider

    def _retry(self, request: Request, reason: str) -> Request | None:
        assert self.crawler.spider is not None
        retry = get_retry_request(request, spider=self.crawler.spider, reason=reason,
                                  max_retry_times=self.max_retries, give_up_log_level="DEBUG")
        return without_browser_options(retry) if retry is not None else None

    def _delay(self, request: Request, response: Response | None) -> float:
        attempt = int(request.meta.get("retry_times", 0))
        delay = self.base_delay * 2**attempt
        if response is not None:
            server_says = retry_after_seconds(response.headers.get(b"Retry-After"))
            if server_says is not None:
                delay = server_says
        return min(delay, MAX_DELAY)
