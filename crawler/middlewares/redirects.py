"""Redirect hops belong to the URL they started from and are never dropped as duplicates.

Scrapy's redirect middleware builds each hop from the request it follows, and the scheduler's
duplicate filter then drops a hop whose URL was already requested: a redirect loop, or a chain
that passes through another listed URL. The dropped hop has no callback and no errback, so the
URL it started from would never get a row. Marking article requests `dont_filter` before they
are downloaded makes every hop inherit it; `REDIRECT_MAX_TIMES` still bounds loops, and ends
them as `fetch_failed`/`too_many_redirects`.
"""

from __future__ import annotations

from typing import Self

from scrapy import Request
from scrapy.crawler import Crawler
from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware, RedirectMiddleware
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response


class RedirectHopsMiddleware:
    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        return cls()

    def process_request(self, request: Request) -> None:
        # Only article and feed requests carry a row; Scrapy's own (robots.txt) keep the filter.
        if "sluice_url" in request.meta or "sluice_feed" in request.meta:
            request.dont_filter = True
        return None


class BadRedirect(IgnoreRequest):
    """A redirect to what cannot be fetched: `mailto:`, `javascript:`, a malformed URL."""

    reason = "bad_redirect"


class CheckedRedirectMiddleware(RedirectMiddleware):
    """Scrapy's HTTP redirects; one whose Location cannot be a request (Scrapy raises a bare
    ValueError building it) ends the URL as `fetch_failed`/`bad_redirect`."""

    def process_response(self, request: Request, response: Response,
                         spider: object = None) -> Request | Response:
        try:
            return super().process_response(request, response)
        except ValueError as exc:
            raise BadRedirect(f"redirect that cannot be followed: {exc}") from None


# Scrapy looks for the refresh tag in the first 4,096 characters: at most 16 KB of UTF-8.
REFRESH_WINDOW_BYTES = 4 * 4096


class CheapMetaRefreshMiddleware(MetaRefreshMiddleware):
    """Scrapy's `<meta http-equiv="refresh">` redirects, without decoding every page.

    Scrapy decodes a page's whole body on the reactor thread to look at its first characters
    (and keeps the decoded copy with the response). A page whose first bytes do not hold the
    word "refresh" has no such tag, so only the few that do are decoded.
    """

    def process_response(self, request: Request, response: Response,
                         spider: object = None) -> Request | Response:
        if b"refresh" not in response.body[:REFRESH_WINDOW_BYTES].lower():
            return response
        try:
            return super().process_response(request, response)
        except (LookupError, UnicodeError):
            # A charset Python cannot decode with (`charset=zlib`): no refresh is read, and
            # extraction detects the page's real encoding.
            return response
