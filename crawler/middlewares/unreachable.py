"""A site that stops answering is paused, not waited on URL by URL.

Without this, a dead site holding ten thousand queued URLs costs a full download timeout for each
of them, and each retry. When `fetch.unreachable_after` attempts in a row to one site get no
answer at all (a timeout, a refused, reset or dropped connection; an HTTP error status is an
answer), the site is paused for `fetch.unreachable_pause` seconds: its requests fail at once as
`fetch_failed` / `site_unreachable`, a row like any other failure, which `sluice retry --reason
site_unreachable` queues again. After the pause one request goes through as a probe; any answer
ends the pause, no answer starts another. Each crawler process keeps its own count. Requests
already waiting in the site's download queue when the pause starts (at most `fetch.concurrency`)
still go out once; their retries do not.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass
from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import (
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    NotConfigured,
)
from scrapy.http import Response
from twisted.internet import error as twisted_error
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

from sluice.config import Settings, get_settings
from sluice.urls import host_of

logger = logging.getLogger(__name__)

# Marks the request that probes a paused site (a request that failed before it got here,
# parked or refused, is not the probe, and its failure says nothing of the site).
PROBE = "sluice_probe"
# Attempts that got nothing back from the server.
NO_ANSWER = (DownloadTimeoutError, DownloadConnectionRefusedError, DownloadFailedError,
             twisted_error.TimeoutError, twisted_error.ConnectError, twisted_error.ConnectionLost,
             twisted_error.ConnectionDone, ResponseNeverReceived, ResponseFailed)


class SiteUnreachable(IgnoreRequest):
    """A request not sent because its site is paused."""

    reason = "site_unreachable"


@dataclass
class _Site:
    failures: int = 0  # attempts in a row without an answer
    paused_until: float = 0.0
    probing: bool = False


class UnreachableSiteMiddleware:
    def __init__(self, after: int, pause: float) -> None:
        self.after = after
        self.pause = pause
        self.sites: dict[str, _Site] = {}

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if settings.fetch.unreachable_after <= 0:
            raise NotConfigured("unreachable sites are not paused")
        return cls(settings.fetch.unreachable_after, settings.fetch.unreachable_pause)

    def process_request(self, request: Request) -> None:
        host = host_of(request.url)
        site = self.sites.get(host)
        if site is None or site.failures < self.after:
            return
        if site.probing or time.monotonic() < site.paused_until:
            raise SiteUnreachable(f"{host} did not answer {site.failures} attempts in a row; "
                                  "paused")
        site.probing = True  # this request is the probe; the others wait for its outcome
        request.meta[PROBE] = True

    def process_response(self, request: Request, response: Response) -> Response:
        request.meta.pop(PROBE, None)
        self.sites.pop(host_of(request.url), None)  # an answer, whatever its status
        return response

    def process_exception(self, request: Request, exception: BaseException) -> None:
        probe = request.meta.pop(PROBE, False)
        if isinstance(exception, SiteUnreachable):
            return
        host = host_of(request.url)
        if not isinstance(exception, NO_ANSWER):
            if probe and (site := self.sites.get(host)) is not None:
                site.probing = False  # the probe ended without a verdict: the next one probes
            return
        site = self.sites.setdefault(host, _Site())
        site.failures += 1
        if site.failures >= self.after and (site.probing or site.failures == self.after):
            site.paused_until, site.probing = time.monotonic() + self.pause, False
            logger.warning("%s did not answer %d attempts in a row: paused for %g s",
                           host, site.failures, self.pause)
