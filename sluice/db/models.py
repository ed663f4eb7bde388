"""Table definitions (SQLAlchemy Core). Alembic migrations create them; tests check they agree.

`articles` is the table users query: one row per canonical URL, its status and the reason code.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from sluice.records import Status

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)


class UTCDateTime(sa.TypeDecorator[datetime]):
    """A timestamp with a time zone, written in UTC. SQLite stores no zone: a value with
    another offset would be stored as its local wall-clock time and read back as UTC."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Any) -> datetime | None:
        if value is not None and value.tzinfo is not None:
            return value.astimezone(UTC)
        return value


TZDateTime = UTCDateTime()

status_type = sa.Enum(
    Status,
    name="article_status",
    values_callable=lambda enum: [member.value for member in enum],
    create_constraint=True,
    validate_strings=True,
)

articles = sa.Table(
    "articles",
    metadata,
    sa.Column("url", sa.Text, primary_key=True, comment="Canonical URL, the row key."),
    sa.Column("status", status_type, nullable=False, index=True),
    sa.Column("reason", sa.Text, comment="Reason code for the status, e.g. http_404, too_short."),
    sa.Column("http_status", sa.Integer),
    sa.Column("final_url", sa.Text, comment="URL after redirects."),
    sa.Column("rendered", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("title", sa.Text),
    sa.Column("author", sa.Text),
    sa.Column("published_at", TZDateTime),
    sa.Column("language", sa.Text),
    sa.Column("sitename", sa.Text),
    sa.Column("text", sa.Text, comment="The full extracted text, never cut."),
    sa.Column("content", sa.Text, comment="The gated text: at most max_chars, cut at a boundary."),
    sa.Column("char_count", sa.Integer, comment="Characters in `text`."),
    sa.Column("content_hash", sa.Text, comment="SHA-256 of `text`."),
    sa.Column("page_type", sa.Text),
    sa.Column("suitable", sa.Boolean),
    sa.Column("suitability_reason", sa.Text),
    sa.Column("suitability_score", sa.Float),
    sa.Column("classified_by", sa.Text, comment="rules, model or llm."),
    sa.Column("structure", sa.JSON, comment="Counts of paragraphs, links, ... in the main text."),
    sa.Column("source", sa.Text, comment="The feed, file or queue the URL came from."),
    sa.Column("attempts", sa.Integer, nullable=False, server_default="0"),
    sa.Column("lease_until", TZDateTime, comment="In-flight rows past this are re-enqueued."),
    sa.Column("discovered_at", TZDateTime, nullable=False),
    sa.Column("fetched_at", TZDateTime),
    sa.Column("updated_at", TZDateTime, nullable=False),
)
sa.Index("ix_articles_updated_at", articles.c.updated_at)
sa.Index("ix_articles_source", articles.c.source)

page_bodies = sa.Table(
    "page_bodies",
    metadata,
    sa.Column("url", sa.Text, primary_key=True),
    sa.Column("body", sa.LargeBinary, nullable=False, comment="The fetched HTML, zlib-compressed."),
    sa.Column("encoding", sa.Text),
    sa.Column("fetched_at", TZDateTime, nullable=False),
    comment="Raw pages kept for classification and re-extraction without refetching.",
)

LAST_STATUS_COMMENT = ("ok, not_modified, followed_sources_failed (read, but every source it "
                       "points to failed) or a reason code.")

feeds = sa.Table(
    "feeds",
    metadata,
    sa.Column("url", sa.Text, primary_key=True),
    sa.Column("kind", sa.Text, comment="rss, atom, jsonfeed, sitemap, listing; null until seen."),
    sa.Column("title", sa.Text),
    sa.Column("interval_seconds", sa.Integer, nullable=False, server_default="3600"),
    sa.Column("next_due_at", TZDateTime),
    sa.Column("etag", sa.Text),
    sa.Column("last_modified", sa.Text),
    sa.Column("last_status", sa.Text, comment=LAST_STATUS_COMMENT),
    sa.Column("last_fetched_at", TZDateTime),
    sa.Column("consecutive_failures", sa.Integer, nullable=False, server_default="0"),
    sa.Column("entries_seen", sa.Integer, nullable=False, server_default="0"),
    sa.Column("sources_followed", sa.Integer, nullable=False, server_default="0",
              comment="Sources the last visit followed from this one."),
    sa.Column("sources_failed", sa.Integer, nullable=False, server_default="0",
              comment="Of those, the ones that failed."),
    sa.Column("first_problem", sa.Text,
              comment=("The last visit's first problem beyond its own status, as `URL: "
                       "reason`: a followed source that failed, or a source read in part.")),
    sa.Column("render", sa.Text, comment="Per-feed render policy: never, auto, always."),
    sa.Column("created_at", TZDateTime, nullable=False),
)

sites = sa.Table(
    "sites",
    metadata,
    sa.Column("host", sa.Text, primary_key=True),
    sa.Column("render_mode", sa.Text, comment="Learned: static or browser."),
    sa.Column("render_policy", sa.Text, comment="Set by a user: never, auto, always."),
    sa.Column("render_learned_at", TZDateTime),
    sa.Column("js_share", sa.Float, comment="Recent share of pages that needed a browser."),
    sa.Column("listing_pattern", sa.Text, comment="Learned article-link path pattern."),
    sa.Column("listing_pattern_at", TZDateTime),
    sa.Column("pages_ok", sa.Integer, nullable=False, server_default="0"),
    sa.Column("pages_failed", sa.Integer, nullable=False, server_default="0"),
    sa.Column("updated_at", TZDateTime, nullable=False),
)

crawl_runs = sa.Table(
    "crawl_runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True, autoincrement=True),
    sa.Column("source", sa.Text, nullable=False),
    sa.Column("started_at", TZDateTime, nullable=False),
    sa.Column("finished_at", TZDateTime),
    sa.Column("urls_discovered", sa.Integer, nullable=False, server_default="0"),
    sa.Column("counts", sa.JSON, comment="Rows by status at the end of the run."),
)

# Full-text search objects the migrations add beside these tables, one set per dialect (see
# migrations/versions/0002): Postgres gets a generated `search_vector` column with a GIN index,
# SQLite an FTS5 table (`articles_fts` and its shadow tables). They are left out of the models
# so one MetaData serves both dialects, and out of autogenerate comparisons by this hook.
SEARCH_COLUMNS = frozenset({"search_vector"})
SEARCH_INDEXES = frozenset({"ix_articles_search_vector"})
SEARCH_TABLE_PREFIX = "articles_fts"


def include_object(object_: object, name: str | None, type_: str, reflected: bool,
                   compare_to: object) -> bool:
    """Alembic's `include_object` hook: False for the dialect-specific search objects."""
    name = name or ""
    if type_ == "table":
        return not name.startswith(SEARCH_TABLE_PREFIX)
    if type_ == "column":
        return name not in SEARCH_COLUMNS
    if type_ == "index":
        return name not in SEARCH_INDEXES
    return True
