"""What spiders hand to the item pipelines."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from sluice.pipeline import PageOutcome
from sluice.records import FetchedPage


@dataclass(slots=True)
class DiscoveredItem:
    """URLs a feed (or list) pointed to: each gets a `queued` row before it is fetched."""

    urls: list[str]
    source: str
    # Publication dates the source gave (Google News sitemaps, feeds), kept on the rows.
    published: dict[str, datetime] = field(default_factory=dict)


@dataclass(slots=True)
class PageItem:
    """One fetched page; the extract pipeline fills `outcome`."""

    page: FetchedPage
    render_policy: str | None = None
    outcome: PageOutcome | None = None


@dataclass(slots=True)
class FailureItem:
    """A URL that ended as `fetch_failed` (or was refused) with a reason code."""

    url: str
    reason: str
    source: str | None
    http_status: int | None = None
    final_url: str | None = None
    rendered: bool = False


@dataclass(slots=True)
class FeedResultItem:
    """What a visit of a scheduled source found: the source itself (its status, kind, title and
    validators) and, with it, the sources it led to (`entries` counts all their articles)."""

    url: str
    status: str
    kind: str | None = None
    title: str | None = None
    entries: int = 0
    # Sources followed from this one in the visit, how many failed, the first problem.
    followed: int = 0
    followed_failed: int = 0
    first_problem: str | None = None
    # Validators for the next conditional GET.
    etag: str | None = None
    last_modified: str | None = None
    # A listing pattern that proved itself on the page, or the stored one failed (forget it).
    listing_pattern: str | None = None
    listing_pattern_failed: bool = False
