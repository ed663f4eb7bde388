"""The one component that turns a request into a browser render (scrapy-playwright, Chromium).

Spiders and pipelines only set `meta["sluice_render"]` (the decision lives in
`sluice.render_policy`); this middleware adds the browser's request options and turns browser
errors into reason codes. Nothing else in the project mentions Playwright.
"""

from __future__ import annotations

import logging
from typing import Any, Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.exceptions import NotConfigured
from scrapy_playwright.page import PageMethod

from sluice.config import Settings, get_settings
from sluice.errors import SluiceError

logger = logging.getLogger(__name__)

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
    handler = "scrapy_playwright.handler.ScrapyPlaywrightDownloadHandler"
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
        )
        return None

    def process_exception(self, request: Request, exception: BaseException) -> None:
        if not request.meta.get("playwright"):
            return None
        reason = _reason_for(exception)
        if reason == "render_unavailable":
            self._log_unavailable(str(exception).splitlines()[0][:200])
        self.crawler.stats.inc_value(f"sluice/render/failed/{reason}")
        raise RenderFailed(f"render of {request.url} failed: {type(exception).__name__}",
                           reason) from exception

    def _log_unavailable(self, detail: str) -> None:
        if not RenderMiddleware.unavailable_logged:
            RenderMiddleware.unavailable_logged = True
            logger.error("the browser cannot be started (%s): pages that need JavaScript will "
                         "be recorded as fetch_failed/render_unavailable", detail)


def _reason_for(exception: BaseException) -> str:
    name = type(exception).__name__
    text = str(exception).lower()
    if "timeout" in name.lower() or "timeout" in text:
        return "render_timeout"
    if any(sign in text for sign in ("executable", "launch", "browser has been closed",
                                     "failed to launch", "no such file")):
        return "render_unavailable"
    if "closed" in text or "crash" in text:
        return "render_crashed"
    return "render_failed"
