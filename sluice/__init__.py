"""Sluice: feed lists and URL queues in, a clean SQL table of articles out.

This package is the framework-free core: it imports neither Scrapy nor Celery, so the crawler,
the workers, the CLI and the benchmarks all call the same code.
"""

from __future__ import annotations

__version__ = "0.1.0"
