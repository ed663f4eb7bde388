"""The one typed settings object. Scrapy settings, the Celery config and Alembic derive from it.

Every value comes from the environment (prefix `SLUICE_`, nested groups joined with `__`, e.g.
`SLUICE_GATE__MIN_CHARS=800`) or from a `.env` file; there is no second source of truth.
"""

from __future__ import annotations

import functools
import logging
import re
import shutil
from typing import Any, Literal

from pydantic import BaseModel, Field, SecretStr, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

logger = logging.getLogger(__name__)

RenderPolicy = Literal["never", "auto", "always"]


class GateSettings(BaseModel):
    """The length gate: below `min_chars` is `under_limit`, above `max_chars` is `truncated`."""

    min_chars: int = Field(1000, ge=0)
    max_chars: int = Field(5000, ge=1)


class FetchSettings(BaseModel):
    """How the crawler fetches."""

    timeout: float = Field(30.0, gt=0, description="Seconds for one download, in total.")
    max_bytes: int = Field(10 * 1024 * 1024, gt=0, description="Largest response body accepted.")
    retries: int = Field(2, ge=0)
    concurrency: int = Field(16, ge=1, description="Requests in flight per crawler process.")
    per_site_concurrency: int = Field(4, ge=1)
    per_site_delay: float = Field(0.0, ge=0, description="Seconds between requests to one site.")
    obey_robots: bool = True
    max_crawl_delay: float = Field(
        30.0, ge=0, description="Longest robots.txt Crawl-delay obeyed, in seconds (0: ignored).")
    unreachable_after: int = Field(
        5, ge=0, description="Attempts in a row without an answer before a site is paused "
        "(0: never).")
    unreachable_pause: float = Field(
        300.0, gt=0, description="Seconds a site that stopped answering is paused.")
    user_agent: str = "SluiceBot/0.1 (+https://example.invalid/sluice)"


def _find_browser() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


class BrowserSettings(BaseModel):
    """The headless browser used for pages that only render with JavaScript."""

    path: str | None = Field(default_factory=_find_browser)
    render: RenderPolicy = "auto"
    max_pages: int = Field(4, ge=1, description="Pages rendering at once.")
    navigation_timeout: float = Field(20.0, gt=0)


class LLMSettings(BaseModel):
    """The optional LLM tier: any OpenAI-compatible chat-completions endpoint."""

    url: str | None = None
    model: str | None = None
    api_key: SecretStr | None = None
    timeout: float = Field(20.0, gt=0)
    requests_per_minute: int = Field(60, ge=1)
    failure_pause: float = Field(30.0, ge=0, description=(
        "Seconds the endpoint is left alone after a failed request: a hanging endpoint then "
        "costs one timeout per pause, not one per page."))
    uncertain_low: float = Field(0.35, ge=0, le=1)
    uncertain_high: float = Field(0.65, ge=0, le=1)

    @property
    def enabled(self) -> bool:
        return bool(self.url and self.model)


# The former name of DiscoverySettings.max_entries, still read (with a warning) for one release.
RENAMED_MAX_ENTRIES = "sitemap_max_entries"


