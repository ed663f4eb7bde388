"""Extraction benchmark on WCXB dev: word-F1 per page type and ms/page, on held-out pages.

    python -m bench.extraction [--limit N] [--types article,forum] [--split heldout|tune|all]
    python -m bench.extraction --fit     # refit the chooser on the tuning half
    python -m bench.extraction --cv      # cross-validate the chooser on the tuning half

Compares trafilatura `extract(html, include_comments=False)` (fallbacks on: the baseline),
the same with `fast=True`, and `sluice.extraction.extract`, all measured in the same run and
scored by the data's own `evaluate.py`. Pages are split in two halves by a hash of their id:
the chooser is fitted on the tuning half only, so the held-out numbers are honest.
The data is WCXB (Murrough Foley, 2026, CC-BY-4.0), read from ../shared/data.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import sys
import time
from collections import defaultdict
from collections.abc import Callable, Iterable
from types import ModuleType
from typing import Any

import trafilatura

from sluice.extraction import extract
from sluice.extraction.candidates import CANDIDATES, all_candidates, run_trafilatura
from sluice.extraction.chooser import MODEL_PATH, chooser_features
from sluice.extraction.core import parse_html
from sluice.extraction.decoding import decode_html
from tests.data import SHARED_DATA

WCXB = SHARED_DATA / "wcxb-dev"
TYPES = ("article", "forum", "product", "collection", "listing", "documentation", "service")


def is_held_out(file_id: str) -> bool:
    """The deterministic split: odd SHA-256 of the file id is held out, even is for tuning."""
    return int(hashlib.sha256(file_id.encode()).hexdigest(), 16) % 2 == 1


def load_scorer() -> ModuleType:
    """Import the benchmark's own evaluate.py from the data folder (not copied here)."""
    spec = importlib.util.spec_from_file_location("wcxb_evaluate", WCXB / "evaluate.py")
    if spec is None or spec.loader is None:
        raise SystemExit(f"no evaluate.py in {WCXB}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def select_pages(split: str, types: Iterable[str], limit: int | None) -> list[str]:
    """File ids of the chosen half and page types, in id order, at most `limit`."""
    files = json.loads((WCXB / "metadata.json").read_text())["files"]
    wanted = set(types)
    ids = [
        file_id
        for file_id, meta in sorted(files.items())
        if meta["page_type"] in wanted
        and (split == "all" or is_held_out(file_id) == (split == "heldout"))
    ]
    return ids[:limit] if limit else ids


def read_page(file_id: str) -> bytes:
    return gzip.decompress((WCXB / "dev" / "html" / f"{file_id}.html.gz").read_bytes())


def baseline(html: bytes) -> str:
    return trafilatura.extract(html, include_comments=False) or ""


def baseline_fast(html: bytes) -> str:
    return trafilatura.extract(html, include_comments=False, fast=True) or ""


def sluice_extract(html: bytes) -> str:
    return extract(html).text


EXTRACTORS: dict[str, Callable[[bytes], str]] = {
    "trafilatura": baseline,
    "trafilatura fast": baseline_fast,
    "sluice": sluice_extract,
}


def run(ids: list[str]) -> tuple[dict[str, dict[str, str]], dict[str, float]]:
    """Every extractor's text per page and its mean ms/page (interleaved to share the noise)."""
    texts: dict[str, dict[str, str]] = defaultdict(dict)
    seconds: dict[str, float] = defaultdict(float)
    for file_id in ids:
        html = read_page(file_id)
        for name, function in EXTRACTORS.items():
            start = time.perf_counter()
            texts[name][file_id] = function(html)
            seconds[name] += time.perf_counter() - start
    return texts, {name: 1000 * s / max(len(ids), 1) for name, s in seconds.items()}


def per_type_f1(scorer: ModuleType, ids: list[str], texts: dict[str, str]) -> dict[str, float]:
    """Mean word-F1 per page type, plus `overall`, scored by the data's evaluate.py."""
    truth = scorer.load_ground_truth("dev")
    scores: dict[str, list[float]] = defaultdict(list)
    for file_id in ids:
        gt = truth[file_id]
        f1 = scorer.word_f1(texts.get(file_id, ""), gt["main_content"])[2]
        scores[gt["page_type"]].append(f1)
        scores["overall"].append(f1)
    return {kind: sum(values) / len(values) for kind, values in scores.items()}


def print_table(scorer: ModuleType, ids: list[str], texts: Any, ms: dict[str, float]) -> None:
    """One row per extractor: F1 per type, overall, ms/page and ratios to the baseline."""
    rows = {name: per_type_f1(scorer, ids, texts[name]) for name in EXTRACTORS}
    kinds = [kind for kind in TYPES if kind in rows["sluice"]] + ["overall"]
    print(
        f"{len(ids)} pages (" + ", ".join(f"{k} {_count(scorer, ids, k)}" for k in kinds[:-1]) + ")"
    )
    print(f"{'':18}" + "".join(f"{k[:8]:>9}" for k in kinds) + f"{'ms/page':>9}{'x time':>8}")
    base_ms = ms["trafilatura"]
    for name, row in rows.items():
        cells = "".join(f"{row[k]:9.3f}" for k in kinds)
        print(f"{name:18}{cells}{ms[name]:9.1f}{ms[name] / base_ms:8.2f}")
    gain = rows["sluice"]["overall"] - rows["trafilatura"]["overall"]
    print(f"sluice vs baseline: overall F1 {gain:+.3f}, time x{ms['sluice'] / base_ms:.2f}")


def _count(scorer: ModuleType, ids: list[str], kind: str) -> int:
    truth = scorer.load_ground_truth("dev")
    return sum(1 for file_id in ids if truth[file_id]["page_type"] == kind)


def candidate_rows(
    ids: list[str], scorer: ModuleType
) -> tuple[list[str], list[list[float]], list[list[float]]]:
    """Ids, chooser features and each candidate's true word-F1, for the pages trafilatura keeps."""
    truth = scorer.load_ground_truth("dev")
    kept, features, targets = [], [], []
    for file_id in ids:
        html = decode_html(read_page(file_id))
        tree = parse_html(html)
        document = run_trafilatura(tree, None) if tree is not None else None
        if tree is None or document is None:
            continue
        texts = all_candidates(html, tree, document)
        reference = truth[file_id]["main_content"]
        kept.append(file_id)
        features.append(chooser_features(texts))
        targets.append([scorer.word_f1(texts[name], reference)[2] for name in CANDIDATES])
    return kept, features, targets


# Chosen by 5-fold cross-validation on the tuning half (repeated with different folds):
# small trees, and a head start for the recall candidate, which is the best single one.
CHOOSER_PARAMS = {
    "max_iter": 100,
    "learning_rate": 0.04,
    "max_leaf_nodes": 6,
    "min_samples_leaf": 25,
}
RECALL_HEAD_START = 0.04


def fit_ensembles(features: list[list[float]], targets: list[list[float]]) -> list[Any]:
    """One small gradient-boosted ensemble per candidate, predicting its word-F1."""
    from sklearn.ensemble import HistGradientBoostingRegressor

    ensembles = []
    for k in range(len(CANDIDATES)):
        ensemble = HistGradientBoostingRegressor(**CHOOSER_PARAMS, random_state=0)
        ensemble.fit(features, [row[k] for row in targets])
        ensembles.append(ensemble)
    return ensembles


def fit_chooser(ids: list[str], scorer: ModuleType) -> None:
    """Fit the chooser on the given (tuning) pages and write its model."""
    _, features, targets = candidate_rows(ids, scorer)
    model = {
        name: export_ensemble(ensemble, RECALL_HEAD_START if name == "recall" else 0.0)
        for name, ensemble in zip(CANDIDATES, fit_ensembles(features, targets), strict=True)
    }
    MODEL_PATH.write_text(json.dumps(model, separators=(",", ":")) + "\n", encoding="utf-8")
    print(f"fitted on {len(features)} tuning pages, wrote {MODEL_PATH.name}")


def cross_validate(ids: list[str], scorer: ModuleType, folds: int = 5) -> None:
    """Word-F1 of the chooser's picks on each fold when fitted on the others (tuning half)."""
    import numpy as np

    kept, features, targets = candidate_rows(ids, scorer)
    x, y = np.array(features), np.array(targets)
    truth = scorer.load_ground_truth("dev")
    article = np.array([truth[file_id]["page_type"] == "article" for file_id in kept])
    fold = np.array(
        [int(hashlib.sha256(f"fold{i}".encode()).hexdigest(), 16) % folds for i in kept]
    )
    picked = np.zeros(len(kept), dtype=int)
    for f in range(folds):
        test = fold == f
        scores = np.column_stack(
            [e.predict(x[test]) for e in fit_ensembles(x[~test].tolist(), y[~test].tolist())]
        )
        scores[:, CANDIDATES.index("recall")] += RECALL_HEAD_START
        picked[test] = scores.argmax(axis=1)
    rows = {"chooser (cv)": y[np.arange(len(kept)), picked], "oracle": y.max(axis=1)}
    rows |= {name: y[:, k] for k, name in enumerate(CANDIDATES)}
    print(f"{len(kept)} tuning pages with a trafilatura result, {folds}-fold cross-validation")
    for name, f1 in rows.items():
        print(f"{name:14} overall {f1.mean():.4f}  article {f1[article].mean():.4f}")


def export_ensemble(ensemble: Any, head_start: float = 0.0) -> dict[str, Any]:
    """A fitted HistGradientBoostingRegressor as plain lists for `chooser.leaf_value`,
    `head_start` added to its base value."""
    trees = []
    for (predictor,) in ensemble._predictors:
        trees.append(
            [
                [-1, 0, 0, 0, round(float(node["value"]), 6)]
                if node["is_leaf"]
                else [
                    int(node["feature_idx"]),
                    round(float(node["num_threshold"]), 6),
                    int(node["left"]),
                    int(node["right"]),
                    0,
                ]
                for node in predictor.nodes
            ]
        )
    base = float(ensemble._baseline_prediction.ravel()[0]) + head_start
    return {"base": base, "trees": trees}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="at most this many pages")
    parser.add_argument("--types", default=",".join(TYPES), help="comma-separated page types")
    parser.add_argument("--split", choices=("heldout", "tune", "all"), default="heldout")
    parser.add_argument("--fit", action="store_true", help="refit the chooser on the tuning half")
    parser.add_argument(
        "--cv", action="store_true", help="cross-validate the chooser on the tuning half"
    )
    args = parser.parse_args(argv)
    if not WCXB.exists():
        raise SystemExit(f"development data not found at {WCXB}")
    if args.fit:
        fit_chooser(select_pages("tune", TYPES, None), load_scorer())
        return
    if args.cv:
        cross_validate(select_pages("tune", TYPES, None), load_scorer())
        return
    scorer = load_scorer()
    ids = select_pages(args.split, args.types.split(","), args.limit)
    texts, ms = run(ids)
    print_table(scorer, ids, texts, ms)


if __name__ == "__main__":
    sys.exit(main())
