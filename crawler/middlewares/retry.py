"""Retries with back-off: transient failures (timeouts, 5xx, 429) are tried again after a wait
that doubles each time, or after the server's own `Retry-After` (capped), then given up, and the
spider records `fetch_failed` with the reason."""

from __future__ import annotations

import asyncio
import time
from email.utils import parsedate_to_datetime
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.retry import get_retry_request
from scrapy.http import Response
from scrapy.utils.misc import load_object

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


class BackoffRetryMiddleware:
    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        self.crawler = crawler
        self.max_retries = settings.fetch.retries
        self.base_delay = crawler.settings.getfloat("SLUICE_RETRY_BASE_DELAY", BASE_DELAY)
        self.exceptions = tuple(load_object(name) if isinstance(name, str) else name
                                for name in crawler.settings.getlist("RETRY_EXCEPTIONS"))

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls(crawler, crawler.settings.get("SLUICE_SETTINGS") or get_settings())

    async def process_response(self, request: Request, response: Response) -> Request | Response:
        if response.status not in RETRY_STATUSES or request.meta.get("dont_retry"):
            return response
        retry = self._retry(request, f"http_{response.status}")
        if retry is None:
            return response
        await asyncio.sleep(self._delay(request, response))
        return retry

    async def process_exception(self, request: Request, exception: BaseException
                                ) -> Request | None:
        if not isinstance(exception, self.exceptions) or request.meta.get("dont_retry"):
            return None
        retry = self._retry(request, type(exception).__name__)
        if retry is None:
            return None
        await asyncio.sleep(self._delay(request, None))
        return retry

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
