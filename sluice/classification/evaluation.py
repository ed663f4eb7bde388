"""Honest evaluation of the rules and the model: cross-validated by site.

No site is in both the training and the test part of a fold, so the score says how the
classifier does on sites it has never seen. Pages a rule claims get the rule's verdict; the
others get the verdict of a model trained without their site.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from sluice.classification.model import TypeScores
from sluice.classification.policy import DEFAULT_POLICY, SuitabilityPolicy
from sluice.classification.rules import apply_rules
from sluice.classification.train import INNER_FOLDS, TrainingSet, grouped_cv_probabilities
from sluice.classification.verdicts import verdict_from_model, verdict_from_rule
from sluice.records import Verdict


@dataclass(frozen=True, slots=True)
class Scored:
    """One page's truth and its cross-validated verdict."""

    corpus: str
    true_type: str
    truly_suitable: bool
    verdict: Verdict


def truth_of(corpus: str, page_type: str, suitable: bool | None, policy: SuitabilityPolicy) -> bool:
    """WCXB's truth comes from its reviewed type; the labelled texts carry their own label."""
    if corpus == "wcxb" or suitable is None:
        return policy.is_suitable(page_type)
    return suitable


def cross_validated(
    data: TrainingSet,
    folds: int = 5,
    inner_folds: int = INNER_FOLDS,
    policy: SuitabilityPolicy = DEFAULT_POLICY,
) -> list[Scored]:
    """Every page's verdict from the rules, or else from a model that never saw its site."""
    classes, probabilities = grouped_cv_probabilities(data, folds, inner_folds)
    scored = []
    for sample, row in zip(data.samples, probabilities, strict=True):
        hit = apply_rules(sample.html() or "", sample.url, sample.extraction)
        if hit is not None:
            verdict = verdict_from_rule(hit, policy)
        else:
            scores = TypeScores(tuple(classes), tuple(float(p) for p in row))
            verdict = verdict_from_model(scores, policy)
        truth = truth_of(sample.corpus, sample.page_type, sample.suitable, policy)
        scored.append(Scored(sample.corpus, sample.page_type, truth, verdict))
    return scored


def binary_accuracy(scored: list[Scored]) -> float:
    if not scored:
        return float("nan")
    return float(np.mean([s.verdict.suitable == s.truly_suitable for s in scored]))
