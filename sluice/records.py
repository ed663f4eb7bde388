"""The typed, frozen records passed from one pipeline stage to the next.

FetchedPage -> Extraction -> GateResult -> Verdict. Each is immutable, so a stage can never
quietly change what an earlier stage decided.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime


class Status(enum.StrEnum):
    """Where a URL stands. `queued` and `pending` are in flight; the rest are terminal."""

    QUEUED = "queued"
    PENDING = "pending"
    SUCCESS = "success"
    TRUNCATED = "truncated"
    UNDER_LIMIT = "under_limit"
    UNSUITABLE_CONTENT = "unsuitable_content"
    FETCH_FAILED = "fetch_failed"

    @property
    def terminal(self) -> bool:
        return self not in (Status.QUEUED, Status.PENDING)


@dataclass(frozen=True, slots=True)
class FetchedPage:
    """A response as the crawler received it (after redirects)."""

    url: str
    final_url: str
    http_status: int
    body: bytes = field(repr=False)
    content_type: str = ""
    encoding: str | None = None
    rendered: bool = False
    fetched_at: datetime | None = None
    source: str | None = None


@dataclass(frozen=True, slots=True)
class Extraction:
    """The main text of a page and its metadata, plus the structure of the extracted content.

    The structure counts (paragraphs, list items, headings, links, table cells) describe the
    extracted main content, not the whole page; the classifier uses them.
    """

    text: str
    title: str | None = None
    author: str | None = None
    published: datetime | None = None
    language: str | None = None
    sitename: str | None = None
    description: str | None = None
    n_paragraphs: int = 0
    n_list_items: int = 0
    n_headings: int = 0
    n_links: int = 0
    link_chars: int = 0
    n_table_cells: int = 0

    @property
    def char_count(self) -> int:
        return len(self.text)


@dataclass(frozen=True, slots=True)
class GateResult:
    """The length gate's decision: the status so far, why, and the (possibly cut) content."""

    status: Status
    reason: str | None
    n_chars: int
    content: str


@dataclass(frozen=True, slots=True)
class Verdict:
    """Whether a page is a real article worth reading, and why."""

    suitable: bool
    page_type: str
    reason: str
    classified_by: str
    score: float = field(default=0.5)
