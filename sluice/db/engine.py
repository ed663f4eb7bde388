"""Engines for SQLite (embedded) and Postgres (distributed), set up for concurrent writers."""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa


def normalise_database_url(url: str) -> str:
    """Use the psycopg 3 driver for plain `postgresql://` URLs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def make_engine(url: str) -> sa.Engine:
    """An engine; SQLite gets WAL and a busy timeout so a crawler and readers can share it."""
    url = normalise_database_url(url)
    if url.startswith("sqlite"):
        engine = sa.create_engine(url, connect_args={"timeout": 30})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()
