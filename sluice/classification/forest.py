"""A vectorised evaluator for a fitted HistGradientBoostingClassifier (multi-class).

scikit-learn evaluates its trees one Python call at a time: about 8 microseconds a tree, so
3,000 trees (300 iterations x 10 classes) cost 25 ms for a single page, and OpenMP thread
start-up makes it worse on a busy machine. Here all trees' nodes are packed into flat arrays
and walked level by level with numpy, every tree at once: under a millisecond per page, same
numbers. The estimator itself stays in the artifact; this is built from it at load time.
"""

from __future__ import annotations

from typing import Any

import numpy as np


class PackedForest:
    """All trees of a fitted multi-class HistGradientBoostingClassifier, as flat arrays."""

    def __init__(self, estimator: Any) -> None:
        trees = [tree.nodes for iteration in estimator._predictors for tree in iteration]
        if any(tree["is_categorical"].any() for tree in trees):
            raise ValueError("categorical splits are not supported")
        offsets = np.cumsum([0] + [len(tree) for tree in trees[:-1]])
        nodes = np.concatenate(trees)
        owner = np.repeat(offsets, [len(tree) for tree in trees])
        self._feature = nodes["feature_idx"].astype(np.intp)
        self._threshold = nodes["num_threshold"].astype(np.float64)
        self._missing_left = nodes["missing_go_to_left"].astype(bool)
        self._left = nodes["left"].astype(np.intp) + owner
        self._right = nodes["right"].astype(np.intp) + owner
        self._leaf = nodes["is_leaf"].astype(bool)
        self._value = nodes["value"].astype(np.float64)
        self._roots = offsets.astype(np.intp)
        self._n_classes = int(estimator.n_trees_per_iteration_)
        self._baseline = np.asarray(estimator._baseline_prediction, dtype=np.float64).ravel()
        self._depth = int(nodes["depth"].max()) + 1

    def _leaves(self, rows: np.ndarray) -> np.ndarray:
        """The leaf each row reaches in each tree: shape (n_rows, n_trees)."""
        current = np.broadcast_to(self._roots, (rows.shape[0], self._roots.size)).copy()
        row_index = np.arange(rows.shape[0])[:, None]
        for _ in range(self._depth):
            leaf = self._leaf[current]
            if leaf.all():
                break
            x = rows[row_index, self._feature[current]]
            go_left = np.where(
                np.isnan(x), self._missing_left[current], x <= self._threshold[current]
            )
            step = np.where(go_left, self._left[current], self._right[current])
            current = np.where(leaf, current, step)
        return current

    def predict_proba(self, rows: np.ndarray) -> np.ndarray:
        """Class probabilities, as the estimator's predict_proba gives them."""
        rows = np.asarray(rows, dtype=np.float64)
        values = self._value[self._leaves(rows)]
        raw = values.reshape(rows.shape[0], -1, self._n_classes).sum(axis=1) + self._baseline
        raw -= raw.max(axis=1, keepdims=True)
        exp = np.exp(raw)
        return np.asarray(exp / exp.sum(axis=1, keepdims=True))


class PackedTextModel:
    """A fitted TfidfVectorizer + multinomial LogisticRegression pipeline, for one page at a time.

    scikit-learn validates and converts its inputs at every step, about 3 ms for a single
    document; the arithmetic itself is a few dictionary lookups and one small matrix product.
    Same tokens (the vectorizer's own analyzer), same weights, same probabilities.
    """

    def __init__(self, pipeline: Any) -> None:
        vectorizer, classifier = pipeline[0], pipeline[-1]
        if vectorizer.norm != "l2" or not vectorizer.use_idf or not vectorizer.sublinear_tf:
            raise ValueError("only l2-normalised sublinear tf-idf is supported")
        self._analyze = vectorizer.build_analyzer()
        self._vocabulary: dict[str, int] = dict(vectorizer.vocabulary_)
        self._idf = np.asarray(vectorizer.idf_, dtype=np.float64)
        # The vectorizer's output dtype, so rounding matches scikit-learn's own product.
        self._dtype = vectorizer.dtype
        self._coef = np.asarray(classifier.coef_, dtype=np.float64)
        self._intercept = np.asarray(classifier.intercept_, dtype=np.float64)

    def predict_proba(self, documents: list[str]) -> np.ndarray:
        return np.vstack([self._one(document) for document in documents])

    def _one(self, document: str) -> np.ndarray:
        counts: dict[int, int] = {}
        vocabulary = self._vocabulary
        for token in self._analyze(document):
            index = vocabulary.get(token)
            if index is not None:
                counts[index] = counts.get(index, 0) + 1
        raw = self._intercept.copy()
        if counts:
            columns = np.fromiter(counts, dtype=np.intp, count=len(counts))
            tf = np.fromiter(counts.values(), dtype=np.float64, count=len(counts))
            weights = ((np.log(tf) + 1.0) * self._idf[columns]).astype(self._dtype)
            weights /= np.sqrt(np.dot(weights, weights))
            raw += self._coef[:, columns] @ weights.astype(np.float64)
        raw -= raw.max()
        exp = np.exp(raw)
        return np.asarray(exp / exp.sum())
