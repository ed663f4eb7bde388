"""Property tests: extraction on generated HTML (well-formed or not, any charset) and feed parsing
on generated feeds never fail, never need the safety net, and give the same result twice."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sluice.discovery.feeds import parse_feed
from sluice.errors import FeedError
from sluice.extraction import extract

WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)
TAGS = ["p", "div", "span", "article", "main", "section", "h1", "h2", "li", "ul", "table", "td",
        "tr", "a", "b", "i", "nav", "footer", "header", "aside", "script", "style", "noscript",
        "pre", "code", "blockquote", "figure", "iframe", "form", "template", "svg", "math"]


@st.composite
def html_fragments(draw: st.DrawFn, depth: int = 0) -> str:
    """Nested elements with arbitrary text, stray closing tags and unclosed ones."""
    parts: list[str] = []
    for _ in range(draw(st.integers(0, 6))):
        kind = draw(st.sampled_from(["text", "element", "stray", "entity", "comment"]))
        if kind == "text":
            parts.append(draw(WORDS))
        elif kind == "element" and depth < 4:
            tag = draw(st.sampled_from(TAGS))
            attrs = draw(st.sampled_from(["", " class='content'", " id=main", " lang=ko",
                                          " style='display:none'", " hidden", ' x="<>"']))
            inner = draw(html_fragments(depth + 1))
            close = draw(st.sampled_from([f"</{tag}>", f"</{tag}>", ""]))
            parts.append(f"<{tag}{attrs}>{inner}{close}")
        elif kind == "stray":
            parts.append(draw(st.sampled_from(["</div>", "</p></p>", "<p", "<", "</html>",
                                               "<![CDATA[", "<!doctype html>", "<?xml?>"])))
        elif kind == "entity":
            parts.append(draw(st.sampled_from(["&amp;", "&nbsp;", "&#0;", "&#xD800;", "&bogus;",
                                               "&#99999999;", "&"])))
        else:
            parts.append("<!--" + draw(WORDS) + draw(st.sampled_from(["-->", ""])))
    return "".join(parts)


@st.composite
def pages(draw: st.DrawFn) -> str | bytes:
    head = draw(st.sampled_from(["", "<meta charset='utf-8'>", "<meta charset=euc-kr>",
                                 "<meta charset='shift_jis'>", "<meta charset=bogus>",
                                 "<title>t</title>", "<html lang='en'><head>"]))
    html = f"<html><head>{head}</head><body>{draw(html_fragments())}</body></html>"
    encoding = draw(st.sampled_from([None, "utf-8", "cp1251", "shift_jis", "euc-kr", "utf-16"]))
    if encoding is None:
        return html
    return html.encode(encoding, errors="replace")


class _Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def errors_logged() -> Iterator[list[logging.LogRecord]]:
    """The ERROR records logged meanwhile (the extraction safety net logs one per crash)."""
    handler = _Collect()
    root = logging.getLogger("sluice")
    root.addHandler(handler)
    try:
        yield handler.records
    finally:
        root.removeHandler(handler)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(pages())
def test_extraction_on_generated_html_is_total_and_deterministic(page: str | bytes) -> None:
    with errors_logged() as errors:
        first = extract(page, "https://x.example/a")
        second = extract(page, "https://x.example/a")
    assert not errors, errors[0].getMessage()
    assert first == second


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=3000))
def test_extraction_on_arbitrary_bytes_is_total(body: bytes) -> None:
    with errors_logged() as errors:
        result = extract(body)
    assert not errors, errors[0].getMessage()
    assert isinstance(result.text, str)


LINKS = st.one_of(WORDS, st.sampled_from(["https://x.example/a", "/relative", "javascript:x()",
                                          "file:///etc/passwd", "http://[::1", "//cdn.example/x",
                                          "https://x.example/a#frag", "&bogus;"]))


@st.composite
def rss_feeds(draw: st.DrawFn) -> bytes:
    items = "".join(
        f"<item><title>{draw(WORDS)}</title><link>{draw(LINKS)}</link>"
        f"<guid>{draw(LINKS)}</guid><pubDate>{draw(WORDS)}</pubDate></item>"
        for _ in range(draw(st.integers(0, 8))))
    text = f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}'
    return (text + draw(st.sampled_from(["</channel></rss>", "</channel>", ""]))).encode(
        "utf-8", errors="replace")


@settings(max_examples=150, deadline=None)
@given(rss_feeds())
def test_generated_feeds_parse_or_fail_cleanly_and_deterministically(body: bytes) -> None:
    try:
        first = parse_feed(body, "https://x.example/feed")
    except FeedError:
        return
    assert parse_feed(body, "https://x.example/feed") == first
    assert all(entry.url.startswith(("http://", "https://")) for entry in first.entries)
