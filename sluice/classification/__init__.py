"""Suitability classification: is a page a real article (or documentation) worth keeping?

`classify_page` is the one entry point; the Celery task, the embedded pipeline and the
benchmark all call it. Tiers run cheapest first: rules that are almost never wrong, then a
local model, then (optionally) an LLM for pages the model is unsure about.
"""

from __future__ import annotations

import logging

from sluice.classification.policy import (
    DEFAULT_POLICY,
    PAGE_TYPES,
    SuitabilityPolicy,
)
from sluice.classification.rules import RuleHit, apply_rules
from sluice.records import Extraction, Verdict

__all__ = ["PAGE_TYPES", "SuitabilityPolicy", "classify_page"]

logger = logging.getLogger(__name__)

# Rule verdicts are near-certain; their scores say so without claiming perfection.
_RULE_SCORE_SUITABLE = 0.97
_RULE_SCORE_UNSUITABLE = 0.03
_DEFAULT_SCORE = 0.75


def _as_text(html: str | bytes) -> str:
    if isinstance(html, bytes):
        return html.decode("utf-8", errors="replace")
    return html


def _extract(html: str | bytes, url: str | None) -> Extraction:
    # Imported here so the classifier loads even where only pre-extracted text is classified.
    from sluice.extraction import extract

    return extract(html, url=url)


def _verdict_from_rule(hit: RuleHit, policy: SuitabilityPolicy) -> Verdict:
    suitable = policy.is_suitable(hit.page_type) and not hit.unusable
    score = _RULE_SCORE_SUITABLE if suitable else _RULE_SCORE_UNSUITABLE
    return Verdict(suitable, hit.page_type, hit.reason, "rules", score)


def classify_page(
    html: str | bytes,
    url: str | None = None,
    extraction: Extraction | None = None,
    *,
    policy: SuitabilityPolicy = DEFAULT_POLICY,
) -> Verdict:
    """Classify one page: its type, whether it is suitable, how sure, why, and which tier."""
    if extraction is None:
        extraction = _extract(html, url)
    text_html = _as_text(html)
    hit = apply_rules(text_html, url, extraction)
    if hit is not None:
        logger.debug("rules: %s -> %s (%s)", url, hit.page_type, hit.code)
        return _verdict_from_rule(hit, policy)
    suitable = policy.is_suitable("article")
    return Verdict(
        suitable,
        "article",
        "No rule found a problem; the page reads like an article.",
        "rules",
        _DEFAULT_SCORE,
    )
