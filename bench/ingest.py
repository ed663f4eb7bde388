"""Queue-driven crawling, measured: `python -m bench.ingest [--urls 100000] [--window 30]
[--per-site 32]`.

Ingests URLs of a local corpus into a fresh Postgres database and the shared Redis frontier, then
runs one crawler process, then two, each for a fixed window, and prints URLs/s (rows leaving
`queued`), the scaling ratio, and each crawler process's peak memory (its own and its
extraction pool's) while the rest of the queue waits in Redis. Every URL is on one site: with
`--per-site` below the crawler's concurrency (16), most requests wait for the site's turn.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import redis
import sqlalchemy as sa

from bench.memory import tree_peak_mb
from sluice.db import articles, make_engine
from sluice.db.migrate import upgrade
from sluice.demo.server import SiteServer
from tests.conftest import PROJECT_ROOT, create_pg_database, drop_pg_database, sluice_env
from tests.integration.test_bulk_ingest import page_route
from tests.sites import story_path

REDIS_DB = "redis://127.0.0.1:6379/8"


def queued(database_url: str) -> int:
    engine = make_engine(database_url)
    with engine.connect() as conn:
        count = conn.execute(sa.select(sa.func.count()).where(
            articles.c.status == "queued")).scalar_one()
    engine.dispose()
    return int(count)


def measure(env: dict[str, str], processes: int, window: float, database_url: str
            ) -> tuple[float, list[float]]:
    crawlers = [subprocess.Popen([sys.executable, "-m", "sluice.cli", "crawler",
                                  "--log-level", "ERROR"], env=env, cwd=PROJECT_ROOT,
                                 start_new_session=True) for _ in range(processes)]
    time.sleep(8)  # start-up: imports, the extraction pool, the first batch
    before, start = queued(database_url), time.monotonic()
    peaks = [0.0] * processes
    while time.monotonic() - start < window:
        time.sleep(1)
        peaks = [max(peak, tree_peak_mb(c.pid)) for peak, c in zip(peaks, crawlers, strict=True)]
    rate = (before - queued(database_url)) / (time.monotonic() - start)
    for crawler in crawlers:
        os.killpg(crawler.pid, signal.SIGTERM)
    for crawler in crawlers:
        crawler.wait(timeout=120)
    return rate, peaks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--urls", type=int, default=100_000)
    parser.add_argument("--window", type=float, default=30.0)
    parser.add_argument("--per-site", type=int, default=32,
                        help="the site's concurrency (SLUICE_FETCH__PER_SITE_CONCURRENCY)")
    args = parser.parse_args()
    client = redis.Redis.from_url(REDIS_DB)
    client.flushdb()
    database_url = create_pg_database()
    try:
        upgrade(database_url)
        with SiteServer(Path(tempfile.gettempdir()), routes={"/news/*": page_route}) as site:
            env = sluice_env(database_url, REDIS_DB,
                             SLUICE_FETCH__PER_SITE_CONCURRENCY=str(args.per_site),
                             SLUICE_EXTRACT_WORKERS="1", SLUICE_BROWSER__RENDER="never",
                             SLUICE_FETCH__RETRIES="0")
            urls = Path(tempfile.mkstemp(suffix=".txt")[1])
            urls.write_text("\n".join(site.url(story_path(n)) for n in range(args.urls)))
            started = time.monotonic()
            subprocess.run([sys.executable, "-m", "sluice.cli", "ingest", str(urls)], env=env,
                           cwd=PROJECT_ROOT, check=True, capture_output=True)
            print(f"ingested {args.urls} URLs in {time.monotonic() - started:.1f} s "
                  f"({args.urls / (time.monotonic() - started):.0f} URLs/s)")
            one, one_peaks = measure(env, 1, args.window, database_url)
            two, two_peaks = measure(env, 2, args.window, database_url)
            urls.unlink()
    finally:
        drop_pg_database(database_url)
        client.flushdb()
    print(f"one crawler:  {one:6.1f} URLs/s, peak memory {one_peaks[0]:.0f} MB")
    print(f"two crawlers: {two:6.1f} URLs/s, peak memory "
          + ", ".join(f"{peak:.0f} MB" for peak in two_peaks))
    print(f"scaling: {two / one:.2f}x with two processes on {os.cpu_count()} cores "
          f"(memory target: below 400 MB each with the queue still full)")


if __name__ == "__main__":
    main()
