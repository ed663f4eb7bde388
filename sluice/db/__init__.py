"""The database: table definitions, engines, and the idempotent writes every stage uses."""

from __future__ import annotations

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
