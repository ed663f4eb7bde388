"""docs/schema.md is generated from the models and the migrated views, and kept up to date."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from sluice.schema_doc import DOC_PATH, render_schema, render_table, render_view


def test_committed_schema_doc_matches_the_models_and_views() -> None:
    assert DOC_PATH.read_text(encoding="utf-8") == render_schema(), (
        "docs/schema.md is out of date: run python -m sluice.schema_doc")


def test_every_view_is_documented() -> None:
    text = render_schema()
    for view in ("usable_articles", "crawl_failures", "site_health"):
        assert f"### `{view}`" in text


def test_an_undocumented_view_column_fails_generation() -> None:
    with pytest.raises(ValueError, match="no description for surprise"):
        render_view("crawl_failures", ["url", "surprise"])


def test_an_undocumented_table_column_fails_generation() -> None:
    table = sa.Table("scratch", sa.MetaData(), sa.Column("mystery", sa.Text))
    with pytest.raises(ValueError, match="scratch.mystery has no comment"):
        render_table(table)
