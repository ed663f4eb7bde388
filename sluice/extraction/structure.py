"""Structure counts of extracted main content, read from trafilatura's XML body."""

from __future__ import annotations

from dataclasses import dataclass

from lxml.etree import _Element


@dataclass(frozen=True, slots=True)
class StructureCounts:
    """How many paragraphs, list items, headings, links and table cells the content holds."""

    n_paragraphs: int = 0
    n_list_items: int = 0
    n_headings: int = 0
    n_links: int = 0
    link_chars: int = 0
    n_table_cells: int = 0


def count_structure(body: _Element | None) -> StructureCounts:
    """Count the elements of a trafilatura XML body (`p`, `item`, `head`, `ref`, `cell`)."""
    if body is None:
        return StructureCounts()
    links = list(body.iter("ref"))
    return StructureCounts(
        n_paragraphs=sum(1 for _ in body.iter("p")),
        n_list_items=sum(1 for _ in body.iter("item")),
        n_headings=sum(1 for _ in body.iter("head")),
        n_links=len(links),
        link_chars=sum(len("".join(link.itertext()).strip()) for link in links),
        n_table_cells=sum(1 for _ in body.iter("cell")),
    )
