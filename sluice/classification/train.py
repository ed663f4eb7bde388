"""Train the page-type model from the shared development data and save the artifact.

    python -m sluice.classification.train [--cache-dir DIR] [--output PATH]

Training pages: the WCXB development pages (with their HTML and human-reviewed types) and the
labelled suitability texts (text and structure only; ambiguous ones left out, weighted lower
since their types are mapped from coarse labels). WCXB extractions are cached in the cache
folder (default `.cache/classification` in the project, or `SLUICE_CLASSIFICATION_CACHE`).
"""

from __future__ import annotations

import argparse
import json
import logging
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from sluice.classification.corpus import (
    PROJECT_ROOT,
    Sample,
    labeled_samples,
    shared_data_root,
    wcxb_samples,
)
from sluice.classification.features import feature_names, feature_vector, text_document
from sluice.classification.model import ARTIFACT, ARTIFACT_FORMAT

logger = logging.getLogger(__name__)

LABELED_WEIGHT = 0.5
INNER_FOLDS = 5
SEED = 0


@dataclass(frozen=True, slots=True)
class TrainingSet:
    """Feature rows, text documents, types, weights and site groups of the training pages."""

    samples: list[Sample]
    features: np.ndarray
    documents: list[str]
    types: np.ndarray
    weights: np.ndarray
    groups: np.ndarray


def default_cache_dir() -> Path:
    return Path(
        os.environ.get("SLUICE_CLASSIFICATION_CACHE", PROJECT_ROOT / ".cache/classification")
    )


def load_samples(root: Path, cache_dir: Path) -> list[Sample]:
    """WCXB pages and the non-ambiguous labelled texts."""
    labeled = [s for s in labeled_samples(root) if s.suitable is not None]
    return wcxb_samples(root, cache_dir) + labeled


def build_training_set(samples: Sequence[Sample]) -> TrainingSet:
    """Compute the features of every sample (the slow part: HTML is read and scanned)."""
    rows = np.vstack([feature_vector(s.extraction, s.html(), s.url) for s in samples])
    return TrainingSet(
        samples=list(samples),
        features=rows,
        documents=[text_document(s.extraction, s.url) for s in samples],
        types=np.array([s.page_type for s in samples]),
        weights=np.array([LABELED_WEIGHT if s.corpus == "labeled" else 1.0 for s in samples]),
        groups=np.array([s.group for s in samples]),
    )


def new_text_model() -> Any:
    """A linear model over words of the title, URL and text head (any language: no stemming)."""
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    vectorizer = TfidfVectorizer(sublinear_tf=True, min_df=3, max_features=30_000, dtype=np.float32)
    return make_pipeline(vectorizer, LogisticRegression(C=4.0, max_iter=300))


def new_type_model() -> Any:
    from sklearn.ensemble import HistGradientBoostingClassifier

    return HistGradientBoostingClassifier(
        max_iter=300,
        learning_rate=0.05,
        max_leaf_nodes=15,
        l2_regularization=1.0,
        min_samples_leaf=10,
        random_state=SEED,
    )


def _aligned(
    probabilities: np.ndarray, classes: Sequence[str], target: Sequence[str]
) -> np.ndarray:
    out = np.zeros((probabilities.shape[0], len(target)))
    for i, name in enumerate(classes):
        out[:, list(target).index(name)] = probabilities[:, i]
    return out


def out_of_fold_text(
    data: TrainingSet, index: np.ndarray, classes: Sequence[str], folds: int = INNER_FOLDS
) -> np.ndarray:
    """Text-model probabilities for `index`, each predicted by a model that never saw its site."""
    from sklearn.model_selection import GroupKFold

    out = np.zeros((len(index), len(classes)))
    documents = np.array(data.documents, dtype=object)
    for fit, held in GroupKFold(folds).split(index, groups=data.groups[index]):
        model = new_text_model().fit(documents[index[fit]], data.types[index[fit]])
        proba = model.predict_proba(documents[index[held]])
        out[held] = _aligned(proba, model.classes_, classes)
    return out


def fit(data: TrainingSet, index: np.ndarray, inner_folds: int = INNER_FOLDS) -> dict[str, Any]:
    """Train on the pages at `index`: the text model, then the stacked page-type model."""
    import sklearn

    classes = sorted(set(data.types[index]))
    text_model = new_text_model().fit(
        np.array(data.documents, dtype=object)[index], data.types[index]
    )
    stacked = np.hstack([data.features[index], out_of_fold_text(data, index, classes, inner_folds)])
    model = new_type_model().fit(stacked, data.types[index], sample_weight=data.weights[index])
    if list(text_model.classes_) != classes or list(model.classes_) != classes:
        raise RuntimeError("text and type models disagree on the page types")
    return {
        "format": ARTIFACT_FORMAT,
        "sklearn_version": sklearn.__version__,
        "classes": classes,
        "feature_names": feature_names() + [f"text_p_{c}" for c in classes],
        "text_model": text_model,
        "model": model,
    }


def grouped_cv_probabilities(
    data: TrainingSet, folds: int = 5, inner_folds: int = INNER_FOLDS
) -> tuple[list[str], np.ndarray]:
    """Page-type probabilities of every page from a model that never saw the page's site."""
    from sklearn.model_selection import GroupKFold

    from sluice.classification.model import PageTypeModel

    classes = sorted(set(data.types))
    out = np.zeros((len(data.samples), len(classes)))
    splits = GroupKFold(folds).split(data.features, groups=data.groups)
    for number, (train, test) in enumerate(splits):
        model = PageTypeModel(fit(data, train, inner_folds))
        documents = [data.documents[i] for i in test]
        stacked = np.hstack([data.features[test], model.text_probabilities(documents)])
        out[test] = _aligned(model.predict_rows(stacked), model.classes, classes)
        logger.info("fold %s of %s done", number + 1, folds)
    return classes, out


def save(artifact: dict[str, Any], output: Path, n_pages: int) -> None:
    """Write the artifact and a small JSON description beside it."""
    import joblib

    joblib.dump(artifact, output, compress=3)
    meta = {
        "sklearn_version": artifact["sklearn_version"],
        "classes": artifact["classes"],
        "n_features": len(artifact["feature_names"]),
        "n_training_pages": n_pages,
    }
    output.with_suffix(".json").write_text(json.dumps(meta, indent=2) + "\n")
    logger.info("saved %s (%.1f MB)", output, output.stat().st_size / 1e6)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    parser.add_argument("--output", type=Path, default=ARTIFACT)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")
    data = build_training_set(load_samples(shared_data_root(), args.cache_dir))
    artifact = fit(data, np.arange(len(data.samples)))
    save(artifact, args.output, len(data.samples))


if __name__ == "__main__":
    main()
