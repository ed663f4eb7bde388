"""The SQL-facing subcommands: `sluice sql`, `sluice export` and `sluice search`."""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa
from rich.console import Console

from sluice.config import get_settings
from sluice.db import make_engine
from sluice.db.migrate import upgrade_existing
from sluice.export import EXPORT_COLUMNS, FORMATS, ExportQuery, export_rows
from sluice.records import Status
from sluice.search import USABLE_STATUSES, parse_query, search
from sluice.sql import FORMATS as SQL_FORMATS
from sluice.sql import (
    ShellMissing,
    is_empty_statement,
    is_read_only_refusal,
    open_shell,
    run_statement,
    write_rows,
)

logger = logging.getLogger(__name__)
err_console = Console(stderr=True)

SubParsers = Any  # argparse's _SubParsersAction is private


def register(commands: SubParsers) -> None:
    """Add `sql`, `export` and `search` to the `sluice` command line."""
    _register_sql(commands)
    _register_export(commands)
    _register_search(commands)


def _register_sql(commands: SubParsers) -> None:
    sql = commands.add_parser("sql", help="run a SQL statement, or open the database's shell")
    sql.add_argument("statement", nargs="?", help="one SQL statement; none opens psql/sqlite3")
    sql.add_argument("--format", choices=SQL_FORMATS, default="table",
                     help="output format (default: %(default)s)")
    sql.add_argument("--write", action="store_true",
                     help="allow a statement that changes the database (read-only by default)")
    sql.set_defaults(handler=cmd_sql)


def _register_export(commands: SubParsers) -> None:
    export = commands.add_parser("export", help="stream articles out as jsonl, csv or parquet")
    export.add_argument("--status", action="append", default=[], metavar="STATUS",
                        help="only rows with this status (repeat, or separate with commas)")
    export.add_argument("--since", type=parse_since, metavar="DATE",
                        help="only rows updated at or after this ISO date/time (UTC if no zone)")
    export.add_argument("--format", choices=FORMATS, default="jsonl",
                        help="output format (default: %(default)s)")
    export.add_argument("--columns", type=_column_list, default=EXPORT_COLUMNS,
                        help="comma-separated columns (default: all but in-flight bookkeeping)")
    export.add_argument("--limit", type=positive_int, help="at most this many rows (default: all)")
    export.add_argument("--output", "-o", help="file to write (default: standard output)")
    export.set_defaults(handler=cmd_export)


def _register_search(commands: SubParsers) -> None:
    found = commands.add_parser("search", help="ranked full-text search over titles and texts")
    found.add_argument("query", nargs="+", help='words, "phrases", OR, -excluded (several '
                       "arguments are read as one query)")
    found.add_argument("--limit", type=positive_int, default=20,
                       help="at most this many results (default: %(default)s)")
    found.add_argument("--status", action="append", default=[], metavar="STATUS",
                       help="search rows with this status (default: success and truncated)")
    found.add_argument("--format", choices=SQL_FORMATS, default="table",
                       help="output format (default: %(default)s)")
    found.set_defaults(handler=cmd_search)


def keep_search_terms(arguments: Sequence[str]) -> list[str]:
    """The arguments of `sluice search` with each excluded word (`-river`) kept as a term of
    the query. argparse takes an argument that starts with '-' for an option and fails on one it
    does not know; search has no short option but -h, so any other `-WORD` (before a `--`) is
    a term. It is passed on with a leading space, which argparse reads as a positional
    argument and the search ignores."""
    kept = list(arguments)
    for index, argument in enumerate(kept):
        if argument == "--":
            break
        if argument.startswith("-") and argument[1:2] not in ("", "-") and argument != "-h":
            kept[index] = " " + argument
    return kept


# The largest count a command line takes: both databases hold a LIMIT in 64 bits, and refused
# a larger one with a traceback.
LARGEST_COUNT = 2**63 - 1


