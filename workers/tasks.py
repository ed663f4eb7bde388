"""Celery tasks. Each is thin: it takes URLs, re-reads the rows and calls `sluice`.

Every task is idempotent: classification updates only rows still `pending`, so a task
delivered twice (a worker killed after the work, before the ack) changes nothing.
"""

from __future__ import annotations

import functools
import logging

import sqlalchemy as sa
from celery.signals import worker_init

from sluice.classification.model import load_model
from sluice.config import get_settings
from sluice.db import make_engine
from sluice.feed_runs import push_due_feeds
from sluice.gate import GateOptions
from sluice.pipeline import classify_stored
from workers.app import app
from workers.sweep import sweep

logger = logging.getLogger(__name__)


@worker_init.connect
def _load_model_before_forking(**_: object) -> None:
    """Load the page-type model in the worker's main process, before its pool forks: every
    pool process starts with it in memory (shared pages) instead of loading it, for about a
    second, on its first task."""
    load_model()


@functools.cache
def _engine() -> sa.Engine:
    return make_engine(get_settings().database_url)


def _gate() -> GateOptions:
    gate = get_settings().gate
    return GateOptions(gate.min_chars, gate.max_chars)


@app.task(name="sluice.classify_page", bind=True, max_retries=5, default_retry_delay=10,
          acks_late=True, reject_on_worker_lost=True)
def classify_page(self, url: str) -> str | None:  # type: ignore[no-untyped-def]
    """Classify one stored `pending` page and settle its status."""
    try:
        status = classify_stored(_engine(), [url], _gate()).get(url)
    except sa.exc.OperationalError as exc:
        raise self.retry(exc=exc) from None
    return status.value if status is not None else None


@app.task(name="sluice.classify_batch", bind=True, max_retries=5, default_retry_delay=10,
          acks_late=True, reject_on_worker_lost=True)
def classify_batch(self, urls: list[str]) -> int:  # type: ignore[no-untyped-def]
    """Classify several pending pages in one task: one broker message, one read and one
    transaction for all of them."""
    try:
        return len(classify_stored(_engine(), urls, _gate()))
    except sa.exc.OperationalError as exc:
        raise self.retry(exc=exc) from None


@app.task(name="sluice.enqueue_due_feeds", time_limit=60, soft_time_limit=50)
def enqueue_due_feeds() -> int:
    """Push the scheduled sources that are due to the frontier; crawler processes visit them."""
    settings = get_settings()
    if not settings.redis_url:
        return 0  # embedded: `sluice schedule` crawls due sources itself
    return push_due_feeds(settings)


@app.task(name="sluice.sweep_stale")
def sweep_stale() -> dict[str, int]:
    """Hand out again what dead crawlers and workers left in flight (see workers/sweep.py)."""
    settings = get_settings()
    result = sweep(_engine(), settings.redis_url, settings.lease_seconds)
    for start in range(0, len(result.pending), 10):
        classify_batch.delay(result.pending[start:start + 10])
    return {"pending": len(result.pending), "requeued": result.requeued,
            "orphans": result.orphans, "given_up": result.given_up}
