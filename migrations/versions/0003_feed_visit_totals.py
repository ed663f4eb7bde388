"""feeds: what a visit found across the sources it followed

A scheduled source's visit now covers the sources it leads to (child sitemaps, robots.txt's
sitemaps, announced feeds, next listing pages): `sources_followed`, `sources_failed` and
`first_problem` say how that went. Existing rows start at 0 and NULL until their next visit.
`last_status` gains `followed_sources_failed` (documented in its comment).

Revision ID: 0003
Revises: 0002
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

COLUMNS = ("sources_followed", "sources_failed", "first_problem")
LAST_STATUS = ("ok, not_modified, followed_sources_failed (read, but every source it points to "
               "failed) or a reason code.")
LAST_STATUS_BEFORE = "ok, not_modified or a reason code."


def upgrade() -> None:
    with op.batch_alter_table("feeds") as batch:
        batch.add_column(sa.Column(
            "sources_followed", sa.Integer(), server_default="0", nullable=False,
            comment="Sources the last visit followed from this one."))
        batch.add_column(sa.Column(
            "sources_failed", sa.Integer(), server_default="0", nullable=False,
            comment="Of those, the ones that failed."))
        batch.add_column(sa.Column(
            "first_problem", sa.Text(), nullable=True,
            comment=("The last visit's first problem beyond its own status, as `URL: "
                     "reason`: a followed source that failed, or a source read in part.")))
    _comment_last_status(LAST_STATUS, LAST_STATUS_BEFORE)


def downgrade() -> None:
    _comment_last_status(LAST_STATUS_BEFORE, LAST_STATUS)
    with op.batch_alter_table("feeds") as batch:
        for name in reversed(COLUMNS):
            batch.drop_column(name)


def _comment_last_status(comment: str, before: str) -> None:
    if op.get_bind().dialect.name == "postgresql":  # SQLite keeps no column comments
        op.alter_column("feeds", "last_status", existing_type=sa.Text(), existing_nullable=True,
                        comment=comment, existing_comment=before)
