"""Unit tests for the suitability classifier's public function and its rule tier."""

from __future__ import annotations

from sluice.classification import classify_page
from sluice.records import Extraction

ARTICLE_TEXT = (
    "The city council voted on Tuesday to expand the bicycle network across the river. "
    "Supporters said the plan would cut traffic and make streets safer for children. "
) * 8


def test_error_page_is_unsuitable() -> None:
    html = "<html><head><title>404 Not Found</title></head><body></body></html>"
    verdict = classify_page(html, "https://example.org/x", Extraction(text="Page not found."))
    assert (verdict.suitable, verdict.page_type, verdict.classified_by) == (False, "error", "rules")


def test_near_empty_text_is_unsuitable() -> None:
    verdict = classify_page("<html></html>", None, Extraction(text="Home About Contact"))
    assert not verdict.suitable
    assert verdict.score < 0.5


def test_korean_text_counts_as_dense() -> None:
    text = "서울시는 화요일 자전거 도로망을 강 건너까지 넓히는 계획을 발표했다. " * 6
    verdict = classify_page("<html></html>", None, Extraction(text=text))
    assert verdict.page_type != "other"


def test_mojibake_is_unsuitable() -> None:
    text = "Ã©tÃ© â€™ garbled Ã¨ " * 30
    verdict = classify_page("<html></html>", None, Extraction(text=text))
    assert not verdict.suitable
    assert "encoding" in verdict.reason


def test_plain_article_is_suitable() -> None:
    verdict = classify_page("<html></html>", None, Extraction(text=ARTICLE_TEXT))
    assert verdict.suitable
    assert 0.0 <= verdict.score <= 1.0
