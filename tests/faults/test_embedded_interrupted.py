"""An embedded run (SQLite, no Redis, no sweep) interrupted: Ctrl-C once or twice, or SIGKILL.

The real `sluice` command runs in its own session, as in a terminal, and the signal goes to its
process group, as a terminal's Ctrl-C does. Whatever stops it, the next run of a command fetches
what it left in flight, so every URL ends in one terminal row.
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
from tests.conftest import PROJECT_ROOT, run_sluice, wait_until
from tests.faults.conftest import children_by_parent, descendants, fault_env
from tests.integration.test_bulk_ingest import article
from tests.sites import story_number, story_path

pytestmark = pytest.mark.integration

TOTAL = 40
TERMINAL = {"success", "truncated", "under_limit", "unsuitable_content", "fetch_failed"}


def slow_article(handler: SiteHandler) -> Reply:
    time.sleep(1.0)  # so the run is still going when the signal comes
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


def slower_article(handler: SiteHandler) -> Reply:
    time.sleep(3.0)  # still in flight when a run beside it ends
    return Reply(200, article(story_number(handler.path)),
                 {"Content-Type": "text/html; charset=utf-8"})


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(Path("/nonexistent"), routes={"/news/*": slow_article, "/feed.xml": feed,
                                                  "/slower/*": slower_article}) as server:
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


def assert_every_url_settled(database_url: str, urls: list[str]) -> None:
    rows = statuses(database_url)
    assert {url: rows.get(url) for url in urls} == {url: "success" for url in urls}


def test_ctrl_c_stops_cleanly_and_the_same_command_fetches_the_rest(
        site: SiteServer, sqlite_url: str) -> None:
    """Ctrl-C once: the pages in hand are stored, no traceback, exit status 130, and the rows
    not fetched stay `queued`. The same `sluice crawl` again, whose feed now answers 304, takes
    them back and fetches them (they stayed `queued` for good)."""
    env = fault_env(sqlite_url)
    feed_url = site.url("/feed.xml")
    code, stderr = interrupt(start_sluice("crawl", feed_url, env=env), sqlite_url,
                             signal.SIGINT)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert "interrupted" in stderr and "sluice retry --status queued" in stderr
    left = [url for url, status in statuses(sqlite_url).items() if status == "queued"]
    assert left, "the crawl ended before the interruption"
    engine = make_engine(sqlite_url)
    with engine.connect() as conn:
        assert conn.execute(sa.select(crawl_runs.c.finished_at)).scalar_one() is not None
    engine.dispose()
    assert f"{len(left)} rows were left in flight" in run_sluice("status", env=env).stdout

    again = run_sluice("crawl", feed_url, env=env)
    assert again.returncode == 0, again.stderr
    assert_every_url_settled(sqlite_url, [site.url(story_path(n)) for n in range(TOTAL)])


def test_ctrl_c_twice_or_sigkill_then_retry_or_schedule_fetch_the_rest(
        site: SiteServer, sqlite_url: str, tmp_path: Path) -> None:
    """Ctrl-C twice stops `sluice ingest` at once; the URLs not fetched are `queued` rows
    (before, they had no row at all) and `sluice retry --status queued` fetches them. Then a
    SIGKILL mid-ingest: once its rows' lease has passed, `sluice schedule --once` (nothing
    due) fetches them, and says so."""
    env = fault_env(sqlite_url, SLUICE_LEASE_SECONDS="4")
    urls = [site.url(story_path(n)) for n in range(TOTAL)]
    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(urls))
    code, stderr = interrupt(start_sluice("ingest", str(urls_file), env=env), sqlite_url,
                             signal.SIGINT, signal.SIGINT)
    assert code == 130, stderr
    assert "Traceback" not in stderr
    assert "queued" in statuses(sqlite_url).values()
    retry = run_sluice("retry", "--status", "queued", env=env)
    assert retry.returncode == 0, retry.stderr
    assert_every_url_settled(sqlite_url, urls)

    more = [site.url(story_path(n)) for n in range(TOTAL, 2 * TOTAL)]
    urls_file.write_text("\n".join(more))
    before = fetched(sqlite_url)
    process = start_sluice("ingest", str(urls_file), env=env)
    assert wait_until(lambda: fetched(sqlite_url) >= before + 4, timeout=120, interval=0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.communicate(timeout=60)
    time.sleep(5)  # past the lease of the killed run's rows
    status = run_sluice("status", env=env).stdout
    assert "rows were left in flight" in status
    left = sum(status == "queued" for status in statuses(sqlite_url).values())
    schedule = run_sluice("schedule", "--once", env=env)
    assert schedule.returncode == 0, schedule.stderr
    # It said "0 due sources crawled", as if the round had done nothing.
    assert f"no source due; fetched {left} rows left in flight by an earlier run" in (
        schedule.stdout)
    assert_every_url_settled(sqlite_url, urls + more)


def running(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="latin-1") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def crawl_process(command: int) -> int:
    for pid in children_by_parent().get(command, []):
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            if b"crawler.run" in handle.read():
                return pid
    raise AssertionError("no crawl process")


def test_a_killed_crawl_process_leaves_no_process_and_no_url_behind(
        site: SiteServer, sqlite_url: str) -> None:
    """The crawl process killed outright mid-crawl (SIGKILL, as the out-of-memory killer does):
    the command fetches what it left queued and ends, and the extraction pool's fork server
    and workers die with the crawl process. They ran on for good, holding the command's output
    open, so `sluice crawl ... | tee log` never ended."""
    process = start_sluice("crawl", site.url("/feed.xml"), env=fault_env(sqlite_url))
    assert wait_until(lambda: fetched(sqlite_url) >= 4, timeout=120, interval=0.2)
    crawl = crawl_process(process.pid)
    pool = list(descendants(crawl))
    assert pool, "the extraction pool has not started"
    os.kill(crawl, signal.SIGKILL)
    try:
        process.communicate(timeout=180)
        assert wait_until(lambda: not any(map(running, pool)), timeout=30)
    finally:
        for pid in filter(running, pool):  # only the processes of the crawl this test killed
            os.kill(pid, signal.SIGKILL)
    assert_every_url_settled(sqlite_url, [site.url(story_path(n)) for n in range(TOTAL)])


def test_two_runs_side_by_side_fetch_each_url_once(site: SiteServer, sqlite_url: str,
                                                  tmp_path: Path) -> None:
    """`sluice ingest` while `sluice crawl` runs on the same SQLite file: no database error,
    every URL ends `success`, and each is fetched once. (The crawl's last pass fetched the
    ingest's URLs still in flight a second time.)"""
    env = fault_env(sqlite_url)
    crawl = start_sluice("crawl", site.url("/feed.xml"), env=env)
    assert wait_until(lambda: fetched(sqlite_url) >= 4, timeout=120, interval=0.2)
    slower = [site.url(f"/slower/{n}.html") for n in range(16)]
    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(slower))
    ingest = start_sluice("ingest", str(urls_file), env=env)
    for process in (crawl, ingest):
        _, stderr = process.communicate(timeout=300)
        assert process.returncode == 0, stderr
        assert "Traceback" not in stderr and "locked" not in stderr
    assert_every_url_settled(sqlite_url, slower + [site.url(story_path(n)) for n in range(TOTAL)])
    fetches = [path for path in site.hits if not path.startswith(("/feed", "/robots"))]
    assert sorted(fetches) == sorted(set(fetches))


