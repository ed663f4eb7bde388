"""Unit tests for the suitability classifier: rules, model and policy on saved pages.

Hand-written English and Korean pages of each type live in tests/fixtures/classification;
real pages are read from the shared development data and skipped where it is absent.
"""

from __future__ import annotations

import gzip
import json
from collections import Counter
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.classification import PageRequest, SuitabilityPolicy, classify_page, classify_pages
from sluice.classification.policy import PAGE_TYPES
from sluice.classification.text_stats import word_equivalents
from sluice.config import LLMSettings
from sluice.records import Extraction, Verdict
from tests.data import shared_data

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "classification"
NO_LLM = LLMSettings()
URLS = {
    "article": "https://news.example.org/2025/03/04/city-expands-bike-lanes",
    "documentation": "https://docs.example.org/en/2.1/api/parse_config.html",
    "forum": "https://forum.example.org/t/tent-condensation/1234",
    "product": "https://shop.example.org/products/trailblazer-40l",
    "service": "https://safevault.example.com/pricing",
    "listing": "https://news.example.org/news?page=2",
    "login": "https://example.org/login",
    "error": "https://example.org/missing-page",
    "cookie-wall": "https://example.org/consent",
}
# Pieces the pattern tests build texts from: the words the text patterns look for, broken up,
# and what sits around them.
SAMPLE_TOKENS = {*" .:-,?", "s", "ed", "ing", "a", "x", "1", "2024", *(
    word for pattern in ("add to cart", "in stock", "reply replies posted by joined quote thread",
                         "parameter returns example syntax function install configure api",
                         "read more page 3 of", "i we he she they was were said",
                         "댓글 설치 더보기")
    for word in pattern.split())}
# (fixture, expected page type, expected suitability)
FIXTURE_CASES = [
    ("article-en", "article", True),
    ("article-ko", "article", True),
    ("documentation-en", "documentation", True),
    ("forum-en", "forum", False),
    ("forum-ko", "forum", False),
    ("product-en", "product", False),
    ("product-ko", "product", False),
    ("service-en", "service", False),
    ("listing-en", "listing", False),
    ("listing-ko", "listing", False),
    ("login-en", "login", False),
    ("login-ko", "login", False),
    ("error-en", "error", False),
    ("error-ko", "error", False),
    ("cookie-wall-en", "other", False),
]


def _classify_fixture(name: str) -> Verdict:
    kind = name.rsplit("-", 1)[0]
    return classify_page((FIXTURES / f"{name}.html").read_bytes(), URLS[kind], llm=NO_LLM)


def _assert_well_formed(verdict: Verdict) -> None:
    assert verdict.page_type in PAGE_TYPES
    assert 0.0 <= verdict.score <= 1.0
    assert verdict.classified_by in ("rules", "model", "llm")
    assert verdict.reason.endswith(".") and len(verdict.reason) < 250
    assert verdict.suitable == (verdict.score >= 0.5)


@pytest.mark.parametrize(("name", "page_type", "suitable"), FIXTURE_CASES)
def test_fixture_pages(name: str, page_type: str, suitable: bool) -> None:
    verdict = _classify_fixture(name)
    _assert_well_formed(verdict)
    assert (verdict.page_type, verdict.suitable) == (page_type, suitable)


def test_korean_service_page_is_unsuitable() -> None:
    # Its type comes out as listing or service: few Korean marketing pages in the training data.
    assert not _classify_fixture("service-ko").suitable


@pytest.mark.xfail(reason="no Korean documentation in the training data yet", strict=True)
def test_korean_documentation_page() -> None:
    assert _classify_fixture("documentation-ko").suitable


@pytest.mark.parametrize("name", ["login-en", "login-ko", "error-en", "error-ko"])
def test_certain_pages_are_decided_by_rules(name: str) -> None:
    assert _classify_fixture(name).classified_by == "rules"


@pytest.mark.parametrize(("title", "error"), [
    ("Highway 404 reopens after overnight crash", False),
    ("Route 404 bus cuts: what riders need to know", False),
    ("404", True),
    ("Oops! 404", True),
])
def test_404_in_a_title_marks_an_error_page_only_in_a_short_title(title: str,
                                                                  error: bool) -> None:
    text = " ".join(["The highway reopened on Tuesday morning after crews cleared the wreck,"
                     " and traffic returned to normal by noon, officials said."] * 10)
    html = f"<html><head><title>{title}</title></head><body><p>{text}</p></body></html>"
    verdict = classify_page(html, None, Extraction(text=text, title=title), llm=NO_LLM)
    assert (verdict.page_type == "error") == error, verdict


def test_near_empty_text_is_unsuitable() -> None:
    verdict = classify_page("<html></html>", None, Extraction(text="Home About Contact"))
    assert (verdict.suitable, verdict.classified_by) == (False, "rules")


def test_korean_text_is_measured_as_dense() -> None:
    korean = "서울시는 화요일 자전거 도로망을 강 건너까지 넓히는 계획을 발표했다."
    assert word_equivalents(korean * 3) >= 25
    verdict = classify_page("<html></html>", None, Extraction(text=korean * 3), llm=NO_LLM)
    assert "almost no main text" not in verdict.reason


