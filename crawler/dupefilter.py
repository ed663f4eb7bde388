"""A shared duplicate filter whose entries expire, so it never grows without bound.

One Redis key per request fingerprint, set with `SET NX EX`: about 90 bytes each, so at 100
pages/s and the default one-hour TTL it holds at most ~360,000 keys (~35 MB). The database, not
this filter, is what keeps a stored URL from being fetched again; the filter only stops two
crawler processes fetching the same URL at once. Retries bypass it (`dont_filter`).
"""

from __future__ import annotations

from typing import Any, Self

from scrapy import Request
from scrapy_redis.dupefilter import RFPDupeFilter

from crawler.fingerprint import fingerprint

DEFAULT_TTL = 3600
KEY = "sluice:seen"  # shared by every crawler process (each key is `sluice:seen:<fingerprint>`)


class ExpiringDupeFilter(RFPDupeFilter):  # type: ignore[misc]
    ttl = DEFAULT_TTL

    @classmethod
    def from_crawler(cls, crawler: Any) -> Self:
        instance: Self = super().from_crawler(crawler)
        instance.key = KEY
        instance.ttl = crawler.settings.getint("SLUICE_DUPEFILTER_TTL", DEFAULT_TTL)
        return instance

    def request_fingerprint(self, request: Request) -> str:
        return fingerprint(request).hex()  # the exact URL, as the local filter does

    def request_seen(self, request: Request) -> bool:
        key = f"{self.key}:{self.request_fingerprint(request)}"
        return not self.server.set(key, b"1", nx=True, ex=self.ttl)

    def clear(self) -> None:
        # Each fingerprint expires by itself; nothing to delete in bulk.
        return None
