"""Reading URL lists (feed lists, ingest files): bad lines are reported, none aborts a batch."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from sluice.errors import InvalidURL
from sluice.urls import canonicalize_url

# A note after a URL: a `#` after whitespace (a `#` inside the URL starts its fragment).
_NOTE = re.compile(r"\s+#.*\Z", re.DOTALL)


@dataclass(frozen=True, slots=True)
class ListedURL:
    """A URL read from line `line` of an input, canonicalised, with per-URL options."""

    url: str
    line: int
    options: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class InputProblem:
    """A line that was not used, and why (`invalid_url`, `unsupported_scheme`, `duplicate`, ...)."""

    line: int
    text: str
    reason: str
    message: str
    source: str = ""  # the file it came from, or "argument", when a command reads several

    @property
    def location(self) -> str:
        """Where the line is, as a report names it: `line 3`, `feeds.txt, line 3`, or
        `argument 2` (for an argument, `line` is its position)."""
        if self.source == "argument":
            return f"argument {self.line}"
        return f"{self.source}, line {self.line}" if self.source else f"line {self.line}"


@dataclass(frozen=True, slots=True)
class URLList:
    urls: tuple[ListedURL, ...]
    problems: tuple[InputProblem, ...]


def read_url_list(lines: Iterable[str | bytes], seen: set[int] | None = None) -> URLList:
    """Read one URL per line (or a JSON object with a `url` key); `#` starts a comment.

    A URL already read is a `duplicate`. `seen` holds the `hash()` of each URL read: a file
    read in chunks passes the same set to every chunk, so a URL repeated thousands of lines
    apart is reported as one next to it is, in about 70 bytes a URL rather than the URL's own.
    """
    urls: list[ListedURL] = []
    problems: list[InputProblem] = []
    seen = set() if seen is None else seen
    for number, raw in enumerate(lines, start=1):
        text = _decode(raw).strip()
        if not text or text.startswith("#"):
            continue
        try:
            listed = _parse_line(text, number)
        except InvalidURL as exc:
            problems.append(InputProblem(number, text[:200], exc.reason, str(exc)))
            continue
        if hash(listed.url) in seen:
            problems.append(InputProblem(number, text[:200], "duplicate", "duplicate URL"))
            continue
        seen.add(hash(listed.url))
        urls.append(listed)
    return URLList(tuple(urls), tuple(problems))


def iter_lines(path: str) -> Iterator[bytes]:
    """The raw lines of a file, or of standard input for `-`."""
    if path == "-":
        yield from _split(sys.stdin.buffer)
        return
    with open(path, "rb") as handle:
        yield from _split(handle)


def _split(raw_lines: Iterable[bytes]) -> Iterator[bytes]:
    """Lines ended by LF, CRLF or a lone CR (a file with CR-only endings is one "line" to a
    file object)."""
    for line in raw_lines:
        yield from line.splitlines()


def _decode(raw: str | bytes) -> str:
    if isinstance(raw, str):
        return raw
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        # A URL is ASCII once encoded; a line that is not UTF-8 is most likely Latin-1.
        return raw.decode("latin-1")


def _parse_line(text: str, number: int) -> ListedURL:
    if text.startswith("{"):
        try:
            record = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: nested thousands deep
            raise InvalidURL("line is not valid JSON", "invalid_json") from None
        if not isinstance(record, dict) or not isinstance(record.get("url"), str):
            raise InvalidURL("JSON line has no string 'url'", "invalid_json")
        options = {key: value for key, value in record.items() if key != "url"}
        return ListedURL(canonicalize_url(record["url"]), number, options)
    url = _NOTE.sub("", text)
    if any(char.isspace() for char in url):
        raise InvalidURL("URL contains whitespace (write a space in a URL as %20; a note "
                         "after the URL starts with #)", "invalid_url")
    return ListedURL(canonicalize_url(url), number)
