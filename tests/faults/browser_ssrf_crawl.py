"""A crawl process for the browser SSRF test: `python -m tests.faults.browser_ssrf_crawl FILE`.

The crawl of `tests.faults.ssrf_crawl` (private networks refused, the name `localhost` taken
for a public site by the resolver, 127.0.0.1 refused), with the browser's guard taking
`localhost` for a public site too. Run it with `SLUICE_BROWSER__RENDER=always`: a `localhost`
page is then an attacker's public page that the browser renders, and 127.0.0.1 the private
service it tries to reach.
"""

from __future__ import annotations

import sys
from typing import Any

import tests.faults.ssrf_crawl as ssrf_crawl
from crawler.browser_guard import BrowserGuard
from crawler.middlewares.render import abort_request
from crawler.settings import scrapy_settings
from sluice.config import Settings


class LocalhostIsPublicGuard(BrowserGuard):
    def allow_private(self, host: str) -> bool:
        return host.rstrip(".").lower() == "localhost"


async def abort_unless_public(request: Any) -> bool:
    """The browser's request filter, with this test's guard."""
    return abort_request(request) or await LocalhostIsPublicGuard().refused(
        str(request.url)) is not None


def browser_guarded_settings(settings: Settings, shared_frontier: bool = False) -> dict[str, Any]:
    config = scrapy_settings(settings, shared_frontier)
    assert settings.browser.render == "always", "run with SLUICE_BROWSER__RENDER=always"
    assert config["PLAYWRIGHT_ABORT_REQUEST"] == "crawler.browser_guard.abort_private_request"
    config["PLAYWRIGHT_ABORT_REQUEST"] = f"{__name__}.abort_unless_public"
    config["SLUICE_BROWSER_GUARD"] = f"{__name__}.LocalhostIsPublicGuard"
    return config


if __name__ == "__main__":
    ssrf_crawl.scrapy_settings = browser_guarded_settings  # type: ignore[attr-defined]
    ssrf_crawl.main(sys.argv[1], sys.argv[2])
