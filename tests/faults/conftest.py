"""Helpers for the fault tests: real crawl processes against hostile servers, rows read back."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from sluice.db import articles, make_engine
from tests.conftest import PROJECT_ROOT, sluice_env

# Generous: these run on a loaded 2-core machine.
CRAWL_TIMEOUT = 600


def fault_env(database_url: str, redis_url: str | None = None, **extra: str) -> dict[str, str]:
    """A crawl environment with short limits, so hostile cases end in seconds, not minutes."""
    return sluice_env(database_url, redis_url, **{
        "SLUICE_FETCH__TIMEOUT": "6", "SLUICE_FETCH__MAX_BYTES": str(1 << 20),
        "SLUICE_FETCH__RETRIES": "1", "SLUICE_GATE__MIN_CHARS": "200",
        "SLUICE_BROWSER__RENDER": "never", "SLUICE_EXTRACT_WORKERS": "1", **extra})


def crawl_urls(urls: list[str], env: dict[str, str], tmp_path: Path,
               timeout: float = CRAWL_TIMEOUT, log_level: str = "WARNING",
               **options: str) -> dict[str, Any]:
    """Fetch article URLs (each line with `options`, such as `render`) in one real crawl
    process; returns its Scrapy stats (and output)."""
    urls_file = tmp_path / "urls.jsonl"
    urls_file.write_text("\n".join(json.dumps({"url": url, **options}) for url in urls))
    return _crawl(["--urls-file", str(urls_file), "--log-level", log_level], env, tmp_path,
                  timeout)


def crawl_feeds(feeds: list[str], env: dict[str, str], tmp_path: Path,
                timeout: float = CRAWL_TIMEOUT) -> dict[str, Any]:
    feeds_file = tmp_path / "feeds.txt"
    feeds_file.write_text("\n".join(feeds))
    return _crawl(["--feeds-file", str(feeds_file)], env, tmp_path, timeout)


def _crawl(args: list[str], env: dict[str, str], tmp_path: Path,
           timeout: float) -> dict[str, Any]:
    stats_file = tmp_path / "stats.json"
    stats_file.unlink(missing_ok=True)
    result = subprocess.run([sys.executable, "-m", "crawler.run", *args, "--stats-file",
                             str(stats_file)], env=env, cwd=PROJECT_ROOT, capture_output=True,
                            text=True, timeout=timeout, check=False)
    assert stats_file.exists(), result.stderr[-3000:]
    stats: dict[str, Any] = json.loads(stats_file.read_text())
    stats["_stderr"] = result.stderr
    stats["_stdout"] = result.stdout
    return stats


def all_rows(database_url: str) -> dict[str, sa.Row[Any]]:
    """{url: row} for every row of `articles`."""
    engine = make_engine(database_url)
    with engine.connect() as conn:
        rows = conn.execute(sa.select(articles)).all()
    engine.dispose()
    return {row.url: row for row in rows}


def every_value(database_url: str) -> str:
    """Every value of every row of every table, as text (to look for a leaked secret)."""
    engine = make_engine(database_url)
    with engine.connect() as conn:
        values = [repr(tuple(row)) for table in sa.inspect(conn).get_table_names()
                  for row in conn.execute(sa.select(sa.literal_column("*"))
                                          .select_from(sa.table(table)))]
    engine.dispose()
    return "\n".join(values)


def status_of(row: sa.Row[Any]) -> tuple[str, str | None]:
    return getattr(row.status, "value", row.status), row.reason


def children_by_parent() -> dict[int, list[int]]:
    """{parent pid: child pids} for every process now running."""
    tree: dict[int, list[int]] = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat", encoding="latin-1") as handle:
                # The command name (in parentheses) may hold spaces: the parent follows its end.
                parent = int(handle.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        tree.setdefault(parent, []).append(int(entry))
    return tree


def descendants(pid: int, tree: dict[int, list[int]] | None = None) -> Iterator[int]:
    """Every process below `pid`: children, their children, and so on; from `tree` (a
    `children_by_parent()` taken once for several walks) when given."""
    tree = children_by_parent() if tree is None else tree
    stack = list(tree.get(pid, []))
    while stack:
        child = stack.pop()
        yield child
        stack.extend(tree.get(child, []))


def browser_pids(root: int) -> list[int]:
    """The Chromium processes below `root` (a crawl process, say), not anybody else's."""
    found = []
    for pid in descendants(root):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                program = handle.read().split(b"\0")[0]
        except OSError:
            continue
        if b"chrom" in os.path.basename(program):
            found.append(pid)
    return found
