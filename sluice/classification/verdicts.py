"""Verdicts from each tier: the suitability policy applied, a score, and a plain reason."""

from __future__ import annotations

from sluice.classification.llm import LLMAnswer
from sluice.classification.model import TypeScores
from sluice.classification.policy import SuitabilityPolicy
from sluice.classification.rules import RuleHit
from sluice.records import Verdict

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


def verdict_from_rule(hit: RuleHit, policy: SuitabilityPolicy) -> Verdict:
    suitable = policy.is_suitable(hit.page_type) and not hit.unusable
    score = _RULE_SCORE_SUITABLE if suitable else _RULE_SCORE_UNSUITABLE
    return Verdict(suitable, hit.page_type, hit.reason, "rules", score)


def verdict_from_model(scores: TypeScores, policy: SuitabilityPolicy) -> Verdict:
    score = scores.suitable_probability(policy)
    suitable = score >= 0.5
    page_type = scores.best_type(suitable, policy)
    verdict = "suitable" if suitable else "not suitable"
    reason = f"Reads like {_TYPE_PHRASES[page_type]}, so {verdict} ({score:.0%} suitable)."
    return Verdict(suitable, page_type, reason, "model", round(score, 4))


def verdict_from_llm(answer: LLMAnswer, policy: SuitabilityPolicy) -> Verdict:
    # The policy decides which types are suitable; the LLM may only veto a suitable type.
    suitable = policy.is_suitable(answer.page_type) and answer.suitable
    score = _LLM_SCORE_SUITABLE if suitable else _LLM_SCORE_UNSUITABLE
    return Verdict(suitable, answer.page_type, answer.reason, "llm", score)


def fallback_verdict(policy: SuitabilityPolicy) -> Verdict:
    reason = "No rule found a problem and no model is installed; assumed to be an article."
    return Verdict(policy.is_suitable("article"), "article", reason, "rules", _NO_MODEL_SCORE)
