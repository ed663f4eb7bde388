"""Schedule commands: `sluice feeds add|import|list|remove` and `sluice schedule`."""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from sluice.cli_queue import report_problems
from sluice.config import get_settings
from sluice.db import make_engine
from sluice.db.feeds import FeedRow, add_feeds, list_feeds, remove_feed
from sluice.db.migrate import upgrade, upgrade_existing
from sluice.errors import InvalidURL
from sluice.inputs import InputProblem, iter_lines, read_url_list
from sluice.schedule import format_interval, parse_interval
from sluice.sql import CELL_CONTROLS
from sluice.urls import canonicalize_url

console = Console()
err_console = Console(stderr=True)


def register(commands: Any) -> None:
    feeds = commands.add_parser("feeds", help="the scheduled sources (feeds, sitemaps, pages)")
    feed_commands = feeds.add_subparsers(title="feeds commands")

    add = feed_commands.add_parser("add", help="schedule a source, due at once")
    add.add_argument("url")
    add.add_argument("--every", help="interval, e.g. 30m, 2h, 1d (default: the setting)")
    add.set_defaults(handler=cmd_feeds_add)

    imported = feed_commands.add_parser("import", help="schedule the sources of a file (one a "
                                                       "line, or JSON lines with \"every\")")
    imported.add_argument("file", metavar="FILE|-")
    imported.add_argument("--every", help="interval for lines that give none")
    imported.set_defaults(handler=cmd_feeds_import)

    listed = feed_commands.add_parser("list", help="kind, interval, next due, last status")
    listed.set_defaults(handler=cmd_feeds_list)

    remove = feed_commands.add_parser("remove", help="stop scheduling a source")
    remove.add_argument("url")
    remove.set_defaults(handler=cmd_feeds_remove)

    schedule = commands.add_parser("schedule", help="run due sources as they come due (with "
                                                    "Redis: push them to the crawlers)")
    schedule.add_argument("--once", action="store_true", help="one round, then exit")
    schedule.add_argument("--refresh", action="store_true",
                          help="fetch stored articles again (embedded crawls; with Redis, "
                               "set SLUICE_DISCOVERY__REFRESH on the crawlers)")
    schedule.set_defaults(handler=cmd_schedule)


def _interval(text: str | None) -> int:
    return parse_interval(text) if text else get_settings().discovery.default_interval_seconds


def _engine(reading: bool = False) -> Any:
    """An engine on the migrated database; `reading`: one that exists (see upgrade_existing)."""
    settings = get_settings()
    (upgrade_existing if reading else upgrade)(settings.database_url)
    return make_engine(settings.database_url)


def cmd_feeds_add(args: argparse.Namespace) -> int:
    try:
        url, interval = canonicalize_url(args.url), _interval(args.every)
    except (InvalidURL, ValueError) as exc:
        err_console.print(f"cannot add {args.url}: {exc}", markup=False)
        return 2
    with _engine().begin() as conn:
        new = add_feeds(conn, [url], interval)
    verb = "added" if new else "updated"
    console.print(f"{verb} {url}, every {format_interval(interval)}", markup=False)
    return 0


def cmd_feeds_import(args: argparse.Namespace) -> int:
    try:
        default = _interval(args.every)
    except ValueError as exc:
        err_console.print(f"cannot import: {exc}", markup=False)
        return 2
    listed = read_url_list(iter_lines(args.file))
    problems = list(listed.problems)
    by_interval: dict[int, list[str]] = {}
    for item in listed.urls:
        every = item.options.get("every")
        try:
            interval = parse_interval(str(every)) if every else default
        except ValueError as exc:  # this line's own interval: the rest of the file goes on
            problems.append(InputProblem(item.line, item.url, "invalid_interval", str(exc)))
            continue
        by_interval.setdefault(interval, []).append(item.url)
    problems.sort(key=lambda problem: problem.line)
    report_problems(problems)
    new = 0
    with _engine().begin() as conn:
        for interval, urls in by_interval.items():
            new += add_feeds(conn, urls, interval)
    total = sum(len(urls) for urls in by_interval.values())
    console.print(f"imported {total} sources ({new} new, {len(problems)} invalid lines)")
    return 0 if total or not problems else 2


def cmd_feeds_list(args: argparse.Namespace) -> int:
    with _engine(reading=True).connect() as conn:
        rows = list_feeds(conn)
    table = Table(title=f"{len(rows)} sources")
    for name in ("url", "kind", "every", "next due", "last status", "failures", "entries",
                 "followed", "first problem"):
        table.add_column(name, overflow="fold")
    for row in rows:
        # As plain text: a URL or a problem's detail holding `[...]` is not rich markup.
        table.add_row(*(Text(cell.translate(CELL_CONTROLS)) for cell in feed_columns(row)))
    console.print(table)
    return 0


def feed_columns(row: FeedRow, now: datetime | None = None) -> list[str]:
    """One `feeds list` line: the due time is shown relative to now (`now`, `in 25m`)."""
    due = "not scheduled"
    if row.next_due_at is not None:
        seconds = int((row.next_due_at - (now or datetime.now(UTC))).total_seconds())
        due = "now" if seconds <= 0 else f"in {format_interval(seconds)}"
    followed = str(row.sources_followed)
    if row.sources_failed:
        followed += f" ({row.sources_failed} failed)"
    return [row.url, row.kind or "?", format_interval(row.interval_seconds), due,
            row.last_status or "never fetched", str(row.consecutive_failures),
            str(row.entries_seen), followed, row.first_problem or ""]


def cmd_feeds_remove(args: argparse.Namespace) -> int:
    try:
        url = canonicalize_url(args.url)
    except InvalidURL as exc:
        err_console.print(f"cannot remove {args.url}: {exc}", markup=False)
        return 2
    with _engine().begin() as conn:
        removed = remove_feed(conn, url)
    if not removed:
        err_console.print(f"not scheduled: {url}", markup=False)
        return 1
    console.print(f"removed {url}", markup=False)
    return 0


def cmd_schedule(args: argparse.Namespace) -> int:
    from sluice.feed_runs import Round, run_schedule

    settings = get_settings()
    if args.refresh and settings.redis_url:
        # The crawlers read the sources' entries, with their own settings.
        err_console.print("error: --refresh is for embedded crawls; with Redis, set "
                          "SLUICE_DISCOVERY__REFRESH=true on the crawlers")
        return 2
    upgrade(settings.database_url)

    def report(done: Round) -> None:
        if done.due or done.taken_back or args.once:
            console.print(str(done), highlight=False, soft_wrap=True)

    # Ctrl-C or SIGTERM: `sluice` says "interrupted" and exits 130 or 143.
    run_schedule(settings, once=args.once, refresh=args.refresh, on_round=report)
    return 0
