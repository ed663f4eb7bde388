"""The `sluice` command line."""

from __future__ import annotations

import argparse
import logging
import os
import sqlite3
import sys
from collections.abc import Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import redis
import sqlalchemy as sa
from pydantic import ValidationError
from rich.console import Console
from rich.live import Live
from rich.table import Table

from sluice.cli_feeds import register as register_feeds_commands
from sluice.cli_queue import register as register_queue_commands
from sluice.cli_queue import report_problems
from sluice.cli_sql import keep_search_terms
from sluice.cli_sql import register as register_sql_commands
from sluice.config import Settings, SettingsSourceError, get_settings
from sluice.db import make_engine, store
from sluice.db.migrate import UnusableDatabase, sqlite_file, upgrade, upgrade_existing
from sluice.inputs import InputProblem, ListedURL, URLList, iter_lines, read_url_list
from sluice.stops import exit_status, raise_on_sigterm

console = Console()
err_console = Console(stderr=True)
# SQLite's codes for a file that is not a database, or one damaged past reading.
UNREADABLE_SQLITE_FILE = (sqlite3.SQLITE_NOTADB, sqlite3.SQLITE_CORRUPT)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["search"]:
        arguments[1:] = keep_search_terms(arguments[1:])
    args, extras = parser.parse_known_args(arguments)
    if extras and hasattr(args, "query") and not any(arg.startswith("--") for arg in extras):
        args.query += extras  # search words after an option, which argparse leaves over
    elif extras:
        # The usage of the command they were given to, not the top-level one.
        getattr(args, "command_parser", parser).error(
            f"unrecognized arguments: {' '.join(extras)}")
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    raise_on_sigterm()  # SIGTERM stops a command as cleanly as Ctrl-C does (sluice.stops)
    if not hasattr(args, "handler"):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except ValidationError as exc:
        if exc.title != "Settings":
            raise
        for error in exc.errors():
            name = "SLUICE_" + "__".join(str(part) for part in error["loc"]).upper()
            err_console.print(f"invalid setting {name}: {error['msg']}", markup=False,
                              highlight=False, soft_wrap=True)
        return 2
    except (SettingsSourceError, UnusableDatabase) as exc:
        err_console.print(str(exc), markup=False, highlight=False, soft_wrap=True)
        return 2
    except sa.exc.OperationalError as exc:
        # The database is down, unreachable or refuses us: say so in one line, not a traceback.
        reason = str(exc.orig).strip().splitlines()[0] if exc.orig else str(exc)
        err_console.print(f"database error: {reason}", markup=False, highlight=False,
                          soft_wrap=True)
        return 1
    except sa.exc.DatabaseError as exc:
        if getattr(exc.orig, "sqlite_errorcode", None) not in UNREADABLE_SQLITE_FILE:
            raise
        # SLUICE_DATABASE_URL names a file that is not a SQLite database (or a damaged one).
        path = sqlite_file(get_settings().database_url)
        err_console.print(f"cannot read the database at {path}: {exc.orig}; check "
                          "SLUICE_DATABASE_URL", markup=False, highlight=False, soft_wrap=True)
        return 2
    except KeyboardInterrupt as stop:
        # Ctrl-C or SIGTERM between crawls (`sluice schedule` waiting for the next round, say).
        err_console.print("interrupted", highlight=False)
        return exit_status(stop)
    except BrokenPipeError:
        # The reader went away (`sluice export | head`): stop quietly, as other Unix tools do;
        # stdout goes to /dev/null so the interpreter's last flush cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except OSError as exc:
        if exc.filename is None:
            raise
        # An input file (feed list, ingest file) that is missing or cannot be read.
        err_console.print(f"cannot read {exc.filename}: {exc.strerror}", markup=False,
                          highlight=False, soft_wrap=True)
        return 2
    except redis.exceptions.ConnectionError as exc:
        # Rows already recorded stay `queued`: the sweep pushes them again once Redis is back.
        err_console.print(f"queue error: {exc}", markup=False, highlight=False, soft_wrap=True)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="sluice", description="Feeds in, articles out.")
    commands = parser.add_subparsers(title="commands")

    crawl = commands.add_parser("crawl", help="crawl feeds once (a feed-list file or URLs)")
    crawl.add_argument("sources", nargs="+", metavar="FEEDS_FILE|URL")
    crawl.set_defaults(handler=cmd_crawl)

    status = commands.add_parser("status", help="rows by status and reason")
    status.add_argument("--watch", action="store_true",
                        help="live: rates per status, queue depth, crawler processes")
    status.set_defaults(handler=cmd_status)

    db = commands.add_parser("db", help="database maintenance")
    db_commands = db.add_subparsers(title="db commands")
    db_upgrade = db_commands.add_parser("upgrade", help="apply migrations")
    db_upgrade.set_defaults(handler=cmd_db_upgrade)

    site_cmd = commands.add_parser("sites", help="what Sluice learned per site (render mode)")
    site_cmd.add_argument("--set-render", nargs=2, metavar=("HOST", "POLICY"),
                          help="set a site's render policy: never, auto or always")
    site_cmd.set_defaults(handler=cmd_sites)

    demo = commands.add_parser("demo", help="crawl the bundled demo site into the database")
    demo.set_defaults(handler=cmd_demo)
    register_sql_commands(commands)
    register_queue_commands(commands)
    register_feeds_commands(commands)
    _know_own_parser(parser)
    return parser


