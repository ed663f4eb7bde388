"""Render on demand, measured: `python -m bench.render [--pages 100] [--js-share 0.1]`.

Serves a local corpus in which a share of the pages only render with JavaScript, crawls it with
each render policy (`never`, `auto`, `always`) into a fresh SQLite database, and prints pages/s,
how many pages ended `success`, and the browser's peak memory (all its processes, sampled).

`--sustained [N]` (2,000 pages when N is left out) instead runs one `always` crawl of N pages and
prints the browser's memory over the run (the processes of this crawl's browser only, sampled
every second): the peak and mean of each quarter of the run, to see whether it stays flat.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import threading
import time
from collections.abc import Iterable
from datetime import datetime
from pathlib import Path

import sqlalchemy as sa

from sluice.db import articles, make_engine
from sluice.db.migrate import upgrade
from sluice.demo.server import SiteServer
from tests.conftest import sluice_env
from tests.faults.conftest import browser_pids
from tests.sites import article_html, crawl_process, js_only_html, rss, write_site


def browser_rss_mb(pids: Iterable[int] | None = None) -> float:
    """Resident memory of every Chromium process now running (or of `pids` only), in MB."""
    total = 0
    for pid in filter(str.isdigit, os.listdir("/proc")) if pids is None else map(str, pids):
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                if b"chrom" not in handle.read().split(b"\0")[0]:
                    continue
            with open(f"/proc/{pid}/statm") as handle:
                total += int(handle.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            continue
    return total / 2**20


class PeakSampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0.0
        self.running = True

    def run(self) -> None:
        while self.running:
            self.peak = max(self.peak, browser_rss_mb())
            time.sleep(0.2)


class SeriesSampler(threading.Thread):
    """Every second: seconds since the start, this process's browser memory (its descendants
    only, so other crawls' browsers on the machine do not count) and the rows finished."""

    def __init__(self, database_url: str) -> None:
        super().__init__(daemon=True)
        self.engine = make_engine(database_url)
        self.samples: list[tuple[float, float, int]] = []
        self.running = True

    def run(self) -> None:
        start = time.monotonic()
        while self.running:
            memory = browser_rss_mb(browser_pids(os.getpid()))
            with self.engine.connect() as conn:
                done = conn.execute(sa.select(sa.func.count()).where(
                    articles.c.status.not_in(["queued", "pending"]))).scalar_one()
            self.samples.append((time.monotonic() - start, memory, done))
            time.sleep(1.0)
        self.engine.dispose()


def build_corpus(root: Path, pages: int, js_share: float) -> list[str]:
    every = max(1, round(1 / js_share)) if js_share else pages + 1
    files: dict[str, str | bytes] = {}
    for i in range(pages):
        name = f"p/{i}.html"
        files[name] = js_only_html(f"Story {i}") if i % every == 0 else article_html(f"Story {i}")
    write_site(root, files)
    return [f"/{name}" for name in files]


def crawl_seconds(stats: dict[str, object]) -> float:
    start = datetime.fromisoformat(str(stats["start_time"]))
    finish = datetime.fromisoformat(str(stats["finish_time"]))
    return (finish - start).total_seconds()


def run_policy(site: SiteServer, policy: str, work: Path) -> tuple[float, int, float, int]:
    folder = work / policy
    folder.mkdir()
    url = f"sqlite:///{folder / 'bench.db'}"
    upgrade(url)
    sampler = PeakSampler()
    sampler.start()
    stats = crawl_process([site.url("/feed.xml")], sluice_env(url, SLUICE_BROWSER__RENDER=policy),
                          folder, timeout=1800)
    sampler.running = False
    engine = make_engine(url)
    with engine.connect() as conn:
        success = conn.execute(sa.select(sa.func.count()).where(
            articles.c.status.in_(["success", "truncated"]))).scalar_one()
    engine.dispose()
    renders = int(stats.get("sluice/render/requests", 0))
    return crawl_seconds(stats), success, sampler.peak, renders


def sustained(pages: int, js_share: float) -> None:
    """One `always` crawl of `pages` pages; the browser's memory in each quarter of the run."""
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        paths = build_corpus(work / "site", pages, js_share)
        url = f"sqlite:///{work / 'bench.db'}"
        upgrade(url)
        with SiteServer(work / "site", routes={}) as site:
            (work / "site" / "feed.xml").write_text(rss([site.url(path) for path in paths]))
            sampler = SeriesSampler(url)
            sampler.start()
            stats = crawl_process([site.url("/feed.xml")],
                                  sluice_env(url, SLUICE_BROWSER__RENDER="always"), work,
                                  timeout=4 * 3600)
            sampler.running = False
            sampler.join()
    samples = [sample for sample in sampler.samples if sample[1] > 0]  # once the browser is up
    renders = int(stats.get("sluice/render/requests", 0))
    restarts = int(stats.get("playwright/browser_count", 0)) - 1
    seconds = crawl_seconds(stats)
    print(f"{pages} pages, every one rendered (always): {renders} renders in {seconds:.0f} s "
          f"({pages / seconds:.1f} pages/s), browser restarts: {restarts}, "
          f"{len(samples)} samples of the browser's memory")
    if not samples:
        return
    first, last = samples[0][0], samples[-1][0]
    print(f"{'quarter':8} {'seconds':>11} {'pages done':>11} {'peak MB':>8} {'mean MB':>8}")
    for quarter in range(4):
        low = first + (last - first) * quarter / 4
        high = first + (last - first) * (quarter + 1) / 4
        window = [sample for sample in samples
                  if low <= sample[0] < high or (quarter == 3 and sample[0] == last)]
        if not window:
            continue
        memory = [sample[1] for sample in window]
        print(f"{quarter + 1:<8} {f'{low:.0f}-{high:.0f}':>11} {window[-1][2]:>11} "
              f"{max(memory):8.0f} {sum(memory) / len(memory):8.0f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--pages", type=int, default=100)
    parser.add_argument("--js-share", type=float, default=0.1)
    parser.add_argument("--sustained", type=int, nargs="?", const=2000, metavar="N",
                        help="one `always` crawl of N pages (2000), memory over the run")
    args = parser.parse_args()
    if args.sustained:
        sustained(args.sustained, args.js_share)
        return
    with tempfile.TemporaryDirectory() as work_dir:
        work = Path(work_dir)
        paths = build_corpus(work / "site", args.pages, args.js_share)
        with SiteServer(work / "site", routes={}) as site:
            (work / "site" / "feed.xml").write_text(rss([site.url(path) for path in paths]))
            results = {policy: run_policy(site, policy, work)
                       for policy in ("never", "auto", "always")}
    never_rate = args.pages / results["never"][0]
    print(f"{args.pages} pages, {args.js_share:.0%} of them JavaScript-only")
    print(f"{'policy':8} {'pages/s':>8} {'success':>8} {'renders':>8} {'browser MB':>11} "
          f"{'vs never':>9}")
    for policy, (seconds, success, peak, renders) in results.items():
        rate = args.pages / seconds
        print(f"{policy:8} {rate:8.1f} {success:8d} {renders:8d} {peak:11.0f} "
              f"{rate / never_rate:9.2f}x")
    auto, always = args.pages / results["auto"][0], args.pages / results["always"][0]
    print(f"auto is {auto / always:.1f}x faster than always (target >= 3x) and "
          f"{never_rate / auto:.2f}x slower than never (target <= 2.5x)")


if __name__ == "__main__":
    main()
