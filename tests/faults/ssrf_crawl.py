"""A crawl process for the connection-time SSRF test: `python -m tests.faults.ssrf_crawl FILE`.

The product's settings with private networks refused, minus the early SSRF middleware, and a
resolver that treats the name `localhost` as if it were a public site. What a DNS-rebinding
attacker gets past the early check is then exactly what reaches the resolver: a `localhost` page
that redirects to 127.0.0.1, and 127.0.0.1 itself.
"""

from __future__ import annotations

import json
import sys

from scrapy.crawler import CrawlerProcess

from crawler.resolver import PublicAddressResolver
from crawler.settings import scrapy_settings
from crawler.spiders.urls import UrlsSpider
from sluice.config import Settings


class LocalhostIsPublicResolver(PublicAddressResolver):
    def allow_private(self, name: str) -> bool:
        return name == "localhost"


def main(urls_file: str, stats_file: str) -> None:
    settings = Settings(allow_private_networks=False)
    config = scrapy_settings(settings)
    assert config["TWISTED_DNS_RESOLVER"] == "crawler.resolver.PublicAddressResolver"
    config["TWISTED_DNS_RESOLVER"] = f"{__name__}.LocalhostIsPublicResolver"
    config["DOWNLOADER_MIDDLEWARES"].pop("crawler.middlewares.ssrf.SSRFGuardMiddleware")
    config["LOG_LEVEL"] = "WARNING"
    with open(urls_file, encoding="utf-8") as handle:
        urls = [line.strip() for line in handle if line.strip()]
    process = CrawlerProcess(config)
    crawler = process.create_crawler(UrlsSpider)
    process.crawl(crawler, urls=urls, source="ssrf-test")
    process.start()
    with open(stats_file, "w", encoding="utf-8") as handle:
        json.dump(dict(crawler.stats.get_stats()) if crawler.stats else {}, handle, default=str)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
