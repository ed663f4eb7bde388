"""One-shot crawls from the command line: a crawl process, watched through the database.

The crawl itself runs in a child process (`python -m crawler.run`); this side records the run in
`crawl_runs` and shows progress by counting the rows the run has written so far.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import sqlalchemy as sa

from sluice.config import Settings
from sluice.db import crawl_runs, make_engine
from sluice.db.models import articles
from sluice.db.store import utcnow
from sluice.records import Status

Progress = Callable[[Mapping[str, int], float], None]

# The exit status of a command stopped by Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130


@dataclass(frozen=True, slots=True)
class CrawlReport:
    run_id: int
    exit_code: int
    counts: dict[str, int]
    seconds: float

    @property
    def interrupted(self) -> bool:
        return self.exit_code == INTERRUPTED


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
    `run_crawl` does; a line without a source gets `source`."""
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

    def watch() -> None:
        if progress is not None:
            progress(_counts_since(engine, started), time.monotonic() - clock)

    exit_code = _run_child(mode, lines, source, env, watch, poll_seconds)
    leftover = _queued_since(engine, started) if settings.embedded else []
    if leftover and exit_code != INTERRUPTED:
        # Embedded crawls have no sweep: a URL whose request was lost (a crashed child, a
        # callback that failed) is fetched once more here, so every URL ends with a row.
        entries = [json.dumps({"url": url}) for url in leftover]
        retry_code = _run_child("--urls-file", entries, source, env, watch, poll_seconds)
        exit_code = retry_code if retry_code == INTERRUPTED else exit_code or retry_code
    counts = _counts_since(engine, started)
    with engine.begin() as conn:
        conn.execute(crawl_runs.update().where(crawl_runs.c.id == run_id).values(
            finished_at=utcnow(), counts=counts, urls_discovered=sum(counts.values())))
    engine.dispose()
    return CrawlReport(run_id, exit_code, counts, time.monotonic() - clock)


def _run_child(mode: str, lines: Sequence[str], source: str, env: Mapping[str, str] | None,
               watch: Callable[[], None], poll_seconds: float) -> int:
    """Run one crawl process to its end; its exit status, or INTERRUPTED after a Ctrl-C."""
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as handle:
        handle.write("\n".join(lines))
    child = subprocess.Popen([sys.executable, "-m", "crawler.run", mode, handle.name,
                              "--source", source], env={**os.environ, **(env or {})})
    try:
        while child.poll() is None:
            time.sleep(poll_seconds)
            watch()
    except KeyboardInterrupt:
        _wait_for_stop(child)
        return INTERRUPTED
    finally:
        if child.poll() is None:
            child.terminate()
        exit_code = child.wait()
        os.unlink(handle.name)
    return exit_code


def _wait_for_stop(child: subprocess.Popen[bytes]) -> None:
    """Ctrl-C reaches the whole process group: the crawl process finishes the pages in hand
    and stops. A second Ctrl-C (or SIGTERM from us) makes it stop at once."""
    print("interrupted: finishing the pages in hand (Ctrl-C again to stop at once)",
          file=sys.stderr, flush=True)
    while True:
        try:
            child.wait()
            return
        except KeyboardInterrupt:
            child.terminate()


def _queued_since(engine: sa.Engine, started: object) -> list[str]:
    query = sa.select(articles.c.url).where(articles.c.status == Status.QUEUED,
                                            articles.c.updated_at >= started)
    with engine.connect() as conn:
        return list(conn.execute(query).scalars())


def _counts_since(engine: sa.Engine, started: object) -> dict[str, int]:
    """Rows this run touched: fetched (a refetch with unchanged content updates only
    `fetched_at`) or changed since it started."""
    query = (sa.select(articles.c.status, sa.func.count())
             .where(sa.or_(articles.c.updated_at >= started, articles.c.fetched_at >= started))
             .group_by(articles.c.status))
    with engine.connect() as conn:
        return {str(getattr(status, "value", status)): count
                for status, count in conn.execute(query)}
