"""Run the Alembic migrations programmatically (`sluice db upgrade`, the demo, the tests)."""

from __future__ import annotations

from pathlib import Path

import sqlalchemy as sa
from alembic import command
from alembic.config import Config
from alembic.script.revision import ResolutionError
from alembic.util import CommandError

from sluice.db.engine import normalise_database_url

PROJECT_ROOT = Path(__file__).resolve().parents[2]


class UnusableDatabase(RuntimeError):
    """The database cannot be used as it is (missing, or from a newer Sluice); the message is
    one line for the user."""


def alembic_config(database_url: str) -> Config:
    config = Config(str(PROJECT_ROOT / "alembic.ini"))
    config.set_main_option("script_location", str(PROJECT_ROOT / "migrations"))
    config.attributes["database_url"] = database_url
    return config


def upgrade(database_url: str, revision: str = "head") -> None:
    """Migrate the database (creating it if need be). One at a revision no migration here
    knows was migrated by a newer Sluice: UnusableDatabase."""
    try:
        command.upgrade(alembic_config(database_url), revision)
    except CommandError as exc:
        unknown = exc.__cause__
        if not isinstance(unknown, ResolutionError):
            raise
        raise UnusableDatabase(f"the database is at revision {unknown.argument!r}, which this "
                               "Sluice does not know: it was created by a newer Sluice; "
                               "upgrade Sluice to use it") from exc


def upgrade_existing(database_url: str) -> None:
    """`upgrade` for the commands that only read: a SQLite file that does not exist is
    UnusableDatabase, not a new empty database (the default URL is relative to the working
    directory, so the wrong directory would show an empty table)."""
    path = sqlite_file(database_url)
    if path is not None and not path.exists():
        raise UnusableDatabase(f"no database at {path}: check SLUICE_DATABASE_URL and the "
                               "working directory (sluice crawl, ingest or db upgrade "
                               "create one)")
    upgrade(database_url)


def sqlite_file(database_url: str) -> Path | None:
    """The file a SQLite URL names, as an absolute path; None for Postgres or memory."""
    url = sa.make_url(normalise_database_url(database_url))
    if url.get_backend_name() == "sqlite" and url.database and url.database != ":memory:":
        return Path(url.database).resolve()
    return None


def downgrade(database_url: str, revision: str = "base") -> None:
    command.downgrade(alembic_config(database_url), revision)