def run_finished(database_url: str) -> bool:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        finished = conn.execute(sa.select(crawl_runs.c.finished_at)).scalar_one()
    engine.dispose()
    return finished is not None


def test_sigterm_to_the_command_alone_stops_it_as_ctrl_c_does(
        site: SiteServer, sqlite_url: str) -> None:
    """SIGTERM to the `sluice` process alone (`kill PID`, a service manager), not its group:
    the pages in hand are stored, the run is finished and the command exits 143. It died on
    the spot instead, leaving its crawl process running as an orphan and the run unfinished."""
    process = start_sluice("crawl", site.url("/feed.xml"), env=fault_env(sqlite_url))
    assert wait_until(lambda: fetched(sqlite_url) >= 4, timeout=120, interval=0.2)
    crawl = crawl_process(process.pid)
    try:
        os.kill(process.pid, signal.SIGTERM)
        _, stderr = process.communicate(timeout=120)
        assert process.returncode == 143, stderr
        assert not running(crawl)
    finally:
        if running(crawl):  # only the crawl process of the command this test stopped
            os.kill(crawl, signal.SIGKILL)
    assert "Traceback" not in stderr
    assert "interrupted by SIGTERM" in stderr and "sluice retry --status queued" in stderr
    assert run_finished(sqlite_url)
    assert set(statuses(sqlite_url).values()) <= {"success", "queued"}


def test_sigkill_to_the_command_alone_leaves_no_process_behind(
        site: SiteServer, sqlite_url: str, tmp_path: Path) -> None:
    """SIGKILL to the `sluice` process alone: its crawl process and extraction pool die with
    it (the crawl process ran on as an orphan to the end of the crawl)."""
    urls_file = tmp_path / "urls.txt"
    urls_file.write_text("\n".join(site.url(f"/slower/{n}.html") for n in range(TOTAL)))
    process = start_sluice("ingest", str(urls_file), env=fault_env(sqlite_url))
    assert wait_until(lambda: fetched(sqlite_url) >= 4, timeout=120, interval=0.2)
    crawl = crawl_process(process.pid)
    left = [crawl, *descendants(crawl)]
    os.kill(process.pid, signal.SIGKILL)
    process.wait(timeout=60)  # not its output: that ends when the last of its processes does
    try:
        assert wait_until(lambda: not any(map(running, left)), timeout=5, interval=0.2)
    finally:
        for pid in filter(running, left):  # only the processes of the command this test killed
            os.kill(pid, signal.SIGKILL)
        process.communicate(timeout=60)
