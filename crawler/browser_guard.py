"""What the browser may connect to when private networks are refused.

Two layers, both on whenever `SLUICE_ALLOW_PRIVATE_NETWORKS` is false:

- `abort_private_request`, scrapy-playwright's `PLAYWRIGHT_ABORT_REQUEST` predicate: every
  request a rendered page makes (the page itself, scripts, XHR, frames, navigations) is aborted
  before it leaves the browser when its host is, or resolves to, a loopback, private, link-local,
  multicast or cloud-metadata address; it keeps the render middleware's filter too (no media,
  nothing but http(s): no file: or data: pages).
- `GuardProxy`, a forward proxy on 127.0.0.1 that the browser is launched with, so that every
  connection the browser opens goes through it. The predicate above never sees the hops of a
  redirect (a public page answering 302 to 127.0.0.1 would otherwise be followed and its text
  stored), and the browser resolves a name again after the predicate did (DNS rebinding). The
  proxy resolves each host itself, checks every address, and connects to the address it checked;
  a refused plain-HTTP request gets a 403 marked `X-Sluice-Refused`, a refused tunnel a 403.

`BrowserGuard` is the policy both use (and the render middleware, for the page a render ended
on); a test can swap it for one that treats a test host as public (Scrapy setting
`SLUICE_BROWSER_GUARD`), as it swaps the resolver.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from typing import Any
from urllib.parse import urlsplit

from crawler.middlewares.render import REFUSED_HEADER, abort_request
from sluice.errors import BlockedAddress
from sluice.urls import check_address_allowed, check_host_allowed, host_of

logger = logging.getLogger(__name__)

MAX_HEAD_BYTES = 64 * 1024
HEAD_TIMEOUT = 30.0
CONNECT_TIMEOUT = 15.0
# Headers about the browser's connection to the proxy, not the request.
_HOP_HEADERS = frozenset({"connection", "proxy-connection", "keep-alive", "proxy-authorization"})


class BrowserGuard:
    """The addresses the browser may connect to: public ones only."""

    def allow_private(self, host: str) -> bool:
        """Never, in the product; a test may override it for a host it treats as public."""
        return False

    async def public_addresses(self, host: str) -> list[str]:
        """Every address `host` resolves to; `BlockedAddress` when any of them, or the host's
        name itself, is refused."""
        allow = self.allow_private(host)
        check_host_allowed(host, allow_private=allow)
        addresses = await resolve(host)
        for address in addresses:
            check_address_allowed(host, address, allow_private=allow)
        return addresses

    async def refused(self, url: str) -> BlockedAddress | None:
        """Why the browser may not reach `url`, or None when it may."""
        try:
            await self.public_addresses(host_of(url))
        except BlockedAddress as exc:
            return exc
        return None


_guard = BrowserGuard()


async def abort_private_request(request: Any) -> bool:
    """True when the browser must not make this request."""
    if abort_request(request):
        return True
    refusal = await _guard.refused(str(request.url))
    if refusal is not None:
        logger.info("browser request refused: %s", refusal)
        return True
    return False


async def resolve(host: str) -> list[str]:
    """Every address `host` resolves to (none when it does not resolve: the browser then fails
    on its own, and no connection is made)."""
    loop = asyncio.get_running_loop()
    try:
        infos = await loop.getaddrinfo(host.strip("[]"), None, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return []
    return sorted({str(info[4][0]) for info in infos})


class GuardProxy:
    """A forward HTTP proxy for the browser that connects only where `guard` allows."""

    def __init__(self, guard: BrowserGuard) -> None:
        self.guard = guard
        self.server: asyncio.Server | None = None
        self.connections: set[asyncio.Task[Any]] = set()

    async def start(self) -> str:
        """Listen on an ephemeral port of 127.0.0.1; returns the proxy's URL."""
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0,
                                                 limit=MAX_HEAD_BYTES)
        port = self.server.sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    async def close(self) -> None:
        if self.server is not None:
            self.server.close()
        for task in list(self.connections):
            task.cancel()
        await asyncio.gather(*self.connections, return_exceptions=True)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self.connections.add(task)
        try:
            await self._relay(reader, writer)
        except (OSError, asyncio.IncompleteReadError, asyncio.LimitOverrunError, TimeoutError,
                ValueError):
            pass  # the browser sees a closed connection: a failed request, nothing fetched
        finally:
            self.connections.discard(task)
            writer.close()

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), HEAD_TIMEOUT)
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, target, version = request_line.split(" ", 2)
        tunnel = method.upper() == "CONNECT"
        if tunnel:
            host, _, port_text = target.rpartition(":")
            port = int(port_text)
        else:
            parts = urlsplit(target)
            if parts.scheme != "http" or not parts.hostname:
                raise ValueError(f"not a proxy request: {request_line!r}")
            host, port = parts.hostname, parts.port or 80
        try:
            addresses = await self.guard.public_addresses(host)
        except BlockedAddress as exc:
            logger.info("browser connection refused: %s", exc)
            body = f"refused: {exc}".encode()
            writer.write(f"HTTP/1.1 403 Forbidden\r\n{REFUSED_HEADER}: blocked_address\r\n"
                         f"Content-Type: text/plain\r\nContent-Length: {len(body)}\r\n"
                         "Connection: close\r\n\r\n".encode() + body)
            await writer.drain()
            return
        if not addresses:
            return  # the name does not resolve: the browser reports the failure
        upstream_reader, upstream_writer = await asyncio.wait_for(
            asyncio.open_connection(addresses[0], port), CONNECT_TIMEOUT)
        try:
            if tunnel:
                writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
                await self._pipe_both(reader, writer, upstream_reader, upstream_writer)
            else:
                path = target[target.index(parts.netloc) + len(parts.netloc):] or "/"
                upstream_writer.write(_head(f"{method} {path} {version}", header_lines))
                await self._pipe_both(reader, writer, upstream_reader, upstream_writer,
                                      close_response=True)
        finally:
            upstream_writer.close()

    @staticmethod
    async def _pipe_both(reader: asyncio.StreamReader, writer: asyncio.StreamWriter,
                         upstream_reader: asyncio.StreamReader,
                         upstream_writer: asyncio.StreamWriter,
                         close_response: bool = False) -> None:
        """Relay both ways until either side closes. With `close_response`, the response's head
        says `Connection: close`, so the browser sends its next request (perhaps for another
        host) on a new connection, checked anew."""
        if close_response:
            response_head = await upstream_reader.readuntil(b"\r\n\r\n")
            status_line, *header_lines = response_head.decode("latin-1").split("\r\n")
            writer.write(_head(status_line, header_lines))
        relays = [asyncio.ensure_future(_pipe(reader, upstream_writer)),
                  asyncio.ensure_future(_pipe(upstream_reader, writer))]
        try:
            await asyncio.wait(relays, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for relay in relays:
                relay.cancel()
            await asyncio.gather(*relays, return_exceptions=True)


def _head(first_line: str, header_lines: list[str]) -> bytes:
    """A request or response head without hop-by-hop headers, closing after one exchange."""
    kept = [line for line in header_lines
            if line and line.split(":", 1)[0].strip().lower() not in _HOP_HEADERS]
    return "\r\n".join([first_line, *kept, "Connection: close", "", ""]).encode("latin-1")


async def _pipe(source: asyncio.StreamReader, target: asyncio.StreamWriter) -> None:
    with contextlib.suppress(OSError):
        while data := await source.read(65536):
            target.write(data)
            await target.drain()
