"""What every spider does with an article URL: fetch it, turn the response into one item."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.http import Response, TextResponse
from twisted.python.failure import Failure

from crawler.failures import is_html, is_login_redirect, reason_for_failure, reason_for_status
from crawler.items import FailureItem, PageItem
from sluice.records import FetchedPage


class ArticleSpider(scrapy.Spider):
    """Base spider: `article_request` builds the request, the callbacks always yield one item."""

    def article_request(self, url: str, source: str | None, **meta: Any) -> scrapy.Request:
        return scrapy.Request(url, callback=self.parse_article, errback=self.article_failed,
                              meta={"sluice_url": url, "sluice_source": source, **meta})

    def parse_article(self, response: Response) -> Iterator[PageItem | FailureItem]:
        url = response.meta["sluice_url"]
        source = response.meta.get("sluice_source")
        reason = self._refusal(url, response)
        if reason is not None:
            self.crawler.stats.inc_value(f"sluice/status/fetch_failed/{reason}")
            yield FailureItem(url, reason, source, response.status, response.url)
            return
        encoding = response.encoding if isinstance(response, TextResponse) else None
        yield PageItem(FetchedPage(
            url=url, final_url=response.url, http_status=response.status, body=response.body,
            content_type=_content_type(response), encoding=encoding,
            rendered="playwright" in response.flags, fetched_at=datetime.now(UTC),
            source=source))

    def article_failed(self, failure: Failure) -> Iterator[FailureItem]:
        request = failure.request  # type: ignore[attr-defined]
        reason = reason_for_failure(failure)
        self.crawler.stats.inc_value(f"sluice/status/fetch_failed/{reason}")
        self.logger.debug("fetch failed %s: %s", request.url, reason)
        yield FailureItem(request.meta.get("sluice_url", request.url), reason,
                          request.meta.get("sluice_source"))

    @staticmethod
    def _refusal(url: str, response: Response) -> str | None:
        """Why this response cannot hold an article, or None when it may."""
        reason = reason_for_status(response.status)
        if reason is not None:
            return reason
        if is_login_redirect(url, response.url):
            return "login_required"
        if not is_html(_content_type(response), response.body):
            return "not_html"
        return None


def _content_type(response: Response) -> str:
    value = response.headers.get(b"Content-Type") or b""
    return value.decode("latin-1")
