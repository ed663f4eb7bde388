"""The extraction stage: one call from a page's HTML to its main text, metadata and structure."""

from __future__ import annotations

import logging

from lxml.html import HtmlElement
from trafilatura.settings import Document
from trafilatura.utils import load_html

from sluice.extraction.candidates import all_candidates, run_trafilatura
from sluice.extraction.chooser import choose
from sluice.extraction.decoding import decode_html
from sluice.extraction.metadata import declared_language, normalise_language, parse_date
from sluice.extraction.structure import count_structure
from sluice.records import Extraction

logger = logging.getLogger(__name__)

EMPTY = Extraction(text="")


def extract(html: str | bytes, url: str | None = None) -> Extraction:
    """Extract the main text, metadata and structure counts of one page.

    Accepts the page as fetched (bytes, decoded with the declared charset or a detected one)
    or already decoded. Never raises on bad input: garbage gives an Extraction with empty text.
    A plain module-level function, so it can be sent to a process pool.
    """
    try:
        return _extract(html, url)
    except Exception:
        # The process edge of the extraction stage: a page must never take a worker down.
        logger.exception("extraction failed for %s", url)
        return EMPTY


def _extract(html: str | bytes, url: str | None) -> Extraction:
    """`extract` without the safety net."""
    text = decode_html(html) if isinstance(html, bytes) else html
    tree = parse_html(text)
    if tree is None:
        return EMPTY
    document = run_trafilatura(tree, url)
    if document is None:
        # Too little text for trafilatura: garbage, an empty shell or a bare redirect page.
        return Extraction(text="", language=declared_language(tree))
    return to_extraction(document, tree, text)


def parse_html(text: str) -> HtmlElement | None:
    """Parse a page the way trafilatura does (it repairs common breakage), None if not HTML."""
    if not text or not text.strip():
        return None
    tree: HtmlElement | None = load_html(text.replace("\x00", ""))
    return tree


def to_extraction(document: Document, tree: HtmlElement, html: str) -> Extraction:
    """Build the record: structure counts of trafilatura's body, the chosen candidate's text.

    The counts describe trafilatura's main content even when another candidate's text wins;
    they are read before the text is rendered, which strips the links from the body.
    """
    counts = count_structure(document.body)
    texts = all_candidates(html, tree, document)
    language = normalise_language(document.language or "") or declared_language(tree)
    return Extraction(
        text=texts[choose(texts)],
        title=document.title or None,
        author=document.author or None,
        published=parse_date(document.date),
        language=language,
        sitename=document.sitename or None,
        description=document.description or None,
        n_paragraphs=counts.n_paragraphs,
        n_list_items=counts.n_list_items,
        n_headings=counts.n_headings,
        n_links=counts.n_links,
        link_chars=counts.link_chars,
        n_table_cells=counts.n_table_cells,
    )
