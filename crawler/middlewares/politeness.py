"""Per-site politeness shared by every crawler process, through Redis.

Each site has a sorted set of slots (held requests) and a "next request allowed at" time. A
crawler renews the slots it holds every few seconds, so those of a crawler that died expire
within `SLOT_SECONDS` and its sites go on at once with the others, instead of staying blocked
for as long as a download may take. One atomic script takes a slot only when the site has
a free one and its delay has passed, on the Redis server's clock, so ten crawler processes on
ten machines together still send at most `per_site_concurrency` requests to a site at a time,
and wait the site's delay between them: `per_site_delay`, or longer where its robots.txt asks
(`crawler.extensions.crawl_delay`). Scrapy's own per-process delay is off in this mode
(`crawler.settings`): a request held in a local slot after taking the shared one would let
another process's request go first, too soon.

A request that finds its site busy or its delay not over waits outside the downloader, as a
retry's back-off does: the attempt ends at once (`WaitingForSite`, which the spiders' errbacks
pass over) and the request is handed to the engine again when the site's turn should have come,
or as soon as this process frees one of the site's slots. A slow site so holds none of the
crawler's global download slots, and other sites' pages go on meanwhile. Parked requests are
counted (`parked`): the crawl is kept open while any wait, and the queue spider pulls no more of
the frontier while many do. Requests whose caller awaits the download itself (robots.txt,
followed sitemaps and listings) wait in place instead.

A crawler told to stop finishes the downloads it has started, but a request still waiting for
its site's turn ends at once (`StoppedWaiting`), and a parked one is not sent again: its URL
goes back to the frontier with the others the crawler holds, so a stop takes one download, not
a whole queue for a slow site.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import time
import uuid
from typing import Any, Self

import redis
import redis.asyncio as aioredis
from scrapy import Request, signals
from scrapy.crawler import Crawler
from scrapy.exceptions import DontCloseSpider, NotConfigured
from scrapy.http import Response
from scrapy.http.request import NO_CALLBACK

from crawler.extensions.crawl_delay import CrawlDelay
from crawler.middlewares.retry import BackoffRetryMiddleware, RetryLater
from sluice.config import Settings, get_settings
from sluice.urls import host_of

logger = logging.getLogger(__name__)

ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local next_at = tonumber(redis.call('GET', KEYS[2]) or '0')
if next_at > now then return tostring(next_at - now) end
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[1]) then return '-1' end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[3])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4])) + 60)
local delay = tonumber(ARGV[2])
if delay > 0 then
  redis.call('SET', KEYS[2], tostring(now + delay), 'PX', math.ceil(delay * 1000) + 1000)
end
return '0'
"""
# Renews the slots a live crawler holds (only those still there: a released or expired slot is
# not brought back), and keeps their sites' sets from expiring under them.
RENEW = """
local t = redis.call('TIME')
local until_ = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[1])
for i, key in ipairs(KEYS) do
  redis.call('ZADD', key, 'XX', until_, ARGV[i + 1])
  redis.call('EXPIRE', key, math.ceil(tonumber(ARGV[1])) + 60)
end
return 0
"""
BUSY_POLL_SECONDS = 0.05
# A request parked because its site is busy looks again this long later, unless a slot this
# process frees for the site wakes it first (a slot freed by another process cannot).
BUSY_PARK_SECONDS = 1.0
# How long a slot outlives the crawler holding it; it is renewed every third of this.
SLOT_SECONDS = 15.0
# A request waiting for its site looks this often whether the crawler is stopping.
STOP_CHECK_SECONDS = 1.0


class StoppedWaiting(RetryLater):
    """The crawler is stopping: this request, still waiting for its site, is not fetched here
    (the spider's errbacks pass over it; the queue spider gives its URL back)."""


def waiting_outside_downloader(crawler: Crawler) -> int:
    """Requests of this crawler parked for their site's turn or waiting out a retry's back-off."""
    politeness = crawler.get_downloader_middleware(SharedPolitenessMiddleware)
    retries = crawler.get_downloader_middleware(BackoffRetryMiddleware)
    return ((politeness.parked if politeness is not None else 0)
            + (retries.waiting if retries is not None else 0))


class WaitingForSite(RetryLater):
    """Parked: this request waits outside the downloader for its site's turn, and is handed to
    the engine again when it comes (the spider's errbacks pass over this attempt)."""


