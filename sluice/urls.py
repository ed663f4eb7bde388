"""URL canonicalisation and validation, and the policy on which addresses may be fetched.

A canonical URL is the row key of `articles`: two spellings of one page must map to one row.
"""

from __future__ import annotations

import ipaddress
import re
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

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
    host = _canonical_host(parts.hostname or "")
    netloc = host if port in (None, _DEFAULT_PORTS[scheme]) else f"{host}:{port}"
    path = _canonical_path(parts.path)
    query = _canonical_query(parts.query)
    return urlunsplit((scheme, netloc, path, query, ""))


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
    pairs = [
        (key, value)
        for key, value in parse_qsl(query, keep_blank_values=True)
        if not _TRACKING_PARAMS.match(key)
    ]
    return urlencode(sorted(pairs), quote_via=quote)


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
