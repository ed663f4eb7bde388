"""A per-page choice among candidate extractions, learned from how they agree.

For each candidate a small regression-tree ensemble predicts its word-F1 from features that
need no ground truth: how much each pair of candidates agrees (word-bag F1), how long each
is, absolutely and relative to all the page's visible text, and where each starts and ends
within that text. The candidate with the highest predicted F1 wins; the recall candidate's
ensemble carries a small head start (fitted in, see bench.extraction), so another candidate
must be predicted clearly better to replace it. No per-site rules: the features are the
same for every page. The trees live in `chooser_model.json`, fitted on the tuning half of
the development pages by `python -m bench.extraction --fit`.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from functools import cache
from itertools import combinations
from pathlib import Path
from typing import Any

from sluice.extraction.candidates import CANDIDATES

MODEL_PATH = Path(__file__).with_name("chooser_model.json")
_WORD = re.compile(r"\w+")
# A tree node: [feature, threshold, left, right, value]; feature -1 marks a leaf.
Tree = list[list[float]]


def word_bag(text: str) -> Counter[str]:
    """Lower-cased word counts, tokenised like the benchmark's scorer."""
    return Counter(_WORD.findall(text.lower()))


def agreement(a: Counter[str], b: Counter[str]) -> float:
    """Word-bag F1 between two texts (1.0 identical, 0.0 disjoint or empty)."""
    total = a.total() + b.total()
    return 2 * (a & b).total() / total if total and a and b else 0.0


def chooser_features(texts: dict[str, str]) -> list[float]:
    """Pairwise agreements, log word counts, log counts relative to the whole page, and the
    relative position of each candidate's text within the page's text."""
    bags = [word_bag(texts[name]) for name in CANDIDATES]
    lengths = [math.log1p(bag.total()) for bag in bags]
    page = lengths[CANDIDATES.index("page")]
    return (
        [agreement(a, b) for a, b in combinations(bags, 2)]
        + lengths
        + [length - page for length in lengths]
        + [where for name in CANDIDATES for where in span_in_page(texts[name], texts["page"])]
    )


def span_in_page(text: str, page: str) -> tuple[float, float]:
    """Where a candidate's first line starts and its last line ends in the page's text, as
    shares of the page's length; -1 for a line not found (or an empty text or page)."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines or not page:
        return -1.0, -1.0
    start = page.find(lines[0])
    end = page.rfind(lines[-1])
    return (
        start / len(page) if start >= 0 else -1.0,
        (end + len(lines[-1])) / len(page) if end >= 0 else -1.0,
    )


def choose(texts: dict[str, str]) -> str:
    """The name of the candidate predicted to be the best extraction of this page."""
    features = chooser_features(texts)
    model = load_model()
    scores = {name: predict(model[name], features) for name in CANDIDATES}
    return max(CANDIDATES, key=lambda name: scores[name])


def predict(ensemble: dict[str, Any], features: list[float]) -> float:
    """The sum of a tree ensemble's leaf values plus its base value."""
    total = float(ensemble["base"])
    for tree in ensemble["trees"]:
        total += leaf_value(tree, features)
    return total


def leaf_value(tree: Tree, features: list[float]) -> float:
    """Walk one tree from its root to a leaf."""
    node = tree[0]
    while node[0] >= 0:
        node = tree[int(node[2] if features[int(node[0])] <= node[1] else node[3])]
    return node[4]


@cache
def load_model() -> dict[str, dict[str, Any]]:
    """The fitted ensembles, one per candidate, read once per process."""
    model: dict[str, dict[str, Any]] = json.loads(MODEL_PATH.read_text(encoding="utf-8"))
    return model
