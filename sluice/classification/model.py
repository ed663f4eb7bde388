"""Tier 2: the local page-type model, loaded once per process from a versioned artifact.

The artifact (`model.joblib`, built by `python -m sluice.classification.train`) holds a
gradient-boosted page-type classifier over `features.page_features`, optionally stacked on a
linear text model's page-type probabilities, plus the scikit-learn version it was trained with.
The suitability score is the probability mass of the policy's suitable types, so a different
policy needs no retraining.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sluice.classification.features import feature_vector, text_document
from sluice.classification.forest import PackedForest, PackedTextModel
from sluice.classification.policy import SuitabilityPolicy
from sluice.records import Extraction

logger = logging.getLogger(__name__)

ARTIFACT = Path(__file__).with_name("model.joblib")
ARTIFACT_FORMAT = 1


@dataclass(frozen=True, slots=True)
class PageInput:
    """What the model sees of one page."""

    extraction: Extraction
    html: str | None
    url: str | None


@dataclass(frozen=True, slots=True)
class TypeScores:
    """The model's page-type probabilities for one page."""

    classes: tuple[str, ...]
    probabilities: tuple[float, ...]

    def suitable_probability(self, policy: SuitabilityPolicy) -> float:
        pairs = zip(self.classes, self.probabilities, strict=True)
        return float(min(1.0, sum(p for c, p in pairs if policy.is_suitable(c))))

    def best_type(self, suitable: bool, policy: SuitabilityPolicy) -> str:
        """The most likely page type on the side of the suitability decision."""
        pairs = zip(self.classes, self.probabilities, strict=True)
        side = [(p, c) for c, p in pairs if policy.is_suitable(c) == suitable]
        return max(side)[1] if side else "other"


class PageTypeModel:
    """The trained estimators of an artifact, applied to batches of pages."""

    def __init__(self, artifact: dict[str, Any]) -> None:
        self.classes: tuple[str, ...] = tuple(str(c) for c in artifact["classes"])
        self.feature_names: list[str] = list(artifact["feature_names"])
        # Packed once: scikit-learn's own per-tree predict costs 25 ms for a single page.
        self._forest = PackedForest(artifact["model"])
        text_model = artifact.get("text_model")
        self._text_model = PackedTextModel(text_model) if text_model is not None else None
        self.sklearn_version: str = artifact["sklearn_version"]

    def text_probabilities(self, documents: Sequence[str]) -> np.ndarray:
        """The text model's page-type probabilities (no columns when there is no text model)."""
        if self._text_model is None:
            return np.zeros((len(documents), 0))
        return np.asarray(self._text_model.predict_proba(list(documents)))

    def features(self, pages: Sequence[PageInput]) -> np.ndarray:
        """The model's input rows: page features, then the text model's probabilities."""
        rows = np.vstack([feature_vector(p.extraction, p.html, p.url) for p in pages])
        documents = [text_document(p.extraction, p.url) for p in pages]
        return np.hstack([rows, self.text_probabilities(documents)])

    def predict_rows(self, rows: np.ndarray) -> np.ndarray:
        return self._forest.predict_proba(rows)

    def predict(self, pages: Sequence[PageInput]) -> list[TypeScores]:
        """Page-type probabilities for each page, in one call to the estimators."""
        if not pages:
            return []
        probabilities = self.predict_rows(self.features(pages))
        return [TypeScores(self.classes, tuple(map(float, row))) for row in probabilities]


def _check_version(trained_with: str) -> None:
    import sklearn

    if sklearn.__version__ != trained_with:
        logger.warning(
            "page-type model trained with scikit-learn %s, running %s: retrain it",
            trained_with,
            sklearn.__version__,
        )


@functools.cache
def load_model(path: Path = ARTIFACT) -> PageTypeModel | None:
    """The page-type model, loaded on first use and kept for the life of the process."""
    if not path.exists():
        logger.warning("no page-type model at %s; only the rules will classify", path.name)
        return None
    import joblib

    artifact = joblib.load(path)
    if artifact.get("format") != ARTIFACT_FORMAT:
        logger.warning("page-type model %s has an unknown format; ignoring it", path.name)
        return None
    _check_version(artifact["sklearn_version"])
    return PageTypeModel(artifact)
