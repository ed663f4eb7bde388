"""The browser's request filter when private networks are refused.

Every request a rendered page makes (scripts, XHR, frames) passes scrapy-playwright's
`PLAYWRIGHT_ABORT_REQUEST` predicate; this one keeps the render middleware's filter (no media,
nothing but http(s): no file: or data: pages) and also aborts any request whose host resolves
to a loopback, private, link-local, multicast or cloud-metadata address, so a page's own
scripts cannot read a metadata endpoint or an intranet service into the stored text.
"""

from __future__ import annotations

import asyncio
import logging
import socket
from typing import Any

from crawler.middlewares.render import abort_request
from sluice.errors import BlockedAddress
from sluice.urls import check_address_allowed, check_host_allowed, host_of

logger = logging.getLogger(__name__)


async def abort_private_request(request: Any) -> bool:
    """True when the browser must not make this request."""
    if abort_request(request):
        return True
    url = str(request.url)
    host = host_of(url)
    try:
        check_host_allowed(host, allow_private=False)
        for address in await resolve(host):
            check_address_allowed(host, address, allow_private=False)
    except BlockedAddress as exc:
        logger.info("browser request refused: %s", exc)
        return True
    return False


async def resolve(host: str) -> list[str]:
    """Every address `host` resolves to (none when it does not resolve: the browser then fails
    on its own, and no connection is made)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})
