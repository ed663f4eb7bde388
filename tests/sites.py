"""Small local sites written by tests: pages in a temporary folder, served on 127.0.0.1."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT_ROOT

PARAGRAPH = ("The harbour authority confirmed on Monday that the old swing bridge will be "
             "restored rather than replaced, after engineers found the iron frame sound. ")


def article_html(title: str, paragraphs: int = 6, lang: str = "en") -> str:
    body = "".join(f"<p>{PARAGRAPH * 2}Detail {i} of the plan follows here.</p>"
                   for i in range(paragraphs))
    return (f"<!doctype html><html lang='{lang}'><head><title>{title}</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/news/'>News</a></nav>"
            f"<article><h1>{title}</h1>{body}</article><footer>© Harbour Times</footer>"
            "</body></html>")


def js_only_html(title: str, paragraphs: int = 6) -> str:
    texts = json.dumps([f"{PARAGRAPH * 2}Rendered detail {i}." for i in range(paragraphs)])
    return (f"<!doctype html><html lang='en'><head><title>{title}</title></head><body>"
            "<div id='root'></div><noscript>You need to enable JavaScript to run this app."
            "</noscript><script>document.addEventListener('DOMContentLoaded', () => {"
            "const a = document.createElement('article'); const h = document.createElement('h1');"
            f"h.textContent = {json.dumps(title)}; a.appendChild(h);"
            f"for (const t of {texts}) {{ const p = document.createElement('p');"
            "p.textContent = t; a.appendChild(p); }"
            "document.getElementById('root').appendChild(a); });</script></body></html>")


def rss(urls: Iterable[str]) -> str:
    items = "".join(f"<item><title>{url}</title><link>{url}</link></item>" for url in urls)
    return (f'<?xml version="1.0"?><rss version="2.0"><channel><title>t</title>{items}'
            "</channel></rss>")


def write_site(root: Path, files: dict[str, str | bytes]) -> Path:
    for name, content in files.items():
        path = root / name.lstrip("/")
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, str):
            path.write_text(content, encoding="utf-8")
        else:
            path.write_bytes(content)
    return root


def crawl_process(feed_urls: list[str], env: dict[str, str], tmp_path: Path,
                  timeout: float = 300) -> dict[str, Any]:
    """Run one real crawl process; returns its Scrapy stats."""
    feeds_file = tmp_path / "feeds.txt"
    feeds_file.write_text("\n".join(feed_urls))
    stats_file = tmp_path / "stats.json"
    result = subprocess.run(
        [sys.executable, "-m", "crawler.run", "--feeds-file", str(feeds_file),
         "--stats-file", str(stats_file)],
        env=env, cwd=PROJECT_ROOT, capture_output=True, text=True, timeout=timeout, check=False)
    assert stats_file.exists(), result.stderr[-3000:]
    stats: dict[str, Any] = json.loads(stats_file.read_text())
    stats["_stderr"] = result.stderr
    return stats
