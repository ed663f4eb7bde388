"""The listing-page heuristic on hand-made pages of different shapes.

Each `tests/fixtures/listing/NAME.html` has a `NAME.json` beside it: the page URL, the article
links a reader would pick out, whether a pattern should prove itself, the next page, and the
precision and recall floors for that page. The floors can be raised, not quietly lowered.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from sluice.discovery.listing import (
    ListingResult,
    find_article_links,
    path_shape,
    pattern_matches,
    walk_listing,
)

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "listing"
PAGES = sorted(path.stem for path in FIXTURES.glob("*.json"))
NON_ARTICLE_PARTS = ("/tag/", "/tags/", "/author/", "/authors/", "/category/", "/members/", "/user")


@dataclass(frozen=True)
class Expected:
    page_url: str
    articles: frozenset[str]
    proven: bool
    next_page: str | None
    min_precision: float
    min_recall: float


def load(name: str) -> tuple[bytes, Expected]:
    spec = json.loads((FIXTURES / f"{name}.json").read_text(encoding="utf-8"))
    html = (FIXTURES / f"{name}.html").read_bytes()
    return html, Expected(
        page_url=spec["page_url"],
        articles=frozenset(spec["articles"]),
        proven=spec["proven"],
        next_page=spec["next_page"],
        min_precision=spec["min_precision"],
        min_recall=spec["min_recall"],
    )


def precision_recall(found: tuple[str, ...], expected: frozenset[str]) -> tuple[float, float]:
    hits = len(set(found) & expected)
    precision = hits / len(found) if found else 1.0
    recall = hits / len(expected) if expected else 1.0
    return precision, recall


def test_there_are_at_least_15_hand_made_pages() -> None:
    assert len(PAGES) >= 15
    assert sum(1 for name in PAGES if not load(name)[1].proven) >= 2


@pytest.mark.parametrize("name", PAGES)
def test_listing_page(name: str) -> None:
    html, expected = load(name)
    result = find_article_links(html, expected.page_url)
    precision, recall = precision_recall(result.links, expected.articles)
    assert result.proven is expected.proven, result
    assert precision >= expected.min_precision, (precision, set(result.links) - expected.articles)
    assert recall >= expected.min_recall, (recall, expected.articles - set(result.links))
    assert result.next_page == expected.next_page
    assert not [url for url in result.links if any(p in url for p in NON_ARTICLE_PARTS)]
    assert len(result.links) == len(set(result.links))
    if not expected.proven:
        assert result.links == ()


@pytest.mark.parametrize("name", PAGES)
def test_results_are_deterministic_and_str_equals_bytes(name: str) -> None:
    html, expected = load(name)
    first = find_article_links(html, expected.page_url)
    assert find_article_links(html, expected.page_url) == first
    assert find_article_links(html.decode("utf-8"), expected.page_url) == first


# --- stored patterns ------------------------------------------------------------------------


def test_a_stored_pattern_that_still_holds_is_reused() -> None:
    html, expected = load("paginated_page2")
    result = find_article_links(html, expected.page_url, known_pattern="/blog/*")
    assert (result.reason, result.pattern, result.proven) == ("known_pattern", "/blog/*", True)
    assert set(result.links) == expected.articles


def test_a_stored_pattern_that_fails_is_discarded_and_relearned() -> None:
    html, expected = load("news_front")
    result = find_article_links(html, expected.page_url, known_pattern="/story/{num}")
    assert result.reason == "relearned"
    assert result.pattern != "/story/{num}"
    assert set(result.links) == expected.articles


def test_a_stored_pattern_is_dropped_on_a_page_with_no_pattern() -> None:
    html, expected = load("no_pattern")
    result = find_article_links(html, expected.page_url, known_pattern="/projects/*")
    assert not result.proven and result.links == ()


def test_walk_follows_next_pages_and_revalidates_the_pattern() -> None:
    pages = {
        "https://slowroad.example/blog/": load("paginated_page1")[0],
        "https://slowroad.example/blog/page/2/": load("paginated_page2")[0],
    }
    fetched: list[str] = []

    def fetch(url: str) -> bytes:
        fetched.append(url)
        return pages[url]

    walked = list(walk_listing("https://slowroad.example/blog/", fetch, max_pages=2))
    assert [url for url, _ in walked] == list(pages)
    assert [result.reason for _, result in walked] == ["learned", "known_pattern"]
    assert fetched == list(pages)  # max_pages stops before page 3


# --- shapes ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "shape"),
    [
        ("https://a.example/blog/my-first-post", "/blog/*"),
        ("https://a.example/blog/another-one/", "/blog/*"),
        ("https://a.example/2024/05/12/some-title", "/{num}/{num}/{num}/*"),
        ("https://a.example/presse/2024-05-10/neue-zeit", "/presse/{date}/*"),
        ("https://a.example/story/48213", "/story/{num}"),
        ("https://a.example/p/3f9a2c7b1e44", "/p/{hash}"),
        ("https://a.example/a/3fa85f64-5717-4562-b3fc-2c963f66afa6", "/a/{hash}"),
        ("https://a.example/news/bus-lanes-approved-58213", "/news/*{num}"),
        ("https://a.example/local/20240512-harbour.html", "/local/*{num}.html"),
        (
            "https://a.example/News/View.php?id=12&cat=3&utm_source=x",
            "/news/view.php?cat={num}&id={num}",
        ),
        (
            "https://a.example/news/articleView.html?idxno=312345",
            "/news/articleview.html?idxno={num}",
        ),
        (
            "https://a.example/%EB%89%B4%EC%8A%A4/%EC%8B%9C%EB%82%B4%EB%B2%84%EC%8A%A4-%EC%9A%94%EA%B8%88",
            "/뉴스/*",
        ),
        ("https://a.example/", "/"),
    ],
)
def test_path_shape(url: str, shape: str) -> None:
    assert path_shape(url) == shape


def test_any_opens_a_section_but_not_an_id() -> None:
    assert pattern_matches("/world/{num}/*", "/{any}/{num}/*")
    assert pattern_matches("/tech-science/{num}/*", "/{any}/{num}/*")
    assert not pattern_matches("/{num}/{num}/*", "/{any}/{num}/*")
    assert not pattern_matches("/world/{num}/*/x", "/{any}/{num}/*")


# --- hostile and odd inputs -----------------------------------------------------------------


@pytest.mark.parametrize(
    "html", [b"", "   ", "<html></html>", b"\x00\xff\xfe", "<a href='http://[::1'>x</a>"]
)
def test_empty_and_broken_pages_are_values_not_errors(html: str | bytes) -> None:
    result = find_article_links(html, "https://a.example/")
    assert isinstance(result, ListingResult) and not result.proven


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["main", "nav", "aside", "div", "footer", "article"]),
            st.sampled_from(
                [
                    "/blog/a-b",
                    "/blog/c-d",
                    "/x",
                    "/tag/t",
                    "/2024/05/e-f",
                    "https://o.example/z",
                    "?page=2",
                    "#top",
                    "javascript:x",
                    "//a.example/p/3f9a2c7b1e44",
                    "",
                ]
            ),
            st.text(max_size=12),
        ),
        max_size=25,
    )
)
def test_generated_pages_never_raise_and_are_deterministic(
    links: list[tuple[str, str, str]],
) -> None:
    body = "".join(f'<{tag}><a href="{href}">{text}</a></{tag}>' for tag, href, text in links)
    html = f"<html><body>{body}</body></html>"
    first = find_article_links(html, "https://a.example/list")
    assert find_article_links(html, "https://a.example/list") == first
    assert all(url.startswith(("https://a.example/", "http://a.example/")) for url in first.links)
