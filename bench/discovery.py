"""Benchmark: sitemap discovery over HTTP, streaming parser against a full-DOM baseline.

Builds sitemap sets of several sizes (an index of gzipped 1,000-URL children, and the same URLs in
one flat gzipped urlset), serves them from a real HTTP server on 127.0.0.1 (ephemeral port), and
reads each with `walk_sitemaps` and with a naive parser that builds the whole tree of each file.
Every measurement runs in its own subprocess so its peak RSS (`ru_maxrss`, which sees libxml2's
allocations that tracemalloc does not) starts from a clean interpreter.

    python -m bench.discovery [--sizes 5000 50000] [--per-child 1000]

Prints URLs/s and peak memory above the interpreter's resting size, then the ratios that matter:
peak memory at the largest size over the smallest (flat means memory does not grow with the
number of URLs), and streaming over the baseline in the same run. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import gzip
import json
import logging
import resource
import subprocess
import sys
import tempfile
import threading
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from lxml import etree

from sluice.discovery.sitemaps import EntryKind, SitemapEntry, parse_w3c_datetime, walk_sitemaps

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
METHODS = ("stream", "dom")
LAYOUTS = ("index", "flat")


@dataclass(frozen=True, slots=True)
class Measurement:
    size: int
    layout: str
    method: str
    urls: int
    seconds: float
    peak_mb: float

    @property
    def urls_per_second(self) -> float:
        return self.urls / self.seconds if self.seconds else 0.0


# --- data and server ------------------------------------------------------------------------


def _urlset(start: int, stop: int) -> bytes:
    rows = "".join(
        f"<url><loc>https://site.example/news/2024/05/{i % 28 + 1:02d}/story-number-{i}</loc>"
        f"<lastmod>2024-05-{i % 28 + 1:02d}T10:00:00Z</lastmod></url>\n"
        for i in range(start, stop)
    )
    return (
        f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n{rows}</urlset>\n'.encode()
    )


def build_dataset(root: Path, size: int, per_child: int) -> None:
    """`root/index.xml` over gzipped children, and `root/flat.xml.gz` with the same URLs."""
    root.mkdir(parents=True, exist_ok=True)
    children = []
    for number, start in enumerate(range(0, size, per_child)):
        name = f"sitemap-{number}.xml.gz"
        (root / name).write_bytes(gzip.compress(_urlset(start, min(start + per_child, size)), 6))
        children.append(name)
    entries = "".join(f"<sitemap><loc>{name}</loc></sitemap>\n" for name in children)
    index = f'<?xml version="1.0"?>\n<sitemapindex xmlns="{NS}">\n{entries}</sitemapindex>\n'
    (root / "index.xml").write_text(index, encoding="utf-8")
    (root / "flat.xml.gz").write_bytes(gzip.compress(_urlset(0, size), 6))


class _QuietHandler(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base's signature
        pass


def serve(directory: Path) -> tuple[ThreadingHTTPServer, str]:
    handler = partial(_QuietHandler, directory=str(directory))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


# --- the two readers (run in a worker subprocess) -------------------------------------------


def read_streaming(url: str) -> int:
    """Stream each response straight into the parser; nothing is kept but a count."""
    return sum(1 for _ in walk_sitemaps([url], partial(urllib.request.urlopen, timeout=30)))


def read_full_dom(url: str) -> int:
    """The naive reader: download, decompress, build each file's whole tree, then walk it,
    making the same records as the streaming reader so that only the parsing differs."""
    count = 0
    for root in _dom_documents(url):
        for element in root.iter(f"{{{NS}}}url"):
            loc = (element.findtext(f"{{{NS}}}loc") or "").strip()
            lastmod = parse_w3c_datetime(element.findtext(f"{{{NS}}}lastmod"))
            SitemapEntry(loc, EntryKind.PAGE, lastmod=lastmod)
            count += 1
    return count


def _dom_documents(url: str) -> Iterator[etree._Element]:
    with urllib.request.urlopen(url, timeout=30) as response:
        body = response.read()
    if body[:2] == b"\x1f\x8b":
        body = gzip.decompress(body)
    root = etree.fromstring(body, etree.XMLParser(resolve_entities=False, no_network=True))
    if etree.QName(root).localname == "sitemapindex":
        for loc in root.iter(f"{{{NS}}}loc"):
            yield from _dom_documents(urllib.parse.urljoin(url, (loc.text or "").strip()))
    else:
        yield root


def _reset_peak_rss() -> None:
    """Reset the kernel's peak-RSS mark to the current RSS (Linux), so that start-up and import
    peaks do not hide the reader's own."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        logging.warning("cannot reset peak RSS; peak memory includes start-up")


