"""Frontier entries, Retry-After parsing and what a retried render carries."""

from __future__ import annotations

import time
from email.utils import formatdate

import pytest

from crawler.middlewares.retry import retry_after_seconds
from sluice.frontier import PRIORITY_FEED, PRIORITY_INGEST, FrontierEntry, score


def test_entries_round_trip_and_are_canonical() -> None:
    entry = FrontierEntry(url="https://a.example/x", source="file.txt", render="always")
    assert FrontierEntry.from_json(entry.to_json()) == entry
    assert entry.to_json() == FrontierEntry(**{"render": "always", "source": "file.txt",
                                               "url": "https://a.example/x"}).to_json()


@pytest.mark.parametrize("raw", [b"not json", b"[]", b'{"kind": "article"}', b'{"url": 3}'])
def test_malformed_entries_are_refused(raw: bytes) -> None:
    with pytest.raises(ValueError):
        FrontierEntry.from_json(raw)


def test_priorities_then_age_order_the_frontier() -> None:
    now = time.time()
    assert score(PRIORITY_FEED, now) > score(PRIORITY_INGEST, now)
    assert score(PRIORITY_INGEST, now) > score(PRIORITY_INGEST, now + 10)  # older first


def test_retry_after() -> None:
    assert retry_after_seconds(b"120") == 120
    assert retry_after_seconds(None) is None
    assert retry_after_seconds(b"soon") is None
    later = formatdate(time.time() + 30, usegmt=True).encode()
    assert 25 <= (retry_after_seconds(later) or 0) <= 31


def test_a_retried_render_goes_back_without_its_last_attempts_browser_state() -> None:
    from scrapy import Request
    from scrapy_playwright.page import PageMethod

    from crawler.middlewares.render import without_browser_options

    dressed = Request("https://a.example/app", meta={
        "sluice_url": "https://a.example/app", "sluice_render": True, "playwright": True,
        "playwright_page_methods": [PageMethod("wait_for_function", "() => true")],
        "sluice_failed_navigation": "net::ERR_ABORTED"})
    retry = without_browser_options(dressed)
    assert retry.meta == {"sluice_url": "https://a.example/app", "sluice_render": True}
