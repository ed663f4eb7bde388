"""Tier 2 features: numbers the pipeline already knows about a page, cheap to compute.

Four families: statistics of the extracted text, the extraction's structure counts, marks in
the raw HTML (tag counts, schema.org types, platform fingerprints) and the URL's shape. The
HTML is only scanned with substring counts and a few regular expressions: no parsing, so a
page costs a few milliseconds at most. HTML features are NaN when no HTML is available (the
labelled text corpus has none); the model handles missing values natively.
"""

from __future__ import annotations

import collections
import math
import re
from urllib.parse import urlsplit

import numpy as np

from sluice.classification.text_stats import (
    cjk_share,
    line_lengths,
    mojibake_share,
    short_line_share,
    word_equivalents,
)
from sluice.records import Extraction

# Only the head of very large pages is scanned: their structure shows early enough.
MAX_HTML_CHARS = 400_000
# Layout marks are counted in the head of the markup left once scripts and styles are gone.
MAX_MARKUP_CHARS = 120_000
# Rates and shares are measured on the head of long texts (the rest rarely changes them).
MAX_VOCAB_CHARS = 20_000

_SENTENCE_END = re.compile(r"[.!?。？！다요]\s*$")
_PRICE = re.compile(r"[$€£¥₩]\s?\d|\d[\d,.]*\s?(?:원|usd|eur|krw)\b")
# Every date begins with a digit or a month's first letter: the look-ahead lets the engine
# skip every other position (half the time, same matches).
_DATE = re.compile(
    r"(?=[\dadfjmnos])(?:\b(19|20)\d\d[-./]\d{1,2}[-./]\d{1,2}\b|\b\d{1,2} (jan|feb|mar|apr|"
    r"may|jun|jul|aug|sep|oct|nov|dec)[a-z]* (19|20)\d\d\b|\b(jan|feb|mar|apr|may|jun|jul|aug|"
    r"sep|oct|nov|dec)[a-z]*\.? \d{1,2},? (19|20)\d\d\b|\d{4}년\s?\d{1,2}월)",
)
_CODE_CHARS = re.compile(r"[{}();=<>\[\]_]")
_URL_DATE = re.compile(r"/(19|20)\d\d/(\d\d?/)?")

TEXT_WORDS: dict[str, str] = {
    "shop": r"add to (cart|bag|basket)|in stock|out of stock|free shipping|buy now|sku|"
    r"quantity|reviews?\b|장바구니|구매하기|배송|품절|수량",
    "service": r"free trial|get started|book a (demo|call)|request a (demo|quote)|contact us|"
    r"pricing|our (team|services|clients)|sign up|schedule|상담|문의하기|서비스",
    "forum": r"\breply\b|replies|posted by|\bjoined\b|\bquote\b|thread|upvote|answered|"
    r"\bposts?:|member since|댓글|답변|작성자|조회수?",
    "docs": r"\bparameters?\b|\breturns?\b|\bexample\b|\bsyntax\b|\bfunction\b|install|"
    r"configur|\bapi\b|command|매개변수|예제|설치",
    "listing": r"read more|continue reading|view all|see all|load more|next page|older posts|"
    r"page \d+ of|더\s?보기|전체\s?보기",
    "narrative": r"\b(i|we|he|she|they|was|were|had|said|says)\b|했다|였다|밝혔다|말했다",
}


def skipping(pattern: str) -> re.Pattern[str]:
    """`pattern` compiled so the engine skips positions where no match can begin.

    An alternation whose alternatives begin with `\\b` makes the regex engine try every
    alternative at every position; a look-ahead on the characters that can begin a match lets
    it skip the rest, in half the time, same matches. When an alternative's first character is
    not a plain letter (a class, an escape, an optional letter), the pattern is left as it is.
    """
    first = set()
    for alternative in pattern.split("|"):
        head = re.sub(r"^(\\b|\()+", "", alternative)
        if not head or not head[0].isalpha() or head[1:2] in ("?", "*", "{"):
            return re.compile(pattern)
        first.add(head[0])
    return re.compile(f"(?=[{''.join(sorted(first))}])(?:{pattern})")


