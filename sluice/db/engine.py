"""Engines for SQLite (embedded) and Postgres (distributed), set up for concurrent writers."""

from __future__ import annotations

import json
import sqlite3
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa


def normalise_database_url(url: str) -> str:
    """Use the psycopg 3 driver for plain `postgresql://` URLs."""
    for prefix in ("postgresql://", "postgres://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix):]
    return url


def make_engine(url: str, declared_types: bool = False) -> sa.Engine:
    """An engine; SQLite gets WAL and a busy timeout so a crawler and readers can share it.

    With `declared_types`, SQLite converts a result column that is a table's column declared
    DATETIME, BOOLEAN or JSON as Postgres's driver does (an aware UTC datetime, a bool, the
    parsed JSON), for statements run as written (`sluice sql`), which no SQLAlchemy column type
    converts. SQLAlchemy's own typed queries must not run on such an engine: their types would
    convert the values again."""
    url = normalise_database_url(url)
    if url.startswith("sqlite"):
        connect_args: dict[str, Any] = {"timeout": 30}
        if declared_types:
            for name, convert in SQLITE_CONVERTERS.items():
                sqlite3.register_converter(name, convert)  # used where detect_types asks
            connect_args["detect_types"] = sqlite3.PARSE_DECLTYPES
        engine = sa.create_engine(url, connect_args=connect_args)
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        return engine
    return sa.create_engine(url, pool_pre_ping=True, pool_size=5, max_overflow=5)


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.close()


def _utc_timestamp(raw: bytes) -> datetime | str:
    """A stored timestamp (SQLAlchemy writes UTC without a zone) as an aware UTC datetime."""
    text = raw.decode()
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return text  # written by something else: shown as it is
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _boolean(raw: bytes) -> bool | str:
    return {b"0": False, b"1": True}.get(raw, raw.decode())


def _json_value(raw: bytes) -> Any:
    try:
        return json.loads(raw)
    except ValueError:
        return raw.decode()


# By the declared type SQLAlchemy gives our columns on SQLite (TZDateTime, Boolean, JSON).
SQLITE_CONVERTERS = {"DATETIME": _utc_timestamp, "BOOLEAN": _boolean, "JSON": _json_value}
