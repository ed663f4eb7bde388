"""The one component that turns a request into a browser render (scrapy-playwright, Chromium).

Spiders and pipelines only set `meta["sluice_render"]` (the decision lives in
`sluice.render_policy`); this middleware adds the browser's request options and turns browser
errors into reason codes. Nothing else in the project mentions Playwright.

When Chromium dies mid-render (killed, out of memory, a crash), scrapy-playwright starts a new
browser for the next page (`PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER`), and every render that was
in flight fails with "target closed" (or, should it wait on the dead browser, is cancelled a few
seconds later). Each such render is tried once more, through the scheduler, in the new browser;
a second crash is recorded as `render_crashed`. (The handler's own immediate retries are turned
off: they could try a page that kills the browser four times, and ended as the misleading
`render_unavailable`.)

With private networks refused, the browser runs behind the proxy of `crawler.browser_guard`, and
a render that ended on a refused address, or on the browser's own error page, is a failure
(`blocked_address`, else `render_failed`), never a row holding that page's text.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy.http import Response
from scrapy.utils.misc import load_object
from scrapy_playwright.handler import ScrapyPlaywrightDownloadHandler
from scrapy_playwright.page import PageMethod

from sluice.config import Settings, get_settings
from sluice.errors import SluiceError
from sluice.urls import host_of

logger = logging.getLogger(__name__)

# The header the guard's proxy marks its refusals with (see crawler/browser_guard.py).
REFUSED_HEADER = "X-Sluice-Refused"
# Resource types a text extractor never needs; blocking them saves most of a render's bytes.
BLOCKED_RESOURCES = frozenset({"image", "font", "media", "stylesheet", "websocket", "manifest"})
# The render ends as soon as the page holds some readable text, not after a fixed sleep; a page
# whose text never comes is taken as it stands once `text_wait_ms` have passed since navigation
# (what it shows then decides its status), rather than failing the whole render.
TEXT_PRESENT = ("(waitMs) => (document.body && document.body.innerText.trim().length > 200)"
                " || performance.now() > waitMs")
CONTEXT_OPTIONS = {"java_script_enabled": True, "accept_downloads": False,
                   "service_workers": "block", "ignore_https_errors": False}


class RenderFailed(SluiceError):
    reason = "render_failed"


class BrowserDied(Exception):
    """A render still waiting on a browser that died under it (a call that never returned)."""


# How long the renders that were in flight when the browser died may take to fail on their own.
STUCK_AFTER_CRASH_SECONDS = 10.0


class BrowserDownloadHandler(ScrapyPlaywrightDownloadHandler):  # type: ignore[misc]
    """scrapy-playwright's download handler, with three changes:

    - no immediate retries of a render whose page, context or browser closed under it
      (`RenderMiddleware` retries those once, through the scheduler);
    - a render that was in flight when the browser died and has not ended a few seconds later
      is cancelled (`BrowserDied`): a page being opened as the browser dies can wait forever for
      an answer, and hold the crawl open with it;
    - with private networks refused, the browser is launched behind the guard's proxy
      (`crawler.browser_guard.GuardProxy`), so each of its connections is checked.
    """

    def __init__(self, crawler: Crawler) -> None:
        super().__init__(crawler)
        self.config.target_closed_max_retries = 0
        self.renders: set[asyncio.Future[Any]] = set()
        self.stuck: set[asyncio.Future[Any]] = set()
        self.proxy = guard_proxy(crawler)
        self.proxy_started = asyncio.Lock()

    async def download_request(self, request: Request) -> Any:
        if not request.meta.get("playwright"):
            return await super().download_request(request)
        await self._start_proxy()
        render = asyncio.ensure_future(super().download_request(request))
        self.renders.add(render)
        try:
            return await render
        except asyncio.CancelledError:
            if render not in self.stuck:
                raise
            raise BrowserDied(f"the browser died while rendering {request.url}, and the "
                              "render never ended") from None
        finally:
            self.renders.discard(render)
            self.stuck.discard(render)

    async def _start_proxy(self) -> None:
        """Before the browser is first launched: start the proxy and launch it behind it."""
        async with self.proxy_started:
            if self.proxy is not None and "proxy" not in self.config.launch_options:
                self.config.launch_options["proxy"] = {"server": await self.proxy.start()}

    async def close(self) -> None:
        await super().close()
        if self.proxy is not None:
            await self.proxy.close()

    async def _browser_disconnected_callback(self) -> None:
        in_flight = list(self.renders)
        asyncio.get_running_loop().call_later(STUCK_AFTER_CRASH_SECONDS, self._cancel_stuck,
                                              in_flight)
        await super()._browser_disconnected_callback()

    def _cancel_stuck(self, renders: list[asyncio.Future[Any]]) -> None:
        for render in renders:
            if not render.done():
                self.stuck.add(render)
                render.cancel()


def browser_guard(crawler: Crawler) -> Any:
    """The policy for the browser's connections, or None when private networks are allowed."""
    settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
    if settings.allow_private_networks:
        return None
    return load_object(crawler.settings.get("SLUICE_BROWSER_GUARD",
                                            "crawler.browser_guard.BrowserGuard"))()


