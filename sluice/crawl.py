"""One-shot crawls from the command line: a crawl process, watched through the database.

The crawl itself runs in a child process (`python -m crawler.run`); this side records the run in
`crawl_runs` and shows progress by counting the rows the run has written so far.

Embedded runs have no sweep, so each run does its part: it first takes back the rows an earlier
run left in flight (`queued` or `pending` past their lease: that run was interrupted, killed or
ran out of memory) and fetches them too; while it runs, it keeps the leases of the rows it has
queued, so a second run beside it does not take them; stopped with Ctrl-C or SIGTERM, it lets
go of the rows it did not fetch, so the next run takes them at once.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from sluice.config import Settings
from sluice.db import crawl_runs, make_engine, store
from sluice.db.models import articles
from sluice.db.store import utcnow
from sluice.records import Status
from sluice.stops import exit_status, stop_signal, stopped

Progress = Callable[[Mapping[str, int], float], None]

@dataclass(frozen=True, slots=True)
class CrawlReport:
    run_id: int
    exit_code: int
    counts: dict[str, int]
    seconds: float
    left_queued: int = 0  # rows an interrupted run did not fetch (the next run does)
    taken_back: int = 0  # rows earlier runs left in flight, which this run fetched too

    @property
    def interrupted(self) -> bool:
        """Stopped by Ctrl-C or SIGTERM (the exit status says which)."""
        return stopped(self.exit_code)


def run_crawl(feed_urls: Sequence[str], settings: Settings, source: str,
              env: Mapping[str, str] | None = None, progress: Progress | None = None,
              poll_seconds: float = 1.0) -> CrawlReport:
    """Crawl the feeds in a child process; record the run and report progress while it runs."""
    return run_crawler_process("--feeds-file", feed_urls, settings, source, env, progress,
                               poll_seconds)


def run_urls(entries: Sequence[str], settings: Settings, source: str,
             env: Mapping[str, str] | None = None, progress: Progress | None = None,
             poll_seconds: float = 1.0) -> CrawlReport:
    """Fetch article URLs (JSON lines: url, render, source) in a child process, as
    `run_crawl` does; a line without a source gets `source`. The URLs are rows already: an
    ingest's `queued` rows (`sluice.ingest.record_ingest`) or the stored rows of a retry."""
    return run_crawler_process("--urls-file", entries, settings, source, env, progress,
                               poll_seconds)


def run_crawler_process(mode: str, lines: Sequence[str], settings: Settings, source: str,
                        env: Mapping[str, str] | None, progress: Progress | None,
                        poll_seconds: float) -> CrawlReport:
    engine = make_engine(settings.database_url)
    started = utcnow()
    clock = time.monotonic()
    with engine.begin() as conn:
        run_id = conn.execute(crawl_runs.insert().values(source=source, started_at=started)
                              .returning(crawl_runs.c.id)).scalar_one()
        # What is this run's (see `_queued_since`): its feeds' rows, its URLs, those it took back.
        feeds = set(lines) if mode == "--feeds-file" else set()
        given = [] if feeds else [json.loads(line)["url"] for line in lines]
        urls = set(given)
        taken_back: set[str] = set()
        if settings.embedded:
            taken_back = _take_back_in_flight(conn, settings.lease_seconds)
            urls |= taken_back
            # An ingest's URLs are `queued` rows already, as with Redis (see record_ingest):
            # this run leases them, so an interrupted run leaves them `queued`, where `sluice
            # status` shows them and the next run finds them. Retried rows stay as they are.
            store.keep_leases(conn, given, settings.lease_seconds, Status.QUEUED, touch=True)

    def queued() -> list[tuple[str, str | None]]:
        return [(url, row_source) for url, row_source in _queued_since(engine, started)
                if url in urls or row_source in feeds]

    kept_at = time.monotonic()

    def watch() -> None:
        nonlocal kept_at
        if settings.embedded and time.monotonic() - kept_at >= settings.lease_seconds / 3:
            kept_at = time.monotonic()
            _keep_leases(engine, queued(), settings.lease_seconds)
        if progress is not None:
            progress(_counts_since(engine, started), time.monotonic() - clock)

    exit_code = _run_child(mode, lines, source, env, watch, poll_seconds) if lines else 0
    leftover = queued() if settings.embedded else []
    if leftover and not stopped(exit_code):
        # Embedded crawls have no sweep: a URL whose request was lost (a crashed child, a
        # callback that failed), or one taken back from an earlier run, is fetched here, so
        # every URL ends with a row.
        entries = [json.dumps({"url": url, "source": row_source})
                   for url, row_source in leftover]
        retry_code = _run_child("--urls-file", entries, source, env, watch, poll_seconds)
        exit_code = retry_code if stopped(retry_code) else exit_code or retry_code
    left_queued = _let_go(engine, queued()) if stopped(exit_code) else 0
    counts = _counts_since(engine, started)
    with engine.begin() as conn:
        conn.execute(crawl_runs.update().where(crawl_runs.c.id == run_id).values(
            finished_at=utcnow(), counts=counts, urls_discovered=sum(counts.values())))
    engine.dispose()
    return CrawlReport(run_id, exit_code, counts, time.monotonic() - clock, left_queued,
                       len(taken_back))


