"""The 19 pages WCXB marks as needing JavaScript, served locally, crawled with each render policy.

Offline, a page's own scripts and APIs are out of reach, so rendering cannot recover every page;
what `auto` must do is recover (nearly) everything `always` does, at a fraction of the renders.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import sqlalchemy as sa

from sluice.db import articles, make_engine
from sluice.db.migrate import upgrade
from sluice.demo.server import Reply, SiteServer
from tests.conftest import sluice_env
from tests.data import shared_data
from tests.sites import crawl_process, rss

pytestmark = [pytest.mark.quality, pytest.mark.integration]


def spa_routes() -> dict[str, object]:
    root = shared_data("wcxb-dev")
    files = json.loads((root / "metadata.json").read_text())["files"]
    routes: dict[str, object] = {}
    for file_id, info in sorted(files.items()):
        if info["spa"]:
            body = gzip.decompress((root / "dev/html" / f"{file_id}.html.gz").read_bytes())
            routes[f"/spa/{file_id}.html"] = (
                lambda handler, body=body: Reply(200, body, {"Content-Type": "text/html"}))
    return routes


def crawl_with_policy(site: SiteServer, policy: str, tmp_path: Path) -> dict[str, str]:
    folder = tmp_path / policy
    folder.mkdir()
    url = f"sqlite:///{folder / 'spa.db'}"
    upgrade(url)
    env = sluice_env(url, SLUICE_BROWSER__RENDER=policy, SLUICE_BROWSER__NAVIGATION_TIMEOUT="10",
                     SLUICE_GATE__MIN_CHARS="500")
    crawl_process([site.url("/feed.xml")], env, folder)
    engine = make_engine(url)
    with engine.connect() as conn:
        rows = dict(conn.execute(sa.select(articles.c.url, articles.c.status)).all())
    engine.dispose()
    return {key: getattr(value, "value", value) for key, value in rows.items()}


def test_auto_recovers_as_many_pages_as_always(tmp_path: Path) -> None:
    routes = spa_routes()
    with SiteServer(tmp_path, routes=routes) as site:  # type: ignore[arg-type]
        feed = rss([site.url(path) for path in routes]).encode()
        site.routes["/feed.xml"] = lambda handler: Reply(200, feed,
                                                         {"Content-Type": "application/rss+xml"})
        results = {policy: crawl_with_policy(site, policy, tmp_path)
                   for policy in ("never", "auto", "always")}
    counts = {policy: sum(status in ("success", "truncated") for status in rows.values())
              for policy, rows in results.items()}
    print(f"\nSPA pages reaching success or truncated, by render policy: {counts}")
    assert all(len(rows) == len(routes) for rows in results.values())
    assert counts["auto"] >= counts["always"] - 1
    assert counts["auto"] >= counts["never"]