def guard_proxy(crawler: Crawler) -> Any:
    from crawler.browser_guard import GuardProxy  # it imports this module

    guard = browser_guard(crawler)
    return None if guard is None else GuardProxy(guard)


async def watch_navigations(page: Any, request: Request) -> None:
    """Page set-up (`playwright_page_init_callback`): remember the URL of a navigation of the
    page itself that failed (refused, or unreachable), or that the guard's proxy answered with
    its refusal, for `RenderMiddleware` to report."""

    def failed(browser_request: Any) -> None:
        if browser_request.is_navigation_request() and browser_request.frame == page.main_frame:
            request.meta["sluice_failed_navigation"] = str(browser_request.url)

    def answered(response: Any) -> None:
        if (response.request.is_navigation_request() and response.frame == page.main_frame
                and REFUSED_HEADER.lower() in response.headers):
            request.meta["sluice_refused_navigation"] = str(response.url)

    page.on("requestfailed", failed)
    page.on("response", answered)


def without_browser_options(request: Request) -> Request:
    """The request as it was before this middleware dressed it for the browser.

    A request sent again (a retry) starts afresh: the browser's options and what the last
    attempt's navigation saw belong to that attempt, and the options are added again on the
    way down.
    """
    meta = {key: value for key, value in request.meta.items()
            if not key.startswith(("playwright", "sluice_failed_navigation",
                                   "sluice_refused_navigation"))}
    return request.replace(meta=meta)


def abort_request(request: Any) -> bool:
    """Playwright's request filter: no media, and nothing but http(s) (no file: or data: pages)."""
    if not str(request.url).startswith(("http://", "https://")):
        return True
    return str(request.resource_type) in BLOCKED_RESOURCES


def browser_settings(settings: Settings) -> dict[str, Any]:
    """The Scrapy settings that install the browser, or none when rendering is impossible."""
    browser = settings.browser
    if browser.render == "never" or not browser.path:
        return {}
    handler = f"{__name__}.BrowserDownloadHandler"
    return {
        "DOWNLOAD_HANDLERS": {"http": handler, "https": handler},
        "PLAYWRIGHT_BROWSER_TYPE": "chromium",
        "PLAYWRIGHT_LAUNCH_OPTIONS": {
            "executable_path": browser.path, "headless": True,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--disable-background-networking", "--disable-component-update",
                     "--no-first-run", "--disable-sync", "--disable-quic",
                     "--disable-extensions", "--mute-audio"],
        },
        "PLAYWRIGHT_MAX_CONTEXTS": 1,
        "PLAYWRIGHT_MAX_PAGES_PER_CONTEXT": browser.max_pages,
        "PLAYWRIGHT_DEFAULT_NAVIGATION_TIMEOUT": browser.navigation_timeout * 1000,
        "PLAYWRIGHT_ABORT_REQUEST": abort_request,
        "PLAYWRIGHT_RESTART_DISCONNECTED_BROWSER": True,
    }


