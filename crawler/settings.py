"""Scrapy settings, derived from Sluice's one settings object. No second source of truth."""

from __future__ import annotations

from typing import Any

from crawler.middlewares.render import browser_settings
from sluice.config import Settings, get_settings

BOT_NAME = "sluice"
SPIDER_MODULES = ["crawler.spiders"]
NEWSPIDER_MODULE = "crawler.spiders"

ITEM_PIPELINES = {
    "crawler.pipelines.extract.ExtractPipeline": 300,
    "crawler.pipelines.store.StorePipeline": 800,
}
SSRF_MIDDLEWARE = {"crawler.middlewares.ssrf.SSRFGuardMiddleware": 50}
RENDER_MIDDLEWARE = {"crawler.middlewares.render.RenderMiddleware": 60}


def scrapy_settings(settings: Settings) -> dict[str, Any]:
    """The Scrapy settings for a crawl with these Sluice settings."""
    fetch = settings.fetch
    return {
        "BOT_NAME": BOT_NAME,
        "SPIDER_MODULES": SPIDER_MODULES,
        "NEWSPIDER_MODULE": NEWSPIDER_MODULE,
        "ITEM_PIPELINES": ITEM_PIPELINES,
        "DOWNLOADER_MIDDLEWARES": {**({} if settings.allow_private_networks else SSRF_MIDDLEWARE),
                                   **({} if settings.browser.render == "never"
                                      else RENDER_MIDDLEWARE)},
        "USER_AGENT": fetch.user_agent,
        "ROBOTSTXT_OBEY": fetch.obey_robots,
        "DOWNLOAD_TIMEOUT": fetch.timeout,
        "DOWNLOAD_MAXSIZE": fetch.max_bytes,
        "DOWNLOAD_WARNSIZE": 0,
        "RETRY_ENABLED": True,
        "RETRY_TIMES": fetch.retries,
        "CONCURRENT_REQUESTS": fetch.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": fetch.per_site_concurrency,
        "DOWNLOAD_DELAY": fetch.per_site_delay,
        "CONCURRENT_ITEMS": 4,
        "REDIRECT_MAX_TIMES": 10,
        "COOKIES_ENABLED": False,
        # Every status reaches the spider, so each one becomes a row with its reason.
        "HTTPERROR_ALLOW_ALL": True,
        # Both are remote code execution endpoints on localhost; a crawler needs neither.
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "SLUICE_SETTINGS": settings,
        **browser_settings(settings),
    }


globals().update({key: value for key, value in scrapy_settings(get_settings()).items()
                  if key != "SLUICE_SETTINGS"})
