"""Sitemaps: parse `urlset` and `sitemapindex` documents, plain or gzipped, into small records.

Parsing streams (lxml `iterparse`, each entry cleared once read) so a sitemap of a million URLs
costs the memory of one entry, not of the tree. Entities are never resolved and nothing is
fetched: no DTD loading, no network, and a `<loc>` holding an entity reference is dropped, so no
local file or expansion bomb can reach a result. Gzip is recognised by its magic bytes, not by the
URL or the Content-Type, and decompression stops at a size cap. Every failure is a
`DiscoveryError` with a reason code, never an lxml or zlib exception.

`walk_sitemaps` follows nested indexes to a bounded depth with an injected fetch function, so this
module itself never does network I/O.
"""

from __future__ import annotations

import enum
import gzip
import io
import logging
import re
import zlib
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, BinaryIO, Protocol

from lxml import etree

from sluice.errors import SluiceError
from sluice.urls import join_url

if TYPE_CHECKING:
    from _typeshed import WriteableBuffer

logger = logging.getLogger(__name__)

# The sitemaps protocol caps one file at 50,000 URLs and 50 MB uncompressed.
DEFAULT_MAX_ENTRIES = 50_000
DEFAULT_MAX_BYTES = 50 * 1024 * 1024
MAX_URL_LENGTH = 2048
MAX_ELEMENTS_PER_ENTRY = 10_000
_GZIP_MAGIC = b"\x1f\x8b"
_MEDIA_PARENTS = frozenset({"image", "video"})
_ABSOLUTE_HTTP = re.compile(r"^https?://[^/?#\s]", re.IGNORECASE)
_WHITESPACE = re.compile(r"\s")
_READ_CHUNK = 64 * 1024

SitemapSource = bytes | BinaryIO
Fetch = Callable[[str], SitemapSource]


class DiscoveryError(SluiceError):
    """A discovery input that cannot be used, with a stable reason code for rows and counters.

    Reasons: `malformed_xml`, `not_a_sitemap`, `too_large`, `too_many_entries`, `bad_gzip`.
    """

    reason = "discovery_failed"

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason, reason)
        self.detail = detail


