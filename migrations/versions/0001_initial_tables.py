"""initial tables

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "articles",
        sa.Column("url", sa.Text(), nullable=False, comment="Canonical URL, the row key."),
        sa.Column(
            "status",
            sa.Enum(
                "queued",
                "pending",
                "success",
                "truncated",
                "under_limit",
                "unsuitable_content",
                "fetch_failed",
                name="article_status",
                create_constraint=True,
            ),
            nullable=False,
        ),
        sa.Column(
            "reason",
            sa.Text(),
            nullable=True,
            comment="Reason code for the status, e.g. http_404, too_short.",
        ),
        sa.Column("http_status", sa.Integer(), nullable=True),
        sa.Column("final_url", sa.Text(), nullable=True, comment="URL after redirects."),
        sa.Column("rendered", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("author", sa.Text(), nullable=True),
        sa.Column("published_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("language", sa.Text(), nullable=True),
        sa.Column("sitename", sa.Text(), nullable=True),
        sa.Column("text", sa.Text(), nullable=True, comment="The full extracted text, never cut."),
        sa.Column(
            "content",
            sa.Text(),
            nullable=True,
            comment="The gated text: at most max_chars, cut at a boundary.",
        ),
        sa.Column("char_count", sa.Integer(), nullable=True, comment="Characters in `text`."),
        sa.Column("content_hash", sa.Text(), nullable=True, comment="SHA-256 of `text`."),
        sa.Column("page_type", sa.Text(), nullable=True),
        sa.Column("suitable", sa.Boolean(), nullable=True),
        sa.Column("suitability_reason", sa.Text(), nullable=True),
        sa.Column("suitability_score", sa.Float(), nullable=True),
        sa.Column("classified_by", sa.Text(), nullable=True, comment="rules, model or llm."),
        sa.Column(
            "structure",
            sa.JSON(),
            nullable=True,
            comment="Counts of paragraphs, links, ... in the main text.",
        ),
        sa.Column(
            "source", sa.Text(), nullable=True, comment="The feed, file or queue the URL came from."
        ),
        sa.Column("attempts", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "lease_until",
            sa.DateTime(timezone=True),
            nullable=True,
            comment="In-flight rows past this are re-enqueued.",
        ),
        sa.Column("discovered_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("url", name=op.f("pk_articles")),
    )
    with op.batch_alter_table("articles", schema=None) as batch_op:
        batch_op.create_index("ix_articles_source", ["source"], unique=False)
        batch_op.create_index(batch_op.f("ix_articles_status"), ["status"], unique=False)
        batch_op.create_index("ix_articles_updated_at", ["updated_at"], unique=False)

    op.create_table(
        "crawl_runs",
        sa.Column("id", sa.Integer(), autoincrement=True, nullable=False),
        sa.Column("source", sa.Text(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("urls_discovered", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "counts", sa.JSON(), nullable=True, comment="Rows by status at the end of the run."
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_crawl_runs")),
    )
    op.create_table(
        "feeds",
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column(
            "kind",
            sa.Text(),
            nullable=True,
            comment="rss, atom, jsonfeed, sitemap, listing; null until seen.",
        ),
        sa.Column("title", sa.Text(), nullable=True),
        sa.Column("interval_seconds", sa.Integer(), server_default="3600", nullable=False),
        sa.Column("next_due_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("etag", sa.Text(), nullable=True),
        sa.Column("last_modified", sa.Text(), nullable=True),
        sa.Column(
            "last_status", sa.Text(), nullable=True, comment="ok, not_modified or a reason code."
        ),
        sa.Column("last_fetched_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("consecutive_failures", sa.Integer(), server_default="0", nullable=False),
        sa.Column("entries_seen", sa.Integer(), server_default="0", nullable=False),
        sa.Column(
            "render",
            sa.Text(),
            nullable=True,
            comment="Per-feed render policy: never, auto, always.",
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("url", name=op.f("pk_feeds")),
    )
    op.create_table(
        "page_bodies",
        sa.Column("url", sa.Text(), nullable=False),
        sa.Column(
            "body", sa.LargeBinary(), nullable=False, comment="The fetched HTML, zlib-compressed."
        ),
        sa.Column("encoding", sa.Text(), nullable=True),
        sa.Column("fetched_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("url", name=op.f("pk_page_bodies")),
        comment="Raw pages kept for classification and re-extraction without refetching.",
    )
    op.create_table(
        "sites",
        sa.Column("host", sa.Text(), nullable=False),
        sa.Column("render_mode", sa.Text(), nullable=True, comment="Learned: static or browser."),
        sa.Column(
            "render_policy", sa.Text(), nullable=True, comment="Set by a user: never, auto, always."
        ),
        sa.Column("render_learned_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column(
            "js_share",
            sa.Float(),
            nullable=True,
            comment="Recent share of pages that needed a browser.",
        ),
        sa.Column(
            "listing_pattern",
            sa.Text(),
            nullable=True,
            comment="Learned article-link path pattern.",
        ),
        sa.Column("listing_pattern_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("pages_ok", sa.Integer(), server_default="0", nullable=False),
        sa.Column("pages_failed", sa.Integer(), server_default="0", nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("host", name=op.f("pk_sites")),
    )


def downgrade() -> None:
    op.drop_table("sites")
    op.drop_table("page_bodies")
    op.drop_table("feeds")
    op.drop_table("crawl_runs")
    with op.batch_alter_table("articles", schema=None) as batch_op:
        batch_op.drop_index("ix_articles_updated_at")
        batch_op.drop_index(batch_op.f("ix_articles_status"))
        batch_op.drop_index("ix_articles_source")

    op.drop_table("articles")
    # Postgres keeps the enum type after its table is dropped; the next upgrade would fail.
    sa.Enum(name="article_status").drop(op.get_bind(), checkfirst=True)
