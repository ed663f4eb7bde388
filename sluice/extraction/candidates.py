"""Candidate main-content extractions of one page, each a different algorithm or setting.

trafilatura in recall mode is the primary candidate: it also gives the metadata and the XML
body the structure counts come from. resiliparse gives two cheap views (its main-content
heuristic, and all visible text), trafilatura's baseline a third, and a walk of the page's
semantic HTML (its <main>, without navigation, header, footer, aside, forms and their kin)
a fourth; they disagree with the primary on the pages where it fails, which is what the
chooser needs.
"""

from __future__ import annotations

import re
import unicodedata

import trafilatura
from lxml.etree import strip_tags
from lxml.html import HtmlElement
from resiliparse.extract.html2text import extract_plain_text
from trafilatura.settings import Document, set_date_params
from trafilatura.xml import xmltotxt

# The order is the chooser's feature order: changing it needs a refit (bench.extraction --fit).
CANDIDATES = ("recall", "main", "page", "baseline", "semantic")

# Elements whose text is never main content, wherever they are.
_NOT_CONTENT_TAGS = frozenset(
    "nav header footer aside form script style noscript template svg iframe button select"
    " option head dialog menu".split()
)
_NOT_CONTENT_ROLES = frozenset(
    "navigation banner contentinfo complementary search dialog menu menubar".split()
)
# Class or id words that mark page furniture on any site.
_FURNITURE = re.compile(
    r"cookie|consent|breadcrumb|\bnav|menu|sidebar|footer|header|share|social|newsletter"
    r"|popup|modal|banner",
    re.IGNORECASE,
)
# Elements that start a new line of text.
_BLOCK_TAGS = frozenset(
    "p div li h1 h2 h3 h4 h5 h6 tr br section article main ul ol table pre blockquote dd dt"
    " figcaption td th".split()
)


def run_trafilatura(tree: HtmlElement, url: str | None) -> Document | None:
    """trafilatura in recall mode, with metadata, comments left out.

    Links are kept in the XML body so they can be counted; `body_text` strips them. The date
    search skips htmldate's extensive pass: it halves the metadata time and found one date
    fewer in 76 on the development pages.
    """
    document = trafilatura.bare_extraction(
        tree,
        url=url,
        favor_recall=True,
        include_comments=False,
        include_links=True,
        with_metadata=True,
        date_extraction_params=set_date_params(extensive=False),
    )
    return document if isinstance(document, Document) else None


def body_text(document: Document | None) -> str:
    """The plain text of a trafilatura body, links rendered as their text only (NFC)."""
    if document is None or document.body is None:
        return ""
    strip_tags(document.body, "ref")
    return unicodedata.normalize("NFC", xmltotxt(document.body, False)).strip()


def resiliparse_text(html: str, main_content: bool) -> str:
    """resiliparse's plain text: its main-content heuristic, or all visible text."""
    text: str = extract_plain_text(html, main_content=main_content, comments=False)
    return text.strip()


def baseline_text(tree: HtmlElement) -> str:
    """trafilatura's baseline: article bodies, JSON-LD and long paragraphs, no scoring."""
    _, text, _ = trafilatura.baseline(tree)
    return str(text).strip()


def semantic_text(tree: HtmlElement) -> str:
    """The text of the page's <main> (or of the whole page if it has none), leaving out what
    HTML marks as not content: navigation, header, footer, aside, forms, hidden elements,
    and elements whose role, class or id names page furniture (menus, cookie banners...).

    Sites that spread their content over many sections (services, listings, collections)
    lose it to single-block extractors; this keeps every section. Walks the tree with an
    explicit stack (deep pages cannot exhaust the recursion limit) and leaves it unchanged.
    """
    mains = tree.xpath("//main|//*[@role='main']")
    root = mains[0] if mains else tree
    out: list[str] = []
    stack: list[HtmlElement | str] = [root]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            out.append(item)
            continue
        if not isinstance(item.tag, str) or not _is_content(item, item is root):
            continue
        block = item.tag in _BLOCK_TAGS
        pending: list[HtmlElement | str] = ["\n"] if block else []
        if item.text:
            pending.append(item.text)
        for child in item:
            pending.append(child)
            if child.tail:
                pending.append(child.tail)
        if block:
            pending.append("\n")
        stack.extend(reversed(pending))
    lines = (" ".join(line.split()) for line in "".join(out).split("\n"))
    return unicodedata.normalize("NFC", "\n".join(line for line in lines if line))


def _is_content(element: HtmlElement, is_root: bool) -> bool:
    """Whether an element may hold main content, judged by its tag and attributes only."""
    if element.tag in _NOT_CONTENT_TAGS or element.get("role") in _NOT_CONTENT_ROLES:
        return False
    if element.get("hidden") is not None:
        return False
    if "display:none" in (element.get("style") or "").replace(" ", ""):
        return False
    if is_root or element.tag in ("html", "body"):
        return True
    marks = f"{element.get('class') or ''} {element.get('id') or ''}"
    return not _FURNITURE.search(marks)


def all_candidates(html: str, tree: HtmlElement, document: Document | None) -> dict[str, str]:
    """The text of every candidate, keyed by the names in `CANDIDATES`."""
    return {
        "recall": body_text(document),
        "main": resiliparse_text(html, main_content=True),
        "page": resiliparse_text(html, main_content=False),
        "baseline": baseline_text(tree),
        "semantic": semantic_text(tree),
    }