def _know_own_parser(parser: argparse.ArgumentParser) -> None:
    """Every (sub)command's parser as `args.command_parser`, for errors found after parsing."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for command in action.choices.values():
                command.set_defaults(command_parser=command)
                _know_own_parser(command)


def read_sources(sources: Sequence[str]) -> URLList:
    """Feed URLs from files (one a line) and from URLs given directly. A source without a
    scheme is a file's name: one that cannot be read raises OSError. Each problem names its
    file and line there, or its argument's position; a URL listed twice is read once."""
    urls: list[ListedURL] = []
    problems: list[InputProblem] = []
    seen: set[str] = set()
    for position, source in enumerate(sources, start=1):
        from_file = _is_file_name(source)
        listed = read_url_list(iter_lines(source) if from_file else [source])
        name = ("stdin" if source == "-" else source) if from_file else "argument"
        for problem in listed.problems:
            problems.append(replace(problem, source=name,
                                    line=problem.line if from_file else position))
        for item in listed.urls:
            if item.url in seen:
                problems.append(InputProblem(item.line if from_file else position, item.url,
                                             "duplicate", "duplicate URL", name))
            else:
                seen.add(item.url)
                urls.append(item)
    return URLList(tuple(urls), tuple(problems))


def _is_file_name(source: str) -> bool:
    if source == "-" or Path(source).is_file():
        return True
    try:
        return not urlsplit(source).scheme
    except ValueError:  # a malformed URL (`http://[::1`): reported as one
        return False


def cmd_crawl(args: argparse.Namespace) -> int:
    listed = read_sources(args.sources)
    report_problems(list(listed.problems))
    if not listed.urls:
        err_console.print("no valid feed URLs to crawl")
        return 2
    return crawl_feeds([item.url for item in listed.urls], source=" ".join(args.sources))


def crawl_feeds(feed_urls: Sequence[str], source: str,
                env: Mapping[str, str] | None = None) -> int:
    return crawl_with_progress("feeds", feed_urls, source, env)


