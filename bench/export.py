"""Benchmark: `sluice export` memory is flat in the number of rows.

Inserts N article rows (default 100,000, about 1 KB of text each) into a fresh SQLite database,
and into a fresh Postgres database when one is reachable, then exports them with the export
machinery (`sluice.export.export_rows`) as jsonl, csv and parquet. Baselines in the same run: the
same streaming export of a tenth of the rows, and a naive export that fetches every row first
(`.all()`) and then writes them. Every measurement runs in its own subprocess, so its peak RSS
(`ru_maxrss`, which also sees the driver's and Arrow's allocations) starts from a clean
interpreter; the figure printed is the peak above the interpreter's size once its imports are done.

    python -m bench.export [--rows 100000] [--formats jsonl csv parquet] [--no-postgres]

Prints rows/s and peak memory per run, then the ratios: streaming N rows over streaming N/10
(about 1.0 means flat) and the naive export over streaming. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sluice.db import articles, make_engine
from sluice.db.migrate import upgrade
from sluice.export import ExportQuery, export_rows, select_rows, write_jsonl
from tests.conftest import create_pg_database as create_test_pg_database
from tests.conftest import drop_pg_database

logger = logging.getLogger(__name__)

FORMATS = ("jsonl", "csv", "parquet")
INSERT_BATCH = 5_000
WORDS = ("river council budget library tram bridge park volunteers flood school market "
         "harbour festival museum station weather election hospital garden street").split()
STATUSES = ("success", "success", "success", "truncated", "under_limit", "unsuitable_content",
            "fetch_failed")


@dataclass(frozen=True, slots=True)
class Measurement:
    database: str
    method: str
    fmt: str
    rows: int
    seconds: float
    peak_mb: float


# --- data ---------------------------------------------------------------------------------------

def generated_rows(count: int, seed: int = 7) -> Iterator[list[dict[str, Any]]]:
    """Deterministic article rows, in batches of INSERT_BATCH."""
    rng = random.Random(seed)
    start = datetime(2026, 1, 1, tzinfo=UTC)
    batch: list[dict[str, Any]] = []
    for i in range(count):
        text = " ".join(rng.choices(WORDS, k=140)) + "."
        moment = start + timedelta(minutes=i)
        batch.append({
            "url": f"https://site{i % 50}.example/articles/{i}", "status": rng.choice(STATUSES),
            "title": " ".join(rng.choices(WORDS, k=6)).capitalize(), "text": text,
            "content": text, "char_count": len(text), "language": "en",
            "published_at": moment, "discovered_at": moment, "fetched_at": moment,
            "updated_at": moment, "structure": {"paragraphs": 4, "links": 2},
        })
        if len(batch) == INSERT_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def fill(url: str, count: int) -> float:
    """Insert `count` rows; returns seconds taken."""
    clock = time.perf_counter()
    upgrade(url)
    engine = make_engine(url)
    for batch in generated_rows(count):
        with engine.begin() as conn:
            conn.execute(articles.insert(), batch)
    engine.dispose()
    return time.perf_counter() - clock


def create_pg_database() -> str | None:
    """A fresh Postgres database's URL, or None when no server answers."""
    try:
        return create_test_pg_database()
    except sa.exc.OperationalError as exc:
        logger.warning("no Postgres (%s): SQLite only", exc.orig)
        return None


# --- one measurement (runs in a child process) --------------------------------------------------

def rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure(url: str, method: str, fmt: str, limit: int, folder: str) -> dict[str, float]:
    # Imported before the resting size is read: the libraries' own size is not the export's.
    import pyarrow.parquet  # noqa: F401

    engine = make_engine(url)
    with engine.connect() as conn:
        conn.exec_driver_sql("SELECT 1")
    resting = rss_mb()
    clock = time.perf_counter()
    query = ExportQuery(limit=limit)
    target = os.path.join(folder, f"out.{fmt}")
    with engine.connect() as conn:
        if method == "stream":
            count = _stream(conn, query, fmt, target)
        else:
            count = _naive(conn, query, target)
    seconds = time.perf_counter() - clock
    engine.dispose()
    return {"rows": count, "seconds": seconds, "peak_mb": rss_mb() - resting}


