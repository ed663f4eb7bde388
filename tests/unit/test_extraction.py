"""Unit tests of `sluice.extraction.extract` on small generated pages."""

from __future__ import annotations

import pickle
from datetime import datetime

import pytest

from sluice.extraction import Extraction, extract

SENTENCE = "The committee met on Tuesday to review the harbour plan and its budget. "


def article_page(
    body: str,
    *,
    lang: str | None = "en-GB",
    head: str = "",
    charset: str | None = "utf-8",
) -> str:
    """A small article page with navigation and footer boilerplate around `body`."""
    lang_attr = f' lang="{lang}"' if lang else ""
    meta = f'<meta charset="{charset}">' if charset else ""
    return f"""<!DOCTYPE html><html{lang_attr}><head>{meta}<title>Harbour plan | Daily</title>
{head}</head><body>
<nav><ul><li><a href="/">Home</a></li><li><a href="/news">News</a></li></ul></nav>
<article>{body}</article>
<footer><p>Copyright Daily News. All rights reserved.</p></footer>
</body></html>"""


def paragraphs(n: int, sentence: str = SENTENCE) -> str:
    """`n` distinct paragraphs (trafilatura drops repeated ones)."""
    return "".join(f"<p>{i + 1}. {sentence * 4}</p>" for i in range(n))


def test_extracts_main_text_without_boilerplate() -> None:
    result = extract(article_page("<h1>Harbour plan</h1>" + paragraphs(3)))
    assert "harbour plan and its budget" in result.text
    assert "All rights reserved" not in result.text
    assert result.char_count == len(result.text)


def test_metadata_is_filled() -> None:
    head = """<meta name="author" content="Jane Roe">
<meta property="article:published_time" content="2024-03-05T08:00:00Z">
<meta property="og:site_name" content="Daily News">
<meta name="description" content="What the committee decided.">"""
    html = article_page("<h1>Harbour plan</h1>" + paragraphs(3), head=head)
    result = extract(html, url="https://news.example.com/2024/harbour-plan")
    assert result.title == "Harbour plan"
    assert result.author == "Jane Roe"
    assert result.published == datetime(2024, 3, 5)
    assert result.sitename == "Daily News"
    assert result.description == "What the committee decided."
    assert result.language == "en"


@pytest.mark.parametrize(
    ("head", "expected"),
    [
        ('<meta http-equiv="Content-Language" content="de-AT">', "de"),
        ('<meta property="og:locale" content="fr_FR">', "fr"),
        ("", None),
    ],
)
def test_language_falls_back_to_declarations(head: str, expected: str | None) -> None:
    result = extract(article_page(paragraphs(3), lang=None, head=head))
    assert result.language == expected


def test_structure_counts_describe_the_main_content() -> None:
    body = (
        "<h2>First part</h2>"
        + paragraphs(2)
        + '<p>Read <a href="/a">the full plan</a> and <a href="/b">the budget</a> today. '
        + SENTENCE * 2
        + "</p>"
        + "<h2>Second part</h2><ul><li>Dredging the channel</li><li>A new quay</li>"
        + "<li>Moorings</li></ul>"
        + "<table><tr><td>Cost</td><td>4 million</td></tr><tr><td>Years</td><td>3</td></tr></table>"
        + paragraphs(1)
    )
    result = extract(article_page(body))
    assert result.n_headings == 2
    assert result.n_paragraphs == 4
    assert result.n_list_items == 3
    assert result.n_links == 2
    assert result.link_chars == len("the full plan") + len("the budget")
    assert result.n_table_cells == 4
    # links are counted but rendered as their text only
    assert "Read the full plan and the budget today." in result.text
    assert "](" not in result.text


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        b"",
        "   \n\t ",
        b"\x00\x01\x02\xff\xfe" * 500,
        bytes(range(256)) * 40,
        "<html><body><div><p>unclosed <b>tags <i>everywhere",
        "<<<>>><?xml?><!-- -->",
        "plain words, no markup at all",
        "<html>" * 5000,
        '<?xml version="1.0" encoding="utf-8"?><html><body><p>x</p></body></html>',
        b"\x1f\x8b\x08\x00compressed-looking junk",
        "\ud800 lone surrogate <p>text</p>",
    ],
)
def test_garbage_gives_empty_text_and_never_raises(garbage: str | bytes) -> None:
    result = extract(garbage)
    assert isinstance(result, Extraction)
    assert len(result.text) < 100


def test_non_string_input_never_raises() -> None:
    result = extract(None)  # type: ignore[arg-type]
    assert result.text == ""


KOREAN = "항구 계획에 대한 위원회의 결정은 화요일에 발표되었습니다. 예산은 사백만 원입니다. "
JAPANESE = "委員会は火曜日に港湾計画と予算を審議しました。新しい岸壁が建設されます。"
RUSSIAN = "Комитет во вторник рассмотрел план развития гавани и его бюджет. "


@pytest.mark.parametrize(
    ("sentence", "charset"),
    [(KOREAN, "euc-kr"), (JAPANESE, "shift_jis"), (RUSSIAN, "windows-1251"), (RUSSIAN, "koi8-r")],
)
def test_bytes_are_decoded_with_the_declared_charset(sentence: str, charset: str) -> None:
    html = article_page(paragraphs(3, sentence), lang=None, charset=charset)
    result = extract(html.encode(charset))
    assert sentence.strip() in result.text


@pytest.mark.parametrize(
    ("sentence", "charset"),
    [(RUSSIAN, "windows-1251"), (JAPANESE, "shift_jis"), (KOREAN, "euc-kr"), (RUSSIAN, "utf-8")],
)
def test_undeclared_charset_is_detected(sentence: str, charset: str) -> None:
    html = article_page(paragraphs(6, sentence), lang=None, charset=None)
    result = extract(html.encode(charset))
    assert sentence.strip() in result.text


def test_a_wrong_declaration_gives_way_to_detection() -> None:
    html = article_page(paragraphs(6, RUSSIAN), lang=None, charset="utf-8")
    result = extract(html.encode("windows-1251"))
    assert RUSSIAN.strip() in result.text


def test_bytes_and_str_give_the_same_result() -> None:
    html = article_page("<h1>Harbour plan</h1>" + paragraphs(3))
    assert extract(html.encode("utf-8")) == extract(html)


def test_extract_can_be_sent_to_a_process_pool() -> None:
    assert pickle.loads(pickle.dumps(extract)) is extract


def test_semantic_candidate_keeps_every_section_and_drops_furniture() -> None:
    from sluice.extraction.candidates import semantic_text
    from sluice.extraction.core import parse_html

    tree = parse_html(
        "<html><body><header><p>Site header</p></header>"
        "<div class='cookie-banner'>We use cookies</div>"
        "<main><section><h2>Fast</h2><p>Builds in seconds.</p></section>"
        "<section><h2>Safe</h2><p>Signed <b>releases</b>.</p><nav>Prev Next</nav></section>"
        "<p hidden>secret</p></main><footer>Copyright</footer></body></html>"
    )
    assert tree is not None
    assert semantic_text(tree) == "Fast\nBuilds in seconds.\nSafe\nSigned releases."


def test_semantic_candidate_survives_very_deep_pages() -> None:
    from sluice.extraction.candidates import semantic_text
    from sluice.extraction.core import parse_html

    tree = parse_html("<html><body>" + "<div>" * 200 + "deep text" + "</div>" * 200)
    assert tree is not None
    assert semantic_text(tree) == "deep text"
    assert extract("<html><body>" + "<div>" * 5000 + "deep " * 50).text is not None
