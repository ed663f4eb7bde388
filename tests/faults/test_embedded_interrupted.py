"""An embedded run (SQLite, no Redis, no sweep) interrupted: Ctrl-C once or twice, or SIGKILL.

The real `sluice` command runs in its own session, as in a terminal, and the signal goes to its
process group, as a terminal's Ctrl-C does. It stops without a traceback, with exit status 130.
"""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import articles, crawl_runs, make_engine
from sluice.demo.server import Reply, SiteHandler, SiteServer
from tests.conftest import PROJECT_ROOT, wait_until
from tests.faults.conftest import fault_env
from tests.integration.test_bulk_ingest import article
from tests.sites import story_number, story_path

pytestmark = pytest.mark.integration

TOTAL = 40
TERMINAL = {"success", "truncated", "under_limit", "unsuitable_content", "fetch_failed"}


def slow_article(handler: SiteHandler) -> Reply:
    time.sleep(0.5)  # so the run is still going when the signal comes
    return Reply(200, article(story_number(handler.path)),
                 {"Content-Type": "text/html; charset=utf-8"})


def feed(handler: SiteHandler) -> Reply:
    """An RSS feed of TOTAL stories with an ETag: visited again, it answers 304."""
    base = f"http://{handler.headers['Host']}"
    items = "".join(f"<item><title>Story {n}</title><link>{base}{story_path(n)}</link></item>"
                    for n in range(TOTAL))
    body = (f'<?xml version="1.0"?><rss version="2.0"><channel><title>News</title>'
            f"<link>{base}/</link>{items}</channel></rss>").encode()
    etag = f'"{hashlib.sha256(body).hexdigest()[:16]}"'
    if handler.headers.get("If-None-Match") == etag:
        return Reply(304, b"", {"ETag": etag})
    return Reply(200, body, {"Content-Type": "application/rss+xml", "ETag": etag})


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(Path("/nonexistent"), routes={"/news/*": slow_article,
                                                  "/feed.xml": feed}) as server:
        yield server


def start_sluice(*args: str, env: dict[str, str]) -> subprocess.Popen[str]:
    """`sluice ARGS` in a session of its own, as a terminal would start it."""
    return subprocess.Popen([sys.executable, "-m", "sluice.cli", *args], env=env,
                            cwd=PROJECT_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True, start_new_session=True)


def statuses(database_url: str) -> dict[str, str]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles.c.url, articles.c.status)).all()
    engine.dispose()
    return {url: str(getattr(status, "value", status)) for url, status in rows}


def fetched(database_url: str) -> int:
    return sum(status in TERMINAL for status in statuses(database_url).values())


def interrupt(process: subprocess.Popen[str], database_url: str, *signals: int
              ) -> tuple[int, str]:
    """Once some pages are stored, send `signals` to the command's process group (half a
    second apart); returns its exit status and stderr."""
    assert wait_until(lambda: fetched(database_url) >= 4, timeout=120, interval=0.2)
    for number in signals:
        os.killpg(process.pid, number)
        time.sleep(0.5)
    _, stderr = process.communicate(timeout=120)
    return process.returncode, stderr


def test_ctrl_c_once_or_twice_stops_cleanly(site: SiteServer, sqlite_url: str,
                                            tmp_path: Path) -> None:
    """Ctrl-C once: the pages in hand are stored, no traceback, exit status 130, the run is
    recorded as finished. Ctrl-C twice stops `sluice ingest` at once, as cleanly."""
    env = fault_env(sqlite_url)
    code, stderr = interrupt(start_sluice("crawl", site.url("/feed.xml"), env=env),
                             sqlite_url, signal.SIGINT)
    assert code == 130, stderr
    assert "Traceback" not in stderr and "interrupted" in stderr
    assert "queued" in statuses(sqlite_url).values(), "the crawl ended before the interruption"
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(sa.select(crawl_runs.c.finished_at)).scalar_one() is not None
    engine.dispose()

    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(site.url(story_path(n)) for n in range(TOTAL, 2 * TOTAL)))
    before = fetched(sqlite_url)
    process = start_sluice("ingest", str(urls_file), env=env)
    assert wait_until(lambda: fetched(sqlite_url) >= before + 4, timeout=120, interval=0.2)
    code, stderr = interrupt(process, sqlite_url, signal.SIGINT, signal.SIGINT)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert fetched(sqlite_url) < before + TOTAL
