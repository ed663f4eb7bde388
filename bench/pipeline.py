"""The whole pipeline against its extractor: `python -m bench.pipeline [--pages N]`.

Serves the WCXB dev pages (../shared/data; all of them unless `--pages` says fewer) on
127.0.0.1 and, in one run, measures:
- bare extraction: `sluice.extraction.extract` over the same pages on all cores, no crawling;
- embedded: one crawl (fetch, extract, gate, classify, store) into a fresh SQLite database;
- distributed: one crawler process and one Celery worker started on Postgres + Redis, then (once
  both are up, as deployed services are) the same pages ingested, until every row is settled.
The machine's speed drifts by 10-15 % within minutes (it is shared), so bare extraction is
measured before, between and after the pipeline runs, and each run is compared with the mean of
the two measured around it.
Prints pages/s for each, the ratio to bare extraction (target: at least 0.7), peak memory, and
CPU time per page: on a machine shared with other work, pages/s moves with the load, while the
CPU a page costs barely does, so the CPU ratio is the steadier measure of the pipeline's overhead.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from multiprocessing import Pool
from pathlib import Path

import redis
import sqlalchemy as sa

from bench.memory import ProcessTree, cpu_seconds, service_pids, tree_peak_mb
from sluice.db import articles, make_engine
from sluice.db.migrate import upgrade
from sluice.db.store import as_utc
from sluice.demo.server import Reply, SiteServer
from tests.conftest import PROJECT_ROOT, create_pg_database, drop_pg_database, sluice_env
from tests.data import SHARED_DATA
from tests.faults.conftest import children_by_parent, descendants
from tests.sites import rss

REDIS_DB = "redis://127.0.0.1:6379/7"


def load_pages(limit: int | None) -> dict[str, bytes]:
    root = SHARED_DATA / "wcxb-dev"
    if not root.exists():
        sys.exit("development data not found at ../shared/data/wcxb-dev; see the README")
    files = sorted((root / "dev" / "html").glob("*.html.gz"))[:limit]
    return {f"/w/{path.name[:-8]}": gzip.decompress(path.read_bytes()) for path in files}


def _extract_one(html: bytes) -> int:
    from sluice.extraction import extract

    return len(extract(html).text)


def bare_extraction_rate(pages: dict[str, bytes]) -> tuple[float, float]:
    """Pages/s of `extract` alone on every core, and its CPU seconds per page."""
    bodies = list(pages.values())
    with Pool(os.cpu_count()) as pool:
        pool.map(_extract_one, bodies[:8])  # warm up: imports in every process
        workers = list(descendants(os.getpid()))
        before = sum(map(cpu_seconds, workers))
        start = time.monotonic()
        pool.map(_extract_one, bodies, chunksize=4)
        seconds = time.monotonic() - start
        used = sum(map(cpu_seconds, workers)) - before
        return len(bodies) / seconds, used / len(bodies)


def settled(engine: sa.Engine, total: int) -> bool:
    with engine.connect() as conn:
        done = conn.execute(sa.select(sa.func.count()).where(
            articles.c.status.notin_(["queued", "pending"]))).scalar_one()
    return int(done) >= total


def busy_seconds(database_url: str) -> tuple[float, float]:
    """From the first page fetched to the last row settled: the pipeline's own time, without
    process start-up (imports, the extraction pool) or idle waiting. Also the tail: from the
    last page fetched to the last row settled (the last batches' store and classification)."""
    engine = make_engine(database_url)
    with engine.connect() as conn:
        first, last_fetched, last = conn.execute(sa.select(
            sa.func.min(articles.c.fetched_at), sa.func.max(articles.c.fetched_at),
            sa.func.max(articles.c.updated_at))).one()
    engine.dispose()
    first, last_fetched, last = (as_utc(_parse(value)) for value in (first, last_fetched, last))
    assert first is not None and last_fetched is not None and last is not None
    return (last - first).total_seconds(), (last - last_fetched).total_seconds()


def _parse(value: object) -> datetime | None:
    return datetime.fromisoformat(value) if isinstance(value, str) else value  # type: ignore[return-value]


@dataclass
class RunResult:
    """One pipeline run: busy seconds (and the tail of them after the last fetch), peak
    memory, and CPU seconds per page."""

    seconds: float
    tail: float
    peak_mb: float
    cpu_per_page: float
    # CPU ms per page by where it was spent, Postgres and Redis included.
    profile: dict[str, float]


def fetched_any(engine: sa.Engine) -> bool:
    with engine.connect() as conn:
        fetched = conn.execute(sa.select(sa.func.count()).where(
            articles.c.status != "queued")).scalar_one()
    return int(fetched) > 0


def run_until_settled(command: list[str], env: dict[str, str], database_url: str, total: int,
                      also: tuple[int, ...] = (),
                      when_ready: Callable[[], None] | None = None) -> RunResult:
    """Start a process, wait until every row is settled.

    With `when_ready`, the process is left to start first (its extraction pool forked and
    warm, as a long-running crawler's is), and `when_ready` then hands it the work.
    CPU counts the process's tree, the trees in `also` (a worker) and this process (the HTTP
    server), from the first page fetched to the last row settled, as `busy_seconds` does. The
    polling shares one engine (one connection): an engine per poll cost more CPU than serving
    the pages.
    """
    engine = make_engine(database_url)
    process = subprocess.Popen(command, env=env, cwd=PROJECT_ROOT, start_new_session=True,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    if when_ready is not None:
        # The fork server and its extraction workers.
        wait_for_descendants(process.pid, int(env["SLUICE_EXTRACT_WORKERS"]) + 1)
        when_ready()
    peak, roles = 0.0, RoleMeter(process.pid, also)
    at_start: dict[str, float] | None = None
    while not settled(engine, total):
        tree = children_by_parent()  # one pass over /proc for both measures
        peak = max(peak, tree_peak_mb(process.pid, tree))
        by_role = roles.sample(tree)
        if at_start is None and fetched_any(engine):
            at_start = by_role
        if process.poll() is not None and not settled(engine, total):
            break
        time.sleep(0.5)
    at_end, at_start = roles.sample(children_by_parent()), at_start or {}
    profile = {role: (seconds - at_start.get(role, 0.0)) * 1000 / total
               for role, seconds in at_end.items()}
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        process.wait(timeout=120)
    engine.dispose()
    # Postgres and Redis are not the pipeline's own processes: shown, not counted.
    cpu = sum(ms for role, ms in profile.items() if role not in SERVICES) / 1000
    return RunResult(*busy_seconds(database_url), peak, cpu, profile)


SERVICES = {"Postgres": "postgres", "Redis": "redis-server"}  # part: process name


class RoleMeter:
    """CPU seconds by part of the pipeline, each process counted with the most it was seen to
    use, so processes that exit between samples (extraction processes replaced, an embedded
    crawl's pool) are not lost, only their last fraction of a second."""

    def __init__(self, crawler: int, workers: tuple[int, ...]) -> None:
        self.crawler, self.workers = crawler, workers
        self.used: dict[int, tuple[str, float]] = {}

    def sample(self, tree: ProcessTree) -> dict[str, float]:
        roles = {"crawler (main)": [self.crawler],
                 "extraction pool": list(descendants(self.crawler, tree)),
                 "worker": [pid for root in self.workers
                            for pid in [root, *descendants(root, tree)]],
                 **{part: service_pids(name) for part, name in SERVICES.items()}}
        for role, pids in roles.items():
            for pid in pids:
                seen = self.used.get(pid, (role, 0.0))[1]
                self.used[pid] = (role, max(seen, cpu_seconds(pid)))
        totals = dict.fromkeys(roles, 0.0) | {"HTTP server": time.process_time()}
        for role, seconds in self.used.values():
            totals[role] += seconds
        return totals


def wait_for_descendants(pid: int, count: int, timeout: float = 120) -> None:
    """Until a process has `count` descendants. Pool processes are forked once everything is
    loaded (the crawler's fork server, the worker's main process), so then the pool is warm."""
    deadline = time.monotonic() + timeout
    while len(list(descendants(pid))) < count and time.monotonic() < deadline:
        time.sleep(0.2)


def embedded_run(site: SiteServer, paths: list[str], work: Path) -> RunResult:
    url = f"sqlite:///{work / 'embedded.db'}"
    upgrade(url)
    feeds = work / "feeds.txt"
    feeds.write_text(site.url("/feed.xml"))
    env = sluice_env(url, SLUICE_BROWSER__RENDER="never", SLUICE_FETCH__PER_SITE_CONCURRENCY="16",
                     SLUICE_EXTRACT_WORKERS=str(os.cpu_count()))
    command = [sys.executable, "-m", "crawler.run", "--feeds-file", str(feeds)]
    return run_until_settled(command, env, url, len(paths))


def distributed_run(site: SiteServer, paths: list[str], work: Path) -> RunResult:
    client = redis.Redis.from_url(REDIS_DB)
    client.flushdb()
    database_url = create_pg_database()
    try:
        upgrade(database_url)
        env = sluice_env(database_url, REDIS_DB, SLUICE_BROWSER__RENDER="never",
                         SLUICE_FETCH__PER_SITE_CONCURRENCY="16",
                         SLUICE_EXTRACT_WORKERS=str(os.cpu_count()))
        urls = work / "urls.txt"
        urls.write_text("\n".join(site.url(path) for path in paths))
        worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", "workers.app", "worker",
                                   "-Q", "sluice", "--concurrency=1", "--loglevel=ERROR"],
                                  env=env, cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.DEVNULL)

        def ingest() -> None:
            # Queue-driven ingestion as deployed: the worker and the crawler are up and
            # waiting when the URLs arrive.
            wait_for_descendants(worker.pid, 1)
            subprocess.run([sys.executable, "-m", "sluice.cli", "ingest", str(urls)], env=env,
                           cwd=PROJECT_ROOT, check=True, capture_output=True)

        try:
            return run_until_settled([sys.executable, "-m", "crawler.run", "--queue"], env,
                                     database_url, len(paths), also=(worker.pid,),
                                     when_ready=ingest)
        finally:
            worker.terminate()
            worker.wait(timeout=60)
    finally:
        drop_pg_database(database_url)
        client.flushdb()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=None,
                        help="the first N pages (default: all 1,497, about ten minutes)")
    parser.add_argument("--skip-distributed", action="store_true")
    args = parser.parse_args()
    pages = load_pages(args.pages)
    bare = [bare_extraction_rate(pages)]
    routes = {path: (lambda handler, body=body: Reply(200, body, {"Content-Type": "text/html"}))
              for path, body in pages.items()}
    with tempfile.TemporaryDirectory() as work_dir, \
            SiteServer(Path(work_dir), routes=routes) as site:  # type: ignore[arg-type]
        paths = list(pages)
        feed = rss([site.url(path) for path in paths]).encode()
        site.routes["/feed.xml"] = lambda handler: Reply(200, feed,
                                                         {"Content-Type": "application/rss+xml"})
        results = {"embedded (SQLite)": embedded_run(site, paths, Path(work_dir))}
        bare.append(bare_extraction_rate(pages))
        if not args.skip_distributed:
            results["distributed (Postgres + Redis, 1 worker)"] = distributed_run(
                site, paths, Path(work_dir))
            bare.append(bare_extraction_rate(pages))
    print(json.dumps({"pages": len(pages), "cores": os.cpu_count()}))
    print(f"{'':44} {'pages/s':>7}   {'ratio':>5}   {'CPU ms/page':>11}   {'CPU ratio':>9}")
    when = ("before", "after") if len(bare) == 2 else ("before", "between", "after")
    for (rate, cpu), moment in zip(bare, when, strict=True):
        print(f"{f'bare extraction, all cores ({moment})':44} {rate:7.1f}           "
              f"{cpu * 1000:11.1f}")
    for n, (name, result) in enumerate(results.items()):
        # The baseline around this run: the bare measurements just before and just after it.
        bare_rate = (bare[n][0] + bare[n + 1][0]) / 2
        bare_cpu = (bare[n][1] + bare[n + 1][1]) / 2
        rate = len(pages) / result.seconds
        print(f"{name:44} {rate:7.1f}   {rate / bare_rate:.2f}x   "
              f"{result.cpu_per_page * 1000:11.1f}   {bare_cpu / result.cpu_per_page:8.2f}x   "
              f"peak {result.peak_mb:.0f} MB, last {result.tail:.1f} s after the last fetch")
        print(f"{'':44} CPU ms/page by part: " + ", ".join(
            f"{role} {ms:.1f}" for role, ms in result.profile.items()))
    print("ratios: against the mean of the bare runs just before and just after each run")
    print("CPU: the crawler's process tree (and the worker's), plus this process (the HTTP "
          "server), while pages were in flight; Postgres and Redis are not counted")
    print("target: full pipeline at least 0.7x the bare extraction rate")


if __name__ == "__main__":
    main()
