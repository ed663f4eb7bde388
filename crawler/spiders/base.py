"""What every spider does with an article URL: fetch it, turn the response into one item."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import scrapy
from scrapy.http import Response
from twisted.python.failure import Failure
from w3lib.encoding import http_content_type_encoding

from crawler.failures import is_html, is_login_redirect, reason_for_failure, reason_for_status
from crawler.items import FailureItem, PageItem
from crawler.middlewares.retry import is_retry_later
from sluice.config import Settings, get_settings
from sluice.db import make_engine
from sluice.db.sites import SiteRenderState, load_render_states
from sluice.records import FetchedPage
from sluice.render_policy import choose_fetch_mode
from sluice.urls import host_of


class ArticleSpider(scrapy.Spider):
    """Base spider: `article_request` builds the request, the callbacks always yield one item."""

    site_states: dict[str, SiteRenderState]

    @property
    def sluice_settings(self) -> Settings:
        return self.crawler.settings.get("SLUICE_SETTINGS") or get_settings()

    def load_site_states(self) -> None:
        """Read what earlier crawls learned about each site (a small table, read once)."""
        engine = make_engine(self.sluice_settings.database_url)
        with engine.connect() as conn:
            self.site_states = load_render_states(conn)
        engine.dispose()

    def article_request(self, url: str, source: str | None, render_policy: str | None = None,
                        **meta: Any) -> scrapy.Request:
        """The request for an article: static first, unless the policy or the site's history
        says this site needs the browser."""
        state = getattr(self, "site_states", {}).get(host_of(url))
        configured = self.sluice_settings.browser.render
        # `never` in the settings turns the browser off (it is not even started): it wins
        # over what a site or a URL asks for, and the row says the page was fetched statically.
        policy = "never" if configured == "never" else (
            render_policy or (state.render_policy if state else None) or configured)
        mode = choose_fetch_mode(policy, state.render_mode if state else None,
                                 state.learned_at if state else None, datetime.now(UTC))
        if mode == "browser" and "sluice_render" not in meta:
            meta.update(sluice_render=True,
                        sluice_render_reason="policy_always" if policy == "always"
                        else "learned_site")
        return scrapy.Request(url, callback=self.parse_article, errback=self.article_failed,
                              dont_filter="sluice_render" in meta,
                              meta={"sluice_url": url, "sluice_source": source,
                                    "sluice_render_policy": policy, **meta})

    def parse_article(self, response: Response) -> Iterator[PageItem | FailureItem]:
        url = response.meta["sluice_url"]
        source = response.meta.get("sluice_source")
        reason = self._refusal(url, response)
        if reason is not None:
            self.crawler.stats.inc_value(f"sluice/status/fetch_failed/{reason}")
            yield FailureItem(url, reason, source, response.status, response.url)
            return
        # Only the header's charset is taken here: finding one in the body means decoding it,
        # CPU work that belongs in the extraction pool (which detects it), not on the reactor.
        yield PageItem(FetchedPage(
            url=url, final_url=response.url, http_status=response.status, body=response.body,
            content_type=_content_type(response), encoding=_header_charset(response),
            rendered=bool(response.meta.get("sluice_render")), fetched_at=datetime.now(UTC),
            source=source), render_policy=response.meta.get("sluice_render_policy"))

    def article_failed(self, failure: Failure) -> Iterator[FailureItem]:
        if is_retry_later(failure):
            return  # this attempt failed, the retry is on its way: its outcome is recorded
        request = failure.request  # type: ignore[attr-defined]
        reason = reason_for_failure(failure)
        self.crawler.stats.inc_value(f"sluice/status/fetch_failed/{reason}")
        self.logger.debug("fetch failed %s: %s (%s: %s)", request.url, reason,
                          failure.type.__name__, failure.getErrorMessage())
        yield FailureItem(request.meta.get("sluice_url", request.url), reason,
                          request.meta.get("sluice_source"),
                          rendered=bool(request.meta.get("sluice_render")))

    @staticmethod
    def _refusal(url: str, response: Response) -> str | None:
        """Why this response cannot hold an article, or None when it may."""
        reason = reason_for_status(response.status)
        if reason is not None:
            return reason
        if is_login_redirect(url, response.url):
            return "login_required"
        if not is_html(_content_type(response), response.body):
            return "not_html"
        return None


def _header_charset(response: Response) -> str | None:
    """The charset the Content-Type header names (as browsers map it), or None. Decoding
    checks it is a usable text encoding (`charset=base64` is not) before trusting it."""
    return http_content_type_encoding(_content_type(response))


def _content_type(response: Response) -> str:
    value = response.headers.get(b"Content-Type") or b""
    return value.decode("latin-1")
