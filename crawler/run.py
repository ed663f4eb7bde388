"""Run one crawler process: `python -m crawler.run feeds|urls|queue ...`.

Each crawl is its own process (a Twisted reactor cannot be restarted), which is also what lets
the `sluice` command watch the database and show live progress while a crawl runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from collections.abc import Sequence
from typing import Any

from scrapy import Spider
from scrapy.crawler import CrawlerProcess
from scrapy.exceptions import ScrapyDeprecationWarning

from crawler.parent_death import die_with_parent
from crawler.settings import scrapy_settings
from sluice.config import LOG_LEVELS, Settings, get_settings

logger = logging.getLogger(__name__)


def _quiet_third_party_deprecations() -> None:
    # scrapy-redis 0.9 still passes `spider=` to the stats collector on every request.
    warnings.filterwarnings("ignore", category=ScrapyDeprecationWarning, module="scrapy_redis")


class RobotsErrorInOneLine(logging.Filter):
    """Scrapy logs a robots.txt it could not fetch (dead host, timeout, refused connection) as
    an ERROR with a traceback, once per site. The crawl treats that file as absent and goes on,
    and the page's own fetch gets a row with the reason, so one warning line says it all."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and str(record.msg).startswith("Error downloading"):
            record.msg = "robots.txt unreadable for %(request)s, treated as absent: %(f_exception)s"
            record.exc_info = record.exc_text = None
            record.levelno, record.levelname = logging.WARNING, "WARNING"
        return True


def run_spider(spider: type[Spider], settings: Settings | None = None, log_level: str = "WARNING",
               shared_frontier: bool = False, **spider_args: Any) -> dict[str, Any]:
    """Run one spider to the end in this process; returns the crawl's stats."""
    _quiet_third_party_deprecations()
    logging.getLogger("scrapy.downloadermiddlewares.robotstxt").addFilter(RobotsErrorInOneLine())
    config = scrapy_settings(settings or get_settings(), shared_frontier=shared_frontier)
    config["LOG_LEVEL"] = log_level
    process = CrawlerProcess(config)
    crawler = process.create_crawler(spider)
    process.crawl(crawler, **spider_args)
    process.start()
    return dict(crawler.stats.get_stats()) if crawler.stats else {}


def run_feeds_crawl(feed_urls: Sequence[str], settings: Settings | None = None,
                    log_level: str = "WARNING") -> dict[str, Any]:
    from crawler.spiders.feeds import FeedsSpider

    return run_spider(FeedsSpider, settings, log_level, feed_urls=list(feed_urls))


def _read_lines(path: str) -> list[str]:
    with open(path, encoding="utf-8") as handle:
        return [line.strip() for line in handle if line.strip()]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--feeds-file", help="crawl these feeds (canonical URLs, one a line)")
    parser.add_argument("--urls-file", help="fetch these article URLs (JSON lines)")
    parser.add_argument("--source", default="ingest")
    parser.add_argument("--queue", action="store_true",
                        help="consume the shared frontier until stopped")
    parser.add_argument("--idle-exit", type=int, default=0,
                        help="with --queue: stop after this many idle seconds (0: never)")
    parser.add_argument("--log-level", type=str.upper, choices=LOG_LEVELS, default="WARNING")
    parser.add_argument("--stats-file", help="write the crawl's stats here as JSON")
    parser.add_argument("--parent", type=int,
                        help="die with this process (the `sluice` command that runs the crawl)")
    args = parser.parse_args(argv)
    if args.parent and not die_with_parent(args.parent):
        return 1  # the `sluice` command was gone before we could ask to die with it
    stats = _run(args)
    if args.stats_file:
        with open(args.stats_file, "w", encoding="utf-8") as handle:
            json.dump(stats, handle, default=str, indent=1, sort_keys=True)
    finish = stats.get("finish_reason", "unknown")
    logger.info("crawl finished: %s", finish)
    return 0 if finish in ("finished", "shutdown") else 1


def _run(args: argparse.Namespace) -> dict[str, Any]:
    if args.queue:
        from crawler.spiders.queue import QueueSpider

        QueueSpider.max_idle_time = args.idle_exit
        return run_spider(QueueSpider, log_level=args.log_level, shared_frontier=True)
    if args.urls_file:
        from crawler.spiders.urls import UrlsSpider

        entries = [json.loads(line) for line in _read_lines(args.urls_file)]
        return run_spider(UrlsSpider, log_level=args.log_level, source=args.source,
                          urls=[entry["url"] for entry in entries],
                          sources={entry["url"]: entry["source"] for entry in entries
                                   if entry.get("source")},
                          render={entry["url"]: entry["render"] for entry in entries
                                  if entry.get("render")})
    return run_feeds_crawl(_read_lines(args.feeds_file), log_level=args.log_level)


if __name__ == "__main__":
    sys.exit(main())
