"""An extraction worker killed mid-crawl (as the kernel's out-of-memory killer would): the pool
is restarted, and every page, including those in the pool with it, is still extracted."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT_ROOT, wait_until
from tests.faults.conftest import all_rows, fault_env, status_of
from tests.faults.hostile import HostileServer

pytestmark = pytest.mark.integration

PAGES = 120


def children(pid: int) -> list[int]:
    """The direct child processes of `pid` (read from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rpartition(")")[2].split()[1]) == pid:
                found.append(int(entry.name))
    return found


def test_a_killed_extraction_worker_costs_no_page(pg_url: str, tmp_path: Path) -> None:
    with HostileServer() as server:
        urls = [server.url(f"/html/crash-{number}") for number in range(PAGES)]
        (tmp_path / "urls.jsonl").write_text("\n".join(json.dumps({"url": url}) for url in urls))
        crawl = subprocess.Popen(
            [sys.executable, "-m", "crawler.run", "--urls-file", str(tmp_path / "urls.jsonl")],
            env=fault_env(pg_url), cwd=PROJECT_ROOT, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True)
        try:
            # The crawler's one extraction worker is a child of its fork server, a child of
            # the crawler; kill it once it runs and pages wait for it.
            def workers() -> list[int]:
                return [w for server_pid in children(crawl.pid) for w in children(server_pid)]

            def fetched() -> int:
                return sum(server.hits[f"/html/crash-{n}"] for n in range(PAGES))

            assert wait_until(lambda: bool(workers()) and fetched() >= 8, timeout=60, interval=0.05)
            for worker in workers():
                os.kill(worker, signal.SIGKILL)
            _, stderr = crawl.communicate(timeout=180)
        finally:
            crawl.kill()
        rows = all_rows(pg_url)
    assert "restarting the pool" in stderr, stderr[-3000:]
    assert [status_of(rows[url]) for url in urls] == [("success", None)] * PAGES
