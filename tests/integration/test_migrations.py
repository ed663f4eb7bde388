"""Migrations go up, down and up again on both databases, and match the table definitions."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from sluice.db import make_engine, metadata
from sluice.db.migrate import downgrade, upgrade
from sluice.db.models import include_object
from tests.conftest import (
    PROJECT_ROOT,
    create_pg_database,
    drop_pg_database,
    sluice_env,
    wait_until,
)

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



def backends_waiting_on_a_lock(engine: sa.Engine) -> int:
    with engine.connect() as conn:
        return int(conn.execute(sa.text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'")).scalar_one())


def test_concurrent_upgrades_of_an_empty_postgres_database_all_succeed() -> None:
    """Crawlers started together each upgrade the database: one migrates, the others wait for
    it and find nothing to do. The test holds an uncommitted `alembic_version` table, as an
    upgrade under way does, until all three upgrades wait, so that they go on at once."""
    url = create_pg_database()
    engine = make_engine(url)
    upgrades: list[subprocess.Popen[str]] = []
    try:
        with engine.connect() as holder:
            holder.execute(sa.text("CREATE TABLE alembic_version (version_num varchar(32))"))
            upgrades = [subprocess.Popen([sys.executable, "-m", "sluice.cli", "db", "upgrade"],
                                         env=sluice_env(url), cwd=PROJECT_ROOT, text=True,
                                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
                        for _ in range(3)]
            waiting = wait_until(lambda: backends_waiting_on_a_lock(engine) == 3, timeout=120)
            holder.rollback()
        outputs = [process.communicate(timeout=120)[0] for process in upgrades]
        assert waiting, outputs
        assert [process.returncode for process in upgrades] == [0, 0, 0], outputs
        assert "articles" in table_names(url)
    finally:
        for process in upgrades:
            process.kill()
            process.wait()
        engine.dispose()
        drop_pg_database(url)
