"""URL canonicalisation and validation, and the policy on which addresses may be fetched.

A canonical URL is the row key of `articles`: two spellings of one page must map to one row.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import quote, unquote_plus, urljoin, urlsplit, urlunsplit

from sluice.errors import BlockedAddress, InvalidURL

MAX_URL_LENGTH = 2048
ALLOWED_SCHEMES = frozenset({"http", "https"})

# Query parameters that only track the visitor; dropping them merges duplicate rows.
_TRACKING_PARAMS = re.compile(
    r"^(utm_\w+|fbclid|gclid|dclid|gbraid|wbraid|msclkid|mc_cid|mc_eid|igshid|yclid|_hsenc|"
    r"_hsmi|mkt_tok|ref_src|__twitter_impression|oly_enc_id|oly_anon_id|vero_id|s_cid)$",
    re.IGNORECASE,
)
_DEFAULT_PORTS = {"http": 80, "https": 443}
# Characters left unescaped in a path; everything else is percent-encoded once.
_PATH_SAFE = "/:@!$&'()*+,;=-._~%"
# C0 controls other than the tab, CR and LF that URL parsing strips, and DEL.
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# What may follow any user info in an authority: a name or a bracketed IPv6 literal, then a port.
_HOST_AND_PORT = re.compile(r"(\[[0-9A-Za-z:.%]*\]|[^\[\]]*)(:[0-9]*)?")


def canonicalize_url(url: str) -> str:
    """Return the canonical form of an http(s) URL, or raise `InvalidURL` with a reason code.

    Lower-cases scheme and host, encodes IDNs as punycode, drops default ports, fragments,
    tracking parameters and empty queries, sorts the remaining query, normalises percent-escapes
    and resolves `.` / `..` path segments.
    """
    url = url.strip()
    if not url:
        raise InvalidURL("empty URL", "invalid_url")
    if len(url) > MAX_URL_LENGTH:
        raise InvalidURL(f"URL longer than {MAX_URL_LENGTH} characters", "url_too_long")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise InvalidURL(f"malformed URL: {exc}", "invalid_url") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        raise InvalidURL(f"unsupported scheme {scheme or '(none)'!r}", "unsupported_scheme")
    if _CONTROL.search(url):
        raise InvalidURL("URL contains a control character", "invalid_url")
    if port == 0:
        raise InvalidURL("port 0 is not a port a server listens on", "invalid_url")
    if not _HOST_AND_PORT.fullmatch(parts.netloc.rpartition("@")[2]):
        raise InvalidURL(f"malformed host {parts.netloc!r}", "invalid_url")
    host = _canonical_host(parts.hostname or "")
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    try:
        path = _canonical_path(parts.path)
        query = _canonical_query(parts.query)
    except UnicodeError:  # a lone surrogate, as a JSON line's "\ud800" can carry
        raise InvalidURL("URL contains characters that cannot be encoded", "invalid_url") from None
    return urlunsplit((scheme, netloc, path, query, ""))


def join_url(base: str, href: str) -> str | None:
    """`href` resolved against `base`, or None when either is too malformed to join (an
    unclosed IPv6 bracket, say): one bad link on a page must not cost the page's others."""
    try:
        return urljoin(base, href)
    except ValueError:
        return None


def is_valid_url(url: str) -> bool:
    try:
        canonicalize_url(url)
    except InvalidURL:
        return False
    return True


def host_of(url: str) -> str:
    """The lower-cased host of a URL ('' when it has none)."""
    try:
        return (urlsplit(url).hostname or "").lower()
    except ValueError:
        return ""


def _canonical_host(host: str) -> str:
    host = host.strip().rstrip(".").lower()
    if not host:
        raise InvalidURL("URL has no host", "invalid_url")
    if host.startswith("[") or ":" in host:
        return host if host.startswith("[") else f"[{host}]"
    try:
        ascii_host = host.encode("idna").decode("ascii")
    except UnicodeError:
        raise InvalidURL(f"host {host!r} is not a valid domain name", "invalid_url") from None
    if not re.fullmatch(r"[a-z0-9.\-_]+", ascii_host):
        raise InvalidURL(f"host {host!r} is not a valid domain name", "invalid_url")
    return ascii_host


def _canonical_path(path: str) -> str:
    segments: list[str] = []
    for segment in path.split("/"):
        if segment == "..":
            if segments:
                segments.pop()
        elif segment != ".":
            segments.append(segment)
    joined = "/".join(segments)
    if not joined.startswith("/"):
        joined = "/" + joined
    if path.endswith(("/.", "/..")) and not joined.endswith("/"):
        joined += "/"
    return quote(_normalise_escapes(joined), safe=_PATH_SAFE)


_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")


def _normalise_escapes(text: str) -> str:
    """Decode escapes of unreserved characters and upper-case the rest (RFC 3986, 6.2.2)."""

    def fix(match: re.Match[str]) -> str:
        char = chr(int(match.group(1), 16))
        return char if char in _UNRESERVED else match.group(0).upper()

    text = re.sub(r"%([0-9a-fA-F]{2})", fix, text)
    # A lone '%' not followed by two hex digits must itself be escaped.
    return re.sub(r"%(?![0-9A-F]{2})", "%25", text)


def _canonical_query(query: str) -> str:
    """Tracking parameters dropped, the rest sorted and escaped one way. Escapes of bytes that
    are not UTF-8 (`?q=caf%E9`) are kept as the same bytes, and a key without `=` stays so:
    the canonical URL must ask the server for what the original asked."""
    pairs = []
    for piece in query.split("&"):
        key, equals, value = piece.partition("=")
        key = unquote_plus(key, errors="surrogateescape")
        if piece and not _TRACKING_PARAMS.match(key):
            pairs.append((key, equals, unquote_plus(value, errors="surrogateescape")))
    return "&".join(
        _escape(key) + equals + _escape(value) for key, equals, value in sorted(pairs)
    )


def _escape(text: str) -> str:
    return quote(text, safe="", errors="surrogateescape")


# The addresses a crawler exposed to user-submitted URLs must never reach.
_METADATA_HOSTS = frozenset({"metadata.google.internal", "metadata", "instance-data"})


def is_public_address(address: str) -> bool:
    """True when an IP address is globally routable (not loopback, private, link-local, ...)."""
    try:
        ip = ipaddress.ip_address(address.strip("[]"))
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_global and not ip.is_multicast


def check_host_allowed(host: str, *, allow_private: bool) -> None:
    """Raise `BlockedAddress` for a host refused by its name alone (a cloud metadata name, or an
    IP literal that is not public), before any lookup is made."""
    if allow_private:
        return
    name = host.strip("[]").lower().rstrip(".")
    if name in _METADATA_HOSTS:
        raise BlockedAddress(f"{host} is a cloud metadata host", "blocked_address")
    try:
        ipaddress.ip_address(name)
    except ValueError:
        return
    check_address_allowed(host, name, allow_private=False)


def check_address_allowed(host: str, address: str, *, allow_private: bool) -> None:
    """Raise `BlockedAddress` when `host`, resolved to `address`, may not be fetched."""
    if allow_private:
        return
    if host.lower().rstrip(".") in _METADATA_HOSTS:
        raise BlockedAddress(f"{host} is a cloud metadata host", "blocked_address")
    if not is_public_address(address):
        raise BlockedAddress(f"{host} resolves to non-public address {address}", "blocked_address")
