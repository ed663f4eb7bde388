"""Turn fetched bytes into text: the declared charset first, a detected one otherwise."""

from __future__ import annotations

import codecs
import logging
import re

import charset_normalizer

logger = logging.getLogger(__name__)

# How far into the document a charset declaration is looked for (the HTML standard says 1024
# bytes; real pages put long scripts first, so look a little further).
_SNIFF_BYTES = 4096
_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([a-zA-Z0-9_.:-]+)""", re.I)
_XML_ENCODING = re.compile(rb"""^\s*<\?xml[^>]+encoding\s*=\s*["']([a-zA-Z0-9_.:-]+)""", re.I)
_BOMS = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16"),
    (codecs.BOM_UTF16_BE, "utf-16"),
)
# Labels pages declare that Python spells differently, or that browsers map to a superset.
_ALIASES = {
    "x-sjis": "shift_jis",
    "shift-jis": "shift_jis",
    "sjis": "shift_jis",
    "iso-8859-1": "cp1252",
    "latin1": "cp1252",
    "us-ascii": "cp1252",
    "ascii": "cp1252",
    "euc-kr": "cp949",
    "ks_c_5601-1987": "cp949",
    "gb2312": "gb18030",
    "gbk": "gb18030",
    "x-user-defined": "cp1252",
}


def declared_charset(data: bytes) -> str | None:
    """The encoding named by a byte-order mark, an XML declaration or a meta tag, if usable."""
    for bom, name in _BOMS:
        if data.startswith(bom):
            return name
    head = data[:_SNIFF_BYTES]
    match = _XML_ENCODING.search(head) or _META_CHARSET.search(head)
    if match is None:
        return None
    label = match.group(1).decode("ascii", "ignore").strip().lower()
    usable = text_encoding(_ALIASES.get(label, label))
    if usable is None:
        logger.debug("unknown declared charset %r", label)
    return usable


def detected_charset(data: bytes) -> str:
    """The most likely encoding of undeclared bytes: UTF-8 when it decodes, else a guess."""
    try:
        data.decode("utf-8")
    except UnicodeDecodeError:
        best = charset_normalizer.from_bytes(data[:200_000]).best()
        return best.encoding if best is not None else "cp1252"
    return "utf-8"


def decode_html(data: bytes, declared: str | None = None) -> str:
    """Decode a page's bytes, trusting an explicit or in-document declaration when it works.

    A declaration that fails to decode the bytes strictly (pages often lie) gives way to
    detection; the last resort replaces undecodable bytes rather than raising.
    """
    explicit = _ALIASES.get(declared.lower(), declared) if declared else None
    names = [n for n in (text_encoding(explicit), declared_charset(data)) if n]
    for name in names:
        try:
            return data.decode(name)
        except UnicodeDecodeError:
            logger.debug("charset %r does not decode the page", name)
    detected = detected_charset(data)
    try:
        return data.decode(detected)
    except UnicodeDecodeError:
        return data.decode(names[0] if names else detected, errors="replace")


def text_encoding(name: str | None) -> str | None:
    """`name` when it is a text encoding Python has, else None: a header or page may name
    an unknown charset, or a codec that is no text encoding (`base64`, `zlib`, `undefined`)."""
    if not name:
        return None
    try:
        info = codecs.lookup(name)
    except LookupError:
        return None
    usable = getattr(info, "_is_text_encoding", True) and info.name != "undefined"
    return name if usable else None

