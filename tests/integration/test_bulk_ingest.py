"""Queue-driven bulk ingestion over the real Redis and Postgres, with real crawler processes and
Celery workers: every URL ends with exactly one row in a terminal status, crashes included."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterable, Iterator
from itertools import pairwise
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import articles, make_engine
from sluice.demo.server import Reply, SiteHandler, SiteServer
from sluice.ingest import CHUNK
from tests.conftest import PROJECT_ROOT, WorkerProcess, sluice_env, wait_until
from tests.sites import article_html, story_number, story_path
from workers.sweep import sweep

pytestmark = pytest.mark.integration

TOTAL = 10_000


def article(number: int) -> bytes:
    """A small, distinct news article page (about 1,600 characters of text)."""
    return article_html(f"Story {number}", paragraphs=4, seed=number).encode()


KINDS = ("a",) * 14 + ("missing", "missing", "error", "json", "short", "slow")


def kind_of(number: int) -> str:
    """70% articles, 10% missing, 5% server errors, 5% not HTML, 5% short, 5% slow articles."""
    return KINDS[number % len(KINDS)]


EXPECTED = {"a": ("success", None), "slow": ("success", None),
            "missing": ("fetch_failed", "http_404"), "error": ("fetch_failed", "http_5xx"),
            "json": ("fetch_failed", "not_html"), "short": ("under_limit", "too_short")}


def page_route(handler: SiteHandler) -> Reply:
    number = story_number(handler.path)
    kind = kind_of(number)
    html = {"Content-Type": "text/html; charset=utf-8"}
    if kind == "missing":
        return Reply(404, b"<html><body>gone</body></html>", html)
    if kind == "error":
        return Reply(503, b"<html><body>overloaded</body></html>", html)
    if kind == "json":
        return Reply(200, b'{"not": "html"}', {"Content-Type": "application/json"})
    if kind == "short":
        return Reply(200, b"<html><body><p>A short note.</p></body></html>", html)
    if kind == "slow":
        time.sleep(0.3)
    return Reply(200, article(number), html)


@pytest.fixture
def bulk_site() -> Iterator[SiteServer]:
    with SiteServer(Path("/nonexistent"), routes={"/news/*": page_route}) as site:
        yield site


def bulk_env(pg_url: str, redis_url: str) -> dict[str, str]:
    return sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="16",
                      SLUICE_FETCH__RETRIES="1", SLUICE_LEASE_SECONDS="20",
                      SLUICE_SWEEP_SECONDS="5", SLUICE_VISIBILITY_TIMEOUT="30",
                      SLUICE_EXTRACT_WORKERS="1", SLUICE_BROWSER__RENDER="never")


def ingest(site: SiteServer, env: dict[str, str], tmp_path: Path) -> None:
    lines = [site.url(story_path(number)) for number in range(TOTAL)]
    (tmp_path / "urls.txt").write_text("\n".join(lines) + "\nnot a url\n")
    result = subprocess.run([sys.executable, "-m", "sluice.cli", "ingest",
                             str(tmp_path / "urls.txt")], env=env, cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert f"queued {TOTAL} URLs" in result.stdout
    assert f"line {TOTAL + 1}: " in result.stderr


def ingest_urls(urls: Iterable[str], env: dict[str, str], tmp_path: Path,
                *options: str) -> None:
    """`sluice ingest` of these URLs, one a line, as a user would run it."""
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    subprocess.run([sys.executable, "-m", "sluice.cli", "ingest", str(tmp_path / "urls.txt"),
                    *options], env=env, cwd=PROJECT_ROOT, check=True, capture_output=True)


class Crawler:
    """A real `sluice crawler` process (its own process group, so a kill takes its pool too)."""

    def __init__(self, env: dict[str, str]) -> None:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "sluice.cli", "crawler", "--log-level", "WARNING"],
            env=env, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True)

    def kill(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.kill()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGKILL)  # pool children that outlived it


def beat(env: dict[str, str], tmp_path: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "beat",
                             "-s", str(tmp_path / "beat-schedule"), "--loglevel=WARNING"],
                            env=env, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)


def status_counts(database_url: str) -> dict[str, int]:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles.c.status, sa.func.count())
                            .group_by(articles.c.status)).all()
    engine.dispose()
    return {getattr(status, "value", status): count for status, count in rows}


def assert_every_url_terminal_once(database_url: str, site: SiteServer) -> None:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles.c.url, articles.c.status, articles.c.reason)).all()
    engine.dispose()
    assert len(rows) == TOTAL == len({row.url for row in rows})
    wrong = [(row.url, row.status, row.reason) for row in rows
             if (getattr(row.status, "value", row.status), row.reason)
             != EXPECTED[kind_of(story_number(row.url))]]
    assert not wrong, wrong[:10]


def settled(database_url: str) -> bool:
    counts = status_counts(database_url)
    return sum(counts.values()) == TOTAL and not {"queued", "pending"} & set(counts)


def run_bulk(pg_url: str, redis_url: str, site: SiteServer, tmp_path: Path,
             chaos: bool) -> None:
    env = bulk_env(pg_url, redis_url)
    ingest(site, env, tmp_path)
    workers = [WorkerProcess(env), WorkerProcess(env)]
    scheduler = beat(env, tmp_path)
    crawlers = [Crawler(env), Crawler(env)]
    try:
        if chaos:
            half = TOTAL // 2
            assert wait_until(lambda: sum(status_counts(pg_url).get(s, 0) for s in
                                          ("success", "fetch_failed", "under_limit")) >= half,
                              timeout=600, interval=1)
            crawlers[0].kill()
            assert wait_until(lambda: status_counts(pg_url).get("pending", 0) > 0,
                              timeout=120, interval=0.1)
            workers[0].kill()  # SIGKILL, mid-task
            workers[0].stop()
            crawlers[0] = Crawler(env)
            workers[0] = WorkerProcess(env)
        assert wait_until(lambda: settled(pg_url), timeout=900, interval=2), status_counts(pg_url)
    finally:
        for crawler in crawlers:
            crawler.stop()
        for worker in workers:
            worker.stop()
        scheduler.terminate()
        scheduler.wait()
    assert_every_url_terminal_once(pg_url, site)


def test_ten_thousand_urls_two_crawlers_two_workers(
    pg_url: str, redis_url: str, bulk_site: SiteServer, tmp_path: Path
) -> None:
    run_bulk(pg_url, redis_url, bulk_site, tmp_path, chaos=False)


def test_crawler_and_worker_killed_halfway_lose_nothing(
    pg_url: str, redis_url: str, bulk_site: SiteServer, tmp_path: Path
) -> None:
    run_bulk(pg_url, redis_url, bulk_site, tmp_path, chaos=True)


class InFlight:
    """Counts requests being served at once, to catch two crawlers hammering one site."""

    def __init__(self, seconds: float = 0.2) -> None:
        self.lock = threading.Lock()
        self.seconds = seconds  # how long each page takes
        self.now = 0
        self.peak = 0

    def route(self, handler: SiteHandler) -> Reply:
        with self.lock:
            self.now += 1
            self.peak = max(self.peak, self.now)
        time.sleep(self.seconds)
        with self.lock:
            self.now -= 1
        number = story_number(handler.path)
        return Reply(200, article(number), {"Content-Type": "text/html"})


def test_two_crawlers_share_the_per_site_concurrency(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    counter = InFlight()
    with SiteServer(Path("/nonexistent"), routes={"/news/*": counter.route}) as site:
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="3",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        ingest_and_crawl_twice(site, 120, env, tmp_path)
    assert counter.peak <= 3
    assert counter.peak >= 2  # both crawlers did work at once, within the limit


def test_a_slow_download_keeps_its_site_slot_to_the_end(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """A download longer than a shared slot's life without renewal (15 s) still holds the
    site's only slot until it ends: another crawler does not send the site a second request
    meanwhile."""
    counter = InFlight(seconds=18)
    with SiteServer(Path("/nonexistent"), routes={"/news/*": counter.route}) as site:
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="1",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        crawlers = [Crawler(env)]
        try:
            ingest_urls([site.url(story_path(0))], env, tmp_path)
            assert wait_until(lambda: counter.now == 1, timeout=60, interval=0.1)
            # The busy crawler pops nothing more until its download ends: the page below
            # goes to a second one, which must wait for the site's slot.
            crawlers.append(Crawler(env))
            ingest_urls([site.url(story_path(1))], env, tmp_path)
            assert wait_until(lambda: status_counts(pg_url).get("queued", 0) == 0
                              and len(site.hits) >= 2, timeout=120, interval=0.5)
        finally:
            for crawler in crawlers:
                crawler.stop()
    assert counter.peak == 1


def ingest_and_crawl_twice(site: SiteServer, stories: int, env: dict[str, str],
                           tmp_path: Path) -> None:
    """Ingest `stories` URLs of the site, fetch them with two crawler processes."""
    ingest_urls((site.url(story_path(number)) for number in range(stories)), env, tmp_path)
    crawlers = [Crawler(env), Crawler(env)]
    try:
        assert wait_until(lambda: status_counts(env["SLUICE_DATABASE_URL"]).get("queued", 0) == 0
                          and sum(path.startswith("/news/") for path in site.hits) >= stories,
                          timeout=300, interval=1)
    finally:
        for crawler in crawlers:
            crawler.stop()


class Paced:
    """A site whose robots.txt asks for an hour between requests; notes when each page is
    fetched."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.fetched: list[float] = []

    def robots(self, handler: SiteHandler) -> Reply:
        return Reply(200, b"User-agent: *\nCrawl-delay: 3600\n", {"Content-Type": "text/plain"})

    def route(self, handler: SiteHandler) -> Reply:
        with self.lock:
            self.fetched.append(time.monotonic())
        return Reply(200, article(story_number(handler.path)), {"Content-Type": "text/html"})


