"""`sluice sql`: run one SQL statement and print its rows, or open the database's own shell.

The statement goes to the driver as written (no bind-parameter parsing, so `':'` and `'%'` in
literals are safe), alone (several statements are refused), inside a transaction that commits on
success. The transaction is read-only unless the caller asks for writes (`sluice sql --write`):
a question cannot change the table by accident. Rows print as a table (long values shortened),
CSV or JSON; for large result sets use `sluice export`, which streams.
"""

from __future__ import annotations

import csv
import logging
import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, cast

import psycopg
import sqlalchemy as sa
from psycopg.abc import AdaptContext, Buffer
from psycopg.adapt import AdaptersMap, Loader, PyFormat
from rich.console import Console
from rich.table import Table

from sluice.db.engine import normalise_database_url
from sluice.export import csv_ready, json_ready, json_text

logger = logging.getLogger(__name__)

FORMATS = ("table", "csv", "json")
SQLITE_READ_ONLY = "PRAGMA query_only = ON"
SQLITE_READ_WRITE = "PRAGMA query_only = OFF"
# A write refused by query_only, and an ATTACH refused by the read-only authorizer.
READ_ONLY_SQLITE_ERRORS = (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_AUTH)
TABLE_CELL_CHARS = 80
# Crawled text may hold control characters (ESC sequences, BEL, OSC 8 links) that would drive
# the terminal: in a table cell, white space becomes a space and the rest U+FFFD.
CELL_CONTROLS = {code: " " if chr(code).isspace() else "\ufffd"
                 for code in (*range(0x20), *range(0x7F, 0xA0))}


# Postgres types holding values Python's cannot ('infinity', years past 9999 or BC, 24:00).
OUT_OF_RANGE_TYPES = ("date", "time", "timetz", "timestamp", "timestamptz", "interval")
# A statement of nothing but white space, semicolons and comments: both databases run it as
# nothing, "0 rows affected".
_NO_STATEMENT = re.compile(r"(?:\s|;|--[^\n]*|/\*.*?\*/)*", re.DOTALL)


def is_empty_statement(statement: str) -> bool:
    """Whether `statement` holds no SQL at all (blank, `;`, comments only)."""
    return _NO_STATEMENT.fullmatch(statement) is not None


class ShellMissing(RuntimeError):
    """The database's own command-line client is not installed."""


@dataclass(frozen=True, slots=True)
class StatementOutcome:
    returned_rows: bool
    count: int  # rows printed, or rows affected by a statement that returns none


def run_statement(engine: sa.Engine, statement: str, fmt: str, out: TextIO,
                  write: bool = False) -> StatementOutcome:
    """Execute `statement` in a transaction, read-only unless `write`; print any rows it
    returns to `out` in `fmt`. A write refused by a read-only transaction raises the
    driver's error (`sa.exc.DBAPIError`), and nothing changes."""
    sqlite = engine.dialect.name == "sqlite"
    with engine.begin() as conn:
        if not write:
            # SQLite's switch belongs to the connection (so it is reset below), Postgres's to
            # the transaction. query_only still lets ATTACH create a database file: refused.
            conn.exec_driver_sql(SQLITE_READ_ONLY if sqlite else "SET TRANSACTION READ ONLY")
            if sqlite:
                _sqlite(conn).set_authorizer(_refuse_attach)
        try:
            columns, rows, rowcount = _execute(conn, statement)
            if columns is None:
                return StatementOutcome(False, max(rowcount, 0))
            return StatementOutcome(True, write_rows(columns, rows, fmt, out))
        finally:
            if sqlite and not write:
                _sqlite(conn).set_authorizer(None)
                conn.exec_driver_sql(SQLITE_READ_WRITE)


def _sqlite(conn: sa.Connection) -> sqlite3.Connection:
    return cast("sqlite3.Connection", conn.connection.dbapi_connection)


def _refuse_attach(action: int, *_: object) -> int:
    return sqlite3.SQLITE_DENY if action == sqlite3.SQLITE_ATTACH else sqlite3.SQLITE_OK


def _execute(conn: sa.Connection, statement: str
             ) -> tuple[list[str] | None, Iterable[Sequence[Any]], int]:
    """Run one statement: (its columns, or None if it returns no rows; its rows; rowcount).
    Without parameters neither driver looks for placeholders such as '%s'. SQLite refuses
    several statements; Postgres's simple query protocol would run them all (`COMMIT; DELETE
    ...` ends the read-only transaction, then writes), so there the statement is prepared: the
    extended protocol takes one statement only."""
    if conn.dialect.name == "sqlite":
        result = conn.execution_options(no_parameters=True).exec_driver_sql(statement)
        return (list(result.keys()) if result.returns_rows else None), result, result.rowcount
    cursor = cast("psycopg.Connection[Any]", conn.connection.dbapi_connection).cursor()
    _load_out_of_range_as_text(cursor.adapters)
    try:
        cursor.execute(statement, prepare=True)
    except psycopg.Error as exc:
        raise sa.exc.DBAPIError.instance(statement, None, exc, psycopg.Error) from exc
    if cursor.description is None:
        return None, (), cursor.rowcount
    return [column.name for column in cursor.description], cursor, cursor.rowcount


