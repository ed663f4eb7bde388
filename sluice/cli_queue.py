"""Queue commands: `sluice ingest`, `sluice crawler`, `sluice retry`, `sluice status --watch`."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa
from rich.console import Console, Group
from rich.live import Live
from rich.table import Table

from sluice import frontier
from sluice.cli_sql import positive_int, whole_number
from sluice.config import LOG_LEVELS, Settings, get_settings
from sluice.db import articles, make_engine, store
from sluice.db.migrate import upgrade, upgrade_existing
from sluice.ingest import ingest_lines, record_ingest
from sluice.inputs import InputProblem, iter_lines
from sluice.records import Status

console = Console()
err_console = Console(stderr=True)


def register(commands: Any) -> None:
    ingest = commands.add_parser("ingest", help="fetch the URLs of a file (one a line, or JSON "
                                                "lines with per-URL options); - reads stdin")
    ingest.add_argument("file", metavar="FILE|-")
    ingest.add_argument("--source", help="what to record as the rows' source (default: FILE)")
    ingest.add_argument("--refresh", action="store_true",
                        help="fetch URLs that are already stored again")
    ingest.set_defaults(handler=cmd_ingest)

    crawler = commands.add_parser("crawler", help="a long-running crawler process consuming "
                                                  "the shared frontier (needs SLUICE_REDIS_URL)")
    crawler.add_argument("--idle-exit", type=whole_number(0), default=0,
                         help="stop after this many idle seconds (default: never)")
    crawler.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default="INFO",
                         help="how much the crawler logs (default: %(default)s)")
    crawler.set_defaults(handler=cmd_crawler)

    retry = commands.add_parser("retry", help="queue a selection of stored URLs again")
    retry.add_argument("--status", default="fetch_failed", choices=[s.value for s in Status],
                       help="only rows with this status (default: %(default)s)")
    retry.add_argument("--reason", help="only rows with this reason code")
    retry.add_argument("--limit", type=positive_int, default=100_000,
                       help="at most this many rows (default: %(default)s)")
    retry.set_defaults(handler=cmd_retry)


def report_problems(problems: list[InputProblem]) -> None:
    for problem in problems:
        err_console.print(f"{problem.location}: {problem.reason}: {problem.message} "
                          f"({problem.text[:80]!r})", markup=False, highlight=False,
                          soft_wrap=True)


def cmd_ingest(args: argparse.Namespace) -> int:
    settings = get_settings()
    upgrade(settings.database_url)
    source = args.source or ("stdin" if args.file == "-" else os.path.basename(args.file))
    # A file that cannot be read raises OSError on the first line: `sluice` reports it.
    lines = iter_lines(args.file)
    if settings.redis_url:
        report = ingest_lines(lines, settings.database_url, settings.redis_url, source,
                              refresh=args.refresh)
        report_problems(report.problems)
        console.print(f"{report.summary()}; crawler processes (`sluice crawler`) fetch them",
                      soft_wrap=True)
        return 0
    return _ingest_embedded(lines, source, args.refresh, settings)


def _ingest_embedded(lines: Any, source: str, refresh: bool, settings: Settings) -> int:
    """Record the URLs as the distributed ingest does (stored ones are left alone unless
    `refresh`), then fetch those recorded, and what earlier runs left in flight."""
    from sluice.cli import crawl_with_progress
    from sluice.crawl import left_in_flight

    report, new = record_ingest(lines, settings.database_url, source, refresh,
                                settings.lease_seconds)
    report_problems(report.problems)
    if not new and not report.already_stored:
        err_console.print("no valid URLs to fetch")
        return 2
    if not new:
        console.print(f"{report.summary()}; `--refresh` fetches stored URLs again",
                      soft_wrap=True)
        if not left_in_flight(settings):
            return 0
    else:
        console.print(f"{report.summary()}; fetching them now", soft_wrap=True)
    entries = [json.dumps({"url": item.url, "render": item.options.get("render"),
                           "source": str(item.options.get("source", source))})
               for item in new]
    return crawl_with_progress("urls", entries, source)


def cmd_crawler(args: argparse.Namespace) -> int:
    settings = get_settings()
    if not settings.redis_url:
        err_console.print("`sluice crawler` consumes the shared frontier: set SLUICE_REDIS_URL "
                          "(embedded crawls use `sluice crawl` or `sluice ingest`)")
        return 2
    upgrade(settings.database_url)
    command = [sys.executable, "-m", "crawler.run", "--queue", "--log-level", args.log_level,
               "--idle-exit", str(args.idle_exit)]
    # Replace this process, so signals (SIGTERM for a graceful stop) reach Scrapy directly.
    os.execv(sys.executable, command)
    return 0  # pragma: no cover


def cmd_retry(args: argparse.Namespace) -> int:
    settings = get_settings()
    upgrade(settings.database_url)
    engine = make_engine(settings.database_url)
    query = sa.select(articles.c.url, articles.c.source).where(
        articles.c.status == Status(args.status)).limit(args.limit)
    if args.reason:
        query = query.where(articles.c.reason == args.reason)
    with engine.begin() as conn:
        rows = conn.execute(query).all()
        if settings.redis_url:
            store.requeue(conn, [url for url, _ in rows], lease_seconds=None)
    engine.dispose()
    if not rows:
        console.print("nothing to retry")
        return 0
    if not settings.redis_url:
        # Each row keeps its source, as on the Redis path (a row without one: "retry").
        return _crawl_retry([json.dumps({"url": url, "source": source}) for url, source in rows])
    client = frontier.connect(settings.redis_url)
    entries = [frontier.FrontierEntry(url=url, source=source, retry=True) for url, source in rows]
    pushed = frontier.push(client, entries, frontier.PRIORITY_RETRY)
    console.print(f"queued {len(rows)} URLs again ({pushed} new in the frontier)")
    return 0


def _crawl_retry(entries: list[str]) -> int:
    from sluice.cli import crawl_with_progress

    return crawl_with_progress("urls", entries, "retry")


def status_snapshot(engine: sa.Engine, redis_url: str | None) -> dict[str, Any]:
    with engine.connect() as conn:
        counts = store.counts_by_status(conn)
    snapshot: dict[str, Any] = {"at": time.monotonic(), "counts": counts}
    if redis_url:
        client = frontier.connect(redis_url)
        snapshot["frontier"] = frontier.depth(client)
        snapshot["crawlers"] = frontier.crawler_heartbeats(client)
        client.close()
    return snapshot


def watch_tables(now: Mapping[str, Any], before: Mapping[str, Any] | None) -> Group:
    seconds = max(now["at"] - before["at"], 1e-9) if before else None
    table = Table(title="articles")
    for name in ("status", "rows", "per second"):
        table.add_column(name, justify="left" if name == "status" else "right")
    for status in Status:
        count = now["counts"].get(status.value, 0)
        rate = ""
        if seconds and before:
            rate = f"{(count - before['counts'].get(status.value, 0)) / seconds:.1f}"
        table.add_row(status.value, str(count), rate)
    parts: list[Any] = [table]
    if "frontier" in now:
        parts.append(f"frontier: {now['frontier']} entries waiting")
        crawlers = Table(title="crawler processes")
        for name in ("process", "waiting", "pages fetched", "items", "last seen (s)"):
            crawlers.add_column(name)
        for name, beat in sorted(now["crawlers"].items()):
            crawlers.add_row(name, str(beat.get("waiting", 0)), str(beat.get("pages", 0)),
                             str(beat.get("items", 0)), f"{time.time() - beat['at']:.0f}")
        parts.append(crawlers)
    return Group(*parts)


def watch_status(interval: float = 2.0) -> int:
    """Counts and rates every `interval` seconds until interrupted. On a terminal the tables
    are redrawn in place; piped or logged, each snapshot is appended under its UTC time (a
    live display would show nothing there until it stopped)."""
    settings = get_settings()
    upgrade_existing(settings.database_url)
    engine = make_engine(settings.database_url)
    before = None
    display = Live(console=console, auto_refresh=False) if console.is_terminal else None
    with display if display is not None else contextlib.nullcontext() as live:
        try:
            while True:
                now = status_snapshot(engine, settings.redis_url)
                tables = watch_tables(now, before)
                if live is not None:
                    live.update(tables, refresh=True)
                else:
                    console.print(f"{datetime.now(UTC):%Y-%m-%d %H:%M:%S} UTC", tables)
                    console.file.flush()
                before = now
                time.sleep(interval)
        except KeyboardInterrupt:
            return 0


