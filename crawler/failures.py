"""Reason codes for failed downloads and for responses that are not articles."""

from __future__ import annotations

import codecs
import re
from urllib.parse import urlsplit

from scrapy.exceptions import (
    CannotResolveHostError,
    DownloadCancelledError,
    DownloadConnectionRefusedError,
    DownloadFailedError,
    DownloadTimeoutError,
    IgnoreRequest,
    ResponseDataLossError,
)
from scrapy.spidermiddlewares.httperror import HttpError
from twisted.internet import error as twisted_error
from twisted.python.failure import Failure
from twisted.web._newclient import ResponseFailed, ResponseNeverReceived

from crawler.resolver import was_blocked
from sluice.errors import SluiceError
from sluice.urls import host_of

_LOGIN_PATH = re.compile(
    r"/(log-?in|sign-?in|signin|auth|sso|account/login|users?/login|session/new|subscribe/login)"
    r"(/|\.|\?|$)", re.IGNORECASE)
HTML_TYPES = ("text/html", "application/xhtml+xml")
SNIFF_BYTES = 1024


def reason_for_status(http_status: int) -> str | None:
    """The reason code for an HTTP status that means failure, or None for a usable response."""
    if http_status in (401, 403, 407):
        return "login_required"
    if http_status in (404, 410):
        return f"http_{http_status}"
    if http_status == 429:
        return "http_429"
    if 400 <= http_status < 500:
        return "http_4xx"
    if http_status >= 500:
        return "http_5xx"
    if http_status >= 300:
        return "http_3xx"
    return None


def is_login_redirect(url: str, final_url: str) -> bool:
    """A redirect that ends on a login page means the article is behind a login wall."""
    return url != final_url and bool(_LOGIN_PATH.search(urlsplit(final_url).path))


def is_html(content_type: str, body: bytes) -> bool:
    """HTML by its declared type; without one, by the markup near its start (which may come
    after a byte-order mark, a comment or an XML prolog, and a long <head>)."""
    ctype = content_type.split(";")[0].strip().lower()
    if ctype:
        return ctype in HTML_TYPES
    head = body[:SNIFF_BYTES].removeprefix(codecs.BOM_UTF8).lstrip().lower()
    if head.startswith((b"{", b"[", b"%pdf")):
        return False
    return any(tag in head for tag in (b"<!doctype html", b"<html", b"<head", b"<body"))


def reason_for_failure(failure: Failure) -> str:
    """Map a download failure to a reason code."""
    value = failure.value
    if isinstance(value, SluiceError):
        return value.reason
    if isinstance(value, HttpError):
        return reason_for_status(value.response.status) or "http_error"
    if isinstance(value, (twisted_error.DNSLookupError, CannotResolveHostError)):
        return "blocked_address" if _blocked_at_connection(failure) else "dns_error"
    if isinstance(value, (twisted_error.TimeoutError, twisted_error.TCPTimedOutError,
                          DownloadTimeoutError)):
        return "timeout"
    if isinstance(value, (twisted_error.ConnectionRefusedError, DownloadConnectionRefusedError)):
        return "connection_refused"
    if isinstance(value, DownloadCancelledError):
        # Scrapy cancels a download only when its body outgrows DOWNLOAD_MAXSIZE (declared or
        # streamed: the streamed case carries no message); running out of time raises
        # DownloadTimeoutError instead.
        return "too_large"
    if isinstance(value, ResponseDataLossError):
        return "connection_lost"
    if isinstance(value, IgnoreRequest):
        return getattr(value, "reason", None) or _reason_for_ignored(str(value))
    if isinstance(value, (ResponseFailed, ResponseNeverReceived,
                          twisted_error.ConnectionLost, twisted_error.ConnectionDone)):
        return _reason_for_response_failure(value)
    if isinstance(value, (twisted_error.ConnectError, DownloadFailedError)):
        return _reason_for_response_failure(value)
    return "fetch_error"


def _blocked_at_connection(failure: Failure) -> bool:
    """A lookup the public-address resolver refused (see crawler/resolver.py)."""
    request = getattr(failure, "request", None)
    return request is not None and was_blocked(host_of(request.url))


def _reason_for_ignored(message: str) -> str:
    lowered = message.lower()
    if "robots.txt" in lowered:
        return "robots_disallowed"
    if "redirect" in lowered:
        return "too_many_redirects"
    if "size" in lowered:
        return "too_large"
    return "ignored"


def _reason_for_response_failure(value: BaseException) -> str:
    text = repr(value).lower()
    if "maxsize" in text or "max size" in text or "larger than" in text:
        return "too_large"
    if "refused" in text:
        return "connection_refused"
    return "connection_lost"