class _TextWhenOutOfRange(Loader):
    """Loads a value with its type's own loader (`inner`); one Python cannot hold
    ('infinity', a date after 9999 or before year 1, 24:00) as the text Postgres sent, not
    a DataError in the middle of printing the rows."""

    inner: type[Loader]

    def __init__(self, oid: int, context: AdaptContext | None = None) -> None:
        super().__init__(oid, context)
        self._inner = self.inner(oid, context)

    def load(self, data: Buffer) -> Any:
        try:
            return self._inner.load(data)
        except psycopg.DataError:
            return bytes(data).decode()


def _load_out_of_range_as_text(adapters: AdaptersMap) -> None:
    """Set up one cursor's loaders so that no value of a date or time type breaks its rows."""
    for name in OUT_OF_RANGE_TYPES:
        oid = adapters.types[name].oid
        inner = adapters.get_loader(oid, PyFormat.as_pq(PyFormat.TEXT))
        if inner is not None:
            adapters.register_loader(oid, type(f"TextWhenOutOfRange_{name}",
                                               (_TextWhenOutOfRange,), {"inner": inner}))


def is_read_only_refusal(error: sa.exc.DBAPIError) -> bool:
    """Whether the database refused a write because the transaction was read-only (by the
    error's code, not its message, which a server may translate)."""
    return (getattr(error.orig, "sqlstate", None) == "25006"  # read_only_sql_transaction
            or getattr(error.orig, "sqlite_errorcode", None) in READ_ONLY_SQLITE_ERRORS)


def write_rows(columns: Sequence[str], rows: Iterable[Sequence[Any]], fmt: str,
               out: TextIO) -> int:
    if fmt == "csv":
        return _write_csv(columns, rows, out)
    if fmt == "json":
        return _write_json(columns, rows, out)
    if fmt == "table":
        return _write_table(columns, rows, out)
    raise ValueError(f"unknown format {fmt!r}; use one of {', '.join(FORMATS)}")


def _write_csv(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO) -> int:
    writer = csv.writer(out)
    writer.writerow(columns)
    count = 0
    for row in rows:
        writer.writerow([csv_ready(value) for value in row])
        count += 1
    return count


def _write_json(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO) -> int:
    """A JSON array of objects, written row by row."""
    count = 0
    out.write("[")
    for row in rows:
        out.write(",\n " if count else "\n ")
        out.write(json_text(dict(zip(columns, row, strict=True))))
        count += 1
    out.write("\n]\n" if count else "]\n")
    return count


def _write_table(columns: Sequence[str], rows: Iterable[Sequence[Any]], out: TextIO) -> int:
    table = Table(*columns)
    count = 0
    for row in rows:
        table.add_row(*(_cell(value) for value in row))
        count += 1
    # Page text is shown as it is: `[red]` is not markup, `:smile:` not an emoji.
    console = Console(file=out, width=None if out.isatty() else 200, markup=False, emoji=False,
                      highlight=False)
    console.print(table)
    console.print(f"({count} row{'' if count == 1 else 's'})")
    return count


def _cell(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        text = json_text(value)
    else:
        text = str(json_ready(value))
    text = text.translate(CELL_CONTROLS)
    if len(text) > TABLE_CELL_CHARS:
        return text[:TABLE_CELL_CHARS - 1] + "…"
    return text


def shell_command(database_url: str) -> tuple[list[str], dict[str, str]]:
    """The command line of the database's own shell (`psql URL` or `sqlite3 FILE`) and the
    environment it needs: a password goes in the environment, never on the command line,
    where every user of the machine could read it in the process list."""
    url = sa.make_url(normalise_database_url(database_url))
    backend = url.get_backend_name()
    if backend == "postgresql":
        secret = {"PGPASSWORD": url.password} if url.password else {}
        bare = sa.URL.create("postgresql", url.username, None, url.host, url.port, url.database,
                             url.query)
        return ["psql", bare.render_as_string(hide_password=False)], secret
    if backend == "sqlite":
        return ["sqlite3", url.database or ":memory:"], {}
    raise ValueError(f"no shell known for {backend} databases")


def open_shell(database_url: str) -> int:
    """Run the shell attached to this terminal; returns its exit code."""
    command, secret = shell_command(database_url)
    if shutil.which(command[0]) is None:
        raise ShellMissing(f"{command[0]} is not installed (or not on PATH); install it, or pass "
                           "a statement: sluice sql \"SELECT ...\"")
    logger.debug("opening %s", command[0])
    return subprocess.call(command, env={**os.environ, **secret})
