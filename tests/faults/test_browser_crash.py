"""Chromium crashes mid-render: the browser is restarted and every URL still ends in one row.

A real crawl process renders JavaScript-only pages whose scripts take seconds to write their
text; while those renders are in flight the test SIGKILLs every Chromium process of that crawl
(and only of that crawl: other tests may run a browser at the same time). The pages listed by a
second feed, which the server holds back until the browser is dead, are rendered afterwards.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from playwright.async_api import Error as BrowserError

from crawler.middlewares.render import _reason_for
from sluice.demo.server import Reply, Route, SiteHandler, SiteServer
from tests.conftest import PROJECT_ROOT, wait_until
from tests.faults.conftest import (
    CRAWL_TIMEOUT,
    all_rows,
    browser_pids,
    fault_env,
    status_of,
)
from tests.sites import js_only_html, rss, slow_js_only_html, story_path, write_site

pytestmark = pytest.mark.integration

SLOW_PAGES = 3  # fewer than the browser's pages at once, so all of them render together
LATE_PAGES = 6
RENDER_DELAY_MS = 6000  # well under the render's text wait (half the navigation timeout)
TERMINAL = {"success", "truncated", "under_limit", "unsuitable_content", "fetch_failed"}


def kill_all(pids: list[int]) -> None:
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


class CrawlRun:
    """A real crawl process of `feeds`, started in the background; `output` once it ended."""

    def __init__(self, feeds: list[str], env: dict[str, str], tmp_path: Path) -> None:
        (tmp_path / "feeds.txt").write_text("\n".join(feeds))
        self.stats_file = tmp_path / "stats.json"
        self.log = (tmp_path / "crawl.log").open("w+")
        self.output = ""
        self.process = subprocess.Popen(
            [sys.executable, "-m", "crawler.run", "--feeds-file", str(tmp_path / "feeds.txt"),
             "--stats-file", str(self.stats_file), "--log-level", "INFO"],
            env=env, cwd=PROJECT_ROOT, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        self.pid = self.process.pid

    def __enter__(self) -> CrawlRun:
        return self

    def __exit__(self, *exc: object) -> None:
        """Wait for the crawl to end (killing it if the test failed first), keep its output."""
        if exc[0] is None:
            self.process.wait(timeout=CRAWL_TIMEOUT)
        if self.process.poll() is None:
            os.killpg(self.pid, signal.SIGKILL)
            self.process.wait()
        self.log.seek(0)
        self.output = self.log.read()
        self.log.close()

    def stats(self) -> dict[str, object]:
        assert self.process.returncode == 0, self.output[-5000:]
        stats: dict[str, object] = json.loads(self.stats_file.read_text())
        assert stats["finish_reason"] == "finished"
        return stats


def test_chromium_killed_mid_render_is_restarted_and_no_url_is_lost(
    tmp_path: Path, sqlite_url: str
) -> None:
    crashed = threading.Event()

    def late_feed(handler: SiteHandler) -> Reply:
        crashed.wait(timeout=180)  # held until the browser is dead: its pages render after
        return Reply(200, rss(late).encode(), {"Content-Type": "application/rss+xml"})

    slow_paths = [story_path(i) for i in range(SLOW_PAGES)]
    late_paths = [story_path(100 + i) for i in range(LATE_PAGES)]
    files: dict[str, str | bytes] = {
        path: slow_js_only_html(f"Slow story {i}", RENDER_DELAY_MS, f"/beacon/{i}")
        for i, path in enumerate(slow_paths)}
    files.update({path: js_only_html(f"Late story {i}") for i, path in enumerate(late_paths)})
    root = write_site(tmp_path / "site", files)
    routes: dict[str, Route] = {"/beacon/*": lambda handler: Reply(204), "/late.xml": late_feed}
    with SiteServer(root, routes=routes) as site:
        slow = [site.url(path) for path in slow_paths]
        late = [site.url(path) for path in late_paths]
        (root / "slow.xml").write_text(rss(slow))
        # The held feed on a host of its own, so it takes none of the site's download slots.
        feeds = [site.url("/slow.xml"), site.url("/late.xml").replace("127.0.0.1", "localhost")]
        env = fault_env(sqlite_url, SLUICE_BROWSER__RENDER="auto", SLUICE_FETCH__TIMEOUT="60")
        try:
            with CrawlRun(feeds, env, tmp_path) as crawl:
                in_flight = wait_until(lambda: all(f"/beacon/{i}" in site.hits
                                                   for i in range(SLOW_PAGES)), 180, 0.1)
                assert in_flight, "the slow pages never started rendering"
                killed = browser_pids(crawl.pid)
                assert killed, "no Chromium process belongs to the crawl"
                kill_all(killed)
                assert wait_until(lambda: not set(killed) & set(browser_pids(crawl.pid)), 30,
                                  0.1)
                crashed.set()
        finally:
            crashed.set()
        hits = list(site.hits)

    stats = crawl.stats()
    assert stats["playwright/browser_count"] == 2, "the browser was not restarted"
    rows = all_rows(sqlite_url)
    outcomes = {url: status_of(rows[url]) for url in slow + late if url in rows}
    assert set(outcomes) == set(slow + late), "a URL has no row"
    assert all(status in TERMINAL for status, _ in outcomes.values()), outcomes
    # Rendered by the restarted browser: every one of them succeeds.
    assert {url: outcomes[url] for url in late} == {url: ("success", None) for url in late}
    assert all(rows[url].rendered for url in late)
    # In flight when the browser died: rendered again, or recorded as a crash; never lost,
    # never a generic reason.
    for url in slow:
        assert outcomes[url] in (("success", None), ("fetch_failed", "render_crashed")), (
            url, outcomes[url], crawl.output[-5000:])
        if outcomes[url][0] == "success":
            assert rows[url].rendered
    # A crashed render is tried again at most once.
    assert all(hits.count(f"/beacon/{i}") <= 2 for i in range(SLOW_PAGES)), hits


def test_a_page_that_crashes_the_browser_every_time_is_tried_twice_then_recorded(
    tmp_path: Path, sqlite_url: str
) -> None:
    crawl_pid: list[int] = []

    def poison(handler: SiteHandler) -> Reply:
        # Whenever a browser runs this page's script, that browser dies.
        kill_all(browser_pids(crawl_pid[0]))
        return Reply(204)

    poison_path, fine_path = story_path(1), story_path(2)
    root = write_site(tmp_path / "site", {
        poison_path: slow_js_only_html("Poison story", RENDER_DELAY_MS, "/poison"),
        fine_path: js_only_html("Fine story")})
    with SiteServer(root, routes={"/poison": poison}) as site:
        poisoned, fine = site.url(poison_path), site.url(fine_path)
        (root / "feed.xml").write_text(rss([poisoned, fine]))
        env = fault_env(sqlite_url, SLUICE_BROWSER__RENDER="auto")
        with CrawlRun([site.url("/feed.xml")], env, tmp_path) as crawl:
            crawl_pid.append(crawl.pid)
        hits = list(site.hits)
    crawl.stats()
    rows = all_rows(sqlite_url)
    assert status_of(rows[poisoned]) == ("fetch_failed", "render_crashed"), crawl.output[-5000:]
    assert hits.count("/poison") == 2, hits
    assert status_of(rows[fine])[0] in TERMINAL


@pytest.mark.parametrize(("message", "reason"), [
    ("Page.wait_for_function: Target page, context or browser has been closed\nBrowser logs:\n"
     "<launching> chromium --headless\n[err] No such file or directory\n[err] timeout",
     "render_crashed"),
    ("Page.goto: Navigation failed because page crashed!", "render_crashed"),
    ("BrowserType.launch: Executable doesn't exist at no-such-chromium", "render_unavailable"),
    ("Page.wait_for_function: Timeout 20000ms exceeded.", "render_timeout"),
])
def test_browser_errors_get_their_own_reason(message: str, reason: str) -> None:
    assert _reason_for(BrowserError(message)) == reason
