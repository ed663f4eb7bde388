"""The `urls` spider: fetch a given list of article URLs (embedded ingestion and retries)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import scrapy

from crawler.spiders.base import ArticleSpider


class UrlsSpider(ArticleSpider):
    name = "urls"

    def __init__(self, urls: Sequence[str] = (), source: str = "ingest",
                 render: dict[str, str] | None = None, sources: dict[str, str] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.urls = list(urls)
        self.source = source
        self.render = render or {}
        self.sources = sources or {}  # a URL's own source (a retried row's), else `source`

    async def start(self) -> AsyncIterator[scrapy.Request]:
        self.load_site_states()
        for url in self.urls:
            yield self.article_request(url, self.sources.get(url, self.source),
                                       render_policy=self.render.get(url))