def _stream(conn: sa.Connection, query: ExportQuery, fmt: str, target: str) -> int:
    if fmt == "parquet":
        return export_rows(conn, query, fmt, target)
    with open(target, "w", encoding="utf-8", newline="") as handle:
        return export_rows(conn, query, fmt, handle)


def _naive(conn: sa.Connection, query: ExportQuery, target: str) -> int:
    """The baseline: every row in memory before the first is written."""
    rows = [dict(row) for row in conn.execute(select_rows(query)).mappings().all()]
    with open(target, "w", encoding="utf-8") as handle:
        return write_jsonl([rows], handle)


def run_child(url: str, method: str, fmt: str, limit: int, database: str) -> Measurement:
    with tempfile.TemporaryDirectory() as folder:
        output = subprocess.run(
            [sys.executable, "-m", "bench.export", "--child", url, method, fmt, str(limit),
             folder], capture_output=True, text=True, check=True)
    result = json.loads(output.stdout.strip().splitlines()[-1])
    return Measurement(database, method, fmt, int(result["rows"]), result["seconds"],
                       result["peak_mb"])


# --- the benchmark ------------------------------------------------------------------------------

def bench_database(database: str, url: str, rows: int, formats: list[str]) -> list[Measurement]:
    print(f"{database}: inserting {rows:,} rows ...", flush=True)
    print(f"{database}: inserted in {fill(url, rows):.0f} s", flush=True)
    runs = []
    for fmt in formats:
        for limit in (rows // 10, rows):
            runs.append(report(run_child(url, "stream", fmt, limit, database)))
    runs.append(report(run_child(url, "naive", "jsonl", rows, database)))
    return runs


def report(m: Measurement) -> Measurement:
    rate = m.rows / m.seconds if m.seconds else 0.0
    print(f"  {m.database:<10} {m.method:<6} {m.fmt:<7} {m.rows:>8,} rows  {m.seconds:6.1f} s  "
          f"{rate:>8,.0f} rows/s  peak +{m.peak_mb:6.1f} MB", flush=True)
    return m


def ratios(runs: list[Measurement], rows: int) -> None:
    print("\nratios (peak memory):")
    by_key = {(m.database, m.method, m.fmt, m.rows): m for m in runs}
    for m in runs:
        if m.method != "stream" or m.rows != rows:
            continue
        small = by_key.get((m.database, "stream", m.fmt, rows // 10))
        if small:
            print(f"  {m.database:<10} {m.fmt:<7} {rows:,} rows / {rows // 10:,} rows: "
                  f"{_ratio(m.peak_mb, small.peak_mb)}")
    for m in runs:
        if m.method == "naive":
            stream = by_key.get((m.database, "stream", "jsonl", rows))
            if stream:
                print(f"  {m.database:<10} naive fetch-all / streaming (jsonl, {rows:,} rows): "
                      f"{_ratio(m.peak_mb, stream.peak_mb)}")


def _ratio(a: float, b: float) -> str:
    # Peaks of a few MB are noise-level; keep the ratio meaningful with a 1 MB floor.
    return f"{max(a, 1.0) / max(b, 1.0):.2f}x ({a:.1f} MB vs {b:.1f} MB)"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args and args[0] == "--child":
        url, method, fmt, limit, folder = args[1:6]
        print(json.dumps(measure(url, method, fmt, int(limit), folder)))
        return 0
    parser = argparse.ArgumentParser(description="export memory benchmark")
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--formats", nargs="+", choices=FORMATS, default=list(FORMATS))
    parser.add_argument("--no-postgres", action="store_true")
    options = parser.parse_args(args)
    runs: list[Measurement] = []
    with tempfile.TemporaryDirectory() as folder:
        sqlite_url = f"sqlite:///{Path(folder) / 'bench.db'}"
        runs += bench_database("sqlite", sqlite_url, options.rows, options.formats)
    pg_url = None if options.no_postgres else create_pg_database()
    if pg_url is not None:
        try:
            runs += bench_database("postgresql", pg_url, options.rows, options.formats)
        finally:
            drop_pg_database(pg_url)
    ratios(runs, options.rows)
    return 0


if __name__ == "__main__":
    logging.basicConfig(level=logging.WARNING)
    sys.exit(main())
