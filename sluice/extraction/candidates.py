"""Candidate main-content extractions of one page, each a different algorithm or setting.

trafilatura in recall mode is the primary candidate: it also gives the metadata and the XML
body the structure counts come from. resiliparse gives two cheap views (its main-content
heuristic, and all visible text) and trafilatura's baseline a third; they disagree with the
primary on the pages where it fails, which is what the chooser needs.
"""

from __future__ import annotations

import unicodedata

import trafilatura
from lxml.etree import strip_tags
from lxml.html import HtmlElement
from resiliparse.extract.html2text import extract_plain_text
from trafilatura.settings import Document, set_date_params
from trafilatura.xml import xmltotxt

# The order is the chooser's feature order: changing it needs a refit (bench.extraction --fit).
CANDIDATES = ("recall", "main", "page", "baseline")


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


def all_candidates(html: str, tree: HtmlElement, document: Document | None) -> dict[str, str]:
    """The text of every candidate, keyed by the names in `CANDIDATES`."""
    return {
        "recall": body_text(document),
        "main": resiliparse_text(html, main_content=True),
        "page": resiliparse_text(html, main_content=False),
        "baseline": baseline_text(tree),
    }