def left_in_flight(settings: Settings) -> int:
    """How many rows earlier runs left in flight past their lease (the next run takes them)."""
    engine = make_engine(settings.database_url)
    with engine.connect() as conn:
        count = store.count_stale_in_flight(conn)
    engine.dispose()
    return count


def _take_back_in_flight(conn: sa.Connection, lease_seconds: int) -> set[str]:
    """Lease to this run the rows earlier runs left in flight: `queued` again, touched now, so
    the leftover pass below fetches them unless the crawl itself does first."""
    taken: set[str] = set()
    while stale := [url for url, _ in store.stale_in_flight(conn, limit=1000)]:
        store.requeue(conn, stale, lease_seconds)
        taken.update(stale)
    return taken


def _keep_leases(engine: sa.Engine, queued: Sequence[tuple[str, str | None]],
                 lease_seconds: int) -> None:
    with engine.begin() as conn:
        store.keep_leases(conn, [url for url, _ in queued], lease_seconds, Status.QUEUED)


def _let_go(engine: sa.Engine, queued: Sequence[tuple[str, str | None]]) -> int:
    """End the leases of the rows an interrupted run did not fetch; returns how many."""
    urls = [url for url, _ in queued]
    with engine.begin() as conn:
        store.keep_leases(conn, urls, 0, Status.QUEUED)
    return len(urls)


def _run_child(mode: str, lines: Sequence[str], source: str, env: Mapping[str, str] | None,
               watch: Callable[[], None], poll_seconds: float) -> int:
    """Run one crawl process to its end; its exit status, or that of the Ctrl-C or SIGTERM
    that stopped this process (INTERRUPTED, TERMINATED) once the crawl process has stopped.

    The crawl process runs in a session of its own, so a stop signal reaches it only through
    this process, once a signal: the one sent to this process alone (`kill PID`, a service
    manager) as the one a terminal sends to the whole group (Ctrl-C). It dies with this
    process (`--parent`), so a SIGKILL here does not leave it running either."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(lines))
    child = subprocess.Popen([sys.executable, "-m", "crawler.run", mode, handle.name,
                              "--source", source, "--parent", str(os.getpid())],
                             env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        while child.poll() is None:
            time.sleep(poll_seconds)
            watch()
    except KeyboardInterrupt as stop:  # Ctrl-C, or SIGTERM (sluice.stops.Terminated)
        _wait_for_stop(child, stop)
        return exit_status(stop)
    finally:
        if child.poll() is None:
            child.terminate()
        exit_code = child.wait()
        os.unlink(handle.name)
    return exit_code


def _wait_for_stop(child: subprocess.Popen[bytes], stop: KeyboardInterrupt) -> None:
    """Pass the stop on: the crawl process finishes the pages in hand and stops. A second
    stop signal (Ctrl-C or SIGTERM) makes it stop at once."""
    sent = stop_signal(stop)
    child.send_signal(sent)
    by = "" if sent is signal.SIGINT else f" by {sent.name}"
    print(f"interrupted{by}: finishing the pages in hand (Ctrl-C again to stop at once)",
          file=sys.stderr, flush=True)
    while True:
        try:
            child.wait()
            return
        except KeyboardInterrupt:
            child.terminate()


def _queued_since(engine: sa.Engine, started: object) -> list[tuple[str, str | None]]:
    """Rows `queued` since `started`, this run's and those of any run beside it (`sluice
    ingest` while `sluice schedule` crawls): the caller keeps its own, so it neither fetches
    nor holds the others' rows."""
    query = sa.select(articles.c.url, articles.c.source).where(
        articles.c.status == Status.QUEUED, articles.c.updated_at >= started)
    with engine.connect() as conn:
        return [(url, row_source) for url, row_source in conn.execute(query)]


def _counts_since(engine: sa.Engine, started: object) -> dict[str, int]:
    """Rows this run touched: fetched (a refetch with unchanged content updates only
    `fetched_at`) or changed since it started."""
    query = (sa.select(articles.c.status, sa.func.count())
             .where(sa.or_(articles.c.updated_at >= started, articles.c.fetched_at >= started))
             .group_by(articles.c.status))
    with engine.connect() as conn:
        return {str(getattr(status, "value", status)): count
                for status, count in conn.execute(query)}
