"""Page metadata trafilatura leaves out: the language, and dates as datetimes."""

from __future__ import annotations

import re
from datetime import datetime

from lxml.html import HtmlElement

_LANGUAGE_TAG = re.compile(r"^([a-z]{2,3})(?:[-_][a-z0-9]+)*$", re.I)
_XML_LANG = "{http://www.w3.org/XML/1998/namespace}lang"
_LANGUAGE_XPATHS = (
    "//meta[translate(@http-equiv, 'CONTELAGU', 'contelagu')='content-language']/@content",
    "//meta[@property='og:locale']/@content",
    "//meta[@name='language' or @name='Language']/@content",
)


def declared_language(tree: HtmlElement | None) -> str | None:
    """The primary language subtag a page declares (`en` for `en-US`), or None."""
    if tree is None:
        return None
    root = tree.getroottree().getroot()
    for attribute in ("lang", "xml:lang", _XML_LANG):
        language = normalise_language(root.get(attribute) or "")
        if language:
            return language
    for xpath in _LANGUAGE_XPATHS:
        for value in tree.xpath(xpath):
            language = normalise_language(str(value))
            if language:
                return language
    return None


def normalise_language(value: str) -> str | None:
    """A lower-case ISO 639 code from a BCP 47 tag or locale, or None when it is not one."""
    first = value.strip().split(",")[0].strip()
    match = _LANGUAGE_TAG.match(first)
    return match.group(1).lower() if match else None


def parse_date(value: str | None) -> datetime | None:
    """A datetime from trafilatura's ISO date string, or None when absent or malformed."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None
