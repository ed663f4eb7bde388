"""`sluice demo`: serve the bundled site on 127.0.0.1, crawl its feeds, show every row."""

from __future__ import annotations

import os

import sqlalchemy as sa
from rich.console import Console
from rich.table import Table

from sluice.config import get_settings
from sluice.db import articles, make_engine
from sluice.demo.server import SiteServer

DEMO_FEEDS = ("/feed.xml", "/atom.xml", "/feed.json")


def run_demo(console: Console) -> int:
    from sluice.cli import cmd_status, crawl_feeds

    # The demo site lives on 127.0.0.1, which Sluice refuses by default; allow it for the demo.
    os.environ["SLUICE_ALLOW_PRIVATE_NETWORKS"] = "true"
    get_settings.cache_clear()
    with SiteServer() as site:
        # The database URL may hold a password: it is shown masked.
        where = sa.make_url(get_settings().database_url).render_as_string(hide_password=True)
        console.print(f"demo site at {site.base_url}; crawling its feeds into {where}")
        code = crawl_feeds([site.url(path) for path in DEMO_FEEDS], source="demo")
        _print_rows(console, site.base_url)
    cmd_status(None)
    return code


def _print_rows(console: Console, base_url: str) -> None:
    engine = make_engine(get_settings().database_url)
    query = (sa.select(articles.c.url, articles.c.status, articles.c.reason,
                       articles.c.char_count, articles.c.page_type)
             .where(articles.c.url.startswith(base_url)).order_by(articles.c.url))
    table = Table(title="demo URLs")
    table.add_column("url", overflow="fold")
    for name in ("status", "reason", "chars", "page type"):
        table.add_column(name, no_wrap=True)
    with engine.connect() as conn:
        for url, status, reason, chars, page_type in conn.execute(query):
            table.add_row(url[len(base_url):], str(getattr(status, "value", status)),
                          reason or "", str(chars or ""), page_type or "")
    console.print(table)
    engine.dispose()
