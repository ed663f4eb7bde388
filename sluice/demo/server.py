"""A small static-site HTTP server on 127.0.0.1 for the demo, the tests and the benchmarks.

It serves a folder, substitutes `{BASE}` with its own origin in text files, and lets a caller add
routes (redirects, error statuses, slow responses) without writing a server of their own.
"""

from __future__ import annotations

import logging
import mimetypes
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import urlsplit

logger = logging.getLogger(__name__)

SITE_ROOT = Path(__file__).parent / "site"
_TEXT_SUFFIXES = {".html", ".xml", ".json", ".txt"}
_TYPES = {".xml": "application/rss+xml", ".json": "application/feed+json",
          ".html": "text/html; charset=utf-8", ".txt": "text/plain; charset=utf-8"}


@dataclass(frozen=True, slots=True)
class Reply:
    """A canned response for a route."""

    status: int = 200
    body: bytes = b""
    headers: dict[str, str] = field(default_factory=dict)


Route = Callable[["SiteHandler"], Reply]

# The demo's own special paths: a login wall (a redirect to the sign-in page).
DEMO_ROUTES: dict[str, Route] = {
    "/articles/members-only.html": lambda handler: Reply(302, headers={"Location": "/login.html"}),
}


class SiteHandler(BaseHTTPRequestHandler):
    server: SiteServer.HTTPServer
    # Keep-alive, as real sites serve: one connection carries many requests.
    protocol_version = "HTTP/1.1"

    def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
        site = self.server.site
        path = urlsplit(self.path).path
        with site.lock:
            site.hits.append(path)
            site.requests.append((path, dict(self.headers.items())))
        route = site.route_for(path)
        reply = route(self) if route else site.static_reply(path)
        self.send_response(reply.status)
        for name, value in reply.headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(reply.body)))
        self.end_headers()
        self.wfile.write(reply.body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        logger.debug("demo site: " + format, *args)


class SiteServer:
    """Serve `root` on 127.0.0.1 (an ephemeral port unless one is given) in a thread."""

    class HTTPServer(ThreadingHTTPServer):
        daemon_threads = True
        site: SiteServer

    def __init__(self, root: Path = SITE_ROOT, routes: dict[str, Route] | None = None,
                 port: int = 0) -> None:
        self.root = root
        self.routes = dict(DEMO_ROUTES if routes is None else routes)
        self.lock = threading.Lock()
        self.hits: list[str] = []
        self.requests: list[tuple[str, dict[str, str]]] = []
        self.httpd = self.HTTPServer(("127.0.0.1", port), SiteHandler)
        self.httpd.site = self
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def start(self) -> Self:
        self.thread.start()
        return self

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self.stop()

    def route_for(self, path: str) -> Route | None:
        """The route for a path: an exact match, else the longest `prefix/*` route."""
        if path in self.routes:
            return self.routes[path]
        prefixes = [key for key in self.routes if key.endswith("*") and path.startswith(key[:-1])]
        return self.routes[max(prefixes, key=len)] if prefixes else None

    def static_reply(self, path: str) -> Reply:
        if path.endswith("/"):
            path += "index.html"
        file = (self.root / path.lstrip("/")).resolve()
        if not file.is_relative_to(self.root.resolve()) or not file.is_file():
            return Reply(404, b"<html><body><h1>Not found</h1></body></html>",
                         {"Content-Type": "text/html; charset=utf-8"})
        body = file.read_bytes()
        if file.suffix in _TEXT_SUFFIXES:
            body = body.replace(b"{BASE}", self.base_url.encode())
        ctype = _TYPES.get(file.suffix) or mimetypes.guess_type(file.name)[0] or "text/plain"
        return Reply(200, body, {"Content-Type": ctype})
