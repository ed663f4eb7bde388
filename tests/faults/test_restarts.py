"""Faults in the middle of a distributed crawl: Postgres restarted, Redis restarted (losing
everything it held), a crawler killed with SIGKILL, a Celery worker killed mid-task. After each,
the crawl completes with every URL in exactly one terminal row.

Like a deployment's restart policy, the test starts a crawler or worker again when one exits;
the services are always left running, whatever happens.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from sluice.db import articles, make_engine
from sluice.demo.server import Reply, SiteHandler, SiteServer
from sluice.frontier import FRONTIER_KEY
from tests.conftest import PROJECT_ROOT, WorkerProcess, run_sluice, sluice_env, wait_until
from tests.integration.test_bulk_ingest import Crawler, article, beat, ingest_urls, status_counts
from tests.integration.test_discovery import urlset
from tests.sites import story_number, story_path

pytestmark = pytest.mark.integration

TOTAL = 400
TERMINAL = ("success", "truncated", "under_limit", "unsuitable_content", "fetch_failed")
REDIS_START = ["redis-server", "--daemonize", "yes", "--bind", "127.0.0.1", "-::1", "--port",
               "6379", "--save", "", "--appendonly", "no", "--dir", "/var/lib/redis",
               "--logfile", "/var/log/redis/ci.log"]


def slow_article(handler: SiteHandler) -> Reply:
    time.sleep(0.1)  # so the crawl is still running when the fault comes
    number = story_number(handler.path)
    return Reply(200, article(number), {"Content-Type": "text/html; charset=utf-8"})


@pytest.fixture
def site() -> Iterator[SiteServer]:
    with SiteServer(Path("/nonexistent"), routes={"/news/*": slow_article}) as server:
        yield server


def postgres_restart() -> None:
    version = sorted(p.name for p in Path("/etc/postgresql").iterdir())[-1]
    subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", version, "main", "restart"],
                   check=True, timeout=120, capture_output=True)


def redis_alive() -> bool:
    try:
        return bool(redis.Redis(port=6379, socket_connect_timeout=2).ping())
    except redis.RedisError:
        return False


def redis_restart() -> None:
    subprocess.run(["redis-cli", "-p", "6379", "shutdown", "nosave"], timeout=60,
                   capture_output=True, check=False)
    wait_until(lambda: not redis_alive(), timeout=30, interval=0.2)
    time.sleep(2)  # an outage the crawlers notice, not a blink
    ensure_redis()


def ensure_redis() -> None:
    if not redis_alive():
        subprocess.run(REDIS_START, timeout=60, check=True, capture_output=True)
        assert wait_until(redis_alive, timeout=30, interval=0.2)


def ensure_postgres(database_url: str) -> None:
    def alive() -> bool:
        try:
            engine = make_engine(database_url)
            with engine.connect() as conn:
                conn.execute(sa.text("SELECT 1"))
            engine.dispose()
        except sa.exc.OperationalError:
            return False
        return True

    if not wait_until(alive, timeout=60, interval=1):
        postgres_restart()


def terminal_count(database_url: str) -> int:
    try:
        counts = status_counts(database_url)
    except sa.exc.OperationalError:
        return 0  # Postgres is restarting
    return sum(counts.get(status, 0) for status in TERMINAL)


class Fleet:
    """Two workers, a beat and two crawlers; any that exits is started again."""

    def __init__(self, env: dict[str, str], tmp_path: Path) -> None:
        self.env = env
        self.workers = [WorkerProcess(env), WorkerProcess(env)]
        self.scheduler = beat(env, tmp_path)
        self.tmp_path = tmp_path
        self.crawlers = [Crawler(env), Crawler(env)]
        self.restarts = 0

    def supervise(self) -> None:
        for index, crawler in enumerate(self.crawlers):
            if crawler.process.poll() is not None:
                self.crawlers[index] = Crawler(self.env)
                self.restarts += 1
        for index, worker in enumerate(self.workers):
            if worker.process.poll() is not None:
                worker.stop()
                self.workers[index] = WorkerProcess(self.env)
                self.restarts += 1
        if self.scheduler.poll() is not None:
            self.scheduler = beat(self.env, self.tmp_path)

    def stop(self) -> None:
        for crawler in self.crawlers:
            crawler.stop()
        for worker in self.workers:
            worker.stop()
        self.scheduler.terminate()
        self.scheduler.wait(timeout=60)


def kill_crawler(fleet: Fleet) -> None:
    fleet.crawlers[0].kill()


def kill_worker(fleet: Fleet) -> None:
    fleet.workers[0].kill()  # SIGKILL to the whole worker, while tasks are in flight


FAULTS: dict[str, Callable[[Fleet], None]] = {
    "postgres_restarted": lambda fleet: postgres_restart(),
    "redis_restarted": lambda fleet: redis_restart(),
    "crawler_killed": kill_crawler,
    "worker_killed": kill_worker,
}


@pytest.mark.skipif(shutil.which("pg_ctlcluster") is None or shutil.which("redis-server") is None,
                    reason="needs pg_ctlcluster and redis-server to restart the services")
@pytest.mark.timeout(1200)
@pytest.mark.parametrize("fault", list(FAULTS))
def test_crawl_survives(fault: str, pg_url: str, redis_url: str, site: SiteServer,
                        tmp_path: Path) -> None:
    env = sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="4",
                     SLUICE_FETCH__RETRIES="1", SLUICE_LEASE_SECONDS="20",
                     SLUICE_SWEEP_SECONDS="5", SLUICE_VISIBILITY_TIMEOUT="30",
                     SLUICE_EXTRACT_WORKERS="1", SLUICE_BROWSER__RENDER="never")
    urls = [site.url(story_path(number)) for number in range(TOTAL)]
    (tmp_path / "urls.txt").write_text("\n".join(urls))
    ingest = subprocess.run([sys.executable, "-m", "sluice.cli", "ingest",
                             str(tmp_path / "urls.txt")], env=env, cwd=PROJECT_ROOT,
                            capture_output=True, text=True, timeout=300, check=False)
    assert ingest.returncode == 0, ingest.stderr
    fleet = Fleet(env, tmp_path)
    try:
        assert wait_until(lambda: terminal_count(pg_url) >= TOTAL // 5, timeout=300, interval=0.5)
        if fault == "worker_killed":
            wait_until(lambda: status_counts(pg_url).get("pending", 0) > 0, timeout=60,
                       interval=0.1)
        FAULTS[fault](fleet)

        def settled() -> bool:
            fleet.supervise()
            return terminal_count(pg_url) == TOTAL

        assert wait_until(settled, timeout=420, interval=2), (status_counts(pg_url),
                                                              fleet.restarts)
    finally:
        ensure_redis()
        ensure_postgres(pg_url)
        fleet.stop()
    assert_terminal_once(pg_url, urls)


def assert_terminal_once(database_url: str, urls: list[str]) -> None:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles.c.url, articles.c.status, articles.c.reason)).all()
    engine.dispose()
    assert sorted(row.url for row in rows) == sorted(urls)  # one row each, none lost
    statuses = {(getattr(row.status, "value", row.status), row.reason) for row in rows}
    # A fault is never recorded as the page's fault: every page was fetched and classified.
    assert {status for status, _ in statuses} <= {"success", "truncated", "unsuitable_content"}, \
        statuses


class Arrivals:
    """A site whose pages take two seconds; notes when each request arrives."""

    def __init__(self) -> None:
        self.times: list[float] = []
        self.paths: list[str] = []

    def route(self, handler: SiteHandler) -> Reply:
        self.times.append(time.monotonic())
        self.paths.append(handler.path)
        time.sleep(2)
        return Reply(200, article(story_number(handler.path)),
                     {"Content-Type": "text/html; charset=utf-8"})


def test_a_killed_crawlers_sites_go_on_with_the_others_within_seconds(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """A crawler killed mid-download held its sites' shared slots: the next crawler may fetch
    from them once those slots lapse (seconds), not after the longest a download may take
    (80 s with the default timeouts)."""
    arrivals = Arrivals()
    with SiteServer(Path("/nonexistent"), routes={"/news/*": arrivals.route}) as slow_site:
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__PER_SITE_CONCURRENCY="2",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        urls = [slow_site.url(story_path(number)) for number in range(40)]
        ingest_urls(urls, env, tmp_path)
        first = Crawler(env)
        try:
            assert wait_until(lambda: len(arrivals.times) >= 2, timeout=60, interval=0.1)
            first.kill()  # both of the site's slots are held, their downloads in flight
            killed_at = time.monotonic()
        finally:
            first.stop()
        second = Crawler(env)
        try:
            assert wait_until(lambda: arrivals.times[-1] > killed_at, timeout=120, interval=0.5)
        finally:
            second.stop()
    assert arrivals.times[-1] - killed_at < 40


def test_a_crawler_stopped_cleanly_gives_back_the_urls_waiting_in_it(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """A crawler stopped with SIGTERM (a deployment's rolling restart) holds the articles of a
    sitemap it visited, waiting for their site's turn in its scheduler and in its downloader.
    It finishes the one download under way, and fetches none of the others: they go back to
    the frontier, leased to no one, and the next crawler fetches them at once rather than
    after their (here ten-minute) lease."""
    arrivals = Arrivals()
    with SiteServer(Path("/nonexistent"), routes={"/news/*": arrivals.route}) as slow_site:
        paths = [story_path(number) for number in range(14)]
        body = urlset(slow_site.base_url, paths).encode()
        slow_site.routes["/sitemap.xml"] = lambda handler: Reply(
            200, body, {"Content-Type": "application/xml"})
        env = sluice_env(pg_url, redis_url, SLUICE_FETCH__CONCURRENCY="8",
                         SLUICE_FETCH__PER_SITE_CONCURRENCY="1", SLUICE_LEASE_SECONDS="600",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        assert run_sluice("feeds", "add", slow_site.url("/sitemap.xml"), env=env).returncode == 0
        assert "1 due sources pushed" in run_sluice("schedule", "--once", env=env).stdout
        first = Crawler(env)
        try:
            assert wait_until(lambda: len(arrivals.times) >= 2, timeout=60, interval=0.1)
        finally:
            arrived = len(arrivals.times)
            first.stop()  # finishes the download under way; seven more wait in its downloader
        # One more may have taken the site's slot as the signal came.
        assert len(arrivals.times) <= arrived + 1, len(arrivals.times) - arrived
        engine = make_engine(pg_url)
        with engine.connect() as conn:
            waiting = conn.execute(sa.select(articles.c.lease_until)
                                   .where(articles.c.status == "queued")).scalars().all()
        engine.dispose()
        assert len(waiting) >= 6 and set(waiting) == {None}  # leased to no one
        assert redis.Redis.from_url(redis_url).zcard(FRONTIER_KEY) == len(waiting)
        second = Crawler(env)
        try:
            assert wait_until(lambda: not status_counts(pg_url).get("queued"), timeout=120,
                              interval=0.5), status_counts(pg_url)
        finally:
            second.stop()
    fetched = Counter(arrivals.paths)
    assert len(fetched) == len(paths) and max(fetched.values()) == 1, fetched


def test_a_crawler_stopped_cleanly_gives_back_a_retry_waiting_out_its_back_off(
    pg_url: str, redis_url: str, tmp_path: Path
) -> None:
    """An article whose site answered 503 with `Retry-After: 50` waits outside the scheduler
    for its retry. A crawler stopped meanwhile gives it back like the URLs in its scheduler:
    leased to no one and in the frontier, so the next crawler fetches it at once, not after
    its (here ten-minute) lease."""
    arrivals: list[float] = []

    def busy_once(handler: SiteHandler) -> Reply:
        arrivals.append(time.monotonic())
        if len(arrivals) == 1:
            return Reply(503, b"busy", {"Retry-After": "50", "Content-Type": "text/plain"})
        return Reply(200, article(7), {"Content-Type": "text/html; charset=utf-8"})

    with SiteServer(Path("/nonexistent"), routes={"/news/*": busy_once}) as busy_site:
        env = sluice_env(pg_url, redis_url, SLUICE_LEASE_SECONDS="600",
                         SLUICE_BROWSER__RENDER="never", SLUICE_EXTRACT_WORKERS="1")
        ingest_urls([busy_site.url(story_path(7))], env, tmp_path)
        first = Crawler(env)
        try:
            assert wait_until(lambda: len(arrivals) == 1, timeout=60, interval=0.1)
            time.sleep(3)  # the 503 handled, the retry waiting, the lease renewed
        finally:
            first.stop()
        engine = make_engine(pg_url)
        with engine.connect() as conn:
            row = conn.execute(sa.select(articles.c.status, articles.c.lease_until)).one()
        engine.dispose()
        assert (row.status, row.lease_until) == ("queued", None)
        assert redis.Redis.from_url(redis_url).zcard(FRONTIER_KEY) == 1
        second = Crawler(env)
        try:
            assert wait_until(lambda: status_counts(pg_url).get("pending", 0)
                              + status_counts(pg_url).get("success", 0) == 1,
                              timeout=60, interval=0.5), status_counts(pg_url)
        finally:
            second.stop()
    assert len(arrivals) == 2
