"""Run one crawl in this process: `python -m crawler.run --feeds-file FILE`.

Each crawl is its own process (a Twisted reactor cannot be restarted), which is also what lets
`sluice crawl` watch the database and show live progress while the crawl runs.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Sequence
from typing import Any

from scrapy.crawler import CrawlerProcess

from crawler.settings import scrapy_settings
from crawler.spiders.feeds import FeedsSpider
from sluice.config import Settings, get_settings


def run_feeds_crawl(feed_urls: Sequence[str], settings: Settings | None = None,
                    log_level: str = "WARNING") -> dict[str, Any]:
    """Crawl these feeds and every article they list; returns the crawl's stats."""
    config = scrapy_settings(settings or get_settings())
    config["LOG_LEVEL"] = log_level
    process = CrawlerProcess(config)
    crawler = process.create_crawler(FeedsSpider)
    process.crawl(crawler, feed_urls=list(feed_urls))
    process.start()
    return dict(crawler.stats.get_stats()) if crawler.stats else {}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--feeds-file", required=True, help="canonical feed URLs, one a line")
    parser.add_argument("--log-level", default="WARNING")
    parser.add_argument("--stats-file", help="write the crawl's stats here as JSON")
    args = parser.parse_args(argv)
    with open(args.feeds_file, encoding="utf-8") as handle:
        feeds = [line.strip() for line in handle if line.strip()]
    stats = run_feeds_crawl(feeds, log_level=args.log_level)
    if args.stats_file:
        with open(args.stats_file, "w", encoding="utf-8") as handle:
            json.dump(stats, handle, default=str, indent=1, sort_keys=True)
    finish = stats.get("finish_reason", "unknown")
    logging.getLogger(__name__).info("crawl finished: %s", finish)
    return 0 if finish == "finished" else 1


if __name__ == "__main__":
    sys.exit(main())