class SharedPolitenessMiddleware:
    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        assert settings.redis_url
        self.crawler = crawler
        self.client = aioredis.Redis.from_url(settings.redis_url)
        self.acquire = self.client.register_script(ACQUIRE)
        self.renew = self.client.register_script(RENEW)
        self.limit = settings.fetch.per_site_concurrency
        self.delay = settings.fetch.per_site_delay
        # A slot is never renewed longer than a download may take, plus a margin: one held
        # longer was lost inside this process and must not block its site for good.
        self.hold = settings.fetch.timeout + settings.browser.navigation_timeout + 30
        self.held: dict[str, tuple[str, float]] = {}  # token -> (slots key, taken at)
        self.renewer: asyncio.Task[None] | None = None
        # host -> the requests parked for the site (oldest first): the timer that sends each
        # again, and whether it waits for a busy site (rather than for the site's delay).
        self.waiting: dict[str, dict[Request, tuple[asyncio.TimerHandle, bool]]] = {}
        self.last_due: dict[str, float] = {}  # host -> when its last parked request is sent
        crawler.signals.connect(self.stop_renewing, signal=signals.spider_closed)
        crawler.signals.connect(self._keep_open, signal=signals.spider_idle)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if not settings.redis_url:
            raise NotConfigured("embedded: politeness is Scrapy's own, per process")
        return cls(crawler, settings)

    @property
    def parked(self) -> int:
        """Requests waiting outside the downloader for their site's turn."""
        return sum(len(requests) for requests in self.waiting.values())

    async def process_request(self, request: Request) -> None:
        host = host_of(request.url)
        token = uuid.uuid4().hex
        keys = [f"sluice:site:{host}:slots", f"sluice:site:{host}:next"]
        delay = self.site_delay(host)
        try:
            if request.callback is NO_CALLBACK:  # its caller awaits this very download
                await self._acquire(keys, token, delay)
            elif (wait := await self._try(keys, token, delay)) != 0:
                self._park(request, host, wait, delay)
            self.held[token] = (keys[0], time.monotonic())
            request.meta.pop("sluice_parked", None)
        except redis.RedisError as exc:
            # Redis is down: fall back to this process's own per-site concurrency (Scrapy's) for
            # this request rather than fail a page over a politeness lock.
            self.crawler.stats.inc_value("sluice/politeness/redis_unavailable")
            logger.warning("shared politeness unavailable (%s); using per-process limits",
                           type(exc).__name__)
            return None
        request.meta["sluice_slot"] = (keys[0], token)
        return None

    def site_delay(self, host: str) -> float:
        if self.crawl_delay is None:
            return self.delay
        return self.crawl_delay.delay_for(host)

    @functools.cached_property
    def crawl_delay(self) -> CrawlDelay | None:
        """The extension that knows the robots.txt delays (looked up once: the extensions
        exist by the time the first request comes)."""
        return self.crawler.get_extension(CrawlDelay)

    async def _try(self, keys: list[str], token: str, delay: float) -> float:
        """Take one of the site's slots: 0 when taken, else the seconds left of the site's
        delay, or -1 when all its slots are held."""
        if self.renewer is None:
            self.renewer = asyncio.ensure_future(self._keep_slots())
        return float(await self.acquire(keys=keys, args=[self.limit, delay, token, SLOT_SECONDS]))

    async def _acquire(self, keys: list[str], token: str, delay: float) -> None:
        """Wait in place until a slot is taken."""
        while (wait := await self._try(keys, token, delay)) != 0:
            self.crawler.stats.inc_value("sluice/politeness/waits")
            await self._sleep_unless_stopping(wait if wait > 0 else BUSY_POLL_SECONDS)

    def _park(self, request: Request, host: str, wait: float, delay: float) -> None:
        """End this attempt, and send `request` again when its site's turn should have come.

        Behind the delay, a request waits out what is left of it, and one more delay for each
        request parked before it (they go first); one sent again whose turn has not quite
        come (another crawler took it, or the clocks differ) keeps its place. Behind a busy
        site, it looks again after a while, or as soon as this process frees a slot there."""
        self.crawler.stats.inc_value("sluice/politeness/parked")
        loop = asyncio.get_running_loop()
        now = loop.time()
        if wait < 0:
            due = now + BUSY_PARK_SECONDS
        else:
            last = self.last_due.get(host, 0.0)
            sent_again = request.meta.get("sluice_parked")
            due = now + wait if sent_again else max(now + wait, last + delay)
            self.last_due[host] = max(last, due)
        again = request.replace(dont_filter=True)  # the duplicate filter has seen it
        again.meta["sluice_parked"] = True
        handle = loop.call_at(due, self._send, host, again)
        self.waiting.setdefault(host, {})[again] = (handle, wait < 0)
        raise WaitingForSite(f"{host} is not ready: tried again in {due - now:.1f} s")

    def _send(self, host: str, request: Request) -> None:
        parked = self.waiting.get(host, {})
        entry = parked.pop(request, None)
        if entry is None:
            return
        entry[0].cancel()
        if not parked:
            del self.waiting[host]
            self.last_due.pop(host, None)
        engine = self.crawler.engine
        if self.crawler.crawling and engine is not None and engine.running:
            engine.crawl(request)

    def _wake(self, host: str) -> None:
        """One of the site's slots is free: the oldest request parked for a busy site goes."""
        for request, (_, busy) in self.waiting.get(host, {}).items():
            if busy:
                self._send(host, request)
                return

    def _keep_open(self) -> None:
        if self.waiting and self.crawler.crawling:
            raise DontCloseSpider

    async def _sleep_unless_stopping(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while True:
            if not self.crawler.crawling:
                raise StoppedWaiting("the crawler is stopping")
            left = deadline - time.monotonic()
            if left <= 0:
                return
            await asyncio.sleep(min(left, STOP_CHECK_SECONDS))

    async def process_response(self, request: Request, response: Response) -> Response:
        await self._release(request)
        return response

    async def process_exception(self, request: Request, exception: BaseException) -> None:
        await self._release(request)
        return None

    async def _release(self, request: Request) -> None:
        slot: Any = request.meta.pop("sluice_slot", None)
        if slot is not None:
            self.held.pop(slot[1], None)
            try:
                await self.client.zrem(slot[0], slot[1])
            except redis.RedisError:
                pass  # the slot expires by itself, no longer renewed
            self._wake(host_of(request.url))

    async def _keep_slots(self) -> None:
        """Renew the slots this crawler holds, every third of their life, while it runs."""
        while True:
            await asyncio.sleep(SLOT_SECONDS / 3)
            now = time.monotonic()
            self.held = {token: held for token, held in self.held.items()
                         if now - held[1] < self.hold}
            if not self.held:
                continue
            tokens = list(self.held)
            try:
                await self.renew(keys=[self.held[token][0] for token in tokens],
                                 args=[SLOT_SECONDS, *tokens])
            except redis.RedisError as exc:
                logger.warning("could not renew site slots (%s): they expire in %s s",
                               type(exc).__name__, SLOT_SECONDS)

    def stop_renewing(self) -> None:
        if self.renewer is not None:
            self.renewer.cancel()
