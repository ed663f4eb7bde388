"""The database: table definitions, engines, and the idempotent writes every stage uses."""

from __future__ import annotations

# The module `sluice.db.feeds` is loaded before the table of the same name is bound here:
# loaded later, it would replace the table `sluice.db.feeds` with itself.
import sluice.db.feeds  # noqa: F401
from sluice.db.engine import make_engine, normalise_database_url
from sluice.db.models import articles, crawl_runs, feeds, metadata, page_bodies, sites

__all__ = [
    "articles",
    "crawl_runs",
    "feeds",
    "make_engine",
    "metadata",
    "normalise_database_url",
    "page_bodies",
    "sites",
]
