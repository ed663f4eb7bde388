"""What spiders hand to the item pipelines."""

from __future__ import annotations

from dataclasses import dataclass

from sluice.pipeline import PageOutcome
from sluice.records import FetchedPage


@dataclass(slots=True)
class DiscoveredItem:
    """URLs a feed (or list) pointed to: each gets a `queued` row before it is fetched."""

    urls: list[str]
    source: str


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
    """What happened when a feed itself was fetched."""

    url: str
    status: str
    kind: str | None = None
    title: str | None = None
    entries: int = 0
