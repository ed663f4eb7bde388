"""Small local sites written by tests: pages in a temporary folder, served on 127.0.0.1."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import zlib
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT_ROOT

_SUBJECTS = ("The town council", "Local residents", "The harbour authority",
             "A group of volunteers", "Engineers from the county", "The head teacher",
             "Shop owners on Mill Street", "The library trust")
_VERBS = ("said on Tuesday that", "confirmed in a statement that", "argued at the meeting that",
          "told this newspaper that", "warned last week that", "announced on Friday that")
_CLAUSES = ("the repairs to the old swing bridge would take another {n} weeks",
            "the budget for the riverside path had grown by {n} per cent since spring",
            "more than {n} people had signed the petition to keep the ferry running",
            "the new timetable would add {n} buses on weekday mornings",
            "the flood barrier had been raised {n} times since the start of the year",
            "the market would return to the square after {n} months away",
            "a survey of {n} households showed strong support for the plan",
            "the school roof would be replaced before winter, at a cost of {n} thousand pounds")
_FOLLOW = ("Critics say the plan leaves too many questions open.",
           "Supporters hope the work will finish before the holidays.",
           "A public meeting is planned for next month.",
           "The decision will be reviewed in the new year.",
           "Not everyone is convinced the figures add up.",
           "Residents have until the end of the month to comment.")


def news_paragraphs(seed: int, paragraphs: int = 5) -> list[str]:
    """Varied, news-like prose (about 400 characters a paragraph), the same for the same seed."""
    rng = random.Random(seed)
    return [" ".join(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} "
                     f"{rng.choice(_CLAUSES).format(n=rng.randint(2, 90))}." for _ in range(3))
            + " " + rng.choice(_FOLLOW) for _ in range(paragraphs)]


def story_path(number: int) -> str:
    """A news-like URL path for generated story `number`."""
    return f"/news/2026/11/story-{number}.html"


def story_number(path: str) -> int:
    match = re.search(r"(\d+)(?:\.html)?$", path)
    if match is None:
        raise ValueError(f"no story number in {path!r}")
    return int(match.group(1))


def article_html(title: str, paragraphs: int = 6, lang: str = "en", seed: int | None = None,
                 published: str | None = None) -> str:
    """An ordinary news article page: site chrome around one article with a byline."""
    body = "".join(f"<p>{text}</p>" for text in
                   news_paragraphs(zlib.crc32(title.encode()) if seed is None else seed,
                                   paragraphs))
    return (f"<!doctype html><html lang='{lang}'><head><title>{title}</title>"
            "<meta name='author' content='Ann Rivers'>"
            + (f"<meta property='article:published_time' content='{published}'>" if published
               else "") + "</head>"
            "<body><nav><a href='/'>Home</a> <a href='/news/'>News</a></nav>"
            f"<article><h1>{title}</h1><p class='byline'>By Ann Rivers</p>{body}</article>"
            "<footer>© Harbour Times</footer></body></html>")


def js_only_html(title: str, paragraphs: int = 6) -> str:
    texts = json.dumps(news_paragraphs(zlib.crc32(title.encode()), paragraphs))
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


def slow_js_only_html(title: str, delay_ms: int, beacon: str, paragraphs: int = 6) -> str:
    """A JavaScript-only page (the same shell as `js_only_html`) whose script first requests
    `beacon`, so the server sees a browser running it (a static fetch runs no script), then
    waits `delay_ms` before writing the article: a render that stays in flight that long."""
    texts = json.dumps(news_paragraphs(zlib.crc32(title.encode()), paragraphs))
    return (f"<!doctype html><html lang='en'><head><title>{title}</title></head><body>"
            "<div id='root'></div><noscript>You need to enable JavaScript to run this app."
            "</noscript><script>document.addEventListener('DOMContentLoaded', () => {"
            f"fetch({json.dumps(beacon)}).catch(() => null); setTimeout(() => {{"
            "const a = document.createElement('article'); const h = document.createElement('h1');"
            f"h.textContent = {json.dumps(title)}; a.appendChild(h);"
            f"for (const t of {texts}) {{ const p = document.createElement('p');"
            "p.textContent = t; a.appendChild(p); }"
            f"document.getElementById('root').appendChild(a); }}, {int(delay_ms)}); }});"
            "</script></body></html>")