_TEXT_WORD_RES = {name: skipping(pattern) for name, pattern in TEXT_WORDS.items()}

HTML_TAGS: tuple[str, ...] = (
    "a", "p", "li", "h1", "h2", "h3", "form", "input", "button", "img", "pre", "code", "table",
    "article", "time", "nav", "aside", "select", "iframe", "blockquote", "dl", "footer",
    "section", "main",
)  # fmt: skip
_TAG = re.compile(r"<([a-z][a-z0-9]*)")
# Scripts, styles, inline SVG and comments are most of a page's bytes and none of its layout.
_NOT_MARKUP = re.compile(
    r"<script\b.*?</script>|<style\b.*?</style>|<svg\b.*?</svg>|<!--.*?-->", re.S
)

# schema.org types in JSON-LD: every `"@type": "…"` value is found in one pass, then named.
_LD_TYPE = re.compile(r'"@type"\s*:\s*"([^"]*)"')
LD_TYPES: dict[str, str] = {
    "ld_article": r"(news|blog|scholarly|report)?(article|posting)",
    "ld_tech": r"techarticle|apireference|howto",
    "ld_product": r"product|offer|aggregateoffer|productgroup",
    "ld_forum": r"discussionforumposting|qapage|question|comment",
    "ld_list": r"itemlist|collectionpage|searchresultspage|offercatalog",
    "ld_org": r"organization|localbusiness|service|softwareapplication|webapplication|"
    r"corporation|professionalservice",
    "ld_faq": r"faqpage",
}
_LD_RES = {name: re.compile(pattern) for name, pattern in LD_TYPES.items()}
# Literal marks of page kinds and platforms, counted with str.count (regex alternations over
# half a megabyte of HTML cost tens of milliseconds; substring counts cost microseconds).
HTML_MARKS: dict[str, tuple[str, ...]] = {
    "og_article": ('content="article"',),
    "og_product": ('content="product"', 'content="og:product"'),
    "og_website": ('content="website"',),
    "article_meta": ("article:published_time", "datepublished", "article:author"),
    "price_marks": ('itemprop="price"', "price", "add-to-cart", "addtocart"),
    "cart": ("cart", "basket", "checkout", "장바구니"),
    "forum_marks": (
        "discourse", "phpbb", "vbulletin", "xenforo", "invision", "bbpress", "post-body",
        "postbody", "message-body", "comment-body", "reply", "thread",
    ),
    "docs_marks": (
        "sphinx", "docusaurus", "mkdocs", "gitbook", "readthedocs", "vitepress", "docsearch",
        "highlight", "toctree", "docs-", "api-", "sidebar-nav",
    ),
    "shop_platform": (
        "shopify", "woocommerce", "magento", "bigcommerce", "prestashop", "cafe24", "godomall",
    ),
    "blog_marks": (
        "wordpress", "wp-content", "entry-content", "post-content", "article-body", "byline",
        "author", "tistory", "blog",
    ),
    "grid_marks": ("product-grid", "product-card", "product-item", "grid-item", "pagination",
                   "pager", "load-more", "card"),
    "pricing_marks": ("pricing", "per month", "/mo", "free trial", "testimonial", "hero",
                      "demo", "get started"),
}  # fmt: skip