class EntryKind(enum.StrEnum):
    """What a sitemap entry points at: a page to crawl, or another sitemap to read."""

    PAGE = "page"
    SITEMAP = "sitemap"


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One `<url>` or `<sitemap>` entry. Dates are timezone-aware (UTC when the source has none)."""

    url: str
    kind: EntryKind
    lastmod: datetime | None = None
    published: datetime | None = None
    title: str | None = None


class _Readable(Protocol):
    def read(self, size: int = -1, /) -> bytes: ...


class _CappedReader:
    """A read()-only view of a stream that raises `too_large` past `limit` bytes.

    Wrapped around the *decompressed* stream, so a gzip bomb stops at the cap instead of
    filling memory.
    """

    def __init__(self, raw: _Readable, limit: int) -> None:
        self._raw = raw
        self._limit = limit
        self._seen = 0

    def read(self, size: int = -1) -> bytes:
        want = _READ_CHUNK if size is None or size < 0 else size
        try:
            chunk = self._raw.read(min(want, self._limit + 1 - self._seen))
        except (OSError, EOFError, zlib.error) as exc:
            raise DiscoveryError("bad_gzip", str(exc)) from exc
        self._seen += len(chunk)
        if self._seen > self._limit:
            raise DiscoveryError("too_large", f"more than {self._limit} bytes")
        return chunk


class _Prefixed(io.RawIOBase):
    """A stream whose first bytes were already read (to sniff the gzip magic) and are put back."""

    def __init__(self, head: bytes, rest: _Readable) -> None:
        self._head = head
        self._rest = rest

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        if self._head:
            size = len(self._head) if size is None or size < 0 else size
            out, self._head = self._head[:size], self._head[size:]
            return out
        return self._rest.read(-1 if size is None else size)

    def readinto(self, buffer: WriteableBuffer, /) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)


def open_sitemap_stream(source: SitemapSource, max_bytes: int = DEFAULT_MAX_BYTES) -> _Readable:
    """The decompressed bytes of a sitemap body as a capped stream (gzip sniffed by magic)."""
    raw: _Readable = io.BytesIO(source) if isinstance(source, bytes | bytearray) else source
    head = raw.read(2)
    stream: _Readable = _Prefixed(head, raw)
    if head == _GZIP_MAGIC:
        stream = gzip.GzipFile(fileobj=_Prefixed(head, raw), mode="rb")
    return _CappedReader(stream, max_bytes)


def parse_sitemap(
    source: SitemapSource,
    *,
    base_url: str | None = None,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[SitemapEntry]:
    """Yield the entries of an XML or plain-text sitemap, streaming.

    `source` is the body as bytes or a binary stream (e.g. an HTTP response). Raises
    `DiscoveryError`; entries read before the error have already been yielded. More than
    `max_entries` entries raises `too_many_entries` after yielding the first `max_entries`.
    """
    stream = open_sitemap_stream(source, max_bytes)
    first = _first_significant_bytes(stream)
    body = _Prefixed(first, stream)
    if first.startswith(b"<"):
        entries = _parse_xml(body, base_url)
    else:
        entries = _parse_text(body, base_url)
    yield from _bounded(entries, max_entries)


def _first_significant_bytes(stream: _Readable) -> bytes:
    """Read past a UTF-8 BOM and leading blank lines, which many generated sitemaps carry and
    which would make the XML declaration invalid; the first significant bytes tell XML from text.
    """
    seen = b""
    while len(seen) <= 64 * 1024:
        chunk = stream.read(256)
        if not chunk:
            break
        seen = (seen + chunk).removeprefix(b"\xef\xbb\xbf").lstrip()
        if seen:
            break
    return seen


def _bounded(entries: Iterable[SitemapEntry], max_entries: int) -> Iterator[SitemapEntry]:
    for count, entry in enumerate(entries):
        if count >= max_entries:
            raise DiscoveryError("too_many_entries", f"more than {max_entries} entries")
        yield entry


def _localname(tag: object) -> str:
    return tag.rpartition("}")[2] if isinstance(tag, str) else ""


def _parse_xml(stream: _Readable, base_url: str | None) -> Iterator[SitemapEntry]:
    events = etree.iterparse(
        stream,
        events=("end",),  # the root is found from the first closed element: half the events
        resolve_entities=False,
        no_network=True,
        load_dtd=False,
        dtd_validation=False,
        huge_tree=False,
        remove_comments=True,
        remove_pis=True,
    )
    root: etree._Element | None = None
    root_kind = EntryKind.PAGE
    pending_elements = 0
    try:
        for _, element in events:
            if root is None:
                root = _root_of(element)
                root_kind = _root_kind(root)
            parent = element.getparent()
            if parent is root and parent is not None:
                entry = _entry_from_element(element, root_kind, base_url)
                _release(element, root)
                pending_elements = 0
                if entry is not None:
                    yield entry
            elif (pending_elements := pending_elements + 1) > MAX_ELEMENTS_PER_ENTRY:
                # One entry never holds thousands of elements; this stops a document that nests
                # everything under one child from building its whole tree.
                raise DiscoveryError("too_large", "an entry holds too many elements")
    except etree.XMLSyntaxError as exc:
        # libxml2's own guards (a text node over 10 MB, deep nesting, entity amplification) mean
        # an oversized or expanding input, not a typo in the XML.
        message = str(exc).lower()
        reason = (
            "too_large" if "limit" in message or "amplification" in message else "malformed_xml"
        )
        raise DiscoveryError(reason, str(exc)) from exc
    if root is None:
        raise DiscoveryError("malformed_xml", "empty document")


def _root_of(element: etree._Element) -> etree._Element:
    while (parent := element.getparent()) is not None:
        element = parent
    return element


def _root_kind(root: etree._Element) -> EntryKind:
    """The kind of entry a root holds: `urlset` holds pages, `sitemapindex` holds sitemaps."""
    name = _localname(root.tag)
    if name == "urlset":
        return EntryKind.PAGE
    if name == "sitemapindex":
        return EntryKind.SITEMAP
    raise DiscoveryError("not_a_sitemap", f"root element <{name}>")


def _release(element: etree._Element, root: etree._Element) -> None:
    """Free an entry once read, and its already-read siblings, so memory stays flat."""
    element.clear(keep_tail=False)
    while element.getprevious() is not None:
        del root[0]


def _entry_from_element(
    element: etree._Element, kind: EntryKind, base_url: str | None
) -> SitemapEntry | None:
    if _localname(element.tag) not in ("url", "sitemap"):
        return None
    fields = _child_texts(element)
    url = _clean_url(fields.get("loc"), base_url)
    if url is None:
        return None
    return SitemapEntry(
        url=url,
        kind=kind,
        lastmod=parse_w3c_datetime(fields.get("lastmod")),
        published=parse_w3c_datetime(fields.get("publication_date")),
        title=(fields.get("title") or None),
    )


def _child_texts(element: etree._Element) -> dict[str, str]:
    """The text of each leaf of an entry by local name: `loc`, `lastmod`, and the Google News
    leaves (`publication_date`, `title`); image and video blocks, with their own `loc`, are
    skipped.

    A leaf holding anything but text (an unresolved entity reference, markup) is left out:
    that is how an XXE or entity bomb in a `<loc>` is dropped rather than half-read.
    """
    texts: dict[str, str] = {}
    for child in element.iterchildren():
        name = _localname(child.tag)
        if name == "news":
            leaves = [leaf for leaf in child.iterdescendants() if not len(leaf)]
        elif name in _MEDIA_PARENTS or len(child):
            continue
        else:
            leaves = [child]
        for leaf in leaves:
            leaf_name = _localname(leaf.tag)
            if leaf.text and leaf_name not in texts:
                texts[leaf_name] = leaf.text.strip()
    return texts


def _clean_url(raw: str | None, base_url: str | None) -> str | None:
    """An absolute http(s) URL without whitespace, or None; relative locs are tolerated."""
    if not raw or len(raw) > MAX_URL_LENGTH:
        return None
    if not _ABSOLUTE_HTTP.match(raw):
        if not base_url:
            return None
        raw = join_url(base_url, raw) or ""
        if not _ABSOLUTE_HTTP.match(raw):
            return None
    return None if _WHITESPACE.search(raw) else raw


def _parse_text(stream: _Prefixed, base_url: str | None) -> Iterator[SitemapEntry]:
    """The protocol's plain-text form: one absolute URL per line, UTF-8."""
    text = io.TextIOWrapper(io.BufferedReader(stream), encoding="utf-8-sig", errors="replace")
    for line in text:
        url = _clean_url(line.strip(), base_url)
        if url is not None:
            yield SitemapEntry(url=url, kind=EntryKind.PAGE)