def whole_number(minimum: int) -> Callable[[str], int]:
    """An argparse type for a count given on the command line: a whole number from `minimum`
    to LARGEST_COUNT."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}: {value}")
        if value > LARGEST_COUNT:
            raise argparse.ArgumentTypeError(f"must be at most {LARGEST_COUNT}: {value}")
        return value

    return parse


positive_int = whole_number(1)


def parse_since(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO date or date-time: {text!r}") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def _column_list(text: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    if not names:
        raise argparse.ArgumentTypeError("no column named")
    return names


def parse_statuses(values: Sequence[str]) -> tuple[str, ...]:
    """Statuses from repeated and comma-separated options; unknown names are errors."""
    names = tuple(name.strip() for value in values for name in value.split(",") if name.strip())
    known = {status.value for status in Status}
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown status {', '.join(unknown)}; use {', '.join(sorted(known))}")
    return names


def _ready_engine(declared_types: bool = False) -> sa.Engine:
    """An engine on an existing database at the latest revision (the views and search need
    it); `declared_types`: see `make_engine`."""
    url = get_settings().database_url
    upgrade_existing(url)
    return make_engine(url, declared_types)


def cmd_sql(args: argparse.Namespace) -> int:
    if args.statement is None:
        try:
            return open_shell(get_settings().database_url)
        except ShellMissing as exc:
            err_console.print(str(exc), markup=False, highlight=False)
            return 127
    if is_empty_statement(args.statement):
        err_console.print(f"error: no SQL statement in {args.statement!r}: give one (sluice sql "
                          '"SELECT count(*) FROM articles"), or none to open the database\'s '
                          "shell", markup=False, highlight=False, soft_wrap=True)
        return 2
    # Typed as on Postgres: the same JSON, CSV and table from both databases.
    engine = _ready_engine(declared_types=True)
    try:
        outcome = run_statement(engine, args.statement, args.format, sys.stdout, args.write)
    except sa.exc.DBAPIError as exc:
        err_console.print(f"error: {exc.orig}", markup=False, highlight=False)
        if is_read_only_refusal(exc):
            err_console.print("sluice sql is read-only: add --write to change the database",
                              markup=False, highlight=False)
        return 1
    finally:
        engine.dispose()
    if not outcome.returned_rows:
        err_console.print(f"{outcome.count} rows affected", markup=False, highlight=False)
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    try:
        query = ExportQuery(statuses=parse_statuses(args.status), since=args.since,
                            columns=args.columns, limit=args.limit)
    except ValueError as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False)
        return 2
    if args.format == "parquet" and args.output is None and sys.stdout.isatty():
        err_console.print("parquet is binary: write it to a file with --output FILE, or pipe it")
        return 2
    engine = _ready_engine()
    try:
        with engine.connect() as conn:
            count = _export_to(conn, query, args.format, args.output)
    except ValueError as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False)
        return 2
    except BrokenPipeError:
        raise  # the reader of our output went away: `sluice` stops quietly
    except OSError as exc:
        target = args.output or "standard output"
        err_console.print(f"cannot write {target}: {exc.strerror or exc}", markup=False,
                          highlight=False, soft_wrap=True)
        return 2
    finally:
        engine.dispose()
    err_console.print(f"exported {count} rows", markup=False, highlight=False)
    return 0


def _export_to(conn: sa.Connection, query: ExportQuery, fmt: str, output: str | None) -> int:
    if output is None:
        stream = sys.stdout.buffer if fmt == "parquet" else sys.stdout
        return export_rows(conn, query, fmt, stream)
    target = Path(output).resolve()
    if target.exists() and not target.is_file():  # /dev/stdout, a named pipe
        return _export_file(conn, query, fmt, target)
    # Written beside the target and renamed over it only when complete: a failed export
    # leaves the previous file as it was, never half-written or emptied.
    partial = target.with_name(f".{target.name}.{os.getpid()}.part")
    try:
        count = _export_file(conn, query, fmt, partial)
        partial.replace(target)
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return count


def _export_file(conn: sa.Connection, query: ExportQuery, fmt: str, path: Path) -> int:
    if fmt == "parquet":
        return export_rows(conn, query, fmt, str(path))
    with path.open("w", encoding="utf-8", newline="") as handle:
        return export_rows(conn, query, fmt, handle)


def cmd_search(args: argparse.Namespace) -> int:
    query = " ".join(args.query)
    try:
        statuses = parse_statuses(args.status) or USABLE_STATUSES
        parse_query(query)  # a query with nothing to look for is refused before any database
    except ValueError as exc:
        err_console.print(f"error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 2
    engine = _ready_engine()
    try:
        with engine.connect() as conn:
            hits = search(conn, query, limit=args.limit, statuses=statuses)
    finally:
        engine.dispose()
    rows = [(round(hit.rank, 4), hit.title, hit.url, hit.status, hit.snippet) for hit in hits]
    write_rows(("rank", "title", "url", "status", "snippet"), rows, args.format, sys.stdout)
    return 0