def test_two_crawlers_keep_to_a_robots_crawl_delay_together(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    paced = Paced()
    routes = {"/robots.txt": paced.robots, "/news/*": paced.route}
    with SiteServer(Path("/nonexistent"), routes=routes) as site:
        # One request in hand per crawler, so that both crawlers keep working on the site.
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__MAX_CRAWL_DELAY="1",
                         SLUICE_FETCH__CONCURRENCY="1", SLUICE_BROWSER__RENDER="never",
                         SLUICE_EXTRACT_WORKERS="1")
        ingest_and_crawl_twice(site, 8, env, tmp_path)
    # The delay (capped at 1 s here) holds between any two requests, whichever crawler sent them.
    gaps = [later - earlier for earlier, later in pairwise(sorted(paced.fetched))]
    assert len(paced.fetched) == 8 and min(gaps) > 0.75, gaps  # a margin for a loaded machine


def test_pages_waiting_for_a_slow_site_do_not_hold_up_another_sites(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """A site that asks for seconds between requests holds none of the crawler's download
    slots while its pages wait for their turn: another site's pages, queued behind them, are
    fetched meanwhile, and the slow site still gets its delay."""
    paced, quick = Paced(), Paced()  # the quick site serves no robots.txt: no delay
    slow_routes = {"/robots.txt": paced.robots, "/news/*": paced.route}
    with (SiteServer(Path("/nonexistent"), routes=slow_routes) as slow_site,
          SiteServer(Path("/nonexistent"), routes={"/news/*": quick.route}) as quick_site):
        # Four download slots, all of them taken by the slow site's first pages at first.
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__MAX_CRAWL_DELAY="3",
                         SLUICE_FETCH__CONCURRENCY="4", SLUICE_BROWSER__RENDER="never",
                         SLUICE_EXTRACT_WORKERS="1")
        ingest_urls((slow_site.url(story_path(number)) for number in range(5)), env, tmp_path)
        # Another host (the same address), so the slow site's delay is not its own.
        ingest_urls((quick_site.url(story_path(number)).replace("127.0.0.1", "localhost")
                     for number in range(100, 108)), env, tmp_path)
        crawler = Crawler(env)
        try:
            assert wait_until(lambda: status_counts(pg_url).get("queued", 0) == 0
                              and len(paced.fetched) == 5, timeout=120, interval=0.5)
        finally:
            crawler.stop()
    # Without the wait outside the downloader, the quick site's pages would have waited for
    # the slow site's first four (nine seconds at least).
    assert len(quick.fetched) == 8 and max(quick.fetched) < paced.fetched[2], (
        [round(t - paced.fetched[0], 1) for t in quick.fetched])
    gaps = [later - earlier for earlier, later in pairwise(paced.fetched)]
    assert min(gaps) > 2.5, gaps  # a margin for a loaded machine
    assert status_counts(pg_url) == {"pending": 13}  # every page stored, none failed