def test_mojibake_is_unsuitable() -> None:
    text = "Ã©tÃ© â€™ garbled Ã¨ " * 30
    verdict = classify_page("<html></html>", None, Extraction(text=text))
    assert not verdict.suitable
    assert "encoding" in verdict.reason


def test_policy_decides_suitability_from_the_type() -> None:
    html = (FIXTURES / "forum-en.html").read_bytes()
    forums_too = SuitabilityPolicy(frozenset({"article", "documentation", "forum"}))
    verdict = classify_page(html, URLS["forum"], policy=forums_too, llm=NO_LLM)
    assert verdict.suitable and verdict.page_type == "forum"


def test_policy_rejects_unknown_types() -> None:
    with pytest.raises(ValueError, match="unknown page types"):
        SuitabilityPolicy(frozenset({"poem"}))


def test_batch_matches_single_pages() -> None:
    names = ["article-en", "product-ko", "login-en"]
    requests = [
        PageRequest((FIXTURES / f"{n}.html").read_bytes(), URLS[n.rsplit("-", 1)[0]]) for n in names
    ]
    assert classify_pages(requests, llm=NO_LLM) == [_classify_fixture(n) for n in names]


def _wcxb_pages(page_type: str, count: int) -> list[tuple[bytes, str]]:
    root = shared_data("wcxb-dev")
    files = json.loads((root / "metadata.json").read_text())["files"]
    ids = sorted(i for i, meta in files.items() if meta["page_type"] == page_type)[:count]
    html_dir = root / "dev" / "html"
    return [
        (gzip.decompress((html_dir / f"{i}.html.gz").read_bytes()), files[i]["url"]) for i in ids
    ]


@pytest.mark.parametrize(
    "page_type",
    ["article", "documentation", "forum", "product", "collection", "listing", "service"],
)
def test_real_english_pages_of_each_type(page_type: str) -> None:
    # The shipped model has seen these pages: this checks the wiring on real HTML, not accuracy
    # (the site-grouped quality gate measures that).
    verdicts = [classify_page(html, url, llm=NO_LLM) for html, url in _wcxb_pages(page_type, 6)]
    for verdict in verdicts:
        _assert_well_formed(verdict)
    expected = page_type in ("article", "documentation")
    assert Counter(v.suitable for v in verdicts)[expected] >= 5


def test_real_korean_pages_are_unsuitable() -> None:
    path = shared_data("suitability/labeled-pages.jsonl.gz")
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        rows = [json.loads(line) for line in handle]
    korean = [r for r in rows if sum("\uac00" <= ch <= "\ud7a3" for ch in r["text"][:2000]) > 100]
    if not korean:
        pytest.skip("no Korean pages in the labelled data")
    for row in korean:
        extraction = Extraction(text=row["text"], n_links=row["xml_stats"].get("n_ref", 0))
        verdict = classify_page("", row["url"], extraction, llm=NO_LLM)
        _assert_well_formed(verdict)
        assert verdict.suitable == (row["label"] == "suitable")


def test_packed_forest_matches_scikit_learn() -> None:
    import numpy as np
    from sklearn.ensemble import HistGradientBoostingClassifier

    from sluice.classification.forest import PackedForest

    rng = np.random.default_rng(0)
    rows = rng.normal(size=(300, 6))
    rows[rng.random(rows.shape) < 0.1] = np.nan
    kind = (np.nan_to_num(rows[:, 0]) > 0).astype(int) + (np.nan_to_num(rows[:, 1]) > 1)
    types = np.array(["article", "forum", "product"])[kind]
    model = HistGradientBoostingClassifier(max_iter=30, random_state=0).fit(rows, types)
    assert np.allclose(PackedForest(model).predict_proba(rows), model.predict_proba(rows))


def test_packed_text_model_matches_scikit_learn() -> None:
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline

    from sluice.classification.forest import PackedTextModel

    words = "river bank loan price cart reply thread install api said was news story".split()
    rng = np.random.default_rng(1)
    documents = [" ".join(rng.choice(words, size=rng.integers(1, 40))) for _ in range(200)]
    labels = ["shop" if "cart" in d else "forum" if "reply" in d else "article"
              for d in documents]
    model = make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2, dtype=np.float32),
                          LogisticRegression(max_iter=300)).fit(documents, labels)
    unseen = [*documents[:50], "", "words the vocabulary never saw", "Cart CART cart reply"]
    expected = np.vstack([model.predict_proba([d]) for d in unseen])
    assert np.allclose(PackedTextModel(model).predict_proba(unseen), expected, atol=1e-6)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(sorted(SAMPLE_TOKENS)), max_size=60))
def test_skipping_patterns_find_exactly_what_the_plain_patterns_find(tokens: list[str]) -> None:
    import re

    from sluice.classification.features import TEXT_WORDS, skipping

    text = "".join(tokens)
    for pattern in TEXT_WORDS.values():
        assert skipping(pattern).findall(text) == re.compile(pattern).findall(text)
