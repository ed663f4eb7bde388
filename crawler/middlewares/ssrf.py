"""Refuse requests to loopback, private, link-local, multicast and cloud-metadata addresses.

The host is resolved here and every resolved address must be public; redirects come back
through this middleware as new requests, so every hop is checked. This is the early, cheap
check that gives the row its reason; the address actually connected to is checked again by the
resolver (`crawler/resolver.py`), and the browser's own requests by `crawler/browser_guard.py`.
`ssrf_settings` installs all three. Off with `SLUICE_ALLOW_PRIVATE_NETWORKS=true` (tests,
intranets).
"""

from __future__ import annotations

import asyncio
import socket
from typing import Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import IgnoreRequest, NotConfigured

from sluice.config import Settings, get_settings
from sluice.errors import BlockedAddress
from sluice.urls import check_address_allowed, check_host_allowed, host_of


def ssrf_settings(settings: Settings, browser: dict[str, Any]) -> dict[str, Any]:
    """The Scrapy settings that refuse non-public addresses (none when they are allowed);
    `browser` is the browser's own settings, whose request filter is replaced."""
    if settings.allow_private_networks:
        return {}
    guard = {"TWISTED_DNS_RESOLVER": "crawler.resolver.PublicAddressResolver"}
    if browser:
        guard["PLAYWRIGHT_ABORT_REQUEST"] = "crawler.browser_guard.abort_private_request"
    return guard


class BlockedRequest(IgnoreRequest):
    """IgnoreRequest that carries Sluice's reason code."""

    reason = "blocked_address"


class SSRFGuardMiddleware:
    def __init__(self, crawler: Crawler) -> None:
        self.crawler = crawler

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if settings.allow_private_networks:
            raise NotConfigured("private networks allowed")
        return cls(crawler)

    async def process_request(self, request: Request) -> None:
        host = host_of(request.url)
        try:
            check_host_allowed(host, allow_private=False)
            for address in await _resolve(host):
                check_address_allowed(host, address, allow_private=False)
        except BlockedAddress as exc:
            self.crawler.stats.inc_value("sluice/blocked_address")
            raise BlockedRequest(str(exc)) from None
        return None


async def _resolve(host: str) -> list[str]:
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    except socket.gaierror:
        return []  # the download itself reports the DNS error
    return sorted({str(info[4][0]) for info in infos})
