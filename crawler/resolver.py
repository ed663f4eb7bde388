"""A DNS resolver that refuses non-public addresses, checked when the connection is made.

The SSRF middleware checks a request's host before it is downloaded, but a host can resolve
differently a moment later (DNS rebinding), and Scrapy resolves again to connect. Installed as
Scrapy's `TWISTED_DNS_RESOLVER`, this resolver is the one every connection goes through (each
redirect hop, robots.txt, IP literals too), so the address connected to is the address checked.
A refused host fails as a DNS lookup error; it is remembered so the row says `blocked_address`.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from scrapy.resolver import CachingThreadedResolver
from twisted.internet.defer import Deferred
from twisted.internet.error import DNSLookupError

from sluice.errors import BlockedAddress
from sluice.urls import check_address_allowed

_REMEMBERED = 10_000
_blocked_hosts: OrderedDict[str, None] = OrderedDict()


class BlockedAddressLookupError(DNSLookupError):
    """A host that resolved to an address Sluice refuses to connect to."""


def was_blocked(host: str) -> bool:
    """Whether this resolver refused `host` in this process (for the row's reason code)."""
    return host.strip("[]").lower().rstrip(".") in _blocked_hosts


def _remember(host: str) -> None:
    _blocked_hosts[host.lower().rstrip(".")] = None
    while len(_blocked_hosts) > _REMEMBERED:
        _blocked_hosts.popitem(last=False)


class PublicAddressResolver(CachingThreadedResolver):
    """Scrapy's caching resolver, refusing loopback, private, link-local, multicast and cloud
    metadata addresses (the cache is checked too: it holds what was resolved, not what is safe)."""

    def getHostByName(self, name: str, timeout: Sequence[int] = ()) -> Deferred[str]:  # noqa: N802
        return super().getHostByName(name, timeout).addCallback(self._check, name)

    def _check(self, address: Any, name: str) -> str:
        try:
            check_address_allowed(name, str(address), allow_private=self.allow_private(name))
        except BlockedAddress as exc:
            _remember(name)
            raise BlockedAddressLookupError(str(exc)) from None
        return str(address)

    def allow_private(self, name: str) -> bool:
        """Never, in the product; a test may override it for a host it treats as public."""
        return False