URL_TOKENS: dict[str, str] = {
    "u_article": r"/(blog|news|article|articles|post|posts|story|stories|opinion|magazine|"
    r"journal|insights?|press|column|view)/|\.html?$|/\d{5,}",
    "u_docs": r"/(docs?|documentation|api|reference|manual|guide|guides|tutorials?|wiki|learn|"
    r"handbook|kb|knowledge|help|support|faq|man)\b",
    "u_forum": r"/(forums?|threads?|topics?|t|community|discussions?|questions|q|board|bbs|"
    r"comments|r)/|showthread|viewtopic|cafe\.|gall",
    "u_product": r"/(products?|p|dp|item|items|goods|shop/[^/]+/|sku|buy)/|product_id|goods_no",
    "u_collection": r"/(collections?|category|categories|catalog|shop|store|c|department|"
    r"brands?)(/|$)|[?&](category|cat|sort|filter)=",
    "u_listing": r"/(tags?|archive|archives|search|page/\d+|list|index|latest|topics|authors?|"
    r"courses|reviews|best)(/|$)|[?&](page|p|q|s)=",
    "u_service": r"/(services?|solutions?|pricing|features?|platform|enterprise|about|"
    r"contact|company|industries|use-cases|why|plans|demo)(/|$|-)",
    "u_login": r"/(login|log-in|signin|sign-in|register|signup|account|auth)\b",
}
_URL_SPLIT = re.compile(r"[/_\-.?=&+%]+")
# The linear text model reads the head of the text: the rest adds time, not accuracy.
MAX_DOCUMENT_CHARS = 3000
_URL_RES = {name: re.compile(pattern, re.I) for name, pattern in URL_TOKENS.items()}


def _log1p(value: float) -> float:
    return math.log1p(max(0.0, value))


def _line_features(text: str) -> dict[str, float]:
    lengths = line_lengths(text)
    n_lines = max(1, len(lengths))
    ended = sum(1 for line in text.splitlines() if _SENTENCE_END.search(line))
    return {
        "t_lines": _log1p(len(lengths)),
        "t_mean_line": _log1p(sum(lengths) / n_lines),
        "t_max_line": _log1p(max(lengths, default=0)),
        "t_short_lines": short_line_share(text),
        "t_sentence_lines": ended / n_lines,
    }


def _rate_features(head: str) -> dict[str, float]:
    """Rates per 100 words (or per character) of marks in the head of the text."""
    per_word = 100.0 / max(word_equivalents(head), 1.0)
    per_char = 1.0 / max(1, len(head))
    lower = head.lower()
    feats = {
        "t_digits": sum(map(str.isdigit, head)) * per_char,
        "t_upper": sum(map(str.isupper, head)) * per_char,
        "t_code": len(_CODE_CHARS.findall(head)) * per_char,
        "t_prices": len(_PRICE.findall(lower)) * per_word,
        "t_dates": len(_DATE.findall(lower)) * per_word,
        "t_questions": head.count("?") * per_word,
    }
    for name, pattern in _TEXT_WORD_RES.items():
        feats[f"tw_{name}"] = len(pattern.findall(lower)) * per_word
    return feats


def text_features(text: str) -> dict[str, float]:
    """Length, script, line shape and vocabulary of the extracted text."""
    head = text[:MAX_VOCAB_CHARS]
    feats = {
        "t_words": _log1p(word_equivalents(text)),
        "t_chars": _log1p(len(text)),
        "t_cjk": cjk_share(head),
        "t_mojibake": mojibake_share(head),
    }
    return feats | _line_features(text) | _rate_features(head)


def structure_features(extraction: Extraction) -> dict[str, float]:
    """The extraction's structure counts, raw (log) and relative to the text's length."""
    words = max(word_equivalents(extraction.text), 1.0)
    blocks = max(1, extraction.n_paragraphs + extraction.n_list_items + extraction.n_headings)
    return {
        "s_paragraphs": _log1p(extraction.n_paragraphs),
        "s_items": _log1p(extraction.n_list_items),
        "s_headings": _log1p(extraction.n_headings),
        "s_links": _log1p(extraction.n_links),
        "s_cells": _log1p(extraction.n_table_cells),
        "s_link_share": extraction.link_chars / max(1, len(extraction.text)),
        "s_items_share": extraction.n_list_items / blocks,
        "s_headings_share": extraction.n_headings / blocks,
        "s_words_per_block": _log1p(words / blocks),
        "s_links_per_100w": 100.0 * extraction.n_links / words,
        "m_author": float(bool(extraction.author)),
        "m_date": float(extraction.published is not None),
        "m_description": float(bool(extraction.description)),
        "m_title_words": _log1p(len((extraction.title or "").split())),
    }


