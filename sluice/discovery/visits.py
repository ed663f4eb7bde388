"""One visit of a scheduled source, tallied across the sources it led to.

A source a user schedules may only point to others: a sitemap index to its child sitemaps,
robots.txt to its sitemaps, a home page to its feeds, a listing page to its next page. The
visit's result, kept on the source's `feeds` row, counts the articles found in all of them, how
many of the sources followed failed, and the first problem seen (a followed source that failed,
or any source read only in part), so that a sitemap index whose children all answer 404 does
not look like a healthy source that lists nothing.
"""

from __future__ import annotations

from dataclasses import dataclass

from sluice.discovery.sources import SourceReading
from sluice.schedule import FOLLOWED_SOURCES_FAILED


@dataclass(slots=True)
class SourceVisit:
    """Articles found, sources followed and failed, and the first problem, so far."""

    entries: int = 0
    followed: int = 0
    failed: int = 0
    first_problem: str | None = None

    def add_source(self, url: str, reading: SourceReading) -> None:
        """The scheduled source's own reading (or a followed one that was read)."""
        self.entries += len(reading.articles)
        if reading.problem:
            self._note(url, reading.problem, reading.detail)

    def add_followed(self, url: str, outcome: SourceReading | str) -> None:
        """A followed source: its reading, or the reason code it could not be fetched or read."""
        self.followed += 1
        if isinstance(outcome, SourceReading) and outcome.status == "ok":
            self.add_source(url, outcome)
            return
        self.failed += 1
        if isinstance(outcome, SourceReading):
            self._note(url, outcome.status, outcome.detail)
        else:
            self._note(url, outcome)

    def status(self, own_status: str) -> str:
        """The visit's status: the source's own, unless it was read but every source it
        pointed to failed and no article was found anywhere."""
        if own_status == "ok" and self.followed and self.failed == self.followed \
                and not self.entries:
            return FOLLOWED_SOURCES_FAILED
        return own_status

    def _note(self, url: str, reason: str, detail: str = "") -> None:
        if self.first_problem is None:
            self.first_problem = f"{url}: {reason}" + (f" ({detail})" if detail else "")