class Flaky:
    """Fails with 503 until `healed`, then serves the article."""

    def __init__(self) -> None:
        self.healed = False

    def route(self, handler: SiteHandler) -> Reply:
        if not self.healed:
            return Reply(503, b"<html><body>down</body></html>", {"Content-Type": "text/html"})
        return Reply(200, article(story_number(handler.path)),
                     {"Content-Type": "text/html"})


def test_failed_urls_can_be_retried_through_the_duplicate_filter(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    flaky = Flaky()
    with SiteServer(Path("/nonexistent"), routes={"/news/*": flaky.route}) as site:
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__RETRIES="0",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        ingest_urls((site.url(story_path(n)) for n in range(5)), env, tmp_path)
        worker = WorkerProcess(env)
        crawler = Crawler(env)
        try:
            assert wait_until(lambda: status_counts(pg_url).get("fetch_failed") == 5,
                              timeout=120, interval=0.5)
            flaky.healed = True
            result = subprocess.run([sys.executable, "-m", "sluice.cli", "retry", "--status",
                                     "fetch_failed", "--reason", "http_5xx"], env=env,
                                    cwd=PROJECT_ROOT, capture_output=True, text=True, check=True)
            assert "queued 5 URLs again" in result.stdout
            assert wait_until(lambda: status_counts(pg_url) == {"success": 5}, timeout=120,
                              interval=0.5), status_counts(pg_url)
        finally:
            crawler.stop()
            worker.stop()


def test_a_crawler_stopped_with_sigterm_fails_no_page(
    pg_url: str, redis_url: str, bulk_site: SiteServer, tmp_path: Path
) -> None:
    """A stop signal to the crawler's whole process group (as `docker stop` or a terminal's
    Ctrl-C sends) must not turn the pages in hand into failures: the rest wait for the next
    crawler, which finishes them."""
    env = sluice_env(pg_url, redis_url, SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
    ingest_urls((bulk_site.url(story_path(n)) for n in range(0, 2000, 20)), env, tmp_path)
    worker = WorkerProcess(env)
    crawler = Crawler(env)
    try:
        assert wait_until(lambda: sum(status_counts(pg_url).values())
                          - status_counts(pg_url).get("queued", 0) >= 10, timeout=120,
                          interval=0.2)
        os.killpg(crawler.process.pid, signal.SIGTERM)
        crawler.process.wait(timeout=120)
        crawler = Crawler(env)
        assert wait_until(lambda: not {"queued", "pending"} & set(status_counts(pg_url)),
                          timeout=300, interval=1), status_counts(pg_url)
    finally:
        crawler.stop()
        worker.stop()
    engine = make_engine(pg_url)
    with engine.connect() as conn:
        reasons = set(conn.execute(sa.select(articles.c.reason)).scalars())
    engine.dispose()
    assert not reasons & {"extract_crashed", "extract_error", "fetch_error"}


def test_urls_waiting_for_their_site_keep_their_leases(
    pg_url: str, redis_url: str, bulk_site: SiteServer, tmp_path: Path
) -> None:
    """URLs a crawler holds while they wait for their site's turn outlive their lease: the
    crawler keeps it alive, so the sweep does not take them for lost and have them fetched
    twice."""
    lease, stories = 6, 12
    env = sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="1",
                     SLUICE_FETCH__PER_SITE_DELAY="1", SLUICE_LEASE_SECONDS=str(lease),
                     SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
    ingest_urls((bulk_site.url(story_path(n)) for n in range(stories)), env, tmp_path)
    engine = make_engine(pg_url)
    crawler = Crawler(env)
    requeued = 0
    try:
        deadline = time.monotonic() + 120
        while status_counts(pg_url).get("queued", 0) and time.monotonic() < deadline:
            requeued += sweep(engine, redis_url, lease).requeued  # as beat's sweep would
            time.sleep(1)
        time.sleep(3)  # time for a second fetch of anything pushed again
    finally:
        crawler.stop()
        engine.dispose()
    fetched = Counter(path for path in bulk_site.hits if path.startswith("/news/"))
    # Fetching the 12 pages takes twice the lease: each was fetched once, none pushed again.
    assert (len(fetched), max(fetched.values()), requeued) == (stories, 1, 0), fetched


class Edited:
    """A story whose text changes when `version` is raised."""

    def __init__(self) -> None:
        self.version = 1

    def route(self, handler: SiteHandler) -> Reply:
        html = article_html(f"Story, version {self.version}", paragraphs=4, seed=self.version)
        return Reply(200, html.encode(), {"Content-Type": "text/html"})


def test_ingest_refresh_fetches_a_page_fetched_minutes_ago_again(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """The crawlers' duplicate filter remembers a fetch for an hour; a refresh passes it."""
    edited = Edited()
    with SiteServer(Path("/nonexistent"), routes={"/news/*": edited.route}) as site:
        env = sluice_env(pg_url, redis_url, SLUICE_BROWSER__RENDER="never",
                         SLUICE_EXTRACT_WORKERS="1")
        url = site.url(story_path(1))

        def title() -> str | None:
            engine = make_engine(pg_url)
            with engine.connect() as conn:
                row = conn.execute(sa.select(articles.c.status, articles.c.title)
                                   .where(articles.c.url == url)).one()
            engine.dispose()
            return row.title if row.status == "success" else None

        ingest_urls([url], env, tmp_path)
        worker = WorkerProcess(env)
        crawler = Crawler(env)
        try:
            assert wait_until(lambda: title() == "Story, version 1", timeout=120, interval=0.5)
            edited.version = 2
            ingest_urls([url], env, tmp_path, "--refresh")
            assert wait_until(lambda: title() == "Story, version 2", timeout=60, interval=0.5)
        finally:
            crawler.stop()
            worker.stop()
    assert site.hits.count(story_path(1)) == 2


@pytest.mark.parametrize("database", ["sqlite_url", "pg_url"])
@pytest.mark.parametrize("refresh", [(), ("--refresh",)])
def test_a_url_repeated_far_apart_is_a_duplicate_as_one_repeated_next_to_it(
    database: str, refresh: tuple[str, ...], redis_url: str, tmp_path: Path,
    request: pytest.FixtureRequest
) -> None:
    """The file is recorded in chunks; a repeat in a later chunk is no "already stored" row."""
    urls = [f"https://news.example/story-{number}" for number in range(CHUNK + 600)]
    urls[1] = urls[0]  # the next line
    urls[CHUNK + 500] = urls[2]  # two chunks apart
    database_url = request.getfixturevalue(database)
    (tmp_path / "urls.txt").write_text("\n".join(urls) + "\n")
    result = subprocess.run([sys.executable, "-m", "sluice.cli", "ingest",
                             str(tmp_path / "urls.txt"), *refresh],
                            env=sluice_env(database_url, redis_url), cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, result.stderr
    assert f"queued {len(urls) - 2} URLs (0 already stored, 2 invalid lines)" in result.stdout
    assert result.stderr.splitlines() == [
        f"line 2: duplicate: duplicate URL ('{urls[0]}')",
        f"line {CHUNK + 501}: duplicate: duplicate URL ('{urls[2]}')"]
