"""Quality gate: suitability accuracy on WCXB pages, cross-validated by site.

Rules and model only (no LLM). Three folds by site (no site in both train and test), a
lighter setting than the benchmark's five, so the gate runs in a few minutes; WCXB
extractions are cached after the first run (SLUICE_CLASSIFICATION_CACHE, else pytest's cache).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sluice.classification.evaluation import binary_accuracy, cross_validated
from sluice.classification.train import build_training_set, load_samples
from tests.data import shared_data

# Binary accuracy on the 1,497 WCXB dev pages, grouped 3-fold CV, rules + model.
# Measured 0.929 when pinned (5-fold benchmark: 0.934). May be raised, never quietly lowered.
WCXB_ACCURACY_FLOOR = 0.92


def _cache_dir(config: pytest.Config, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where WCXB extractions are cached: the training cache if set, else pytest's cache."""
    if os.environ.get("SLUICE_CLASSIFICATION_CACHE"):
        return Path(os.environ["SLUICE_CLASSIFICATION_CACHE"])
    cache = getattr(config, "cache", None)  # absent when run with -p no:cacheprovider
    if cache is not None:
        return Path(cache.mkdir("classification"))
    return tmp_path_factory.mktemp("classification")


@pytest.mark.quality
def test_wcxb_suitability_accuracy_floor(
    pytestconfig: pytest.Config, tmp_path_factory: pytest.TempPathFactory
) -> None:
    root = shared_data("wcxb-dev").parent
    shared_data("suitability/labeled-pages.jsonl.gz")
    cache_dir = _cache_dir(pytestconfig, tmp_path_factory)
    data = build_training_set(load_samples(root, cache_dir))
    scored = cross_validated(data, folds=3, inner_folds=3)
    wcxb = [s for s in scored if s.corpus == "wcxb"]
    accuracy = binary_accuracy(wcxb)
    print(f"WCXB grouped-CV binary accuracy: {accuracy:.4f}")
    assert accuracy >= WCXB_ACCURACY_FLOOR