class DiscoverySettings(BaseModel):
    """Sources (feeds, sitemaps, home pages, listing pages) and their schedule."""

    max_listing_pages: int = Field(3, ge=1, description="Listing pages followed per visit.")
    sitemap_max_depth: int = Field(3, ge=0, description="Nested sitemap indexes followed.")
    max_entries: int = Field(
        50_000, ge=1, description="Entries read from one sitemap (the protocol's own limit) "
        "or feed; the rest is left unread (`too_many_entries`).")
    article_max_age_days: float = Field(
        0, ge=0, description="Fetch a stored article again after this many days (0: never).")
    refresh: bool = Field(False, description="Fetch stored articles again on every visit.")
    default_interval_seconds: int = Field(3600, ge=1, description="A new feed's interval.")
    max_backoff_seconds: int = Field(
        86400, ge=1, description="Longest wait after consecutive failures of a feed.")
    schedule_seconds: int = Field(60, ge=1, description="How often due feeds are enqueued.")

    @model_validator(mode="before")
    @classmethod
    def _renamed_max_entries(cls, data: Any) -> Any:
        """SLUICE_DISCOVERY__SITEMAP_MAX_ENTRIES, the name before feeds were capped too, is
        read as SLUICE_DISCOVERY__MAX_ENTRIES for one release, with a warning."""
        if not isinstance(data, dict) or RENAMED_MAX_ENTRIES not in data:
            return data
        data = dict(data)
        old = data.pop(RENAMED_MAX_ENTRIES)
        if "max_entries" in data:
            logger.warning("SLUICE_DISCOVERY__%s is ignored: SLUICE_DISCOVERY__MAX_ENTRIES is "
                           "set, and replaces it", RENAMED_MAX_ENTRIES.upper())
        else:
            logger.warning("SLUICE_DISCOVERY__%s is deprecated and will be removed in the next "
                           "release: use SLUICE_DISCOVERY__MAX_ENTRIES (it caps feeds as well as "
                           "sitemaps)", RENAMED_MAX_ENTRIES.upper())
            data["max_entries"] = old
        return data


# The log levels the command line accepts (case-insensitive).
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
# The databases Sluice runs on (a driver may be named: `postgresql+psycopg://`).
DATABASE_SCHEMES = ("sqlite:", "sqlite+", "postgresql:", "postgresql+", "postgres:")


def _in_memory(sqlite_url: str) -> bool:
    """Whether a SQLite URL names no file: `sqlite://`, `:memory:` or `mode=memory`."""
    path = sqlite_url.split("://", 1)[-1].lstrip("/").split("?", 1)[0]
    return path in ("", ":memory:") or "mode=memory" in sqlite_url


class Settings(BaseSettings):
    """All of Sluice's settings."""

    model_config = SettingsConfigDict(
        env_prefix="SLUICE_", env_nested_delimiter="__", env_file=".env", extra="ignore"
    )

    database_url: str = "sqlite:///sluice.db"
    redis_url: str | None = None
    allow_private_networks: bool = False
    extract_workers: int = Field(0, ge=0, description="Extraction processes; 0 = one per core.")
    lease_seconds: int = Field(900, ge=1, description="How long a row may stay in flight.")
    sweep_seconds: int = Field(60, ge=1, description="How often beat runs the sweep.")
    visibility_timeout: int = Field(300, ge=1, description="Seconds before an unacknowledged "
                                    "Celery task is delivered again (above the task limit).")
    gate: GateSettings = GateSettings()
    fetch: FetchSettings = FetchSettings()
    browser: BrowserSettings = BrowserSettings()
    llm: LLMSettings = LLMSettings()
    discovery: DiscoverySettings = DiscoverySettings()

    @field_validator("database_url")
    @classmethod
    def _supported_database(cls, url: str) -> str:
        if not url.startswith(DATABASE_SCHEMES):
            raise ValueError("must be a sqlite:/// or postgresql:// URL")
        if url.startswith("sqlite") and _in_memory(url):
            raise ValueError("an in-memory SQLite database lasts one process, and a crawl "
                             "runs several: name a file, such as sqlite:///sluice.db")
        return url

    @property
    def embedded(self) -> bool:
        """True when no Redis is configured: everything runs in one process."""
        return not self.redis_url


class SettingsSourceError(ValueError):
    """A setting's source cannot be read: a nested setting given as something other than
    JSON (`SLUICE_GATE=many`), or a `.env` file that is not UTF-8. The message names the
    setting or the file, never the value (it may hold a password)."""


@functools.cache
def get_settings() -> Settings:
    """The process-wide settings, read once from the environment (and `.env`)."""
    try:
        return Settings()
    except SettingsError as exc:
        field = re.search(r'field "(\w+)"', str(exc))
        name = f"SLUICE_{field.group(1).upper()}" if field else "SLUICE_…"
        raise SettingsSourceError(
            f"invalid setting {name}: a group of settings is given as JSON (or set its "
            f"members one by one, as {name}__MEMBER)") from None
    except UnicodeDecodeError:
        raise SettingsSourceError("invalid settings file .env: it is not UTF-8") from None