def crawl_with_progress(mode: str, lines: Sequence[str], source: str,
                        env: Mapping[str, str] | None = None) -> int:
    """Run a crawler process (`feeds`: feed URLs; `urls`: JSON lines of article URLs), showing
    live progress, then the counts of what it did."""
    from sluice.crawl import run_crawl, run_urls

    run = run_crawl if mode == "feeds" else run_urls
    settings = get_settings()
    upgrade(settings.database_url)
    live = Live(_counts_table({}, 0.0), console=console, transient=True,
                auto_refresh=False) if console.is_terminal else None

    def progress(counts: Mapping[str, int], seconds: float) -> None:
        if live is not None:
            live.update(_counts_table(counts, seconds), refresh=True)

    if live is not None:
        live.start()
    try:
        report = run(lines, settings, source, env=env, progress=progress)
    finally:
        if live is not None:
            live.stop()
    console.print(_counts_table(report.counts, report.seconds))
    if report.interrupted:
        err_console.print(f"interrupted: {report.left_queued} URLs not fetched stay queued; "
                          "`sluice retry --status queued` fetches them (so does the next "
                          "crawl, ingest or schedule)",
                          highlight=False, soft_wrap=True)
    return report.exit_code


def _counts_table(counts: Mapping[str, int], seconds: float) -> Table:
    table = Table(title=f"crawl: {sum(counts.values())} URLs in {seconds:.0f} s")
    table.add_column("status")
    table.add_column("rows", justify="right")
    for status, count in sorted(counts.items()):
        table.add_row(status, str(count))
    return table


def cmd_status(args: argparse.Namespace | None) -> int:
    if args is not None and args.watch:
        from sluice.cli_queue import watch_status

        return watch_status()
    settings = get_settings()
    upgrade_existing(settings.database_url)
    engine = make_engine(settings.database_url)
    with engine.connect() as conn:
        rows = store.counts_by_reason(conn)
    table = Table(title="articles by status and reason")
    for name in ("status", "reason", "rows"):
        table.add_column(name, justify="right" if name == "rows" else "left")
    for status, reason, count in rows:
        table.add_row(status, reason or "", str(count))
    table.add_section()
    table.add_row("total", "", str(sum(count for _, _, count in rows)))
    console.print(table)
    in_flight = sum(count for status, _, count in rows if status in ("queued", "pending"))
    if in_flight and settings.embedded:
        _explain_in_flight(in_flight, settings)
    return 0


def _explain_in_flight(in_flight: int, settings: Settings) -> None:
    """Embedded, nothing sweeps: say what becomes of the rows in flight."""
    from sluice.crawl import left_in_flight

    left = left_in_flight(settings)
    if left:
        console.print(f"{left} rows were left in flight by a run that was stopped or killed: "
                      "`sluice retry --status queued` fetches them (so does the next crawl, "
                      "ingest or schedule)",
                      highlight=False, soft_wrap=True)
    if in_flight - left:
        console.print(f"{in_flight - left} rows are in flight in a running crawl (or one "
                      f"killed less than {settings.lease_seconds} s ago, whose rows the "
                      "first run after that fetches)", highlight=False, soft_wrap=True)


def cmd_sites(args: argparse.Namespace) -> int:
    from sluice.db.models import sites
    from sluice.db.sites import set_render_policy

    settings = get_settings()
    # Setting a policy may come before the first crawl; only looking needs the database.
    (upgrade if args.set_render else upgrade_existing)(settings.database_url)
    engine = make_engine(settings.database_url)
    if args.set_render:
        host, policy = args.set_render
        if policy not in ("never", "auto", "always"):
            err_console.print("render policy must be never, auto or always")
            return 2
        with engine.begin() as conn:
            set_render_policy(conn, host.lower(), None if policy == "auto" else policy)
    table = Table(title="sites")
    for name in ("host", "render policy", "learned mode", "share rendered", "learned at"):
        table.add_column(name)
    with engine.connect() as conn:
        for row in conn.execute(sa.select(sites).order_by(sites.c.host)):
            share = "" if row.js_share is None else f"{row.js_share:.2f}"
            table.add_row(row.host, row.render_policy or "auto", row.render_mode or "",
                          share, str(row.render_learned_at or "")[:19])
    console.print(table)
    return 0


def cmd_db_upgrade(args: argparse.Namespace) -> int:
    upgrade(get_settings().database_url)
    console.print("database is at the latest revision")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from sluice.demo.run import run_demo

    return run_demo(console)


if __name__ == "__main__":
    sys.exit(main())

