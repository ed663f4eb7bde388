"""Suitability classification: is a page a real article (or documentation) worth keeping?

`classify_page` is the one entry point (`classify_pages` its batched form); the Celery task,
the embedded pipeline and the benchmark all call it. Tiers run cheapest first: rules that are
almost never wrong, then the local page-type model, then (only when configured, and only for
pages whose score falls in the uncertainty band) an LLM. Unsuitable pages keep their text;
the caller gives them the `unsuitable_content` status.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from sluice.classification.llm import LLMClassifier
from sluice.classification.model import PageInput, load_model
from sluice.classification.policy import DEFAULT_POLICY, PAGE_TYPES, SuitabilityPolicy
from sluice.classification.rules import apply_rules
from sluice.classification.verdicts import (
    fallback_verdict,
    verdict_from_llm,
    verdict_from_model,
    verdict_from_rule,
)
from sluice.config import LLMSettings, Settings, get_settings
from sluice.records import Extraction, Verdict

__all__ = ["PAGE_TYPES", "SuitabilityPolicy", "classify_page", "classify_pages"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class PageRequest:
    """One page to classify (for `classify_pages`)."""

    html: str | bytes
    url: str | None = None
    extraction: Extraction | None = None


def _as_text(html: str | bytes) -> str:
    if isinstance(html, bytes):
        # The extractor's charset handling, so EUC-KR and other legacy pages read right.
        from sluice.extraction.decoding import decode_html

        return decode_html(html)
    return html


def _extract(html: str | bytes, url: str | None) -> Extraction:
    # Imported here: extraction pulls in trafilatura, which pre-extracted callers never need.
    from sluice.extraction import extract

    return extract(html, url=url)


_LLM_CLIENTS: dict[tuple[object, ...], LLMClassifier] = {}
_LLM_CLIENTS_LOCK = threading.Lock()


def _llm_client(settings: LLMSettings) -> LLMClassifier:
    """One client (with its rate limit and cache) per distinct LLM configuration."""
    key = settings.api_key.get_secret_value() if settings.api_key else None
    identity = (settings.url, settings.model, key, settings.timeout, settings.requests_per_minute)
    with _LLM_CLIENTS_LOCK:
        if identity not in _LLM_CLIENTS:
            _LLM_CLIENTS[identity] = LLMClassifier(settings)
        return _LLM_CLIENTS[identity]


def _uncertain(verdict: Verdict, settings: LLMSettings) -> bool:
    return settings.enabled and settings.uncertain_low <= verdict.score <= settings.uncertain_high


def _ask_llm(
    verdict: Verdict, page: PageInput, policy: SuitabilityPolicy, settings: LLMSettings
) -> Verdict:
    if not _uncertain(verdict, settings):
        return verdict
    answer = _llm_client(settings).classify(page.extraction, page.url, policy)
    return verdict if answer is None else verdict_from_llm(answer, policy)


def _page_input(request: PageRequest) -> PageInput:
    html = _as_text(request.html)
    extraction = request.extraction or _extract(html, request.url)
    return PageInput(extraction, html, request.url)


def classify_pages(
    pages: Sequence[PageRequest],
    *,
    policy: SuitabilityPolicy = DEFAULT_POLICY,
    settings: Settings | None = None,
    llm: LLMSettings | None = None,
) -> list[Verdict]:
    """Classify many pages; the model runs once over all pages no rule claimed.

    The LLM tier's settings come from `llm`, else `settings.llm`, else the process settings.
    """
    if llm is None:
        llm = (settings or get_settings()).llm
    inputs = [_page_input(p) for p in pages]
    verdicts: list[Verdict | None] = []
    for page in inputs:
        hit = apply_rules(page.html or "", page.url, page.extraction)
        verdicts.append(verdict_from_rule(hit, policy) if hit else None)
    undecided = [i for i, v in enumerate(verdicts) if v is None]
    model = load_model()
    scores = model.predict([inputs[i] for i in undecided]) if model and undecided else []
    for i, type_scores in zip(undecided, scores, strict=False):
        verdicts[i] = _ask_llm(verdict_from_model(type_scores, policy), inputs[i], policy, llm)
    final = [v if v is not None else fallback_verdict(policy) for v in verdicts]
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
    settings: Settings | None = None,
    llm: LLMSettings | None = None,
) -> Verdict:
    """Classify one page: its type, whether it is suitable, how sure, why, and which tier.

    `extraction` is computed when not given. The LLM tier (settings from `llm`, else
    `settings.llm`, else the process settings) runs only when it is configured and the model
    is unsure. Callers give unsuitable pages the `unsuitable_content` status and keep the text.
    """
    request = PageRequest(html, url, extraction)
    return classify_pages([request], policy=policy, settings=settings, llm=llm)[0]
