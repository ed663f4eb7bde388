"""Scrapy settings, derived from Sluice's one settings object. No second source of truth."""

from __future__ import annotations

from typing import Any

from crawler.middlewares.render import browser_settings
from crawler.middlewares.ssrf import ssrf_settings
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
REDIRECT_HOPS_MIDDLEWARE = {"crawler.middlewares.redirects.RedirectHopsMiddleware": 590}
REDIRECT_MIDDLEWARE = {"scrapy.downloadermiddlewares.redirect.RedirectMiddleware": None,
                       "crawler.middlewares.redirects.CheckedRedirectMiddleware": 600}
META_REFRESH_MIDDLEWARE = {"scrapy.downloadermiddlewares.redirect.MetaRefreshMiddleware": None,
                           "crawler.middlewares.redirects.CheapMetaRefreshMiddleware": 580}
RETRY_MIDDLEWARE = {"scrapy.downloadermiddlewares.retry.RetryMiddleware": None,
                    "crawler.middlewares.retry.BackoffRetryMiddleware": 550}
# Near the download, so every attempt (retries and redirects too) takes a slot.
POLITENESS_MIDDLEWARE = {"crawler.middlewares.politeness.SharedPolitenessMiddleware": 900}
# Closest to the download (after the politeness wait, so a request is checked as it is about
# to go out), and above the retry middleware, so exceptions reach it first: it counts every try.
UNREACHABLE_MIDDLEWARE = {"crawler.middlewares.unreachable.UnreachableSiteMiddleware": 950}
EXTENSIONS = {"crawler.extensions.crawl_delay.CrawlDelay": 500}


def scrapy_settings(settings: Settings, shared_frontier: bool = False) -> dict[str, Any]:
    """The Scrapy settings for a crawl with these Sluice settings; `shared_frontier` for the
    long-running crawler processes that share the frontier and duplicate filter through Redis."""
    fetch = settings.fetch
    return {
        "BOT_NAME": BOT_NAME,
        "SPIDER_MODULES": SPIDER_MODULES,
        "NEWSPIDER_MODULE": NEWSPIDER_MODULE,
        "ITEM_PIPELINES": ITEM_PIPELINES,
        "DOWNLOADER_MIDDLEWARES": {**({} if settings.allow_private_networks else SSRF_MIDDLEWARE),
                                   **({} if settings.browser.render == "never"
                                      else RENDER_MIDDLEWARE),
                                   **RETRY_MIDDLEWARE, **UNREACHABLE_MIDDLEWARE,
                                   **REDIRECT_HOPS_MIDDLEWARE, **REDIRECT_MIDDLEWARE,
                                   **META_REFRESH_MIDDLEWARE,
                                   **(POLITENESS_MIDDLEWARE if settings.redis_url else {})},
        "USER_AGENT": fetch.user_agent,
        "ROBOTSTXT_OBEY": fetch.obey_robots,
        "DOWNLOAD_TIMEOUT": fetch.timeout,
        "DOWNLOAD_MAXSIZE": fetch.max_bytes,
        "DOWNLOAD_WARNSIZE": 0,
        "RETRY_ENABLED": True,
        "RETRY_TIMES": fetch.retries,
        "CONCURRENT_REQUESTS": fetch.concurrency,
        "CONCURRENT_REQUESTS_PER_DOMAIN": fetch.per_site_concurrency,
        # With Redis, the shared politeness keeps the delay across processes instead.
        "DOWNLOAD_DELAY": 0.0 if settings.redis_url else fetch.per_site_delay,
        "CONCURRENT_ITEMS": 4,
        "REDIRECT_MAX_TIMES": 10,
        # One fingerprint per row key: see crawler/fingerprint.py.
        "REQUEST_FINGERPRINTER_CLASS": "crawler.fingerprint.ExactURLFingerprinter",
        "COOKIES_ENABLED": False,
        # Every status reaches the spider, so each one becomes a row with its reason.
        "HTTPERROR_ALLOW_ALL": True,
        # Both are remote code execution endpoints on localhost; a crawler needs neither.
        "TELNETCONSOLE_ENABLED": False,
        "REMOTE_CONTROL_ENABLED": False,
        "LOG_LEVEL": "INFO",
        "EXTENSIONS": EXTENSIONS,
        "SLUICE_SETTINGS": settings,
        **browser_settings(settings),
        **ssrf_settings(settings, browser_settings(settings)),
        **(shared_frontier_settings(settings.redis_url)
           if shared_frontier and settings.redis_url else {}),
    }


def shared_frontier_settings(redis_url: str) -> dict[str, Any]:
    """The long-running crawler processes: a duplicate filter shared through Redis, and each
    process's own in-memory scheduler (oldest first within a priority, as the frontier).

    The scheduler is not shared on purpose. A request is then in exactly one process, the one
    that popped its URL and keeps its lease alive; when that process dies, its URLs' leases
    lapse and the sweep pushes them again. Requests in a shared queue could be taken by another
    process and die with it while the popping process went on renewing their leases."""
    return {
        "REDIS_URL": redis_url,
        "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
        "DUPEFILTER_CLASS": "crawler.dupefilter.ExpiringDupeFilter",
        "REDIS_START_URLS_AS_ZSET": True,
        "MAX_IDLE_TIME_BEFORE_CLOSE": 0,
        "EXTENSIONS": {**EXTENSIONS, "crawler.extensions.heartbeat.Heartbeat": 500},
    }


globals().update({key: value for key, value in scrapy_settings(get_settings()).items()
                  if key != "SLUICE_SETTINGS"})
