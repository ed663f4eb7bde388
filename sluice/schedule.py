"""When a feed is due again: its interval, stretched by exponential back-off while it fails.

Pure functions over numbers and datetimes; `sluice/db/feeds.py` stores what they decide.
"""

from __future__ import annotations

import re
from datetime import datetime, timedelta

_INTERVAL = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw]?)\s*$", re.IGNORECASE)
_UNIT_SECONDS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}
# Failures past this many no longer double the wait (2**16 intervals is already past any cap).
_MAX_DOUBLINGS = 16
# The longest interval a source may have: a yearly source is checked yearly, and a due date
# stays far inside what the databases can store.
MAX_INTERVAL_SECONDS = 366 * 86400
# A visit's status when the source answered but every source it pointed to failed and no
# article was found (see `sluice.discovery.visits`).
FOLLOWED_SOURCES_FAILED = "followed_sources_failed"


def parse_interval(text: str) -> int:
    """Seconds in an interval such as `90`, `45s`, `30m`, `2h`, `1d`, at most a year.
    Raises ValueError."""
    match = _INTERVAL.match(text)
    if match is None:
        raise ValueError(f"not an interval: {text!r} (use e.g. 30m, 2h, 1d)")
    seconds = float(match.group(1)) * _UNIT_SECONDS[match.group(2).lower()]
    if seconds > MAX_INTERVAL_SECONDS:
        raise ValueError(f"interval too long: {text!r} (at most {MAX_INTERVAL_SECONDS // 86400}d)")
    if seconds < 1:
        raise ValueError(f"interval too short: {text!r}")
    return int(seconds)


def format_interval(seconds: int) -> str:
    """The shortest exact form of an interval: 1800 -> `30m`, 90 -> `90s`."""
    for unit in ("w", "d", "h", "m"):
        size = _UNIT_SECONDS[unit]
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def backoff_seconds(interval: int, failures: int, cap: int) -> int:
    """The wait after `failures` consecutive failures: the interval, doubled per failure, capped.

    The cap never shortens a feed's own interval: a daily feed stays daily.
    """
    if failures <= 0:
        return interval
    stretched = interval << min(failures, _MAX_DOUBLINGS)
    return max(interval, min(stretched, cap))


def next_due_at(fetched_at: datetime, interval: int, failures: int, cap: int) -> datetime:
    """When a feed fetched (or failed) at `fetched_at` is due again."""
    return fetched_at + timedelta(seconds=backoff_seconds(interval, failures, cap))


def is_failure(status: str) -> bool:
    """A feed visit's status that counts towards back-off (`ok` and `not_modified` do not).

    Nor does `followed_sources_failed`: the source itself answered and was read, and what it
    points to (child sitemaps, announced feeds) is usually fixed or replaced on the site's own
    schedule, which a doubled interval would only notice late.
    """
    return status not in ("ok", "not_modified", FOLLOWED_SOURCES_FAILED)
