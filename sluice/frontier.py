"""The shared frontier: a Redis sorted set of JSON entries that every crawler process pops.

The database stays the source of truth: a URL gets its `queued` row before it is pushed here,
so an entry lost with a crashed crawler (pops are destructive) or a restarted Redis is found
again by the sweep, which re-pushes rows left `queued`.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import redis

FRONTIER_KEY = "sluice:frontier"
CRAWLERS_KEY = "sluice:crawlers"

# Higher priorities are popped first; within one priority, the oldest entry first.
PRIORITY_FEED = 20
PRIORITY_RETRY = 5
PRIORITY_INGEST = 10
_PRIORITY_SCALE = 1e10


@dataclass(frozen=True, slots=True)
class FrontierEntry:
    """One unit of work: an article (or a feed) URL and what to do with it."""

    url: str
    kind: str = "article"
    source: str | None = None
    render: str | None = None
    retry: bool = False

    def to_json(self) -> str:
        data: dict[str, Any] = {"url": self.url, "kind": self.kind}
        for key in ("source", "render"):
            if getattr(self, key):
                data[key] = getattr(self, key)
        if self.retry:
            data["retry"] = True
        return json.dumps(data, sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str | bytes) -> FrontierEntry:
        data = json.loads(raw)
        if not isinstance(data, dict) or not isinstance(data.get("url"), str):
            raise ValueError("frontier entry without a url")
        return cls(url=data["url"], kind=str(data.get("kind", "article")),
                   source=data.get("source"), render=data.get("render"),
                   retry=bool(data.get("retry", False)))


def connect(redis_url: str) -> redis.Redis:
    return redis.Redis.from_url(redis_url, socket_timeout=30, socket_connect_timeout=10,
                                health_check_interval=30, retry_on_timeout=True)


def score(priority: int, now: float | None = None) -> float:
    return priority * _PRIORITY_SCALE - (time.time() if now is None else now)


def push(client: redis.Redis, entries: Iterable[FrontierEntry], priority: int,
         chunk: int = 5000) -> int:
    """Add entries (an entry already waiting is not added twice). Returns how many were new."""
    added = 0
    batch: dict[str, float] = {}
    now = time.time()
    for entry in entries:
        batch[entry.to_json()] = score(priority, now)
        if len(batch) >= chunk:
            added += _zadd_new(client, batch)
            batch = {}
    if batch:
        added += _zadd_new(client, batch)
    return added


def _zadd_new(client: redis.Redis, batch: dict[str, float]) -> int:
    return int(client.zadd(FRONTIER_KEY, batch, nx=True))  # type: ignore[arg-type]


def depth(client: redis.Redis) -> int:
    """Entries waiting in the frontier (each crawler reports what waits in it: heartbeats)."""
    return int(client.zcard(FRONTIER_KEY))


def crawler_heartbeats(client: redis.Redis, max_age: float = 60.0) -> dict[str, dict[str, Any]]:
    """What each live crawler process last reported (heartbeats older than max_age dropped)."""
    now = time.time()
    beats = {}
    for name, raw in client.hgetall(CRAWLERS_KEY).items():
        data = json.loads(raw)
        if now - float(data.get("at", 0)) <= max_age:
            beats[name.decode() if isinstance(name, bytes) else name] = data
    return beats


def entries_for(urls: Sequence[str], source: str | None, retry: bool = False
                ) -> list[FrontierEntry]:
    return [FrontierEntry(url=url, source=source, retry=retry) for url in urls]