class RenderMiddleware:
    unavailable_logged = False

    def __init__(self, crawler: Crawler, settings: Settings) -> None:
        self.crawler = crawler
        self.timeout_ms = settings.browser.navigation_timeout * 1000
        self.text_wait_ms = self.timeout_ms / 2
        self.available = bool(browser_settings(settings))
        self.guard = browser_guard(crawler)

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        settings: Settings = crawler.settings.get("SLUICE_SETTINGS") or get_settings()
        if settings.browser.render == "never":
            raise NotConfigured("rendering is off (render policy: never)")
        return cls(crawler, settings)

    def process_request(self, request: Request) -> None:
        if not request.meta.get("sluice_render") or request.meta.get("playwright"):
            return None
        if not self.available:
            self._log_unavailable("no browser found (set SLUICE_BROWSER__PATH)")
            raise RenderFailed("no browser available", "render_unavailable")
        if not request.meta.get("sluice_render_crashed"):  # a retry is counted apart
            self.crawler.stats.inc_value("sluice/render/requests")
            self.crawler.stats.inc_value(
                f"sluice/render/why/{request.meta.get('sluice_render_reason', 'unknown')}")
        request.meta.update(
            playwright=True, playwright_context="render",
            playwright_context_kwargs=CONTEXT_OPTIONS,
            playwright_page_goto_kwargs={"wait_until": "domcontentloaded",
                                         "timeout": self.timeout_ms},
            playwright_page_methods=[PageMethod("wait_for_function", TEXT_PRESENT,
                                                arg=self.text_wait_ms, timeout=self.timeout_ms)],
            playwright_page_init_callback=f"{__name__}.watch_navigations",
        )
        return None

    async def process_response(self, request: Request, response: Response) -> Response:
        """A render that ended anywhere but on a page of an allowed address is a failure: the
        guard's refusal, or the browser's own error page (a navigation refused or failed)."""
        if not request.meta.get("playwright"):
            return response
        if response.headers.get(REFUSED_HEADER):
            raise self._failed(request, "blocked_address", f"{response.url} refused")
        if not response.url.startswith(("http://", "https://")):
            failed = request.meta.get("sluice_failed_navigation") or ""
            refused = await self._navigated_to_refused_address(request)
            raise self._failed(request, "blocked_address" if refused else "render_failed",
                               f"the browser ended on {response.url[:40]} after {failed[:200]}")
        if self.guard is not None and host_of(response.url) != host_of(request.url):
            refusal = await self.guard.refused(response.url)
            if refusal is not None:
                raise self._failed(request, "blocked_address", str(refusal))
        return response

    def _failed(self, request: Request, reason: str, detail: str) -> RenderFailed:
        self.crawler.stats.inc_value(f"sluice/render/failed/{reason}")
        logger.info("render of %s failed (%s): %s", request.url, reason, detail)
        return RenderFailed(f"render of {request.url} failed: {detail}", reason)

    async def process_exception(self, request: Request, exception: BaseException
                                ) -> Request | None:
        if not request.meta.get("playwright"):
            return None
        reason = _reason_for(exception)
        if await self._navigated_to_refused_address(request):
            # The page went to a refused address and the render then failed: a page that
            # navigates away as its first document loads can leave Playwright waiting on that
            # first document until the timeout. What the row must say is the refusal.
            reason = "blocked_address"
        if reason == "render_crashed" and not request.meta.get("sluice_render_crashed"):
            return self._retry_after_crash(request, exception)
        if reason == "render_unavailable":
            self._log_unavailable(str(exception).splitlines()[0][:200])
        self.crawler.stats.inc_value(f"sluice/render/failed/{reason}")
        raise RenderFailed(f"render of {request.url} failed: {type(exception).__name__}",
                           reason) from exception

    async def _navigated_to_refused_address(self, request: Request) -> bool:
        """Did the page itself navigate where the guard refuses (answered by its proxy, or
        aborted by the browser's request filter)?"""
        if request.meta.get("sluice_refused_navigation"):
            return True
        failed = request.meta.get("sluice_failed_navigation")
        return bool(failed and self.guard and await self.guard.refused(failed) is not None)

    def _retry_after_crash(self, request: Request, exception: BaseException) -> Request:
        """The same render once more, in the restarted browser: a fresh request (the browser's
        options are added again on its way down), past the duplicate filter."""
        self.crawler.stats.inc_value("sluice/render/retried_after_crash")
        logger.warning("the browser died while rendering %s (%s); rendering it once more",
                       request.url, str(exception).splitlines()[0][:200])
        retry = without_browser_options(request)
        return retry.replace(dont_filter=True,
                             meta={**retry.meta, "sluice_render_crashed": True})

    def _log_unavailable(self, detail: str) -> None:
        if not RenderMiddleware.unavailable_logged:
            RenderMiddleware.unavailable_logged = True
            logger.error("the browser cannot be started (%s): pages that need JavaScript will "
                         "be recorded as fetch_failed/render_unavailable", detail)


def _reason_for(exception: BaseException) -> str:
    name = type(exception).__name__
    # Only the first line: Playwright appends the browser's own log (its command line, every
    # line Chromium printed), where "launching", "timeout" or "no such file" say nothing of
    # what went wrong.
    text = (str(exception).splitlines() or [""])[0].lower()
    if isinstance(exception, BrowserDied):
        return "render_crashed"
    if "timeout" in name.lower() or "timeout" in text:
        return "render_timeout"
    if any(sign in text for sign in ("executable", "launch", "no such file")):
        return "render_unavailable"
    if name == "TargetClosedError" or "closed" in text or "crash" in text:
        # The page, its context or the whole browser died under the render ("Target page,
        # context or browser has been closed", "Page crashed"): not a browser that cannot start.
        return "render_crashed"
    return "render_failed"