def _status_kb(field: str) -> int:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def run_worker(method: str, url: str) -> dict[str, float]:
    reader = read_streaming if method == "stream" else read_full_dom
    _reset_peak_rss()
    resting = _status_kb("VmRSS")
    started = time.perf_counter()
    urls = reader(url)
    seconds = time.perf_counter() - started
    peak = _status_kb("VmHWM")
    return {"urls": urls, "seconds": seconds, "peak_mb": max(0, peak - resting) / 1024}


# --- driver ---------------------------------------------------------------------------------


def measure(base: str, size: int, layout: str, method: str, repeat: int) -> Measurement:
    """The fastest of `repeat` runs (the machine is shared) and the highest peak memory."""
    name = "index.xml" if layout == "index" else "flat.xml.gz"
    command = [sys.executable, "-m", "bench.discovery", "--worker", method, f"{base}/{size}/{name}"]
    runs = [
        json.loads(subprocess.run(command, check=True, capture_output=True, text=True).stdout)
        for _ in range(repeat)
    ]
    seconds = min(run["seconds"] for run in runs)
    peak = max(run["peak_mb"] for run in runs)
    return Measurement(size, layout, method, int(runs[0]["urls"]), seconds, peak)


def report(results: list[Measurement], sizes: list[int]) -> None:
    print(f"{'layout':6} {'method':6} {'URLs':>7} {'s':>6} {'URLs/s':>9} {'peak MB':>8}")
    for m in results:
        print(
            f"{m.layout:6} {m.method:6} {m.urls:7d} {m.seconds:6.2f} "
            f"{m.urls_per_second:9.0f} {m.peak_mb:8.1f}"
        )
    by_key = {(m.size, m.layout, m.method): m for m in results}
    small, large = min(sizes), max(sizes)
    print(f"\npeak memory, {large} URLs over {small} URLs (1.0 = flat):")
    for layout in LAYOUTS:
        for method in METHODS:
            ratio = _ratio(
                by_key[large, layout, method].peak_mb, by_key[small, layout, method].peak_mb
            )
            print(f"  {layout:6} {method:6} {ratio:6.2f}x")
    print(f"\nstreaming over full-DOM baseline at {large} URLs:")
    for layout in LAYOUTS:
        stream, dom = by_key[large, layout, "stream"], by_key[large, layout, "dom"]
        speed = _ratio(stream.urls_per_second, dom.urls_per_second)
        memory = _ratio(stream.peak_mb, dom.peak_mb)
        print(f"  {layout:6} speed {speed:5.2f}x   peak memory {memory:5.2f}x")


def _ratio(numerator: float, denominator: float) -> float:
    return numerator / denominator if denominator > 0 else float("inf")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", 1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[5_000, 50_000])
    parser.add_argument("--per-child", type=int, default=1_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs per measurement; best kept")
    parser.add_argument("--worker", nargs=2, metavar=("METHOD", "URL"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    if args.worker:
        print(json.dumps(run_worker(*args.worker)))
        return
    with tempfile.TemporaryDirectory(prefix="sluice-bench-") as tmp:
        for size in args.sizes:
            build_dataset(Path(tmp) / str(size), size, args.per_child)
        server, base = serve(Path(tmp))
        try:
            results = [
                measure(base, size, layout, method, args.repeat)
                for size in args.sizes
                for layout in LAYOUTS
                for method in METHODS
            ]
        finally:
            server.shutdown()
    report(results, args.sizes)


if __name__ == "__main__":
    main()
