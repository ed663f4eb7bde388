"""Suitability benchmark: `python -m bench.suitability`.

Cross-validated by site on the shared development data (WCXB typed pages and the labelled
suitability texts): binary accuracy with a rules-only baseline measured in the same run,
per-page-type precision and recall, the confusion matrix, calibration, the share of pages
each tier decided, and milliseconds per page of `classify_page` (extraction excluded).
"""

from __future__ import annotations

import argparse
import logging
import time
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from sluice.classification import classify_page
from sluice.classification.corpus import shared_data_root
from sluice.classification.evaluation import Scored, binary_accuracy, cross_validated
from sluice.classification.policy import PAGE_TYPES
from sluice.classification.rules import apply_rules
from sluice.classification.train import build_training_set, default_cache_dir, load_samples
from sluice.config import LLMSettings

TIMED_PAGES = 200


def _type_table(scored: Sequence[Scored]) -> None:
    true = [s.true_type for s in scored]
    pred = [s.verdict.page_type for s in scored]
    print(f"\n{'page type':14s} {'n':>5s} {'precision':>9s} {'recall':>7s}")
    for name in PAGE_TYPES:
        n_true = true.count(name)
        n_pred = pred.count(name)
        hits = sum(t == p == name for t, p in zip(true, pred, strict=True))
        if n_true or n_pred:
            precision = hits / n_pred if n_pred else float("nan")
            recall = hits / n_true if n_true else float("nan")
            print(f"{name:14s} {n_true:5d} {precision:9.3f} {recall:7.3f}")


def _confusion(scored: Sequence[Scored]) -> None:
    true_types = [t for t in PAGE_TYPES if any(s.true_type == t for s in scored)]
    pred_types = [t for t in PAGE_TYPES if any(s.verdict.page_type == t for s in scored)]
    counts = Counter((s.true_type, s.verdict.page_type) for s in scored)
    print("\nconfusion (rows: true type, columns: predicted)")
    print(" " * 14 + "".join(f"{t[:6]:>7s}" for t in pred_types))
    for row in true_types:
        print(f"{row:14s}" + "".join(f"{counts[(row, col)]:7d}" for col in pred_types))


def _calibration(scored: Sequence[Scored]) -> None:
    scores = np.array([s.verdict.score for s in scored])
    truth = np.array([s.truly_suitable for s in scored], dtype=float)
    bins = np.minimum((scores * 10).astype(int), 9)
    ece = sum(
        abs(scores[bins == b].mean() - truth[bins == b].mean()) * (bins == b).mean()
        for b in range(10)
        if (bins == b).any()
    )
    print(f"\ncalibration: Brier {np.mean((scores - truth) ** 2):.4f}, ECE {ece:.4f}")


def _tiers(scored: Sequence[Scored]) -> None:
    tiers = Counter(s.verdict.classified_by for s in scored)
    shares = ", ".join(f"{tier} {n / len(scored):.1%}" for tier, n in sorted(tiers.items()))
    print(f"tiers: {shares}")
    for tier in sorted(tiers):
        part = [s for s in scored if s.verdict.classified_by == tier]
        print(f"  accuracy where {tier} decided: {binary_accuracy(part):.4f} ({len(part)} pages)")


def _rules_only_baseline(scored: Sequence[Scored]) -> float:
    """Rules, with every unclaimed page called a suitable article (the first-release behaviour)."""
    right = [
        s.truly_suitable == (s.verdict.suitable if s.verdict.classified_by == "rules" else True)
        for s in scored
    ]
    return float(np.mean(right))


def report(name: str, scored: Sequence[Scored]) -> None:
    accuracy = binary_accuracy(list(scored))
    baseline = _rules_only_baseline(scored)
    majority = max(
        np.mean([s.truly_suitable for s in scored]), 1 - np.mean([s.truly_suitable for s in scored])
    )
    print(f"\n=== {name}: {len(scored)} pages ===")
    print(f"binary accuracy (rules + model): {accuracy:.4f}")
    print(f"  baselines in this run: rules only {baseline:.4f}, majority class {majority:.4f}")
    _tiers(scored)
    _calibration(scored)
    _type_table(scored)
    _confusion(scored)


def time_pages(root: Path, cache_dir: Path) -> None:
    """ms/page of classify_page on cached extractions (one page at a time, one process)."""
    samples = load_samples(root, cache_dir)
    wcxb = [s for s in samples if s.corpus == "wcxb"][:: max(1, 1497 // TIMED_PAGES)]
    pages = [(s.html() or "", s.url, s.extraction) for s in wcxb]
    off = LLMSettings()
    classify_page(*pages[0], llm=off)  # load the model outside the timing
    start, cpu_start = time.perf_counter(), time.process_time()
    for html, url, extraction in pages:
        classify_page(html, url, extraction, llm=off)
    per_page = 1000 * (time.perf_counter() - start) / len(pages)
    cpu_per_page = 1000 * (time.process_time() - cpu_start) / len(pages)
    start = time.perf_counter()
    for html, url, extraction in pages:
        apply_rules(html, url, extraction)
    rules_only = 1000 * (time.perf_counter() - start) / len(pages)
    print(f"\nspeed: {per_page:.2f} ms/page with the model ({cpu_per_page:.2f} ms CPU),")
    print(f"  {rules_only:.2f} ms/page rules alone")
    print(f"  ({len(pages)} WCXB pages, extraction excluded, one at a time)")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--cache-dir", type=Path, default=default_cache_dir())
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    root = shared_data_root()
    data = build_training_set(load_samples(root, args.cache_dir))
    scored = cross_validated(data, folds=args.folds)
    print(f"grouped {args.folds}-fold cross-validation by site (no site in train and test)")
    report("WCXB dev (reviewed page types)", [s for s in scored if s.corpus == "wcxb"])
    report("labelled suitability texts (no HTML)", [s for s in scored if s.corpus == "labeled"])
    time_pages(root, args.cache_dir)


if __name__ == "__main__":
    main()
