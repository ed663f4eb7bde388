"""Framework-neutral errors. The crawler and workers translate them at their boundary."""

from __future__ import annotations


class SluiceError(Exception):
    """Base of every error Sluice raises on purpose. `reason` is a stable reason code."""

    reason = "error"

    def __init__(self, message: str, reason: str | None = None) -> None:
        super().__init__(message)
        if reason is not None:
            self.reason = reason


class InvalidURL(SluiceError):
    """A URL that cannot be crawled: malformed, unsupported scheme, too long."""

    reason = "invalid_url"


class BlockedAddress(SluiceError):
    """A URL whose host resolves to an address Sluice refuses to fetch (SSRF policy)."""

    reason = "blocked_address"


class FeedError(SluiceError):
    """A feed that cannot be parsed at all."""

    reason = "malformed_feed"
