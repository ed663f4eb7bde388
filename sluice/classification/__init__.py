"""Suitability classification: is a page a real article (or documentation) worth keeping?

`classify_page` is the one entry point (`classify_pages` its batched form); the Celery task,
the embedded pipeline and the benchmark all call it. Tiers run cheapest first: rules that are
almost never wrong, then the local page-type model, then (only when configured, and only for
pages whose score falls in the uncertainty band) an LLM. Unsuitable pages keep their text;
the caller gives them the `unsuitable_content` status.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass

from sluice.classification.llm import LLMAnswer, LLMClassifier
from sluice.classification.model import PageInput, TypeScores, load_model
from sluice.classification.policy import DEFAULT_POLICY, PAGE_TYPES, SuitabilityPolicy
from sluice.classification.rules import RuleHit, apply_rules
from sluice.config import LLMSettings, get_settings
from sluice.records import Extraction, Verdict

__all__ = ["PAGE_TYPES", "SuitabilityPolicy", "classify_page", "classify_pages"]

logger = logging.getLogger(__name__)

# Rule verdicts are near-certain; their scores say so without claiming perfection.
_RULE_SCORE_SUITABLE = 0.97
_RULE_SCORE_UNSUITABLE = 0.03
# Measured agreement of a chat model with reviewed types is not known per page: the LLM's
# verdict gets a firm but not certain score on its side of the line.
_LLM_SCORE_SUITABLE = 0.85
_LLM_SCORE_UNSUITABLE = 0.15
_NO_MODEL_SCORE = 0.75

_TYPE_PHRASES = {
    "article": "an article (news, blog post or guide)",
    "documentation": "documentation (a manual, reference or tutorial)",
    "forum": "a forum or Q&A thread",
    "product": "a product page (one item for sale)",
    "collection": "a category page or product grid",
    "listing": "a listing of links to other pages",
    "service": "a company, service or marketing page",
    "login": "a login or registration page",
    "error": "an error page",
    "other": "something other than reading content",
}


@dataclass(frozen=True, slots=True)
class PageRequest:
    """One page to classify (for `classify_pages`)."""

    html: str | bytes
    url: str | None = None
    extraction: Extraction | None = None


def _as_text(html: str | bytes) -> str:
    if isinstance(html, bytes):
        return html.decode("utf-8", errors="replace")
    return html


def _extract(html: str | bytes, url: str | None) -> Extraction:
    # Imported here: extraction pulls in trafilatura, which pre-extracted callers never need.
    from sluice.extraction import extract

    return extract(html, url=url)


def _verdict_from_rule(hit: RuleHit, policy: SuitabilityPolicy) -> Verdict:
    suitable = policy.is_suitable(hit.page_type) and not hit.unusable
    score = _RULE_SCORE_SUITABLE if suitable else _RULE_SCORE_UNSUITABLE
    return Verdict(suitable, hit.page_type, hit.reason, "rules", score)


def _verdict_from_model(scores: TypeScores, policy: SuitabilityPolicy) -> Verdict:
    score = scores.suitable_probability(policy)
    suitable = score >= 0.5
    page_type = scores.best_type(suitable, policy)
    verdict = "suitable" if suitable else "not suitable"
    reason = f"Reads like {_TYPE_PHRASES[page_type]}, so {verdict} ({score:.0%} suitable)."
    return Verdict(suitable, page_type, reason, "model", round(score, 4))


def _verdict_from_llm(answer: LLMAnswer, policy: SuitabilityPolicy) -> Verdict:
    # The policy decides which types are suitable; the LLM may only veto a suitable type.
    suitable = policy.is_suitable(answer.page_type) and answer.suitable
    score = _LLM_SCORE_SUITABLE if suitable else _LLM_SCORE_UNSUITABLE
    return Verdict(suitable, answer.page_type, answer.reason, "llm", score)


def _fallback_verdict(policy: SuitabilityPolicy) -> Verdict:
    reason = "No rule found a problem and no model is installed; assumed to be an article."
    return Verdict(policy.is_suitable("article"), "article", reason, "rules", _NO_MODEL_SCORE)


@functools.cache
def _llm_client(settings: LLMSettings) -> LLMClassifier:
    return LLMClassifier(settings)


def _uncertain(verdict: Verdict, settings: LLMSettings) -> bool:
    return settings.enabled and settings.uncertain_low <= verdict.score <= settings.uncertain_high


def _ask_llm(
    verdict: Verdict, page: PageInput, policy: SuitabilityPolicy, settings: LLMSettings
) -> Verdict:
    if not _uncertain(verdict, settings):
        return verdict
    answer = _llm_client(settings).classify(page.extraction, page.url, policy)
    return verdict if answer is None else _verdict_from_llm(answer, policy)


def classify_pages(
    pages: Sequence[PageRequest],
    *,
    policy: SuitabilityPolicy = DEFAULT_POLICY,
    llm: LLMSettings | None = None,
) -> list[Verdict]:
    """Classify many pages; the model runs once over all pages no rule claimed."""
    llm = llm if llm is not None else get_settings().llm
    inputs = [
        PageInput(p.extraction or _extract(p.html, p.url), _as_text(p.html), p.url) for p in pages
    ]
    verdicts: list[Verdict | None] = []
    for page in inputs:
        hit = apply_rules(page.html or "", page.url, page.extraction)
        verdicts.append(_verdict_from_rule(hit, policy) if hit else None)
    undecided = [i for i, v in enumerate(verdicts) if v is None]
    model = load_model()
    scores = model.predict([inputs[i] for i in undecided]) if model and undecided else []
    for i, type_scores in zip(undecided, scores, strict=False):
        verdicts[i] = _ask_llm(_verdict_from_model(type_scores, policy), inputs[i], policy, llm)
    final = [v if v is not None else _fallback_verdict(policy) for v in verdicts]
    for page, verdict in zip(inputs, final, strict=True):
        logger.debug(
            "%s: %s by %s (%.2f)", page.url, verdict.page_type, verdict.classified_by, verdict.score
        )
    return final


def classify_page(
    html: str | bytes,
    url: str | None = None,
    extraction: Extraction | None = None,
    *,
    policy: SuitabilityPolicy = DEFAULT_POLICY,
    llm: LLMSettings | None = None,
) -> Verdict:
    """Classify one page: its type, whether it is suitable, how sure, why, and which tier.

    `extraction` is computed when not given. `llm` defaults to the process settings; the LLM
    tier runs only when it is configured and the model is unsure.
    """
    return classify_pages([PageRequest(html, url, extraction)], policy=policy, llm=llm)[0]