_DATE_ONLY = re.compile(r"^(\d{4})(?:-(\d{2}))?(?:-(\d{2}))?$")


def parse_w3c_datetime(value: str | None) -> datetime | None:
    """A W3C datetime (`2024`, `2024-05`, `2024-05-12`, `2024-05-12T10:00:00+02:00`, `...Z`).

    Returns an aware datetime (UTC when no offset is given) or None for an unreadable value: a
    bad date must not lose the URL it belongs to.
    """
    if not value:
        return None
    value = value.strip()
    match = _DATE_ONLY.match(value)
    try:
        if match:
            year, month, day = (int(g) if g else 1 for g in match.groups())
            return datetime(year, month, day, tzinfo=UTC)
        parsed = datetime.fromisoformat(value)
    except ValueError:
        logger.debug("unreadable sitemap date %s", value)
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def is_changed(entry: SitemapEntry, known: datetime | None) -> bool:
    """True unless the entry's lastmod shows it is not newer than `known` (the last time seen).

    An entry without lastmod, or a URL never seen, counts as changed: we cannot tell otherwise.
    """
    if known is None or entry.lastmod is None:
        return True
    known_aware = known if known.tzinfo else known.replace(tzinfo=UTC)
    return entry.lastmod > known_aware


def skip_unchanged(
    entries: Iterable[SitemapEntry], last_seen: Callable[[str], datetime | None]
) -> Iterator[SitemapEntry]:
    """The entries worth fetching again; `last_seen(url)` gives the known date (a dict's `.get`)."""
    for entry in entries:
        if is_changed(entry, last_seen(entry.url)):
            yield entry


def sitemaps_from_robots(text: str, base_url: str, max_sitemaps: int = 1000) -> list[str]:
    """The `Sitemap:` URLs of a robots.txt, absolute, de-duplicated, in order."""
    found: dict[str, None] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep or key.strip().lower() != "sitemap":
            continue
        url = _clean_url(value.split("#", 1)[0].strip(), base_url)
        if url is not None:
            found.setdefault(url)
        if len(found) >= max_sitemaps:
            break
    return list(found)


def walk_sitemaps(
    roots: Iterable[str],
    fetch: Fetch,
    *,
    max_depth: int = 3,
    max_entries: int = DEFAULT_MAX_ENTRIES,
    max_sitemaps: int = 1000,
    max_bytes: int = DEFAULT_MAX_BYTES,
) -> Iterator[SitemapEntry]:
    """Yield the page entries reachable from `roots`, following indexes up to `max_depth`.

    `fetch(url)` returns the body (bytes or a binary stream) and may raise `DiscoveryError`.
    A child that fails is logged and skipped; the walk goes on. Each sitemap is read once.
    """
    pending: list[tuple[str, int]] = [(url, 0) for url in roots]
    seen: set[str] = set()
    while pending and len(seen) < max_sitemaps:
        url, depth = pending.pop(0)
        if url in seen:
            continue
        seen.add(url)
        try:
            for entry in parse_sitemap(
                fetch(url), base_url=url, max_entries=max_entries, max_bytes=max_bytes
            ):
                if entry.kind is EntryKind.PAGE:
                    yield entry
                elif depth + 1 <= max_depth:
                    pending.append((entry.url, depth + 1))
                else:
                    logger.debug("sitemap %s deeper than %s, skipped", entry.url, max_depth)
        except DiscoveryError as exc:
            logger.warning("sitemap %s unusable: %s", url, exc.reason)
