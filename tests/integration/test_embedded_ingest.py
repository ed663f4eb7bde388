"""`sluice ingest` embedded (SQLite, no Redis) against a real local site: it records the URLs as
the distributed ingest does, so a stored URL is not fetched again unless `--refresh` asks."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from sluice.demo.server import Reply, SiteHandler, SiteServer
from tests.conftest import run_sluice
from tests.faults.conftest import fault_env
from tests.integration.test_bulk_ingest import article
from tests.sites import story_number, story_path

pytestmark = pytest.mark.integration


def story(handler: SiteHandler) -> Reply:
    return Reply(200, article(story_number(handler.path)),
                 {"Content-Type": "text/html; charset=utf-8"})


def test_stored_urls_are_fetched_again_only_with_refresh(sqlite_url: str, tmp_path: Path) -> None:
    """A second ingest of the same file fetched every URL again, and `--refresh` made no
    difference; the counts are those the distributed ingest prints."""
    env = fault_env(sqlite_url)
    with SiteServer(Path("/nonexistent"), routes={"/news/*": story}) as site:
        urls = [site.url(story_path(n)) for n in range(5)]
        urls_file = tmp_path / "urls.txt"

        def ingest(lines: list[str], *options: str) -> str:
            urls_file.write_text("\n".join(lines) + "\n")
            result = run_sluice("ingest", str(urls_file), *options, env=env)
            assert result.returncode == 0, result.stderr
            return result.stdout

        def fetches() -> dict[int, int]:
            """How many times each story was fetched so far."""
            return dict(Counter(story_number(path) for path in site.hits
                                if path.startswith("/news/")))

        assert "queued 3 URLs (0 already stored, 0 invalid lines)" in ingest(urls[:3])
        assert fetches() == {0: 1, 1: 1, 2: 1}

        again = ingest(urls[:3])
        assert "queued 0 URLs (3 already stored, 0 invalid lines)" in again
        assert fetches() == {0: 1, 1: 1, 2: 1}

        assert "queued 2 URLs (3 already stored, 1 invalid lines)" in ingest(urls + ["ftp://x/"])
        assert fetches() == {0: 1, 1: 1, 2: 1, 3: 1, 4: 1}

        assert "queued 5 URLs (0 already stored, 0 invalid lines)" in ingest(urls, "--refresh")
        assert fetches() == {0: 2, 1: 2, 2: 2, 3: 2, 4: 2}