def html_features(html: str | None) -> dict[str, float]:
    """Tag counts and marks of the raw HTML, NaN for every feature when there is no HTML."""
    names = [f"h_tag_{tag}" for tag in HTML_TAGS] + ["h_scripts", "h_markup_share"]
    names += [f"h_{key}" for key in (*LD_TYPES, *HTML_MARKS)]
    if html is None:
        return {"h_size": math.nan} | dict.fromkeys(names, math.nan)
    lower = html[:MAX_HTML_CHARS].lower()
    markup = _NOT_MARKUP.sub(" ", lower)[:MAX_MARKUP_CHARS]
    tags = collections.Counter(_TAG.findall(markup))
    feats = {"h_size": _log1p(len(html))}
    for tag in HTML_TAGS:
        feats[f"h_tag_{tag}"] = _log1p(tags[tag])
    feats["h_scripts"] = _log1p(lower.count("<script"))
    feats["h_markup_share"] = len(markup) / max(1, len(lower))
    ld_types = _LD_TYPE.findall(lower)
    for key, pattern in _LD_RES.items():
        feats[f"h_{key}"] = _log1p(sum(1 for name in ld_types if pattern.fullmatch(name)))
    for key, marks in HTML_MARKS.items():
        feats[f"h_{key}"] = _log1p(sum(markup.count(mark) for mark in marks))
    return feats


def url_features(url: str | None) -> dict[str, float]:
    """The URL's shape and the words in its path; NaN for every feature without a URL."""
    names = ["u_depth", "u_root", "u_date", "u_slug_words", "u_query", "u_digits", "u_len"]
    if not url or url == "None":
        return dict.fromkeys(names + list(URL_TOKENS), math.nan)
    parts = urlsplit(url)
    path = parts.path or "/"
    segments = [s for s in path.split("/") if s]
    last = segments[-1] if segments else ""
    feats = {
        "u_depth": float(len(segments)),
        "u_root": float(not segments),
        "u_date": float(bool(_URL_DATE.search(path))),
        "u_slug_words": float(len(re.split(r"[-_+]", last))) if last else 0.0,
        "u_query": float(bool(parts.query)),
        "u_digits": _log1p(sum(ch.isdigit() for ch in path)),
        "u_len": _log1p(len(path)),
    }
    target = path + ("?" + parts.query if parts.query else "") + " " + parts.netloc
    for name, pattern in _URL_RES.items():
        feats[name] = float(bool(pattern.search(target)))
    return feats


def page_features(extraction: Extraction, html: str | None, url: str | None) -> dict[str, float]:
    """All features of one page, by name."""
    return (
        text_features(extraction.text)
        | structure_features(extraction)
        | html_features(html)
        | url_features(url)
    )


def feature_names() -> list[str]:
    """The features' names in the order the model sees them."""
    return list(page_features(Extraction(text=""), "", "https://example.org/").keys())


def feature_vector(extraction: Extraction, html: str | None, url: str | None) -> np.ndarray:
    """The features of one page as a float row, in `feature_names()` order."""
    return np.fromiter(page_features(extraction, html, url).values(), dtype=np.float64)


def text_document(extraction: Extraction, url: str | None) -> str:
    """The words a linear text model reads: the title, the URL's path words and the text head."""
    parts = urlsplit(url or "") if url and url != "None" else None
    path = f"{parts.path} {parts.query}" if parts else ""
    url_words = " ".join(f"urlw_{word}" for word in _URL_SPLIT.split(path.lower()) if word)
    return f"{extraction.title or ''} {url_words} {extraction.text[:MAX_DOCUMENT_CHARS]}"
