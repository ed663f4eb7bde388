"""The page pipeline as plain functions: fetched page -> extraction -> gate -> (verdict) -> row.

The crawler runs `process_page` in a process pool (CPU-bound work stays off the reactor); the
Celery task runs `classify_stored`. Both build their rows here, so the two paths cannot drift.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import sqlalchemy as sa

from sluice.classification import PageRequest, classify_page, classify_pages
from sluice.db import store
from sluice.db.models import articles
from sluice.extraction import extract
from sluice.extraction.decoding import decode_html
from sluice.gate import GateOptions, gate_length, settle_status
from sluice.records import Extraction, FetchedPage, GateResult, Status, Verdict
from sluice.render_policy import RenderDecision, needs_render

STRUCTURE_FIELDS = ("n_paragraphs", "n_list_items", "n_headings", "n_links", "link_chars",
                    "n_table_cells")


@dataclass(frozen=True, slots=True)
class PageOutcome:
    """What the pipeline decided for one fetched page (without the page itself: it travels back
    from the extraction pool, and its body is the crawler's already)."""

    extraction: Extraction
    gate: GateResult
    options: GateOptions
    verdict: Verdict | None = None
    render: RenderDecision | None = None

    @property
    def status_and_reason(self) -> tuple[Status, str | None]:
        if self.verdict is None:
            return self.gate.status, self.gate.reason
        return settle_status(self.gate.n_chars, self.verdict, self.options)


def process_page(page: FetchedPage, gate: GateOptions, classify: bool) -> PageOutcome:
    """Extract and gate one page; with `classify`, settle it too (the embedded path)."""
    # Decoded once here (the header's charset, else the page's own, else a detected one), so
    # extraction and classification do not each detect a charset again.
    html = decode_html(page.body, page.encoding)
    extraction = extract(html, url=page.final_url or page.url)
    result = gate_length(extraction.text, gate)
    verdict = render = None
    if classify and result.status is Status.PENDING:
        verdict = classify_page(html, page.final_url or page.url, extraction)
    if not page.rendered:
        render = needs_render(page.body, extraction, result)
    return PageOutcome(extraction, result, gate, verdict, render)


def content_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def outcome_row(page: FetchedPage, outcome: PageOutcome, lease_until: datetime | None
                ) -> dict[str, Any]:
    """The `articles` row for a processed page."""
    extraction, gate = outcome.extraction, outcome.gate
    now = store.utcnow()
    row: dict[str, Any] = {
        "url": page.url, "status": gate.status, "reason": gate.reason,
        "http_status": page.http_status, "final_url": page.final_url, "rendered": page.rendered,
        "title": extraction.title, "author": extraction.author,
        "published_at": extraction.published, "language": extraction.language,
        "sitename": extraction.sitename, "text": extraction.text, "content": gate.content,
        "char_count": gate.n_chars, "content_hash": content_hash(extraction.text),
        "structure": {name: getattr(extraction, name) for name in STRUCTURE_FIELDS},
        "source": page.source, "discovered_at": now, "fetched_at": page.fetched_at or now,
        "updated_at": now, "lease_until": lease_until if gate.status is Status.PENDING else None,
        "attempts": 0,  # a fresh fetch: its classification has not been handed out yet
        "page_type": None, "suitable": None, "suitability_reason": None,
        "suitability_score": None, "classified_by": None,
    }
    if outcome.verdict is not None:
        status, reason = outcome.status_and_reason
        row.update(status=status, reason=reason, lease_until=None,
                   **verdict_values(outcome.verdict))
    return row


def failure_row(url: str, reason: str, source: str | None, http_status: int | None = None,
                final_url: str | None = None, rendered: bool = False) -> dict[str, Any]:
    """The `articles` row for a URL that could not be fetched (or was refused)."""
    now = store.utcnow()
    return {"url": url, "status": Status.FETCH_FAILED, "reason": reason,
            "http_status": http_status, "final_url": final_url, "rendered": rendered,
            "source": source, "discovered_at": now, "fetched_at": now, "updated_at": now,
            "lease_until": None}


def verdict_values(verdict: Verdict) -> dict[str, Any]:
    return {"page_type": verdict.page_type, "suitable": verdict.suitable,
            "suitability_reason": verdict.reason, "suitability_score": verdict.score,
            "classified_by": verdict.classified_by}


def extraction_from_row(row: sa.Row[Any]) -> Extraction:
    """Rebuild the extraction a stored row came from, so classifying never re-extracts."""
    counts = {name: int((row.structure or {}).get(name, 0)) for name in STRUCTURE_FIELDS}
    return Extraction(text=row.text or "", title=row.title, author=row.author,
                      published=row.published_at, language=row.language, sitename=row.sitename,
                      n_paragraphs=counts["n_paragraphs"], n_list_items=counts["n_list_items"],
                      n_headings=counts["n_headings"], n_links=counts["n_links"],
                      link_chars=counts["link_chars"], n_table_cells=counts["n_table_cells"])


# What classifying a stored row reads (not `content`, a second copy of the text).
CLASSIFY_COLUMNS = [articles.c[name] for name in (
    "url", "final_url", "char_count", "text", "title", "author", "published_at", "language",
    "sitename", "structure")]


def classify_stored(engine: sa.Engine, urls: Sequence[str], gate: GateOptions
                    ) -> dict[str, Status]:
    """Classify stored `pending` rows and settle them: one read, one model call and one
    transaction for the whole batch. Returns the new status of each row this call settled;
    rows no longer pending (already classified: a redelivered task) are left alone."""
    with engine.begin() as conn:
        store.start_classifying(conn, urls)  # committed first: it counts even if this crashes
    with engine.connect() as conn:
        rows = conn.execute(sa.select(*CLASSIFY_COLUMNS).where(
            articles.c.url.in_(urls), articles.c.status == Status.PENDING)).all()
        if not rows:
            return {}
        bodies = store.read_bodies(conn, [row.url for row in rows])
    requests = [PageRequest(decode_html(*bodies[row.url]) if row.url in bodies else row.text or "",
                            row.final_url or row.url, extraction_from_row(row)) for row in rows]
    settled = {}
    with engine.begin() as conn:
        for row, verdict in zip(rows, classify_pages(requests), strict=True):
            status, reason = settle_status(row.char_count or 0, verdict, gate)
            if store.record_verdict(conn, row.url, {"status": status, "reason": reason,
                                                    **verdict_values(verdict)}):
                settled[row.url] = status
    return settled
