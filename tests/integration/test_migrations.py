"""Migrations go up, down and up again on both databases, and match the table definitions."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from sluice.db import make_engine, metadata
from sluice.db.migrate import downgrade, upgrade
from sluice.db.models import include_object
from tests.conftest import create_pg_database, drop_pg_database

pytestmark = pytest.mark.integration


@pytest.fixture(params=["sqlite", "postgresql"])
def empty_database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'm.db'}"
        return
    url = create_pg_database()
    yield url
    drop_pg_database(url)


def table_names(url: str) -> set[str]:
    engine = make_engine(url)
    names = set(sa.inspect(engine).get_table_names()) - {"alembic_version"}
    engine.dispose()
    return names


def test_upgrade_downgrade_upgrade(empty_database: str) -> None:
    upgrade(empty_database)
    assert {"articles", "feeds", "sites", "crawl_runs", "page_bodies"} <= table_names(
        empty_database
    )
    downgrade(empty_database, "base")
    assert table_names(empty_database) == set()
    upgrade(empty_database)
    assert "articles" in table_names(empty_database)


def test_migrations_match_the_models(empty_database: str) -> None:
    upgrade(empty_database)
    engine = make_engine(empty_database)
    with engine.connect() as conn:
        context = MigrationContext.configure(conn, opts={"include_object": include_object})
        diff = compare_metadata(context, metadata)
    engine.dispose()
    assert diff == []
